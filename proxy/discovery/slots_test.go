package discovery

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// stallingUI is one user's process named at many paths: it shows Spark's
// start-up placeholder at the first request under each first path segment
// (which verification retries for startingMax) and holds every later one
// until the caller gives up (a call timeout a try).
func stallingUI(t *testing.T) *httptest.Server {
	t.Helper()
	var mu sync.Mutex
	seen := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		first, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		mu.Lock()
		again := seen[first]
		seen[first] = true
		mu.Unlock()
		if !again {
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte("Spark is starting up. Please wait a while until it's ready."))
			return
		}
		<-r.Context().Done()
	}))
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	return srv
}

// writeUILogs writes one driver log per path of each server, as a user
// may (each log is one candidate to verify).
func writeUILogs(t *testing.T, dir string, servers []*httptest.Server, paths int) {
	t.Helper()
	for s, srv := range servers {
		for i := range paths {
			line := fmt.Sprintf("24/05/01 12:34:56 INFO SparkUI: Bound SparkUI to 0.0.0.0, and started at %s/u%d\n", srv.URL, i)
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("s%d-u%d.log", s, i)), []byte(line), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestConfirmNotBehindVerifications: the proxy confirms a live app's
// driver before each new connection to it. Confirm took one of the driver
// slots that verification shares, and one user's stalling UIs (named in
// log lines, at several ports) held them all: every team's app waited
// behind them, for longer than a request's dial timeout.
func TestConfirmNotBehindVerifications(t *testing.T) {
	t.Parallel()
	drv := newFakeDriver(t, "local-victim")
	dir := t.TempDir()
	d, reg := startDiscoverer(t, Config{
		Static: []string{drv.srv.URL},
		Logs:   []LogSource{{Paths: []string{filepath.Join(dir, "*.log")}, Host: "127.0.0.1"}},
	})
	waitFor(t, reg, "the victim's app live", live("local-victim"))
	servers := make([]*httptest.Server, 4*driverParallel/endpointParallel)
	for i := range servers {
		servers[i] = stallingUI(t)
	}
	writeUILogs(t, dir, servers, 2*endpointParallel)
	waitStalled(t, d.c)
	ctx, cancel := context.WithTimeout(context.Background(), 2*callTimeout)
	defer cancel()
	if err := d.Confirm(ctx, "local-victim"); err != nil {
		t.Errorf("Confirm(local-victim) at its own driver = %v; want nil: it waited for discovery's driver slots", err)
	}
}

// TestOneEndpointHoldsFewDriverSlots: a process named at many paths (a log
// line each) holds endpointParallel of the driver slots, not all of them:
// another team's new driver is verified while it stalls.
func TestOneEndpointHoldsFewDriverSlots(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d, reg := startDiscoverer(t, Config{Logs: []LogSource{{Paths: []string{filepath.Join(dir, "*.log")}, Host: "127.0.0.1"}}})
	writeUILogs(t, dir, []*httptest.Server{stallingUI(t)}, 16*driverParallel)
	waitStalled(t, d.c)
	drv := newFakeDriver(t, "local-victim")
	line := "24/05/01 12:34:56 INFO SparkUI: Bound SparkUI to 0.0.0.0, and started at " + drv.srv.URL + "\n"
	if err := os.WriteFile(filepath.Join(dir, "victim.log"), []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, reg, "the victim's app live beside a stalling endpoint's 512 candidates", live("local-victim"))
	if n := len(d.c.drivers); n > endpointParallel {
		t.Errorf("one endpoint holds %d driver slots; want at most %d", n, endpointParallel)
	}
}

// waitStalled waits until verification holds driver slots (the stalling
// candidates are read and being tried).
func waitStalled(t *testing.T, c *client) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(c.drivers) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no verification started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(callTimeout / 2) // the first tries answered; the stalling ones hold their slots
}
