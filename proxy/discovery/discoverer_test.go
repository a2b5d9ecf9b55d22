package discovery

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap/zaptest"
)

// waitFor polls the registry until cond holds; the deadline only bounds a
// failing test, nothing is asserted about time.
func waitFor(t *testing.T, reg *Registry, what string, cond func(*Snapshot) bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if cond(reg.Load()) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	var ids []string
	for _, a := range reg.Load().Apps() {
		ids = append(ids, fmt.Sprintf("%s(%s)", a.ID, a.State))
	}
	t.Fatalf("timed out waiting for %s; registry: %v", what, ids)
}

func startDiscoverer(t *testing.T, cfg Config) (*Discoverer, *Registry) {
	t.Helper()
	reg := NewRegistry()
	if cfg.Interval == 0 {
		cfg.Interval = time.Duration(100 * time.Millisecond)
	}
	d := New(cfg, reg, zaptest.NewLogger(t))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run() = %v; want nil after cancel", err)
		}
	})
	return d, reg
}

func live(id string) func(*Snapshot) bool {
	return func(s *Snapshot) bool { a, ok := s.Lookup(id); return ok && a.Live() }
}

func ended(id string) func(*Snapshot) bool {
	return func(s *Snapshot) bool { a, ok := s.Lookup(id); return ok && a.State == Ended && !a.Live() }
}

func TestDiscovererStaticLivenessAndPortReuse(t *testing.T) {
	t.Parallel()
	drv := newFakeDriver(t, "local-1")
	d, reg := startDiscoverer(t, Config{Static: []string{drv.srv.URL}})
	// Published at once; its ACLs once its environment is read.
	waitFor(t, reg, "local-1 live with its ACLs", func(s *Snapshot) bool {
		a, ok := s.Lookup("local-1")
		return ok && a.Live() && a.ACLProps != nil
	})
	a, _ := reg.Lookup("local-1")
	if a.User != "alice" || a.Name != "demo" || a.SparkVersion != "3.5.9" || a.ACLProps["spark.ui.view.acls"] != "alice,bob" || a.Source != "static" || a.UIURL.String() != drv.srv.URL {
		t.Errorf("app = %+v", a)
	}
	waitFor(t, reg, "ready", func(*Snapshot) bool { return d.Ready() })

	// Another driver now answers at the same URL: the old app ends, the
	// new one is added.
	drv.setID("local-2")
	waitFor(t, reg, "local-2 live", live("local-2"))
	waitFor(t, reg, "local-1 ended", ended("local-1"))

	// The driver goes away; Suspect ends it at the first refusal.
	drv.srv.Close()
	d.Suspect("local-2")
	waitFor(t, reg, "local-2 ended", ended("local-2"))
	a, _ = reg.Lookup("local-2")
	if a.UIURL == nil || a.EndTime.IsZero() {
		t.Errorf("ended app = %+v; want UIURL kept and EndTime set", a)
	}
}

// TestConfirmEndsReplacedApp: Confirm asks the driver at once, out of the
// liveness checks' turn (an hour here): the app's own id and owner pass;
// another app at its address is ErrReplaced and ends the app, before any
// round would have.
func TestConfirmEndsReplacedApp(t *testing.T) {
	t.Parallel()
	drv := newFakeDriver(t, "local-1")
	d, reg := startDiscoverer(t, Config{Static: []string{drv.srv.URL}, Interval: time.Duration(time.Hour)})
	waitFor(t, reg, "local-1 live", live("local-1"))
	ctx := context.Background()
	if err := d.Confirm(ctx, "local-1"); err != nil {
		t.Errorf("Confirm(local-1) at its own driver = %v; want nil", err)
	}
	if err := d.Confirm(ctx, "local-404"); err != nil {
		t.Errorf("Confirm of an app not known = %v; want nil (nothing to confirm)", err)
	}
	drv.setID("local-2")
	if err := d.Confirm(ctx, "local-1"); !errors.Is(err, ErrReplaced) {
		t.Errorf("Confirm(local-1) with local-2 at its address = %v; want ErrReplaced", err)
	}
	waitFor(t, reg, "local-1 ended", ended("local-1"))
}

