package proxy

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sparkgate/sparkgate/proxy/discovery"
)

// byNameHarness adds three runs of "nightly etl": an old finished one and
// a newer running one of alice's, and the newest, running, of carol's
// that alice may not view.
func byNameHarness(t *testing.T) *harness {
	t.Helper()
	h := newHarness(t, nil)
	start := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	apps := append(h.reg.Load().Apps(),
		&discovery.App{ID: "app-20261201080000-0001", Name: "nightly etl", User: "alice", StartTime: start.Add(-time.Hour), EndTime: start.Add(-30 * time.Minute), State: discovery.Ended, Source: "static"},
		&discovery.App{ID: "app-20261201090000-0002", Name: "nightly etl", User: "alice", StartTime: start, State: discovery.Running, UIURL: h.drv.url(), Source: "static"},
		&discovery.App{ID: "app-20261201100000-0003", Name: "nightly etl", User: "carol", StartTime: start.Add(time.Hour), State: discovery.Running, UIURL: h.drv.url(), Source: "static"},
	)
	h.reg.Store(discovery.NewSnapshot(apps))
	return h
}

// byNameCase is a GET by user of path, answered with status and, for a
// redirect, Location want.
type byNameCase struct {
	user, path, want string
	status           int
}

// getByName runs tc and returns the body of its answer.
func getByName(t *testing.T, h *harness, tc byNameCase) string {
	t.Helper()
	resp, body := h.do(t, "GET", tc.path, tc.user, nil)
	if resp.StatusCode != tc.status || resp.Header.Get("Location") != tc.want {
		t.Errorf("%s GET %s = %d %q; want %d %q\n%s", tc.user, tc.path, resp.StatusCode, resp.Header.Get("Location"), tc.status, tc.want, body)
	}
	return body
}

func TestByNameRedirect(t *testing.T) {
	t.Parallel()
	h := byNameHarness(t)
	for _, tc := range []byNameCase{
		{"alice", "/by-name/nightly%20etl/stages/?x=1", "/app/app-20261201090000-0002/stages/?x=1", http.StatusFound},
		{"alice", "/by-name/nightly%20etl", "/app/app-20261201090000-0002/", http.StatusFound},
		{"carol", "/by-name/nightly%20etl/jobs/", "/app/app-20261201100000-0003/jobs/", http.StatusFound},
		{"bob", "/by-name/nightly%20etl/", "", http.StatusNotFound},
		{"alice", "/by-name/no-such-app/", "", http.StatusNotFound},
		{"", "/by-name/nightly%20etl/", "/oauth2/start?rd=%2Fby-name%2Fnightly%2520etl%2F", http.StatusFound},
	} {
		getByName(t, h, tc)
	}
}

// TestByNamePrefersLive: with the running app gone, the link leads to the
// finished one.
func TestByNamePrefersLive(t *testing.T) {
	t.Parallel()
	h := byNameHarness(t)
	var apps []*discovery.App
	for _, a := range h.reg.Load().Apps() {
		if a.ID != "app-20261201090000-0002" {
			apps = append(apps, a)
		}
	}
	h.reg.Store(discovery.NewSnapshot(apps))
	resp, _ := h.do(t, "GET", "/by-name/nightly%20etl/", "alice", nil)
	if got := resp.Header.Get("Location"); got != "/app/app-20261201080000-0001/" {
		t.Errorf("Location = %q; want the finished run", got)
	}
}

func TestByNameAll(t *testing.T) {
	t.Parallel()
	h := byNameHarness(t)
	resp, body := h.do(t, "GET", "/by-name/nightly%20etl/?all", "alice", http.Header{"Accept": {"application/json"}})
	var rows []byNameRow
	decodeJSON(t, body, &rows)
	if resp.StatusCode != http.StatusOK || len(rows) != 2 || rows[0].ID != "app-20261201090000-0002" || !rows[0].Live ||
		rows[1].ID != "app-20261201080000-0001" || rows[1].Live {
		t.Errorf("?all = %d %+v; want alice's two runs, the running one first", resp.StatusCode, rows)
	}
	resp, body = h.do(t, "GET", "/by-name/nightly%20etl/?all", "alice", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "app-20261201080000-0001") || strings.Contains(body, "app-20261201100000-0003") {
		t.Errorf("?all page = %d; want alice's runs only\n%s", resp.StatusCode, body)
	}
}

