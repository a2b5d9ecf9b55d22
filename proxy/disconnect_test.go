package proxy

import (
	"context"
	"net/http"
	"testing"
	"time"

	"go.uber.org/zap"
)

// A client that gives up while the driver is still working is not an
// error of the gateway or of the driver: no warning, no Suspect, and the
// access log says 499.
func TestClientDisconnectIsNotAnError(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Config.ResponseHeaderTimeout = time.Minute })
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", h.gw.URL+"/app/"+appLive+"/slow", nil)
	req.AddCookie(&http.Cookie{Name: sessionName, Value: "alice"})
	done := make(chan error, 1)
	go func() {
		resp, err := h.client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	waitFor(t, func() bool { return len(h.drv.requests()) == 1 })
	cancel()
	if err := <-done; err == nil {
		t.Fatal("cancelled request succeeded")
	}
	waitFor(t, func() bool { return h.logs.FilterMessage("request").Len() == 1 })
	if got := h.logs.FilterMessage("request").All()[0].ContextMap()["status"]; got != int64(statusClientClosed) {
		t.Errorf("access log status = %v; want %d", got, statusClientClosed)
	}
	for _, e := range h.logs.All() {
		if e.Level >= zap.WarnLevel {
			t.Errorf("logged %s %q %v; want no warning for a client that left", e.Level, e.Message, e.ContextMap())
		}
	}
	select {
	case id := <-h.suspects:
		t.Errorf("Suspect(%q) after a client disconnect; want no call", id)
	default:
	}
}

func TestUpstreamCacheBounded(t *testing.T) {
	h := newHarness(t, nil)
	for port := 1; port <= maxUpstreams+100; port++ {
		u := *h.drv.url()
		u.Host = "10.0.0.1:" + time.Duration(port).String()
		h.srv.upstreams.get(&u, "driver")
	}
	if n := len(h.srv.upstreams.m); n > maxUpstreams {
		t.Errorf("proxy cache holds %d upstreams; want at most %d", n, maxUpstreams)
	}
	a := h.srv.upstreams.get(h.drv.url(), "driver")
	if b := h.srv.upstreams.get(h.drv.url(), "driver"); a != b {
		t.Error("second get built a new reverse proxy; want the cached one")
	}
}

// waitFor polls cond (for events in other goroutines); it fails the test
// only if cond never holds, so it asserts no timing.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for range 2000 {
		if cond() {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("condition never became true")
}