func TestDiscovererLogLineTriggersVerification(t *testing.T) {
	t.Parallel()
	drv := newFakeDriver(t, "local-7")
	drv.starting = 2
	dir := t.TempDir()
	logPath := filepath.Join(dir, "driver.log")
	// Long interval: only the log line can make the app appear quickly.
	_, reg := startDiscoverer(t, Config{
		Interval: time.Duration(time.Hour),
		Logs:     []LogSource{{Paths: []string{filepath.Join(dir, "*.log")}, Host: "127.0.0.1"}},
	})
	port := drv.url().Port()
	appendFile(t, logPath, "26/11/29 13:57:10 INFO JettyUtils: Start Jetty 0.0.0.0:0 for SparkUI\n"+line(portLine, port))
	waitFor(t, reg, "local-7 live from the log", live("local-7"))
	a, _ := reg.Lookup("local-7")
	if a.Source != "log:"+logPath || a.UIURL.String() != "http://127.0.0.1:"+port {
		t.Errorf("app source %q url %v", a.Source, a.UIURL)
	}
	// The Stopped line ends it once the port refuses.
	drv.srv.Close()
	appendFile(t, logPath, line(stoppedLine, port))
	waitFor(t, reg, "local-7 ended after Stopped", ended("local-7"))
}

func TestDiscovererHistoryMergeAndRetention(t *testing.T) {
	t.Parallel()
	drv := newFakeDriver(t, "local-1")
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/applications" {
			fmt.Fprint(w, `[{"id":"local-1","name":"demo","attempts":[{"startTimeEpoch":1,"lastUpdatedEpoch":1,"sparkUser":"alice","completed":false}]},
 {"id":"local-0","name":"old","attempts":[{"startTimeEpoch":1,"endTimeEpoch":2,"lastUpdatedEpoch":2,"sparkUser":"bob","completed":true,"appSparkVersion":"3.5.0"}]}]`)
			return
		}
		fmt.Fprint(w, `{"sparkProperties":[["spark.acls.enable","false"]]}`)
	}))
	defer hs.Close()
	other := newFakeDriver(t, "local-9")
	_, reg := startDiscoverer(t, Config{
		Static:         []string{drv.srv.URL, other.srv.URL},
		History:        []HistorySource{{Name: "hs", URL: hs.URL}},
		EndedRetention: time.Duration(time.Nanosecond),
	})
	waitFor(t, reg, "merged", func(s *Snapshot) bool {
		a, ok := s.Lookup("local-1")
		b, ok2 := s.Lookup("local-0")
		return ok && ok2 && a.Live() && len(a.History) == 1 && b.ACLProps != nil
	})
	b, _ := reg.Lookup("local-0")
	if b.State != Ended || b.User != "bob" || b.Source != "history:hs" || b.History[0].Server != "hs" || b.Live() {
		t.Errorf("history-only app = %+v", b)
	}
	// An ended app no History Server knows goes once its retention passes;
	// one that a History Server knows stays.
	waitFor(t, reg, "local-9 live", live("local-9"))
	other.srv.Close()
	drv.srv.Close()
	waitFor(t, reg, "local-9 dropped, local-1 ended but kept", func(s *Snapshot) bool {
		_, ok9 := s.Lookup("local-9")
		return !ok9 && ended("local-1")(s)
	})
}

func TestDiscovererNoSources(t *testing.T) {
	t.Parallel()
	d, reg := startDiscoverer(t, Config{})
	waitFor(t, reg, "ready", func(*Snapshot) bool { return d.Ready() })
	if n := len(reg.Load().Apps()); n != 0 {
		t.Errorf("apps = %d; want 0", n)
	}
}

// TestDiscovererPublishesBeforeEnvironment checks that a driver is routable
// as soon as its app list names it, with ACLProps nil (fail-closed) while its
// environment has not answered, and gets the real props once it does. An app
// replaced meanwhile keeps nil props.
func TestDiscovererPublishesBeforeEnvironment(t *testing.T) {
	t.Parallel()
	drv := newFakeDriver(t, "local-1")
	gate := make(chan struct{})
	drv.setEnv(gate, false)
	_, reg := startDiscoverer(t, Config{Static: []string{drv.srv.URL}})
	waitFor(t, reg, "local-1 live", live("local-1"))
	early, _ := reg.Lookup("local-1")
	if early.ACLProps != nil || early.ProxyBase != "" {
		t.Errorf("before the environment answered: ACLProps = %v, ProxyBase = %q; want nil, empty", early.ACLProps, early.ProxyBase)
	}
	close(gate)
	waitFor(t, reg, "local-1 props", func(s *Snapshot) bool {
		a, ok := s.Lookup("local-1")
		return ok && a.ACLProps != nil
	})
	a, _ := reg.Lookup("local-1")
	want := map[string]string{"spark.acls.enable": "true", "spark.ui.view.acls": "alice,bob"}
	if !cmp.Equal(a.ACLProps, want) || a.ProxyBase != "/sys" || !a.Live() {
		t.Errorf("after the environment answered: ACLProps = %v, ProxyBase = %q, live %v; want %v, /sys, true", a.ACLProps, a.ProxyBase, a.Live(), want)
	}
	// Snapshots are swapped whole: the app first published is unchanged.
	if early.ACLProps != nil || early.ProxyBase != "" {
		t.Errorf("first published app changed to ACLProps = %v, ProxyBase = %q", early.ACLProps, early.ProxyBase)
	}

	// A new driver on the same port while the environment hangs: the old
	// app ends, the new one is live with nil props until it answers.
	gate2 := make(chan struct{})
	drv.setEnv(gate2, false)
	drv.setID("local-2")
	waitFor(t, reg, "local-2 live, local-1 ended", func(s *Snapshot) bool { return live("local-2")(s) && ended("local-1")(s) })
	if b, _ := reg.Lookup("local-2"); b.ACLProps != nil {
		t.Errorf("local-2 before its environment answered: ACLProps = %v; want nil", b.ACLProps)
	}
	close(gate2)
	waitFor(t, reg, "local-2 props", func(s *Snapshot) bool {
		b, ok := s.Lookup("local-2")
		return ok && b.ACLProps != nil
	})
}

