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
// holds at most MaxRequestsPerUpstream of the gateway's requests; the next
// one gets the busy page without reaching it, another driver is served
// meanwhile, and a slot is free again once its answer ends, also after
// upstream errors.
func TestUpstreamSlots(t *testing.T) {
	const limit = 2
	var seen atomic.Int32
	entered := make(chan struct{}, 16)
	release := make(chan struct{})
	stall := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "first part\n")
		w.(http.Flusher).Flush()
		entered <- struct{}{}
		if strings.Contains(r.URL.Path, "/stall/") {
			<-release
		}
		_, _ = io.WriteString(w, "rest\n")
	}))
	t.Cleanup(stall.Close)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "other driver")
	}))
	t.Cleanup(other.Close)

	h := newHarness(t, func(o *Options) {
		o.Config.MaxRequestsPerUpstream = limit
		o.Config.DialTimeout = 300 * time.Millisecond
	})
	su, _ := url.Parse(stall.URL)
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
	for range limit {
		select {
		case <-entered:
		case <-time.After(10 * time.Second):
			t.Fatal("the stalling driver did not get the first requests")
		}
	}

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

	close(release)
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

// TestUpstreamSlotsFreedOnError: failed round trips give their slot back.
func TestUpstreamSlotsFreedOnError(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Config.MaxRequestsPerUpstream = 1 })
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
