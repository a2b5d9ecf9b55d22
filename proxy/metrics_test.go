package proxy

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
)

// TestMetrics sends one request of each kind through a gateway with
// metrics and reads every counter and the apps gauge back.
func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	var m *Metrics
	h := newHarness(t, func(o *Options) {
		var err error
		if m, err = NewMetrics(reg, o.Registry); err != nil {
			t.Fatal(err)
		}
		o.Metrics = m
	})
	gw := httptest.NewServer(Middleware(h.srv, zap.NewNop(), m))
	t.Cleanup(gw.Close)
	h.gw = gw // h.do now goes through the instrumented gateway

	for _, r := range []struct {
		path, user string
		want       int
	}{
		{"/app/" + appLive + "/jobs/", "alice", http.StatusOK},
		{"/app/" + appLive + "/jobs/", "alice", http.StatusOK},
		{"/app/" + appDenied + "/jobs/", "alice", http.StatusNotFound},
		{"/app/" + appLive + "/jobs/job/kill/?id=1", "alice", http.StatusForbidden},
		{"/app/" + appDead + "/jobs/", "alice", http.StatusBadGateway},
		{"/app/" + appLive + "/away/", "alice", http.StatusServiceUnavailable},
		{"/_/healthz", "", http.StatusOK},
		{"/nowhere", "alice", http.StatusNotFound},
	} {
		if resp, _ := h.do(t, http.MethodGet, r.path, r.user, nil); resp.StatusCode != r.want {
			t.Fatalf("GET %s = %d; want %d", r.path, resp.StatusCode, r.want)
		}
	}
	for _, c := range []struct {
		name string
		got  float64
		want float64
	}{
		{"requests app 200", testutil.ToFloat64(m.requests.WithLabelValues("app", "200")), 2},
		{"requests app 403", testutil.ToFloat64(m.requests.WithLabelValues("app", "403")), 1},
		{"requests app 404", testutil.ToFloat64(m.requests.WithLabelValues("app", "404")), 1},
		{"requests app 502", testutil.ToFloat64(m.requests.WithLabelValues("app", "502")), 1},
		{"requests gateway 200", testutil.ToFloat64(m.requests.WithLabelValues("gateway", "200")), 1},
		{"requests not-found 404", testutil.ToFloat64(m.requests.WithLabelValues("not-found", "404")), 1},
		{"view allowed", testutil.ToFloat64(m.decisions.WithLabelValues("view", "allow")), 4},
		{"view denied", testutil.ToFloat64(m.decisions.WithLabelValues("view", "deny")), 1},
		{"kill refused", testutil.ToFloat64(m.killRefused.WithLabelValues("state_changing")), 1},
		{"upstream refused", testutil.ToFloat64(m.upstreamErrors.WithLabelValues("refused")), 1},
		{"upstream redirect away", testutil.ToFloat64(m.upstreamErrors.WithLabelValues("redirect_away")), 1},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v; want %v", c.name, c.got, c.want)
		}
	}
	if n := testutil.CollectAndCount(m.duration); n == 0 {
		t.Errorf("request duration histogram has no series")
	}
	// The harness knows four running apps (one found by a probe, one on
	// YARN) and two finished ones.
	want := `
# HELP sparkgate_apps Applications the gateway knows, by state (running, finished) and the kind of source that found them (log, probe, master, static, kubernetes, yarn, history).
# TYPE sparkgate_apps gauge
sparkgate_apps{source="history",state="finished"} 1
sparkgate_apps{source="probe",state="running"} 1
sparkgate_apps{source="static",state="finished"} 1
sparkgate_apps{source="static",state="running"} 2
sparkgate_apps{source="yarn",state="running"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "sparkgate_apps"); err != nil {
		t.Error(err)
	}
}