// TestDiscovererRegistersEachDriverWhenVerified: drivers found in one round
// are each routable, with their environment read, as soon as their own
// verification ends, while the round's slowest driver (its app list held)
// and a History Server's first list of 1,000 apps are still being read.
func TestDiscovererRegistersEachDriverWhenVerified(t *testing.T) {
	t.Parallel()
	slow := newFakeDriver(t, "slow-1")
	held := make(chan struct{})
	slow.mu.Lock()
	slow.appsGate = held
	slow.mu.Unlock()
	var fast []*fakeDriver
	urls := []string{slow.srv.URL}
	for i := range 20 {
		f := newFakeDriver(t, fmt.Sprintf("fast-%d", i))
		fast = append(fast, f)
		urls = append(urls, f.srv.URL)
	}
	hs := newLoadServer(t, 1000)
	_, reg := startDiscoverer(t, Config{Static: urls, History: []HistorySource{{Name: "hs", URL: hs.srv.URL}}})
	waitFor(t, reg, "every fast driver live with its environment read", func(s *Snapshot) bool {
		for _, f := range fast {
			a, ok := s.Lookup(f.id)
			if !ok || !a.Live() || a.ACLProps == nil {
				return false
			}
		}
		return true
	})
	if _, ok := reg.Lookup("slow-1"); ok || slow.inflight.Load() == 0 {
		t.Fatalf("slow-1 known %v with %d app list requests in flight; want unknown, its request still held", ok, slow.inflight.Load())
	}
	close(held)
	waitFor(t, reg, "slow-1 live", live("slow-1"))
	waitFor(t, reg, "the History Server's apps", func(s *Snapshot) bool { _, ok := s.Lookup("application_1_00999"); return ok })
}

// TestDiscovererHeldBackPublishLands: a change made while publishGap holds
// snapshots back (the last one as costly as can be) is published when the
// gap ends, with nothing else to wake Run (no round for an hour, the
// environment already read).
func TestDiscovererHeldBackPublishLands(t *testing.T) {
	t.Parallel()
	drv := newFakeDriver(t, "local-1")
	d, reg := startDiscoverer(t, Config{Static: []string{drv.srv.URL}, Interval: time.Hour})
	waitFor(t, reg, "local-1 live with its environment read", func(s *Snapshot) bool {
		a, ok := s.Lookup("local-1")
		return ok && a.Live() && a.ACLProps != nil
	})
	held := make(chan bool)
	d.events <- func() {
		d.apps["local-1"].app.Name = "renamed"
		d.dirty = true
		d.publishedAt, d.publishTook = time.Now(), time.Hour
		held <- !d.publishAllowed()
	}
	if !<-held {
		t.Fatal("publishAllowed() = true right after a publish that took an hour; want false")
	}
	waitFor(t, reg, "the renamed app published", func(s *Snapshot) bool {
		a, ok := s.Lookup("local-1")
		return ok && a.Name == "renamed"
	})
}

