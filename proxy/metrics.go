package proxy

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sparkgate/sparkgate/proxy/discovery"
)

// Metrics are the gateway's Prometheus metrics: requests by route kind and
// status, their latency, authorization verdicts, kill-guard refusals,
// upstream failures, and the apps it knows. Every label takes values from
// a small fixed set (never an app id, user or path), so the series stay
// few however many apps and users there are. A nil *Metrics records
// nothing.
type Metrics struct {
	requests       *prometheus.CounterVec
	duration       *prometheus.HistogramVec
	decisions      *prometheus.CounterVec
	killRefused    *prometheus.CounterVec
	upstreamErrors *prometheus.CounterVec
	// finishedSummaries counts the finished apps' index summaries read
	// (index_finished.go).
	finishedSummaries *prometheus.CounterVec
}

// NewMetrics registers the metrics with r; apps is read at each scrape for
// the sparkgate_apps gauge.
func NewMetrics(r prometheus.Registerer, apps *discovery.Registry) (*Metrics, error) {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sparkgate_http_requests_total",
			Help: "Requests answered, by route kind (app, proxy, history, api-app, index, auth, ...) and status code.",
		}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sparkgate_http_request_duration_seconds",
			Help:    "Time to answer a request in full, by route kind.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"route"}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sparkgate_authz_decisions_total",
			Help: "Authorization decisions on requests (not on list filtering), by action (view, modify) and verdict (allow, deny).",
		}, []string{"action", "verdict"}),
		killRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sparkgate_killguard_refused_total",
			Help: "Requests the kill guard refused, by reason: state_changing (kill, hold, resume...), method (not GET/HEAD), other (heap histogram, thread dump).",
		}, []string{"reason"}),
		upstreamErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sparkgate_upstream_errors_total",
			Help: "Requests to drivers and History Servers that failed, by kind: refused, closed, timeout, busy (every slot of the upstream taken), redirect_away, encoded_html, not_confirmed (a new connection to a driver whose address was not confirmed to serve its app), other.",
		}, []string{"kind"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.decisions, m.killRefused, m.upstreamErrors, appsCollector{apps}} {
		if err := r.Register(c); err != nil {
			return nil, fmt.Errorf("registering metrics: %w", err)
		}
	}
	m.finishedSummaries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sparkgate_history_summaries_total",
		Help: "Index summaries of finished apps read from History Servers (once per completed attempt, as discovery reads its ACLs), by result (ok, error).",
	}, []string{"result"})
	if err := r.Register(m.finishedSummaries); err != nil {
		return nil, fmt.Errorf("registering metrics: %w", err)
	}
	return m, nil
}

// observeFinishedSummary counts one finished app's summary read.
func (m *Metrics) observeFinishedSummary(ok bool) {
	if m == nil {
		return
	}
	result := "error"
	if ok {
		result = "ok"
	}
	m.finishedSummaries.WithLabelValues(result).Inc()
}

func (m *Metrics) observeRequest(route string, status int, d time.Duration) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
	m.duration.WithLabelValues(route).Observe(d.Seconds())
}

func (m *Metrics) observeDecision(action Action, allow bool) {
	if m == nil {
		return
	}
	verdict := "deny"
	if allow {
		verdict = "allow"
	}
	m.decisions.WithLabelValues(action.String(), verdict).Inc()
}

func (m *Metrics) observeKillRefused(reason string) {
	if m == nil {
		return
	}
	switch reason {
	case ReasonStateChanging:
		reason = "state_changing"
	case ReasonMethod:
		reason = "method"
	default:
		reason = "other"
	}
	m.killRefused.WithLabelValues(reason).Inc()
}

// observeUpstreamError counts a failure of the kind upstreamErrorKind gave.
func (m *Metrics) observeUpstreamError(kind string) {
	if m == nil {
		return
	}
	m.upstreamErrors.WithLabelValues(kind).Inc()
}

// routeLabel names a request's route for metrics: the kind the server
// parsed, or for requests it never routed (sign-in, health), what their
// path is.
func routeLabel(st *reqState, path string) string {
	switch {
	case st.routed:
		return st.route.Kind.String()
	case strings.HasPrefix(path, "/oauth2/"):
		return KindAuth.String()
	case strings.HasPrefix(path, "/_/"):
		return KindGateway.String()
	}
	return KindNotFound.String()
}

var appsDesc = prometheus.NewDesc("sparkgate_apps",
	"Applications the gateway knows, by state (running, finished) and the kind of source that found them (log, probe, master, static, kubernetes, yarn, history).",
	[]string{"state", "source"}, nil)

// appsCollector counts the registry's current snapshot at each scrape, so
// the gauge needs no bookkeeping on the discovery side.
type appsCollector struct{ reg *discovery.Registry }

func (c appsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- appsDesc }

func (c appsCollector) Collect(ch chan<- prometheus.Metric) {
	type key struct{ state, source string }
	counts := map[key]int{}
	for _, a := range c.reg.Load().Apps() {
		source, _, _ := strings.Cut(a.Source, ":")
		counts[key{a.State.String(), source}]++
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(appsDesc, prometheus.GaugeValue, float64(n), k.state, k.source)
	}
}
