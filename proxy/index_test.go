package proxy

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sparkgate/sparkgate/proxy/discovery"
)

func TestIndexListsOnlyPermittedApps(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.IsAdmin = func(id Identity) bool { return id.User == "root" } })
	tests := []struct {
		name, user, query string
		want, notWant     []string
	}{
		{"owner", "alice|eng", "", []string{appLive, appHistory, appWaiting, appYarn, `href="/app/` + appLive + `/"`, "signed in as", "(eng)", `<button class="signout" type="submit" form="signout">`, `<form id="signout" method="post" action="/oauth2/logout"></form>`, "running", "finished", "3.5.9"}, []string{appDenied, "payroll"}},
		{"viewer", "bob", "", []string{appLive, appHistory}, []string{appDenied, appWaiting, appYarn}},
		{"filter", "alice", "?q=NIGHT", []string{appHistory, `value="NIGHT"`}, []string{appLive, appYarn}},
		// Where discovery looks (hosts, paths) is for admins: a user who
		// may view nothing learns nothing of it.
		{"empty", "nobody", "", []string{"No applications to show", "main"}, []string{appLive, appHistory, "/var/log/spark"}},
		{"admin", "root", "", []string{"No applications to show", "driver logs /var/log/spark/*.log"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := h.do(t, "GET", "/"+tt.query, tt.user, nil)
			if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
				t.Fatalf("GET / = %d %s; want 200 HTML", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			for _, s := range tt.want {
				if !strings.Contains(body, s) {
					t.Errorf("index for %s lacks %q", tt.user, s)
				}
			}
			for _, s := range tt.notWant {
				if strings.Contains(body, s) {
					t.Errorf("index for %s shows %q", tt.user, s)
				}
			}
			if strings.Contains(body, "<script>") || strings.Contains(body, "http://") || strings.Contains(body, "https://") {
				t.Errorf("index has inline script or external resources:\n%s", body)
			}
		})
	}
}

func TestAPIListFilteredInSparkShape(t *testing.T) {
	h := newHarness(t, nil)
	resp, body := h.do(t, "GET", "/api/v1/applications", "bob", nil)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET list = %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var got []map[string]any
	decodeJSON(t, body, &got)
	want := []map[string]any{
		{"id": appLive, "name": "etl", "attempts": []any{map[string]any{
			"startTime": "2024-01-01T00:00:00.000GMT", "endTime": "1969-12-31T23:59:59.999GMT",
			"lastUpdated": "2024-01-01T00:00:00.000GMT", "sparkUser": "alice", "completed": false,
			"appSparkVersion": "3.5.9", "startTimeEpoch": float64(1704067200000), "endTimeEpoch": float64(-1),
			"lastUpdatedEpoch": float64(1704067200000),
		}}},
		{"id": appHistory, "name": "nightly", "attempts": []any{map[string]any{
			"attemptId": "1", "startTime": "2023-12-31T23:00:00.000GMT", "endTime": "2023-12-31T23:30:00.000GMT",
			"lastUpdated": "2023-12-31T23:30:00.000GMT", "duration": float64(1800000), "sparkUser": "alice", "completed": true,
			"appSparkVersion": "3.5.9", "startTimeEpoch": float64(1704063600000), "endTimeEpoch": float64(1704065400000),
			"lastUpdatedEpoch": float64(1704065400000),
		}}},
	}
	// A live app's duration grows with the clock: check it, then drop it.
	att := got[0]["attempts"].([]any)[0].(map[string]any)
	if d, ok := att["duration"].(float64); !ok || d <= 0 {
		t.Errorf("live duration = %v; want > 0", att["duration"])
	}
	delete(att, "duration")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GET /api/v1/applications as bob (-want +got):\n%s", diff)
	}

	filters := []struct {
		query string
		want  []string
	}{
		{"?status=completed", []string{appHistory, appWaiting}},
		{"?status=RUNNING", []string{appLive, appDead, appYarn}},
		{"?status=running&status=completed&limit=2", []string{appLive, appDead}},
		{"?limit=0", []string{}},
	}
	for _, tt := range filters {
		_, body := h.do(t, "GET", "/api/v1/applications"+tt.query, "alice", nil)
		var apps []apiApp
		decodeJSON(t, body, &apps)
		ids := []string{}
		for _, a := range apps {
			ids = append(ids, a.ID)
		}
		if !cmp.Equal(ids, tt.want) {
			t.Errorf("GET /api/v1/applications%s as alice = %v; want %v", tt.query, ids, tt.want)
		}
	}
	if resp, _ := h.do(t, "GET", "/api/v1/applications?status=bogus", "alice", nil); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("status=bogus = %d; want 400", resp.StatusCode)
	}
	if _, body := h.do(t, "GET", "/api/v1/applications", "nobody", nil); strings.TrimSpace(body) != "[]" {
		t.Errorf("list for nobody = %q; want []", body)
	}
}

