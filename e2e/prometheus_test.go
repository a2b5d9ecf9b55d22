//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// prometheusConfs turn on a driver's two Prometheus endpoints:
// /metrics/prometheus/ (a PrometheusServlet sink of the metrics system)
// and /metrics/executors/prometheus/ (spark.ui.prometheus.enabled, off by
// default before 4.0).
var prometheusConfs = map[string]string{
	"spark.ui.prometheus.enabled":                       "true",
	"spark.metrics.conf.*.sink.prometheusServlet.class": "org.apache.spark.metrics.sink.PrometheusServlet",
	"spark.metrics.conf.*.sink.prometheusServlet.path":  "/metrics/prometheus",
}

// sparkMetricPatterns are, by spark_metrics label, a series each of a
// driver's two Prometheus endpoints must hold for app id of name.
func sparkMetricPatterns(id, name string) map[string]*regexp.Regexp {
	ns := strings.ReplaceAll(id, "-", "_")
	return map[string]*regexp.Regexp{
		// The metrics system's names: namespace (the app id), instance, source.
		"driver": regexp.MustCompile(`(?m)^metrics_` + regexp.QuoteMeta(ns) + `_driver_BlockManager_memory_\w+\{type="gauges"\} \d`),
		// PrometheusResource: one series per executor, labelled with the app.
		"executors": regexp.MustCompile(`(?m)^metrics_executor_totalTasks_total\{application_id="` + regexp.QuoteMeta(id) +
			`", application_name="` + regexp.QuoteMeta(name) + `", executor_id="driver"\} [1-9]`),
	}
}

// scrapeSD scrapes every target of app id in groups with c, as Prometheus
// would (scheme, target, __metrics_path__), and fails t unless each
// answers 200 text/plain holding want[spark_metrics]. It returns how many
// it scraped.
func scrapeSD(ctx context.Context, t *testing.T, c *http.Client, groups []sdGroup, id string, want map[string]*regexp.Regexp) int {
	t.Helper()
	n := 0
	for _, gr := range groups {
		if gr.Labels["spark_app_id"] != id {
			continue
		}
		u := gr.Labels["__scheme__"] + "://" + gr.Targets[0] + gr.Labels["__metrics_path__"]
		a, err := Get(ctx, c, u, nil)
		if err != nil {
			t.Fatal(err)
		}
		re := want[gr.Labels["spark_metrics"]]
		if a.Status != http.StatusOK || !strings.HasPrefix(a.ContentType, "text/plain") || re == nil || !re.Match(a.Body) {
			t.Errorf("scrape of %s = %d %s; want 200 text/plain matching %v; body %.600s", u, a.Status, a.ContentType, re, a.Body)
			continue
		}
		n++
		t.Logf("scraped %s: %d bytes, %d lines", gr.Labels["__metrics_path__"], len(a.Body), strings.Count(string(a.Body), "\n"))
	}
	return n
}

// sdGroup is one target group of the gateway's Prometheus HTTP service
// discovery answer.
type sdGroup struct {
	Targets []string          `json:"targets"`
	Labels  map[string]string `json:"labels"`
}

// prometheusSD reads the gateway's service discovery list as c.
func (e *aclEnv) prometheusSD(ctx context.Context, c *http.Client) ([]sdGroup, error) {
	a, err := Get(ctx, c, e.gw.URL+"/_/prometheus/targets", nil)
	if err != nil {
		return nil, err
	}
	if a.Status != http.StatusOK || !strings.HasPrefix(a.ContentType, "application/json") {
		return nil, fmt.Errorf("service discovery: %d %s %.200s", a.Status, a.ContentType, a.Body)
	}
	var groups []sdGroup
	if err := json.Unmarshal(a.Body, &groups); err != nil {
		return nil, fmt.Errorf("service discovery: %w (%.200s)", err, a.Body)
	}
	return groups, nil
}