// TestDiscovererEnvironmentRetried checks that a failing environment keeps
// a live app fail-closed (ACLProps nil in every snapshot) and is read again,
// in the background, until it answers.
func TestDiscovererEnvironmentRetried(t *testing.T) {
	t.Parallel()
	drv := newFakeDriver(t, "local-1")
	drv.setEnv(nil, true)
	_, reg := startDiscoverer(t, Config{Static: []string{drv.srv.URL}})
	opened := false
	waitFor(t, reg, "three failed environment reads", func(s *Snapshot) bool {
		if a, ok := s.Lookup("local-1"); ok && a.ACLProps != nil {
			opened = true
		}
		return live("local-1")(s) && drv.envHits.Load() >= 3
	})
	if opened {
		t.Errorf("an environment answering 500 left ACLProps non-nil")
	}
	if a, _ := reg.Lookup("local-1"); a.ACLProps != nil || !a.Live() {
		t.Errorf("after failed reads: ACLProps = %v, live %v; want nil, true", a.ACLProps, a.Live())
	}
	drv.setEnv(nil, false)
	waitFor(t, reg, "props after the environment recovers", func(s *Snapshot) bool {
		a, ok := s.Lookup("local-1")
		return ok && a.Live() && a.ACLProps["spark.ui.view.acls"] == "alice,bob"
	})
}

func TestEnvRetryDelay(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	tests := []struct {
		n    int
		want time.Duration
	}{
		{0, 250 * ms}, {1, 250 * ms}, {2, 500 * ms}, {3, time.Second}, {8, 30 * time.Second}, {1000, 30 * time.Second},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.n), func(t *testing.T) {
			if got := envRetryDelay(tt.n); got != tt.want {
				t.Errorf("envRetryDelay(%d) = %v; want %v", tt.n, got, tt.want)
			}
		})
	}
}

// TestDiscovererSourceHealth: a ResourceManager that is down and a History
// Server that answers are reported as such, and the RM as up once it
// answers.
func TestDiscovererSourceHealth(t *testing.T) {
	t.Parallel()
	var up atomic.Bool
	rm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if !up.Load() {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"apps":null}`))
	}))
	t.Cleanup(rm.Close)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`[]`))
	}))
	t.Cleanup(hs.Close)
	d, _ := startDiscoverer(t, Config{YARN: []URLSource{{URL: rm.URL}}, History: []HistorySource{{Name: "main", URL: hs.URL}}})

	health := func(name string) (SourceHealth, bool) {
		for _, s := range d.Sources() {
			if s.Name == name {
				return s, true
			}
		}
		return SourceHealth{}, false
	}
	eventually := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; sources: %+v", what, d.Sources())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	yarn := "yarn:" + rm.URL
	eventually("the RM reported down", func() bool {
		s, ok := health(yarn)
		return ok && !s.Up && s.Failures > 0 && s.LastError != "" && s.LastSuccess.IsZero()
	})
	eventually("the History Server reported up", func() bool {
		s, ok := health("history:main")
		return ok && s.Up && !s.LastSuccess.IsZero()
	})
	up.Store(true)
	eventually("the RM reported up", func() bool {
		s, ok := health(yarn)
		return ok && s.Up && s.LastError == "" && !s.LastSuccess.IsZero()
	})
}

// TestLivenessChecksSpread: with many running drivers, a round checks about
// checksPerRound of them and every driver is still checked once per
// checkPeriod; with few, every driver every round; a failed check makes
// its app due the next round.
func TestLivenessChecksSpread(t *testing.T) {
	t.Parallel()
	for _, n := range []int{3, checksPerRound, 5 * checksPerRound} {
		d := New(Config{Interval: time.Duration(time.Second)}, NewRegistry(), nil)
		now := time.Unix(1000, 0)
		d.now = func() time.Time { return now }
		for i := range n {
			id := fmt.Sprintf("app-%d", i)
			d.apps[id] = &liveApp{app: App{ID: id, State: Running}}
		}
		period := checkPeriod(n, time.Second)
		rounds := int(period/time.Second) * 4
		checked := map[string]int{}
		most := 0
		for range rounds {
			due := d.dueChecks()
			most = max(most, len(due))
			for _, id := range due {
				checked[id]++
			}
			now = now.Add(time.Second)
		}
		if most > 2*checksPerRound {
			t.Errorf("%d drivers: a round checked %d; want about %d at most", n, most, checksPerRound)
		}
		for i := range n {
			if c := checked[fmt.Sprintf("app-%d", i)]; c < 3 || c > 5 {
				t.Fatalf("%d drivers: app-%d checked %d times in %d rounds; want 4 (once per %s)", n, i, c, rounds, period)
			}
		}
		// A failed check: due again the next round.
		a := d.apps["app-0"]
		a.nextCheck = now // as onChecked leaves it
		if due := d.dueChecks(); !slices.Contains(due, "app-0") {
			t.Errorf("%d drivers: after a failed check app-0 is not due the next round", n)
		}
	}
}