// TestByNameSquatting: a name is anyone's to start an app under. Bob may
// view alice's "nightly etl" runs; mallory starts a newer app of that name
// whose UI everyone may view. Bob's link lists both owners' apps (300)
// rather than lead him to mallory's; alice's still leads to her own, and
// mallory's to hers. Apps the Spark operator runs, all as Spark user 185,
// are told apart by namespace; in one namespace the link follows the
// newest.
func TestByNameSquatting(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	start := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	bob := map[string]string{"spark.ui.view.acls": "bob"}
	all := map[string]string{"spark.ui.view.acls": "bob,dave"} // everyone, for the harness's authorizer
	apps := append(h.reg.Load().Apps(),
		&discovery.App{ID: "app-20261201090000-0002", Name: "nightly etl", User: "alice", StartTime: start, State: discovery.Running,
			UIURL: h.drv.url(), Source: "static", ACLProps: bob},
		&discovery.App{ID: "app-20261201100000-0003", Name: "nightly etl", User: "mallory", StartTime: start.Add(time.Hour), State: discovery.Running,
			UIURL: h.drv.url(), Source: "static", ACLProps: all},
		&discovery.App{ID: "spark-aaaa01", Name: "pyspark-shell", User: "185", StartTime: start, State: discovery.Running,
			UIURL: h.drv.url(), Source: "kubernetes", ClusterName: "etl/orders", ACLProps: all},
		&discovery.App{ID: "spark-aaaa02", Name: "pyspark-shell", User: "185", StartTime: start.Add(-time.Hour), EndTime: start.Add(-time.Minute),
			State: discovery.Ended, Source: "kubernetes", ClusterName: "etl/orders", ACLProps: all},
	)
	h.reg.Store(discovery.NewSnapshot(apps))
	for _, tc := range []byNameCase{
		{"alice", "/by-name/nightly%20etl/jobs/", "/app/app-20261201090000-0002/jobs/", http.StatusFound},
		{"mallory", "/by-name/nightly%20etl/jobs/", "/app/app-20261201100000-0003/jobs/", http.StatusFound},
		{"bob", "/by-name/nightly%20etl/jobs/?x=1", "", http.StatusMultipleChoices},
		{"dave", "/by-name/nightly%20etl/jobs/", "/app/app-20261201100000-0003/jobs/", http.StatusFound}, // mallory's alone he may view
		{"bob", "/by-name/orders/", "/app/spark-aaaa01/", http.StatusFound},
	} {
		body := getByName(t, h, tc)
		if tc.status == http.StatusMultipleChoices && (!strings.Contains(body, `href="/app/app-20261201090000-0002/jobs/?x=1"`) || !strings.Contains(body, `href="/app/app-20261201100000-0003/jobs/?x=1"`) ||
			!strings.Contains(body, "more than one owner") || !strings.Contains(body, "<td>mallory</td>")) {
			t.Errorf("%s GET %s: want both owners' apps listed\n%s", tc.user, tc.path, body)
		}
	}
	resp, body := h.do(t, "GET", "/by-name/nightly%20etl/", "bob", http.Header{"Accept": {"application/json"}})
	var rows []byNameRow
	decodeJSON(t, body, &rows)
	if resp.StatusCode != http.StatusMultipleChoices || len(rows) != 2 || rows[0].Owner != "mallory" || rows[0].Picked || rows[1].Owner != "alice" || rows[1].Picked ||
		rows[1].Link != "/app/app-20261201090000-0002/" || rows[1].Diagnosis != "/app/app-20261201090000-0002/_/diagnosis" {
		t.Errorf("bob, JSON: %d %+v; want 300 and both apps, none picked", resp.StatusCode, rows)
	}
	resp, body = h.do(t, "GET", "/by-name/nightly%20etl/?all", "bob", http.Header{"Accept": {"application/json"}})
	rows = nil
	decodeJSON(t, body, &rows)
	if resp.StatusCode != http.StatusOK || len(rows) != 2 || rows[0].Picked || rows[1].Picked {
		t.Errorf("bob, ?all: %d %+v; want 200 and both apps, none picked", resp.StatusCode, rows)
	}
	resp, body = h.do(t, "GET", "/by-name/nightly%20etl/?all", "dave", http.Header{"Accept": {"application/json"}})
	rows = nil
	decodeJSON(t, body, &rows)
	if resp.StatusCode != http.StatusOK || len(rows) != 1 || !rows[0].Picked {
		t.Errorf("dave, ?all: %d %+v; want 200, mallory's app picked", resp.StatusCode, rows)
	}

	// Another namespace's SparkApplication of the same name, as the same
	// Spark user: the namespaces tell the owners apart.
	apps = append(apps, &discovery.App{ID: "spark-bbbb01", Name: "pyspark-shell", User: "185", StartTime: start.Add(time.Hour), State: discovery.Running,
		UIURL: h.drv.url(), Source: "kubernetes", ClusterName: "scratch/orders", ACLProps: all})
	h.reg.Store(discovery.NewSnapshot(apps))
	resp, body = h.do(t, "GET", "/by-name/orders/", "bob", nil)
	if resp.StatusCode != http.StatusMultipleChoices || !strings.Contains(body, "185 in scratch") || !strings.Contains(body, "185 in etl") {
		t.Errorf("two namespaces: %d %q; want 300 listing both\n%s", resp.StatusCode, resp.Header.Get("Location"), body)
	}
}