// checkPrometheus scrapes Spark's own Prometheus endpoints through the
// gateway the way Prometheus would with http_sd_configs and a bearer
// token: the service discovery list of each user is exactly the running
// apps that user may view (the matrix proves that list against Spark),
// every target it names for G answers Spark's real metrics to the
// svc-reporter's JWT, and a user without view ACL neither sees G in the
// list nor gets its metrics.
func (e *aclEnv) checkPrometheus(t *testing.T) {
	ctx := ctxFor(t, 2*time.Minute)
	g := e.app("G") // view.acls.groups=analysts: svc-reporter and alice, not dave
	for _, u := range aclUsers {
		c := e.clients[u.Name]
		groups, err := e.prometheusSD(ctx, c)
		if err != nil {
			t.Fatalf("%s: %v", u.Name, err)
		}
		listed, err := e.gw.Apps(ctx, c)
		if err != nil {
			t.Fatalf("%s: %v", u.Name, err)
		}
		var want, got []string
		for _, a := range listed {
			if len(a.Attempts) > 0 && !a.Attempts[0].Completed {
				want = append(want, a.ID+" driver", a.ID+" executors")
			}
		}
		for _, gr := range groups {
			id := gr.Labels["spark_app_id"]
			got = append(got, id+" "+gr.Labels["spark_metrics"])
			if want := e.gw.URL; len(gr.Targets) != 1 || gr.Labels["__scheme__"]+"://"+gr.Targets[0] != want {
				t.Errorf("%s: targets %v over %s; want the gateway %s", u.Name, gr.Targets, gr.Labels["__scheme__"], want)
			}
			if !strings.HasPrefix(gr.Labels["__metrics_path__"], "/app/"+id+"/metrics/") {
				t.Errorf("%s: __metrics_path__ %q is not under /app/%s/", u.Name, gr.Labels["__metrics_path__"], id)
			}
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(want, got) {
			t.Errorf("%s: service discovery lists %v; want the running apps it may view: %v", u.Name, got, want)
		}
		switch hasG := slices.Contains(got, g.ID+" driver"); {
		case u.Name == "svc-reporter" && !hasG:
			t.Errorf("svc-reporter (analysts): G missing from service discovery")
		case u.Name == "dave" && hasG:
			t.Errorf("dave: G (view.acls.groups=analysts) in service discovery")
		}
		t.Logf("%s: %d target groups", u.Name, len(groups))
	}

	// Scrape every target of G the way Prometheus would: scheme, target
	// and __metrics_path__ from the list, the bearer token.
	groups, err := e.prometheusSD(ctx, e.clients["svc-reporter"])
	if err != nil {
		t.Fatal(err)
	}
	wantMetric := sparkMetricPatterns(g.ID, g.Driver.Opts.Name)
	scraped := 0
	for _, gr := range groups {
		if gr.Labels["spark_app_id"] != g.ID {
			continue
		}
		u := gr.Labels["__scheme__"] + "://" + gr.Targets[0] + gr.Labels["__metrics_path__"]
		a, err := Get(ctx, e.clients["svc-reporter"], u, nil)
		if err != nil {
			t.Fatal(err)
		}
		re := wantMetric[gr.Labels["spark_metrics"]]
		if a.Status != http.StatusOK || !strings.HasPrefix(a.ContentType, "text/plain") || re == nil || !re.Match(a.Body) {
			t.Errorf("bearer scrape of %s = %d %s; want 200 text/plain matching %v; body %.600s", u, a.Status, a.ContentType, re, a.Body)
			continue
		}
		scraped++
		t.Logf("scraped %s: %d bytes, %d series", gr.Labels["__metrics_path__"], len(a.Body), strings.Count(string(a.Body), "\n"))
		// dave may not view G: the same URL is refused, and nothing of it
		// leaks.
		no, err := Get(ctx, e.clients["dave"], u, nil)
		if err != nil {
			t.Fatal(err)
		}
		if no.Verdict() != "deny" || strings.Contains(string(no.Body), "metrics_") {
			t.Errorf("dave GET %s = %d %.200s; want a denial", u, no.Status, no.Body)
		}
	}
	if scraped != 2 {
		t.Errorf("scraped %d of G's endpoints; want 2 (driver and executors)", scraped)
	}
	// Without a token: sign-in, never metrics.
	a, err := Get(ctx, NoRedirectClient(nil), e.gw.URL+"/app/"+g.ID+"/metrics/prometheus/", http.Header{"Accept": {"text/plain"}})
	if err != nil {
		t.Fatal(err)
	}
	if a.Verdict() != "login" {
		t.Errorf("anonymous scrape = %d %.200s; want a sign-in answer", a.Status, a.Body)
	}
	a, err = Get(ctx, NoRedirectClient(nil), e.gw.URL+"/_/prometheus/targets", nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.Verdict() != "login" {
		t.Errorf("anonymous service discovery = %d %.200s; want a sign-in answer", a.Status, a.Body)
	}
}
