package proxy

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sparkgate/sparkgate/proxy/discovery"
)

// TestNewDriverConnectionConfirmed: a new connection to a live app's
// driver is used only once discovery confirms that the address still
// serves the app (Options.Confirm); requests over a kept connection, and
// those to a History Server, ask nothing. When another app has taken the
// port, the request is answered with a page that reloads itself and the
// address gets no request.
func TestNewDriverConnectionConfirmed(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	var answer error
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	h := newHarness(t, func(o *Options) {
		o.Confirm = func(_ context.Context, id string) error {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, id)
			return answer
		}
	})
	h.srv.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	later := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	confirmations := func() int { mu.Lock(); defer mu.Unlock(); return len(asked) }

	for i := range 3 {
		if resp, body := h.do(t, "GET", "/app/"+appLive+"/jobs/", "alice", nil); resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d = %d %s", i, resp.StatusCode, body)
		}
	}
	if n := confirmations(); n != 1 || asked[0] != appLive {
		t.Errorf("three requests over one kept connection asked %d confirmations (%v); want one, of %s", n, asked, appLive)
	}
	if resp, _ := h.do(t, "GET", "/hs/main/history/"+appHistory+"/1/jobs/", "alice", nil); resp.StatusCode != http.StatusOK || confirmations() != 1 {
		t.Errorf("a History Server page = %d, confirmations %d; want 200 and none asked", resp.StatusCode, confirmations())
	}

	// Within confirmFresh, a new connection stands on the last
	// confirmation; after it, a new one is asked.
	h.srv.upstreams.transport.CloseIdleConnections()
	if resp, _ := h.do(t, "GET", "/app/"+appLive+"/jobs/", "alice", nil); resp.StatusCode != http.StatusOK || confirmations() != 1 {
		t.Errorf("a new connection just after a confirmation = %d, confirmations %d; want 200 and 1", resp.StatusCode, confirmations())
	}
	h.srv.upstreams.transport.CloseIdleConnections()
	later(confirmFresh)
	if resp, _ := h.do(t, "GET", "/app/"+appLive+"/jobs/", "alice", nil); resp.StatusCode != http.StatusOK || confirmations() != 2 {
		t.Errorf("a new connection later = %d, confirmations %d; want 200 and 2", resp.StatusCode, confirmations())
	}

	// Another app now answers at the address.
	mu.Lock()
	answer = fmt.Errorf("%w: answers as app-2", discovery.ErrReplaced)
	mu.Unlock()
	h.srv.upstreams.transport.CloseIdleConnections()
	later(confirmFresh)
	before := len(h.drv.requests())
	resp, body := h.do(t, "GET", "/app/"+appLive+"/jobs/", "alice", nil)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(body, "could not be confirmed") {
		t.Errorf("a page from a replaced address = %d (Retry-After %q); want 503 that reloads itself:\n%s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if n := len(h.drv.requests()) - before; n != 0 {
		t.Errorf("the replaced address got %d requests; want none", n)
	}
	// Discovery.Confirm itself has the app checked again in turn
	// (TestConfirmEndsReplacedApp).
}

// TestConfirmerOneAtATime: the new connections of one page's assets,
// made at once, share one confirmation; a failed one is not kept.
func TestConfirmerOneAtATime(t *testing.T) {
	var calls atomic.Int32
	release := make(chan struct{})
	c := newConfirmer(func(context.Context, string) error {
		calls.Add(1)
		<-release
		return nil
	}, time.Now)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if err := c.check(context.Background(), "app-1"); err != nil {
				t.Error(err)
			}
		})
	}
	// Let the eight reach the confirmation under way, then end it.
	for deadline := time.Now().Add(5 * time.Second); calls.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	close(release)
	wg.Wait()
	if n := calls.Load(); n != 1 {
		t.Errorf("eight checks at once ran %d confirmations; want 1", n)
	}

	fail := newConfirmer(func(context.Context, string) error { calls.Add(1); return discovery.ErrReplaced }, time.Now)
	calls.Store(0)
	for range 2 {
		if err := fail.check(context.Background(), "app-1"); err == nil {
			t.Error("a failed confirmation passed")
		}
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("two checks after failures ran %d confirmations; want 2 (a failure is not kept)", n)
	}
}