func TestIndexOffersByName(t *testing.T) {
	t.Parallel()
	h := byNameHarness(t)
	_, body := h.do(t, "GET", "/", "alice", nil)
	if !strings.Contains(body, `href="/by-name/nightly%20etl/"`) {
		t.Errorf("index has no by-name link for \"nightly etl\"")
	}
}

func TestByNameLink(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, want string
		ok         bool
	}{
		{"nightly etl", "/by-name/nightly%20etl/", true},
		{"etl-stream", "/by-name/etl-stream/", true},
		{"Ümlaut ✓", "/by-name/%C3%9Cmlaut%20%E2%9C%93/", true},
		{"a/b", "", false},
		{"a;b", "", false},
		{"..", "", false},
		{"", "", false},
		{"tab\there", "", false},
	} {
		got, ok := byNameLink(tc.name)
		if got != tc.want || ok != tc.ok {
			t.Errorf("byNameLink(%q) = %q, %v; want %q, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

// TestByNameSparkApplication: an app the Spark operator runs is found by
// its SparkApplication's name (what the operator keeps across runs), and
// the index offers that link; its spark.app.name still works.
func TestByNameSparkApplication(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	start := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	apps := append(h.reg.Load().Apps(),
		&discovery.App{ID: "spark-0a1b2c", Name: "pyspark-shell", User: "alice", StartTime: start, State: discovery.Running,
			UIURL: h.drv.url(), Source: "kubernetes", ClusterName: "etl/orders-stream", ClusterState: "RUNNING"},
		&discovery.App{ID: "spark-99ff00", Name: "pyspark-shell", User: "alice", StartTime: start.Add(-time.Hour), EndTime: start.Add(-time.Minute),
			State: discovery.Ended, Source: "kubernetes", ClusterName: "etl/orders-stream", ClusterState: "FAILED"},
	)
	h.reg.Store(discovery.NewSnapshot(apps))
	for path, want := range map[string]string{
		"/by-name/orders-stream/jobs/": "/app/spark-0a1b2c/jobs/",
		"/by-name/pyspark-shell/":      "/app/spark-0a1b2c/",
	} {
		resp, _ := h.do(t, "GET", path, "alice", nil)
		if got := resp.Header.Get("Location"); resp.StatusCode != http.StatusFound || got != want {
			t.Errorf("GET %s = %d %q; want 302 %q", path, resp.StatusCode, got, want)
		}
	}
	_, body := h.do(t, "GET", "/", "alice", nil)
	if !strings.Contains(body, `href="/by-name/orders-stream/"`) || strings.Contains(body, `href="/by-name/pyspark-shell/"`) {
		t.Errorf("index: want the by-name link of the SparkApplication, not of spark.app.name")
	}
}

// TestByNameYARN: an app found through a ResourceManager is found by the
// RM's application name (here not its spark.app.name, as when a submitter
// names it), and its index row shows that name and the RM's queue.
func TestByNameYARN(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	start := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	apps := append(h.reg.Load().Apps(),
		&discovery.App{ID: "application_1764579600000_0007", Name: "pyspark-shell", User: "alice", StartTime: start, State: discovery.Running,
			UIURL: h.drv.url(), Source: "yarn:http://rm:8088", YARNName: "nightly-etl", YARNQueue: "root.etl"},
	)
	h.reg.Store(discovery.NewSnapshot(apps))
	for path, want := range map[string]string{
		"/by-name/nightly-etl/stages/": "/app/application_1764579600000_0007/stages/",
		"/by-name/pyspark-shell/":      "/app/application_1764579600000_0007/",
	} {
		resp, _ := h.do(t, "GET", path, "alice", nil)
		if got := resp.Header.Get("Location"); resp.StatusCode != http.StatusFound || got != want {
			t.Errorf("GET %s = %d %q; want 302 %q", path, resp.StatusCode, got, want)
		}
	}
	_, body := h.do(t, "GET", "/", "alice", nil)
	if !strings.Contains(body, `href="/by-name/nightly-etl/"`) || strings.Contains(body, `href="/by-name/pyspark-shell/"`) {
		t.Errorf("index: want the by-name link of the YARN application name, not of spark.app.name")
	}
	if !strings.Contains(body, `YARN queue <span class="queue">root.etl</span> · nightly-etl`) {
		t.Errorf("index: no YARN queue and name on the row:\n%s", body)
	}
	// The filter matches the queue.
	if _, body := h.do(t, "GET", "/?q=root.etl", "alice", nil); !strings.Contains(body, "application_1764579600000_0007") {
		t.Errorf("index ?q=root.etl does not list the app")
	}
}

// TestByNameOwnersComparedAsParts: for apps the Spark operator runs, the
// by-name link's owner is the Spark user in the app's namespace. A Spark
// user is whatever a driver reports, so mallory's driver (found by a
// probe, no SparkApplication) that reports "185 in etl" is not team etl's
// user 185: bob's link to etl's "orders" is ambiguous (300), not a
// redirect to mallory's newer app.
func TestByNameOwnersComparedAsParts(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	start := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	bob := map[string]string{"spark.ui.view.acls": "bob"}
	h.reg.Store(discovery.NewSnapshot(append(h.reg.Load().Apps(),
		&discovery.App{ID: "spark-aaaa01", Name: "pyspark-shell", User: "185", StartTime: start, State: discovery.Running,
			UIURL: h.drv.url(), Source: "kubernetes:etl/orders-driver", ClusterName: "etl/orders", ACLProps: bob},
		&discovery.App{ID: "app-20261201100000-0666", Name: "orders", User: "185 in etl", StartTime: start.Add(time.Hour), State: discovery.Running,
			UIURL: h.drv.url(), Source: "probe:10.0.0.66:4040", ACLProps: bob},
	)))
	resp, body := h.do(t, "GET", "/by-name/orders/", "bob", nil)
	if resp.StatusCode != http.StatusMultipleChoices {
		t.Errorf("bob GET /by-name/orders/ = %d, Location %q; want 300: two owners, whatever their names spell\n%s", resp.StatusCode, resp.Header.Get("Location"), body)
	}
}
