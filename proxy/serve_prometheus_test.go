package proxy

import (
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPrometheusSD(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.PublicURL = "https://spark.example.com" })
	tests := []struct {
		user, query string
		want        []string // "<spark_metrics> <__metrics_path__>", sorted
	}{
		{"bob", "", []string{
			"driver /app/" + appLive + "/metrics/prometheus/",
			"executors /app/" + appLive + "/metrics/executors/prometheus/"}},
		{"bob", "?metrics=executors", []string{"executors /app/" + appLive + "/metrics/executors/prometheus/"}},
		{"carol", "?metrics=driver", []string{"driver /app/" + appDenied + "/metrics/prometheus/"}},
		// alice owns the finished apps too: only live ones have metrics.
		{"alice", "?metrics=driver", []string{
			"driver /app/" + appLive + "/metrics/prometheus/",
			"driver /app/" + appDead + "/metrics/prometheus/",
			"driver /app/" + appYarn + "/metrics/prometheus/"}},
		{"dave", "", []string{}},
	}
	for _, tt := range tests {
		resp, body := h.do(t, "GET", PrometheusSDPath+tt.query, tt.user, nil)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("GET %s as %s = %d %q; want 200 JSON", tt.query, tt.user, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		var groups []sdGroup
		decodeJSON(t, body, &groups)
		got := []string{}
		for _, g := range groups {
			if !cmp.Equal(g.Targets, []string{"spark.example.com"}) || g.Labels["__scheme__"] != "https" {
				t.Errorf("%s: group %v: want target spark.example.com over https", tt.user, g)
			}
			if g.Labels["spark_app_id"] == "" || !strings.Contains(g.Labels["__metrics_path__"], g.Labels["spark_app_id"]) {
				t.Errorf("%s: group %v: app id label does not match the path", tt.user, g)
			}
			got = append(got, g.Labels["spark_metrics"]+" "+g.Labels["__metrics_path__"])
		}
		sort.Strings(got)
		sort.Strings(tt.want)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("GET %s%s as %s (-want +got):\n%s", PrometheusSDPath, tt.query, tt.user, diff)
		}
	}

	resp, body := h.do(t, "GET", PrometheusSDPath, "bob", nil)
	var groups []sdGroup
	decodeJSON(t, body, &groups)
	want := map[string]string{"spark_app_id": appLive, "spark_app_name": "etl", "spark_user": "alice",
		"spark_version": "3.5.9", "sparkgate_discovery": "static"}
	for k, v := range want {
		if groups[0].Labels[k] != v {
			t.Errorf("label %s = %q; want %q", k, groups[0].Labels[k], v)
		}
	}
	if resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("Cache-Control = %q; want no-store", resp.Header.Get("Cache-Control"))
	}

	for _, c := range []struct {
		method, path, user string
		status             int
	}{
		{"GET", PrometheusSDPath, "", http.StatusFound}, // sign-in first
		{"POST", PrometheusSDPath, "bob", http.StatusMethodNotAllowed},
		{"GET", PrometheusSDPath + "?metrics=all", "bob", http.StatusBadRequest},
		{"GET", "/_/prometheus/other", "bob", http.StatusNotFound},
	} {
		if resp, _ := h.do(t, c.method, c.path, c.user, nil); resp.StatusCode != c.status {
			t.Errorf("%s %s as %q = %d; want %d", c.method, c.path, c.user, resp.StatusCode, c.status)
		}
	}
}

// The target is the request's host when no public URL is configured.
func TestPrometheusSDRequestHost(t *testing.T) {
	h := newHarness(t, nil)
	_, body := h.do(t, "GET", PrometheusSDPath+"?metrics=driver", "bob", nil)
	var groups []sdGroup
	decodeJSON(t, body, &groups)
	host := strings.TrimPrefix(h.gw.URL, "http://")
	if len(groups) != 1 || !cmp.Equal(groups[0].Targets, []string{host}) || groups[0].Labels["__scheme__"] != "http" {
		t.Errorf("groups = %v; want one with target %s over http", groups, host)
	}
}

// The metrics paths the discovery hands out pass through to the driver
// under the view ACL, like any page.
func TestPrometheusScrapeACL(t *testing.T) {
	h := newHarness(t, nil)
	for _, p := range []string{"/metrics/prometheus/", "/metrics/executors/prometheus/"} {
		resp, body := h.do(t, "GET", "/app/"+appLive+p, "bob", nil)
		if resp.StatusCode != http.StatusOK || body != "upstream "+p {
			t.Errorf("GET /app/%s%s as bob = %d %q; want 200 from the driver", appLive, p, resp.StatusCode, body)
		}
		n := len(h.drv.requests())
		resp, _ = h.do(t, "GET", "/app/"+appLive+p, "dave", nil)
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET /app/%s%s as dave = %d; want 404", appLive, p, resp.StatusCode)
		}
		if len(h.drv.requests()) != n {
			t.Errorf("the driver received dave's request for %s", p)
		}
	}
}
