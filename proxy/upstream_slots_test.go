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

// slotOptions bounds drivers to limit requests waiting for an answer,
// with a short wait for a slot and a long one for headers, so that only
// release ends a hang.
func slotOptions(limit int) func(*Options) {
	return func(o *Options) {
		o.Config.MaxRequestsPerDriver = limit
		o.Config.DialTimeout = 300 * time.Millisecond
		o.Config.ResponseHeaderTimeout = 30 * time.Second
	}
}

// TestUpstreamSlots: a driver that hangs before its headers holds at most
// MaxRequestsPerDriver of the gateway's requests; the next one gets the
// busy page without reaching it, another driver is served meanwhile, and
// every slot is free again once the driver answers.
func TestUpstreamSlots(t *testing.T) {
	const limit = 2
	drv := newStallingServer(t)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "other driver")
	}))
	t.Cleanup(other.Close)
	ou, _ := url.Parse(other.URL)
	h := newHarness(t, slotOptions(limit))
	h.reg.Store(discovery.NewSnapshot([]*discovery.App{
		{ID: appLive, Name: "etl", User: "alice", State: discovery.Running, UIURL: drv.url, Source: "static"},
		{ID: appYarn, Name: "other", User: "alice", State: discovery.Running, UIURL: ou, Source: "static"},
	}))

	var wg sync.WaitGroup
	for range limit {
		wg.Go(func() {
			if resp, body := h.do(t, "GET", "/app/"+appLive+"/hang/", "alice", nil); resp.StatusCode != http.StatusOK || body != "answer\n" {
				t.Errorf("a request the driver held: %d %.200q", resp.StatusCode, body)
			}
		})
	}
	drv.awaitEntered(t, limit)

	resp, body := h.do(t, "GET", "/app/"+appLive+"/jobs/", "alice", nil)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "10" || !strings.Contains(body, "Upstream busy") {
		t.Errorf("request past the limit: %d Retry-After %q %.300q; want the busy 503", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if n := drv.seen.Load(); n != limit {
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

	drv.release()
	wg.Wait()
	for i := range limit + 1 {
		if resp, body := h.do(t, "GET", "/app/"+appLive+"/jobs/", "alice", nil); resp.StatusCode != http.StatusOK || body != "answer\n" {
			t.Errorf("request %d after the hang: %d %q", i, resp.StatusCode, body)
		}
	}
}

// TestStreamingHoldsNoSlot: answers being sent hold no slot, so that a
// client that stops reading (here, a driver that stalls mid-body) locks
// no one else out of the app.
func TestStreamingHoldsNoSlot(t *testing.T) {
	drv := newStallingServer(t)
	h := newHarness(t, func(o *Options) {
		slotOptions(1)(o)
		// The third request's wait covers two others' round trips.
		o.Config.DialTimeout = 2 * time.Second
	})
	h.reg.Store(discovery.NewSnapshot([]*discovery.App{
		{ID: appLive, Name: "etl", User: "alice", State: discovery.Running, UIURL: drv.url, Source: "static"},
	}))
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			if resp, body := h.do(t, "GET", "/app/"+appLive+"/stall/", "alice", nil); resp.StatusCode != http.StatusOK || body != "first part\nanswer\n" {
				t.Errorf("a streaming answer: %d %.200q", resp.StatusCode, body)
			}
		})
	}
	drv.awaitEntered(t, 3)
	drv.release()
	wg.Wait()
}

// TestHistoryServerUnbounded: the configured History Server, which serves
// every team, has no slot limit.
func TestHistoryServerUnbounded(t *testing.T) {
	hs := newStallingServer(t)
	h := newHarness(t, func(o *Options) {
		slotOptions(1)(o)
		o.HistoryServers = map[string]*url.URL{"main": hs.url}
	})
	ref := discovery.HistoryRef{Server: "main", BaseURL: hs.url, Attempts: []string{"1"}, Completed: true}
	h.reg.Store(discovery.NewSnapshot([]*discovery.App{{ID: appHistory, Name: "nightly", User: "alice",
		State: discovery.Ended, Source: "history:main", History: []discovery.HistoryRef{ref}}}))
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			if resp, body := h.do(t, "GET", "/hs/main/history/"+appHistory+"/1/hang/", "alice", nil); resp.StatusCode != http.StatusOK {
				t.Errorf("History Server request: %d %.200q", resp.StatusCode, body)
			}
		})
	}
	hs.awaitEntered(t, 3)
	hs.release()
	wg.Wait()
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

// stallingServer holds requests until release: those for a path with
// "/hang/" before their headers, those with "/stall/" after their headers
// and a first part; others it answers at once. It counts the requests it
// sees and signals each on entered before it holds it.
type stallingServer struct {
	url     *url.URL
	seen    atomic.Int32
	entered chan struct{}
	release func()
}

func newStallingServer(t *testing.T) *stallingServer {
	s := &stallingServer{entered: make(chan struct{}, 16)}
	held := make(chan struct{})
	s.release = sync.OnceFunc(func() { close(held) })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.seen.Add(1)
		w.Header().Set("Content-Type", "text/plain")
		switch {
		case strings.Contains(r.URL.Path, "/hang/"):
			s.entered <- struct{}{}
			<-held
		case strings.Contains(r.URL.Path, "/stall/"):
			_, _ = io.WriteString(w, "first part\n")
			w.(http.Flusher).Flush()
			s.entered <- struct{}{}
			<-held
		}
		_, _ = io.WriteString(w, "answer\n")
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(s.release) // first: Close waits for the handlers
	s.url, _ = url.Parse(srv.URL)
	return s
}

// awaitEntered waits for n requests to reach s.
func (s *stallingServer) awaitEntered(t *testing.T, n int) {
	t.Helper()
	for range n {
		select {
		case <-s.entered:
		case <-time.After(10 * time.Second):
			s.release()
			t.Fatalf("the stalling server did not get %d requests", n)
		}
	}
}
