package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sparkgate/sparkgate/proxy/discovery"
)

// freeAddr returns a loopback address that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestRunServesAndShutsDownGracefully starts the whole gateway, waits for it
// to answer, reads its metrics on their own listener, cancels its context
// (what SIGTERM does) and expects run to return without error once
// in-flight work is done.
func TestRunServesAndShutsDownGracefully(t *testing.T) {
	addr, metricsAddr := freeAddr(t), freeAddr(t)
	// A History Server nobody runs: discovery reports it down.
	dead := "http://" + freeAddr(t)
	cfg := Config{Listen: addr, MetricsListen: metricsAddr, DebugPprof: true, Discovery: discovery.Config{
		History: []discovery.HistorySource{{Name: "dead", URL: dead}},
	}}
	cfg.Log.Level = "warn"
	cfg.SetDefaults()
	if errs := cfg.Validate(); len(errs) > 0 {
		t.Fatalf("config: %v", errs)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, cfg) }()

	var resp *http.Response
	var err error
	for i := 0; i < 200; i++ {
		resp, err = http.Get("http://" + addr + "/_/healthz")
		if err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		cancel()
		t.Fatalf("gateway never answered: %v", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /_/healthz = %d; want 200", resp.StatusCode)
	}
	// A request without a session is challenged, not served.
	resp, err = http.Get("http://" + addr + "/api/v1/applications")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /api/v1/applications without a session = %d; want 401", resp.StatusCode)
	}
	// Both requests are counted, on the metrics listener only, beside the
	// dead History Server (once discovery has polled it).
	var body []byte
	for range 200 {
		resp, err = http.Get("http://" + metricsAddr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ = io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if strings.Contains(string(body), "sparkgate_discovery_source_up") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, want := range []string{
		`sparkgate_http_requests_total{code="200",route="gateway"} 1`,
		`sparkgate_http_requests_total{code="401",route="api-list"} 1`,
		`sparkgate_discovery_source_up{source="history:dead"} 0`,
		"go_goroutines ",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("GET /metrics lacks %q:\n%s", want, body)
		}
	}
	if resp, err := http.Get("http://" + addr + "/metrics"); err == nil {
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("GET /metrics on the gateway's own listener = 200; want it not served there")
		}
	}
	// With debug_pprof, a heap profile (gzipped protobuf) on the metrics
	// listener; never on the gateway's own, even with a session's worth of
	// nothing (net/http/pprof registers itself on http.DefaultServeMux).
	resp, err = http.Get("http://" + metricsAddr + "/debug/pprof/heap")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(body) < 2 || body[0] != 0x1f || body[1] != 0x8b {
		t.Errorf("GET /debug/pprof/heap on the metrics listener = %d, %d bytes; want 200 and a gzipped profile", resp.StatusCode, len(body))
	}
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/cmdline"} {
		if resp, err := http.Get("http://" + addr + path); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				t.Errorf("GET %s on the gateway's own listener = 200; want it not served there", path)
			}
		}
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run after cancel = %v; want nil (graceful shutdown)", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return after its context was cancelled")
	}
	if _, err := http.Get("http://" + addr + "/_/healthz"); err == nil {
		t.Errorf("gateway still answers after shutdown")
	}
}
