package discovery

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
)

// stubMaster lists x at u while listed is set, as a standalone master's /json.
type stubMaster struct {
	u      *url.URL
	x      string
	listed atomic.Bool
	calls  atomic.Int64
}

func (m *stubMaster) name() string { return "master:http://m" }
func (m *stubMaster) candidates(context.Context) ([]candidate, error) {
	m.calls.Add(1)
	if !m.listed.Load() {
		return nil, nil
	}
	return []candidate{{url: m.u, source: m.name(), appID: m.x}}, nil
}

// slowSource is any other source (a probe sweep, a slow ResourceManager)
// whose poll takes a while: while gate is set, its poll waits for it.
type slowSource struct {
	mu      sync.Mutex
	gate    chan struct{}
	blocked chan struct{}
}

func (s *slowSource) name() string { return "static" }
func (s *slowSource) candidates(ctx context.Context) ([]candidate, error) {
	s.mu.Lock()
	g, b := s.gate, s.blocked
	s.mu.Unlock()
	if g != nil {
		close(b)
		select {
		case <-g:
		case <-ctx.Done():
		}
	}
	return nil, nil
}

// startWith runs a discoverer of 100 ms rounds over the poll sources given.
func startWith(t *testing.T, polls ...pollSource) (*Discoverer, *Registry) {
	reg := NewRegistry()
	d := New(Config{Interval: 100 * time.Millisecond}, reg, zaptest.NewLogger(t))
	d.polls = append(d.polls, polls...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return d, reg
}

// TestHeldUpPollEarnsNoCredit: the master's list is read at the start of a
// poll that a slower source holds up; meanwhile X's driver exits (the
// master drops X), another process takes U, answers the next round's
// liveness check with another id (X ends) and then claims X with open ACLs.
// The held-up list, offered after X ended, was read before: it credits
// nothing, and X stays ended with its own ACLs.
func TestHeldUpPollEarnsNoCredit(t *testing.T) {
	const x, z = "app-20260101000000-0031", "app-20260101000000-0099"
	vic := newFakeDriver(t, x)
	att := newFakeDriver(t, z)
	att.props = [][]string{{"spark.acls.enable", "true"}, {"spark.ui.view.acls", "*"}}
	var attacker atomic.Bool
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !attacker.Load() {
			vic.serve(w, r)
			return
		}
		att.serve(w, r)
		if r.URL.Path == "/api/v1/applications" {
			att.setID(x) // once X has ended, claim it
		}
	}))
	t.Cleanup(front.Close)
	u, _ := url.Parse(front.URL)
	m := &stubMaster{u: u, x: x}
	m.listed.Store(true)
	slow := &slowSource{}
	d, reg := startWith(t, m, slow)
	waitFor(t, reg, "X live, the master's", func(s *Snapshot) bool {
		a, ok := s.Lookup(x)
		return ok && a.Live() && a.Source == "master:http://m" && a.ACLProps["spark.ui.view.acls"] == "alice,bob"
	})
	// The next poll reads the master (X listed) and waits on the slow source.
	slow.mu.Lock()
	slow.gate, slow.blocked = make(chan struct{}), make(chan struct{})
	gate, blocked := slow.gate, slow.blocked
	slow.mu.Unlock()
	<-blocked
	time.Sleep(50 * time.Millisecond) // the master's read of this poll is done
	n := m.calls.Load()
	time.Sleep(250 * time.Millisecond) // rounds tick; no poll starts while this one waits
	if m.calls.Load() != n {
		t.Fatal("unexpected master read")
	}
	// X's driver exits: the master drops it; another process takes U.
	m.listed.Store(false)
	attacker.Store(true)
	eventually(t, "X ended by a liveness check", func() bool {
		done := make(chan bool)
		d.send(context.Background(), func() {
			a, tg := d.apps[x], d.targets[u.String()]
			done <- a != nil && a.app.State == Ended && tg != nil && !tg.verifying
		})
		return <-done
	})
	slow.mu.Lock()
	slow.gate = nil
	slow.mu.Unlock()
	close(gate) // the held-up poll delivers the master's list read before X ended
	time.Sleep(time.Second)
	got := make(chan string)
	d.send(context.Background(), func() {
		a := d.apps[x]
		got <- fmt.Sprintf("%s %s %v", a.app.State, a.app.Source, a.app.ACLProps)
	})
	s := <-got
	if !strings.HasPrefix(s, Ended.String()+" ") || !strings.Contains(s, "alice,bob") {
		t.Errorf("X = %s; want ended: the master dropped X before U was taken", s)
	}
}

// BenchmarkOfferManyIDsOneURL: a master lists n apps at one address
// (their drivers registered it, as anyone's may); a round offers them all.
// Each offer costs the same however many the address has (ns/op per offer).
func BenchmarkOfferManyIDsOneURL(b *testing.B) {
	for _, n := range []int{1000, 20000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			d := New(Config{Interval: time.Second}, NewRegistry(), nil)
			u, _ := url.Parse("http://10.0.0.1:4040")
			const x = "app-20260101000000-0001"
			d.targets[u.String()] = &target{c: candidate{url: u}, appID: x}
			d.apps[x] = &liveApp{app: App{ID: x, State: Running, Source: "master:http://m"}, key: u.String()}
			cands := make([]candidate, n)
			for i := range cands {
				cands[i] = candidate{url: u, source: "master:http://m", appID: fmt.Sprintf("app-20260101000000-%06d", i+2)}
			}
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				d.offer(cands[i%n])
			}
		})
	}
}