func TestIndexRendersOnePage(t *testing.T) {
	h := newHarness(t, nil)
	rows := func(body string) []string {
		var ids []string
		for _, part := range strings.Split(body, `<tr data-search="`)[1:] {
			id, _, _ := strings.Cut(part[strings.Index(part, "<code>")+len("<code>"):], "</code>")
			ids = append(ids, id)
		}
		return ids
	}
	_, body := h.do(t, "GET", "/?n=1000", "alice", nil)
	all := rows(body)
	if len(all) < 3 {
		t.Fatalf("alice sees %v; want at least 3 apps to page through", all)
	}
	var paged []string
	next := "/?n=2"
	for pages := 0; next != ""; pages++ {
		if pages > len(all) {
			t.Fatalf("more pages than apps: %v", paged)
		}
		_, body := h.do(t, "GET", next, "alice", nil)
		got := rows(body)
		if len(got) == 0 || len(got) > 2 {
			t.Fatalf("GET %s rendered %d rows; want 1 or 2", next, len(got))
		}
		paged = append(paged, got...)
		next = ""
		if _, after, ok := strings.Cut(body, `<a rel="next" href="`); ok {
			next, _, _ = strings.Cut(after, `"`)
			next = strings.ReplaceAll(next, "&amp;", "&")
		}
	}
	if !cmp.Equal(paged, all) {
		t.Errorf("pages of 2 = %v; want every app once, in order: %v", paged, all)
	}
	// The filter applies before paging: the second page of a filter that
	// matches one app is empty, and the first holds it.
	_, body = h.do(t, "GET", "/?q=night&n=1", "alice", nil)
	if got := rows(body); !cmp.Equal(got, []string{appHistory}) || strings.Contains(body, `rel="next"`) {
		t.Errorf("?q=night&n=1 = %v (next link: %v); want [%s] and no next page", got, strings.Contains(body, `rel="next"`), appHistory)
	}
	_, body = h.do(t, "GET", "/?q=night&n=1&page=2", "alice", nil)
	if got := rows(body); len(got) != 0 || !strings.Contains(body, `rel="prev" href="/?n=1&amp;q=night"`) {
		t.Errorf("?q=night&n=1&page=2 = %v; want no rows and a link back to the first page:\n%s", got, body)
	}
	// A page number past any list, however large, is an empty page.
	for _, p := range []string{"/?page=9223372036854775807", "/?sort=findings&page=9223372036854775807", "/?sort=findings&n=2&page=4611686018427387905"} {
		resp, body := h.do(t, "GET", p, "alice", nil)
		if resp.StatusCode != http.StatusOK || len(rows(body)) != 0 || strings.Contains(body, "(-") {
			t.Errorf("GET %s = %d, rows %v; want 200 and no rows", p, resp.StatusCode, rows(body))
		}
	}
	// Words of a query each match, as the page's script filters.
	_, body = h.do(t, "GET", "/?q=alice+nightly", "alice", nil)
	if got := rows(body); !cmp.Equal(got, []string{appHistory}) {
		t.Errorf("?q=alice nightly = %v; want [%s]", got, appHistory)
	}
}

