package proxy

import (
	"encoding/json"
	"net/http"
	"net/url"
)

// PrometheusSDPath is the gateway's Prometheus HTTP service discovery
// endpoint (http_sd_configs): one target group per metrics endpoint of
// every live app the caller may view.
const PrometheusSDPath = "/_/prometheus/targets"

// sdGroup is one target group of Prometheus's HTTP service discovery
// format: a JSON array of {"targets": [...], "labels": {...}}.
type sdGroup struct {
	Targets []string          `json:"targets"`
	Labels  map[string]string `json:"labels"`
}

// sparkMetricsPaths are the two Prometheus endpoints of a Spark driver UI
// (spark.ui.prometheus.enabled and a PrometheusServlet sink): the driver's
// metrics system and the executors' summary. The value is the
// spark_metrics label a scrape config can keep or drop.
var sparkMetricsPaths = []struct{ kind, path string }{
	{"driver", "/metrics/prometheus/"},
	{"executors", "/metrics/executors/prometheus/"},
}

// servePrometheusSD answers GET /_/prometheus/targets: the gateway itself
// as the target of every group, each with __metrics_path__ under
// /app/<id>/, for every live app the caller may view (finished apps have
// no metrics endpoint). ?metrics=driver or ?metrics=executors keeps one
// kind. Scrapes then go through the gateway with the same identity and
// the same view ACL as any page.
func (s *Server) servePrometheusSD(w http.ResponseWriter, r *http.Request, st *reqState) error {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return &httpError{Status: http.StatusMethodNotAllowed, Msg: "only GET and HEAD", Allow: "GET, HEAD"}
	}
	want := r.URL.Query().Get("metrics")
	if want != "" && want != "driver" && want != "executors" {
		return errorf(http.StatusBadRequest, "metrics must be driver or executors")
	}
	target, scheme := s.sdTarget(r)
	out := make([]sdGroup, 0, 16)
	for _, v := range s.visibleApps(st) {
		a := v.app
		if !a.Live() {
			continue
		}
		for _, m := range sparkMetricsPaths {
			if want != "" && want != m.kind {
				continue
			}
			out = append(out, sdGroup{
				Targets: []string{target},
				Labels: map[string]string{
					"__metrics_path__":    "/app/" + a.ID + m.path,
					"__scheme__":          scheme,
					"spark_app_id":        a.ID,
					"spark_app_name":      a.Name,
					"spark_user":          a.User,
					"spark_version":       a.SparkVersion,
					"spark_metrics":       m.kind,
					"sparkgate_discovery": discoveryKind(a.Source),
				},
			})
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if r.Method == http.MethodHead {
		return nil
	}
	_ = json.NewEncoder(w).Encode(out) // a write error means the client has gone
	return nil
}

// sdTarget is the host:port and scheme a scraper reaches the gateway at:
// the public URL's, or else the request's own.
func (s *Server) sdTarget(r *http.Request) (host, scheme string) {
	if u, err := url.Parse(s.publicURLOpt); err == nil && u.Host != "" && (u.Scheme == "http" || u.Scheme == "https") {
		return u.Host, u.Scheme
	}
	scheme = "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return r.Host, scheme
}

// discoveryKind is the kind of source that found an app ("log", "probe",
// "yarn"…), without the path or address after the colon, which scrapers
// need not learn.
func discoveryKind(source string) string {
	for i := 0; i < len(source); i++ {
		if source[i] == ':' {
			return source[:i]
		}
	}
	return source
}
