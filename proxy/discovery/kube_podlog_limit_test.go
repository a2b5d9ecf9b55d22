package discovery

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestPodLogsDoNotThrottleDiscovery: pod-log requests, which any user who
// may view an app with a pod sends at will (each page, download or follow
// is one request to the API server), must not spend the client-side rate
// limit (QPS 20, burst 40) that discovery's lists and watches need: with one
// shared limiter, a user asking for logs faster than 20 a second holds back
// every relist and re-watch (the informers' re-watch every 5-10 minutes), so
// driver pods of every team are found and ended late.
func TestPodLogsDoNotThrottleDiscovery(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/log") {
			_, _ = io.WriteString(w, "a line\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[]}`)
	}))
	t.Cleanup(srv.Close)
	k, err := newKubeSource(KubernetesSource{APIServer: srv.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, _, err := k.clients() // discovery's client, as run makes it
	if err != nil {
		t.Fatal(err)
	}
	k.mu.Lock()
	k.cs = cs
	k.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for range 100 { // one user's burst of log pages
		wg.Add(1)
		go func() {
			defer wg.Done()
			if rc, err := k.podLog(ctx, Pod{Namespace: "spark", Name: "p"}, PodLogOptions{}); err == nil {
				_ = rc.Close()
			}
		}()
	}
	wg.Wait()
	// Right after a hundred log requests, discovery's client still has
	// its whole burst: they spent none of its tokens.
	if !cs.CoreV1().RESTClient().GetRateLimiter().TryAccept() {
		t.Errorf("discovery's client has no token left after 100 pod-log requests: one client-side rate limiter serves both")
	}
}