// TestIndexShowsSourceHealthToAdmins: a discovery source that is down is a
// state on the admin's index (since when, how many failed polls, why), not
// only a line in the log; other users see nothing of the sources.
func TestIndexShowsSourceHealthToAdmins(t *testing.T) {
	since := time.Date(2024, 1, 1, 9, 30, 0, 0, time.UTC)
	h := newHarness(t, func(o *Options) {
		o.IsAdmin = func(id Identity) bool { return id.User == "root" }
		o.SourceHealth = func() []discovery.SourceHealth {
			return []discovery.SourceHealth{
				{Name: "history:spare", Up: false, LastError: "dial tcp 127.0.0.1:18080: connect: connection refused", DownSince: since, Failures: 42},
				{Name: "probe:10.0.0.5:4040-4056", Up: true, LastSuccess: since},
			}
		}
	})
	_, body := h.do(t, "GET", "/", "root", nil)
	for _, want := range []string{
		`<details class="sources" open>`, "1 up", `<span class="state down">1 down</span>`,
		"<code>history:spare</code>", `since <time datetime="2024-01-01T09:30:00Z">2024-01-01 09:30:00 UTC</time>`,
		"<td>42</td>", "connection refused", "<code>probe:10.0.0.5:4040-4056</code>", `<span class="state running">up</span>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("admin's index lacks %q:\n%s", want, body)
		}
	}
	_, body = h.do(t, "GET", "/", "alice", nil)
	for _, notWant := range []string{"Discovery sources", "history:spare", "18080", "probe:10.0.0.5"} {
		if strings.Contains(body, notWant) {
			t.Errorf("alice's index shows %q", notWant)
		}
	}
}

// TestIndexHidesDriverAddress: the index names discovery's hosts and paths
// to admins only (README, Security model). A viewer who is no admin sees
// where an app was found by its kind, in the row and in what the search
// matches: not the probe's host and port nor the driver log's path, with
// which they could reach the driver past the gateway. An admin sees all.
func TestIndexHidesDriverAddress(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(o *Options) { o.IsAdmin = func(id Identity) bool { return id.User == "alice" } })
	start := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	open := map[string]string{"spark.ui.view.acls": "bob"}
	h.reg.Store(discovery.NewSnapshot(append(h.reg.Load().Apps(),
		&discovery.App{ID: "app-20261201090000-0101", Name: "probed", User: "alice", StartTime: start, State: discovery.Running,
			UIURL: h.drv.url(), Source: "probe:10.20.30.40:4047", ACLProps: open},
		&discovery.App{ID: "app-20261201090000-0102", Name: "logged", User: "alice", StartTime: start, State: discovery.Running,
			UIURL: h.drv.url(), Source: "log:/home/alice/secret-project/driver.log", ACLProps: open},
	)))
	secrets := []string{"10.20.30.40:4047", "/home/alice/secret-project/driver.log"}
	_, body := h.do(t, "GET", "/", "bob", nil)
	if !strings.Contains(body, "app-20261201090000-0101") || !strings.Contains(body, `<td class="source">probe`) || !strings.Contains(body, `<td class="source">log`) {
		t.Fatalf("bob's index lacks the apps he may view, or their sources' kinds:\n%s", body)
	}
	for _, leak := range secrets {
		if strings.Contains(body, leak) {
			t.Errorf("non-admin bob's index names discovery's host or path %q", leak)
		}
	}
	if _, body := h.do(t, "GET", "/?q=10.20.30.40", "bob", nil); strings.Contains(body, "app-20261201090000-0101") {
		t.Errorf("bob's search for the driver's address finds the app: what is searched names it")
	}
	_, body = h.do(t, "GET", "/", "alice", nil)
	for _, want := range secrets {
		if !strings.Contains(body, want) {
			t.Errorf("the index of alice (owner and admin) lacks the source %q", want)
		}
	}
}
