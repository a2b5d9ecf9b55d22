package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sparkgate/sparkgate/proxy/discovery"
)

// TestUpstreamSlots: a driver that sends its headers and then stalls
// holds at most MaxRequestsPerDriver of the gateway's requests; the next
// one gets the busy page without reaching it, another driver is served
// meanwhile, and a slot is free again once its answer ends, also after
// upstream errors.
func TestUpstreamSlots(t *testing.T) {
	const limit = 2
	stall, seen, entered, release := stallingServer(t)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "other driver")
	}))
	t.Cleanup(other.Close)

	h := newHarness(t, func(o *Options) {
		o.Config.MaxRequestsPerDriver = limit
		o.Config.DialTimeout = 300 * time.Millisecond
	})
	su := stall
	ou, _ := url.Parse(other.URL)
	h.reg.Store(discovery.NewSnapshot([]*discovery.App{
		{ID: appLive, Name: "etl", User: "alice", State: discovery.Running, UIURL: su, Source: "static"},
		{ID: appYarn, Name: "other", User: "alice", State: discovery.Running, UIURL: ou, Source: "static"},
	}))

	// Fill every slot with an answer that stalls after its headers.
	var wg sync.WaitGroup
	bodies := make(chan string, limit)
	for range limit {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, body := h.do(t, "GET", "/app/"+appLive+"/stall/", "alice", nil)
			bodies <- body
		}()
	}
	awaitEntered(t, entered, limit)

	resp, body := h.do(t, "GET", "/app/"+appLive+"/jobs/", "alice", nil)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "10" || !strings.Contains(body, "Upstream busy") {
		t.Errorf("request past the limit: %d Retry-After %q %.300q; want the busy 503", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if n := seen.Load(); n != limit {
		t.Errorf("the driver saw %d requests; want %d (the busy one must not reach it)", n, limit)
	}
	select {
	case id := <-h.suspects:
		t.Errorf("a busy driver was reported as suspect (%q): it has not ended", id)
	default:
	}
	if resp, body := h.do(t, "GET", "/app/"+appYarn+"/jobs/", "alice", nil); resp.StatusCode != http.StatusOK || body != "other driver" {
		t.Errorf("another driver while the first is full: %d %q", resp.StatusCode, body)
	}

	release()
	wg.Wait()
	for range limit {
		if b := <-bodies; b != "first part\nrest\n" {
			t.Errorf("a stalled answer ended as %q", b)
		}
	}
	// Every slot is free again: limit+1 requests in a row all reach it.
	for i := range limit + 1 {
		if resp, body := h.do(t, "GET", "/app/"+appLive+"/jobs/", "alice", nil); resp.StatusCode != http.StatusOK || body != "first part\nrest\n" {
			t.Errorf("request %d after the stall: %d %q", i, resp.StatusCode, body)
		}
	}
}

// TestHistoryServerUnbounded: the configured History Server, which serves
// every team, has no slot limit.
func TestHistoryServerUnbounded(t *testing.T) {
	hs, _, entered, release := stallingServer(t)
	h := newHarness(t, func(o *Options) {
		o.Config.MaxRequestsPerDriver = 1
		o.Config.DialTimeout = 300 * time.Millisecond
		o.HistoryServers = map[string]*url.URL{"main": hs}
	})
	ref := discovery.HistoryRef{Server: "main", BaseURL: hs, Attempts: []string{"1"}, Completed: true}
	h.reg.Store(discovery.NewSnapshot([]*discovery.App{{ID: appHistory, Name: "nightly", User: "alice",
		State: discovery.Ended, Source: "history:main", History: []discovery.HistoryRef{ref}}}))
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			if resp, body := h.do(t, "GET", "/hs/main/history/"+appHistory+"/1/stall/", "alice", nil); resp.StatusCode != http.StatusOK {
				t.Errorf("History Server request: %d %.200q", resp.StatusCode, body)
			}
		})
	}
	awaitEntered(t, entered, 3)
	release()
	wg.Wait()
}

// stallingServer answers every request with a first part and, for paths
// with "/stall/", the rest only once release is closed; it counts the
// requests it sees and signals each after the first part.
func stallingServer(t *testing.T) (u *url.URL, seen *atomic.Int32, entered chan struct{}, release func()) {
	seen = new(atomic.Int32)
	entered = make(chan struct{}, 16)
	stalled := make(chan struct{})
	release = sync.OnceFunc(func() { close(stalled) })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "first part\n")
		w.(http.Flusher).Flush()
		entered <- struct{}{}
		if strings.Contains(r.URL.Path, "/stall/") {
			<-stalled
		}
		_, _ = io.WriteString(w, "rest\n")
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(release) // first: Close waits for the handlers
	u, _ = url.Parse(srv.URL)
	return u, seen, entered, release
}

// awaitEntered waits for n requests to reach a stallingServer.
func awaitEntered(t *testing.T, entered chan struct{}, n int) {
	t.Helper()
	for range n {
		select {
		case <-entered:
		case <-time.After(10 * time.Second):
			t.Fatalf("the stalling server did not get %d requests", n)
		}
	}
}

// TestUpstreamSlotsFreedOnError: failed round trips give their slot back.
func TestUpstreamSlotsFreedOnError(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Config.MaxRequestsPerDriver = 1 })
	for i := range 3 {
		resp, body := h.do(t, "GET", "/app/"+appDead+"/jobs/", "alice", nil)
		if resp.StatusCode != http.StatusBadGateway || strings.Contains(body, "Upstream busy") {
			t.Errorf("request %d to a refusing driver: %d %.200q; want its 502, not busy", i, resp.StatusCode, body)
		}
	}
}

// TestSlotBodyClosesOnce: closing an answer twice gives back one slot.
func TestSlotBodyClosesOnce(t *testing.T) {
	l := newSlotLimit(roundTripFunc(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("x"))}, nil
	}), 2, time.Millisecond)
	req := httptest.NewRequest("GET", "http://driver.test/", nil)
	a, err := l.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := l.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = a.Body.Close()
	_ = a.Body.Close()
	if n := l.inFlight(); n != 1 {
		t.Fatalf("in flight after closing one answer twice: %d; want 1", n)
	}
	_ = b.Body.Close()
	if n := l.inFlight(); n != 0 {
		t.Fatalf("in flight after closing both: %d; want 0", n)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
