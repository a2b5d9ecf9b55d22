package proxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestProxySendsCanonicalCleanRequest(t *testing.T) {
	h := newHarness(t, nil)
	hdr := http.Header{
		"X-Forwarded-User":    {"root"},
		"X-Forwarded-Groups":  {"admins"},
		"Remote-User":         {"root"},
		"X-Remote-User":       {"root"},
		"X-Forwarded-For":     {"10.0.0.1"},
		"X-Forwarded-Context": {"/evil"},
		"Authorization":       {"Bearer secret"},
		"Accept-Encoding":     {"br"},
		"Cookie":              {"other=1; " + CookiePrefix + "_extra=x"},
	}
	resp, body := h.do(t, "GET", "/app/"+appLive+"/environment/?x=1&doAs=root&DoAs=admin", "alice", hdr)
	if resp.StatusCode != http.StatusOK || body != "upstream /environment/" {
		t.Fatalf("GET environment = %d %q; want 200 from upstream", resp.StatusCode, body)
	}
	got := h.drv.last(t)
	if got.Path != "/environment/" || got.RawPath != "" {
		t.Errorf("upstream path = %q (raw %q); want /environment/", got.Path, got.RawPath)
	}
	if got.RawQuery != "x=1" {
		t.Errorf("upstream query = %q; want x=1 (doAs removed)", got.RawQuery)
	}
	if v := got.Header.Get("X-Forwarded-Context"); v != "/app/"+appLive {
		t.Errorf("X-Forwarded-Context = %q; want /app/%s", v, appLive)
	}
	for _, name := range []string{"X-Forwarded-User", "X-Forwarded-Groups", "Remote-User", "X-Remote-User", "X-Forwarded-For", "Authorization"} {
		if v := got.Header.Values(name); len(v) > 0 {
			t.Errorf("upstream got %s = %q; want it removed", name, v)
		}
	}
	if c := got.Header.Get("Cookie"); c != "" {
		t.Errorf("upstream Cookie = %q; want none (Spark uses no cookies)", c)
	}
	if ae := got.Header.Get("Accept-Encoding"); ae != "" {
		t.Errorf("upstream Accept-Encoding = %q; want none (the driver would spend CPU compressing)", ae)
	}
	if resp.Header.Get("X-Request-Id") == "" {
		t.Error("response has no X-Request-Id")
	}
}

func TestUnknownApp(t *testing.T) {
	h := newHarness(t, nil)
	tests := []struct {
		name, path string
		hdr        http.Header
		json       bool
	}{
		{"html", "/app/local-1700000000000/jobs/", nil, false},
		{"json api", "/api/v1/applications/local-1700000000000/jobs", nil, true},
		{"json accept", "/app/local-1700000000000/jobs/", http.Header{"Accept": {"application/json"}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := h.do(t, "GET", tt.path, "alice", tt.hdr)
			if resp.StatusCode != http.StatusNotFound {
				t.Fatalf("GET %s = %d; want 404", tt.path, resp.StatusCode)
			}
			ct := resp.Header.Get("Content-Type")
			if tt.json {
				var e errorJSON
				decodeJSON(t, body, &e)
				if e.Status != 404 || e.AppID != "local-1700000000000" || e.Error == "" || !strings.HasPrefix(ct, "application/json") {
					t.Errorf("GET %s = %s %+v; want JSON 404 naming the app", tt.path, ct, e)
				}
				return
			}
			if !strings.HasPrefix(ct, "text/html") || !strings.Contains(body, "local-1700000000000") || !strings.Contains(body, "Unknown application") {
				t.Errorf("GET %s = %s %q; want an HTML page naming the app", tt.path, ct, body)
			}
		})
	}
	if n := len(h.drv.requests()); n != 0 {
		t.Errorf("driver got %d requests; want 0", n)
	}
}

func TestDeadDriver502(t *testing.T) {
	h := newHarness(t, nil)
	resp, body := h.do(t, "GET", "/app/"+appDead+"/jobs/", "alice", nil)
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("GET dead driver = %d; want 502", resp.StatusCode)
	}
	if !strings.Contains(body, "did not answer") || !strings.Contains(body, appDead) || !strings.Contains(body, "the driver") || strings.Contains(body, "127.0.0.1") {
		t.Errorf("502 page = %q; want it to name the app and its driver, but not the driver's address", body)
	}
	var logged bool
	for _, e := range h.logs.FilterMessage("request failed").All() {
		if u, _ := e.ContextMap()["upstream"].(string); strings.Contains(u, "127.0.0.1:") {
			logged = true
		}
	}
	if !logged {
		t.Error("the log does not name the driver's address")
	}
	// The driver refused the connection: it may have just stopped, so the
	// page reloads itself into the waiting page or the history view.
	if resp.Header.Get("Retry-After") != "5" || !strings.Contains(body, `http-equiv="refresh"`) {
		t.Errorf("502 for a refused connection: Retry-After %q, body %q; want a page that reloads itself", resp.Header.Get("Retry-After"), body)
	}
	select {
	case id := <-h.suspects:
		if id != appDead {
			t.Errorf("Suspect(%q); want %q", id, appDead)
		}
	default:
		t.Error("Suspect was not called")
	}
	resp, body = h.do(t, "GET", "/api/v1/applications/"+appDead+"/jobs", "alice", nil)
	var e errorJSON
	decodeJSON(t, body, &e)
	if resp.StatusCode != http.StatusBadGateway || e.Status != 502 || e.AppID != appDead {
		t.Errorf("GET dead driver REST = %d %+v; want JSON 502", resp.StatusCode, e)
	}
}

// TestRedirectAwayFromLiveApp: a live app's upstream that sends the
// browser to another server (a YARN ResourceManager's proxy once the app
// has finished) gets a self-reloading 503, never that server's address,
// and discovery is asked to look at the app again. A History Server's
// redirects are passed on as before.
func TestRedirectAwayFromLiveApp(t *testing.T) {
	h := newHarness(t, nil)
	for _, path := range []string{"/proxy/" + appYarn + "/away/", "/app/" + appLive + "/away/"} {
		resp, body := h.do(t, "GET", path, "alice", nil)
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Location") != "" {
			t.Errorf("GET %s = %d Location %q; want 503 without a Location", path, resp.StatusCode, resp.Header.Get("Location"))
		}
		if strings.Contains(body, "rm.internal") || !strings.Contains(body, "may have finished") || !strings.Contains(body, `http-equiv="refresh"`) {
			t.Errorf("GET %s page = %q; want a self-reloading 'may have finished' page that does not name the server", path, body)
		}
		select {
		case <-h.suspects:
		default:
			t.Errorf("GET %s: Suspect was not called", path)
		}
	}
	// The same driver's own redirect is still rewritten and passed on.
	resp, _ := h.do(t, "GET", "/app/"+appLive+"/", "alice", nil)
	if got := resp.Header.Get("Location"); resp.StatusCode != http.StatusFound || got != "/app/"+appLive+"/jobs/" {
		t.Errorf("GET /app/%s/ = %d %q; want 302 to /app/%s/jobs/", appLive, resp.StatusCode, got, appLive)
	}
}

func TestSlowDriver502(t *testing.T) {
	h := newHarness(t, nil) // ResponseHeaderTimeout 500ms
	resp, body := h.do(t, "GET", "/app/"+appLive+"/slow", "alice", nil)
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, "did not answer in time") {
		t.Fatalf("GET slow = %d %q; want 502 'did not answer in time'", resp.StatusCode, body)
	}
}

// TestDriverCannotSetCookies: every app shares the gateway's origin, so a
// driver's Set-Cookie would land on it (session fixation, overwriting the
// gateway's session). None passes.
func TestDriverCannotSetCookies(t *testing.T) {
	h := newHarness(t, nil)
	resp, body := h.do(t, "GET", "/app/"+appLive+"/setcookie", "alice", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "cookies") {
		t.Fatalf("GET /setcookie = %d %q; want 200 from the driver", resp.StatusCode, body)
	}
	if got := resp.Header.Values("Set-Cookie"); len(got) != 0 {
		t.Errorf("Set-Cookie from the driver reached the client: %q", got)
	}
}

func TestLocationRewritten(t *testing.T) {
	h := newHarness(t, nil)
	resp, _ := h.do(t, "GET", "/app/"+appLive+"/", "alice", nil)
	if got, want := resp.Header.Get("Location"), "/app/"+appLive+"/jobs/"; resp.StatusCode != http.StatusFound || got != want {
		t.Errorf("GET /app/<id>/ = %d Location %q; want 302 %q", resp.StatusCode, got, want)
	}
	// A proxyBase driver: /app/ moves to /proxy/, which gets no
	// X-Forwarded-Context and keeps its redirects under /proxy/<id>.
	resp, _ = h.do(t, "GET", "/app/"+appYarn+"/stages/?id=2", "alice", nil)
	if got, want := resp.Header.Get("Location"), "/proxy/"+appYarn+"/stages/?id=2"; got != want {
		t.Errorf("GET /app/<yarn>/stages/ Location = %q; want %q", got, want)
	}
	resp, _ = h.do(t, "GET", "/proxy/"+appYarn+"/", "alice", nil)
	if got, want := resp.Header.Get("Location"), "/proxy/"+appYarn+"/jobs/"; got != want {
		t.Errorf("GET /proxy/<yarn>/ Location = %q; want %q", got, want)
	}
	if v := h.drv.last(t).Header.Get("X-Forwarded-Context"); v != "" {
		t.Errorf("proxyBase driver got X-Forwarded-Context %q; want none", v)
	}
}

func TestKillLinkStripped(t *testing.T) {
	h := newHarness(t, nil)
	for _, q := range []string{"", "?gz=1"} {
		t.Run("query="+q, func(t *testing.T) {
			resp, body := h.do(t, "GET", "/app/"+appLive+"/jobs/"+q, "alice", nil)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET jobs = %d", resp.StatusCode)
			}
			if strings.Contains(body, "kill") {
				t.Errorf("page still has a kill control:\n%s", body)
			}
			if !strings.Contains(body, `class="name-link"`) || !strings.Contains(body, "count at Main.scala:12") {
				t.Errorf("page lost its content:\n%s", body)
			}
			if ce := resp.Header.Get("Content-Encoding"); ce != "" {
				t.Errorf("Content-Encoding = %q; want plain", ce)
			}
			if xfo := resp.Header.Get("X-Frame-Options"); xfo != "SAMEORIGIN" {
				t.Errorf("X-Frame-Options = %q; want Spark's SAMEORIGIN kept", xfo)
			}
		})
	}
}

func TestKillEndpointsBlocked(t *testing.T) {
	h := newHarness(t, nil)
	live, yarn := "/app/"+appLive, "/proxy/"+appYarn
	tests := []struct{ method, target string }{
		{"GET", live + "/jobs/job/kill/?id=1"},
		{"GET", live + "/jobs/job/kill?id=1"},
		{"HEAD", live + "/jobs/job/kill/?id=1"},
		{"GET", live + "/jobs/job/KILL/?id=1"},
		{"GET", live + "/jobs/job/%6bill/?id=1"},
		{"GET", live + "/jobs/job/%6B%69%6C%6C/?id=1"},
		{"GET", live + "/jobs//job/kill/?id=1"},
		{"GET", live + "/jobs/job/./kill/?id=1"},
		{"GET", live + "/jobs/x/../job/kill/?id=1"},
		{"GET", live + "/jobs/job/kill;jsessionid=1/?id=1"},
		{"GET", live + "/jobs/job%2fkill/?id=1"},
		{"GET", live + "/jobs/job/kill%00/?id=1"},
		{"GET", live + "/jobs/job/kill%3Fid=1"},
		{"GET", live + "/jobs%5cjob%5ckill/?id=1"},
		{"GET", live + "/stages/stage/kill/?id=1"},
		{"GET", live + "/stages/stage/kill/?id=1&terminate=true"},
		{"POST", live + "/jobs/job/kill/?id=1"},
		{"POST", live + "/stages/stage/kill/"},
		{"PUT", live + "/jobs/"},
		{"DELETE", live + "/jobs/"},
		{"POST", live + "/jobs/hold/"},
		{"GET", live + "/executors/heapHistogram/?executorId=1"},
		{"GET", yarn + "/jobs/job/kill/?id=1"},
		{"GET", "/app/" + appYarn + "/jobs/job/kill/?id=1"},
		{"GET", "/hs/main/history/" + appHistory + "/1/jobs/job/kill/?id=1"},
		{"POST", "/api/v1/applications/" + appLive + "/jobs"},
		{"GET", "/api/v1/applications/" + appLive + "/kill"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.target, func(t *testing.T) {
			resp, _ := h.raw(t, tt.method, tt.target, "alice")
			switch resp.StatusCode {
			case http.StatusBadRequest, http.StatusForbidden, http.StatusMethodNotAllowed:
			default:
				t.Errorf("%s %s = %d; want 400, 403 or 405", tt.method, tt.target, resp.StatusCode)
			}
		})
	}
	for _, b := range []*backend{h.drv, h.hs} {
		for _, r := range b.requests() {
			t.Errorf("upstream received %s %s?%s; want nothing", r.Method, r.Path, r.RawQuery)
		}
	}
	resp, body := h.raw(t, "GET", live+"/jobs/job/kill/?id=1", "alice")
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "kill controls are disabled by sparkgate") {
		t.Errorf("kill page = %d %q; want 403 'kill controls are disabled by sparkgate'", resp.StatusCode, body)
	}
	resp, _ = h.raw(t, "PUT", live+"/jobs/", "alice")
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("PUT = %d Allow %q; want 405 with Allow: GET, HEAD", resp.StatusCode, resp.Header.Get("Allow"))
	}
}

func TestHistoryFallback(t *testing.T) {
	h := newHarness(t, nil)
	redirects := []struct{ path, want string }{
		{"/app/" + appHistory + "/stages/stage/?id=3&attempt=0", "/hs/main/history/" + appHistory + "/1/stages/stage/?id=3&attempt=0"},
		{"/app/" + appHistory + "/", "/hs/main/history/" + appHistory + "/1/"},
		{"/proxy/" + appHistory + "/jobs/", "/hs/main/history/" + appHistory + "/1/jobs/"},
		{"/history/" + appHistory + "/1/jobs/?x=1", "/hs/main/history/" + appHistory + "/1/jobs/?x=1"},
		{"/history/" + appLive + "/jobs/", "/app/" + appLive + "/jobs/"},
		{"/hs/main/", "/"},
		{"/hs/main/api/v1/applications?status=running", "/api/v1/applications?status=running"},
		// REST calls of a page opened while the app ran go to the app's
		// REST on the History Server, with its attempt.
		{"/app/" + appHistory + "/api/v1/applications/" + appHistory + "/allexecutors?x=1", "/api/v1/applications/" + appHistory + "/1/allexecutors?x=1"},
		{"/app/" + appHistory + "/api/v1/applications/" + appHistory, "/api/v1/applications/" + appHistory + "/1"},
		// Not the app's REST: the history view of the same path.
		{"/app/" + appHistory + "/api/v1/applications", "/hs/main/history/" + appHistory + "/1/api/v1/applications"},
		{"/app/" + appHistory + "/api/v1/applications/" + appHistory + "x/jobs", "/hs/main/history/" + appHistory + "/1/api/v1/applications/" + appHistory + "x/jobs"},
	}
	for _, tt := range redirects {
		resp, _ := h.do(t, "GET", tt.path, "alice", nil)
		if got := resp.Header.Get("Location"); resp.StatusCode != http.StatusFound || got != tt.want {
			t.Errorf("GET %s = %d %q; want 302 %q", tt.path, resp.StatusCode, got, tt.want)
		}
	}
	resp, body := h.do(t, "GET", "/hs/main/history/"+appHistory+"/1/jobs/", "bob", nil)
	if resp.StatusCode != http.StatusOK || body == "" {
		t.Fatalf("GET history page = %d %q; want 200", resp.StatusCode, body)
	}
	got := h.hs.last(t)
	if got.Path != "/history/"+appHistory+"/1/jobs/" || got.Header.Get("X-Forwarded-Context") != "/hs/main" {
		t.Errorf("History Server got %s with X-Forwarded-Context %q; want /history/<id>/1/jobs/ and /hs/main", got.Path, got.Header.Get("X-Forwarded-Context"))
	}
	resp, _ = h.do(t, "GET", "/api/v1/applications/"+appHistory+"/1/jobs", "alice", nil)
	if got := h.hs.last(t); resp.StatusCode != http.StatusOK || got.Path != "/api/v1/applications/"+appHistory+"/1/jobs" {
		t.Errorf("GET history REST = %d, upstream %s; want 200 from the History Server", resp.StatusCode, got.Path)
	}
	resp, _ = h.do(t, "GET", "/hs/main/static/webui.js", "nobody", nil)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET history static as any user = %d; want 200", resp.StatusCode)
	}
	// The History Server's copy of the ACLs applies: carol is not in it,
	// and learns no more than for an app that does not exist.
	resp, _ = h.do(t, "GET", "/hs/main/history/"+appHistory+"/1/jobs/", "carol", nil)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET history page as carol = %d; want 404", resp.StatusCode)
	}
	resp, _ = h.do(t, "GET", "/hs/other/history/"+appHistory+"/1/jobs/", "alice", nil)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET unknown history server = %d; want 404", resp.StatusCode)
	}
}

func TestWaitingForHistory(t *testing.T) {
	h := newHarness(t, nil)
	resp, body := h.do(t, "GET", "/app/"+appWaiting+"/jobs/", "alice", nil)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "5" {
		t.Fatalf("GET finished app = %d Retry-After %q; want 503 5", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	for _, want := range []string{`<meta http-equiv="refresh" content="5">`, "waiting for the History Server", appWaiting} {
		if !strings.Contains(body, want) {
			t.Errorf("waiting page lacks %q:\n%s", want, body)
		}
	}
	resp, body = h.do(t, "GET", "/api/v1/applications/"+appWaiting+"/jobs", "alice", nil)
	var e errorJSON
	decodeJSON(t, body, &e)
	if resp.StatusCode != http.StatusServiceUnavailable || e.Status != 503 || e.AppID != appWaiting {
		t.Errorf("GET finished app REST = %d %+v; want JSON 503", resp.StatusCode, e)
	}
}

// TestACLDeniedLooksUnknown: a user who may not view an app gets exactly
// the answer an id that names nothing gets, on every way in (pages,
// redirects, REST, history), unless proxy.reveal_denied is set.
func TestACLDeniedLooksUnknown(t *testing.T) {
	h := newHarness(t, nil)
	const ghost = "app-20240101000000-9999"
	reqID := regexp.MustCompile(`request [^<]*|"request_id":"[^"]*"`)
	norm := func(body, id string) string { return reqID.ReplaceAllString(strings.ReplaceAll(body, id, "ID"), "") }
	for _, c := range []struct{ user, id, path string }{
		{"alice", appDenied, "/app/%s/jobs/"},
		{"alice", appDenied, "/proxy/%s/jobs/"},
		{"alice", appDenied, "/api/v1/applications/%s/jobs"},
		{"carol", appHistory, "/app/%s/jobs/"},
		{"carol", appHistory, "/history/%s/1/jobs/"},
		{"carol", appHistory, "/api/v1/applications/%s/1/jobs"},
		{"carol", appYarn, "/app/%s/jobs/"},
		{"carol", appWaiting, "/app/%s/jobs/"},
	} {
		denied, dBody := h.do(t, "GET", fmt.Sprintf(c.path, c.id), c.user, nil)
		unknown, uBody := h.do(t, "GET", fmt.Sprintf(c.path, ghost), c.user, nil)
		if denied.StatusCode != http.StatusNotFound || unknown.StatusCode != http.StatusNotFound {
			t.Errorf("%s GET %s: denied %d, unknown %d; want 404 for both", c.user, c.path, denied.StatusCode, unknown.StatusCode)
			continue
		}
		if a, b := norm(dBody, c.id), norm(uBody, ghost); a != b {
			t.Errorf("%s GET %s: the denied app's page differs from an unknown app's:\n%s\n---\n%s", c.user, c.path, a, b)
		}
	}
}

func TestACLDenied(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Config.RevealDenied = true })
	resp, body := h.do(t, "GET", "/app/"+appDenied+"/jobs/", "alice|eng|data", nil)
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("GET denied app = %d; want 403", resp.StatusCode)
	}
	for _, want := range []string{appDenied, "alice", "eng, data", "alice is not the owner carol", "spark.ui.view.acls / spark.ui.view.acls.groups",
		"Who to ask", "the app&#39;s owner: carol"} {
		if !strings.Contains(body, want) {
			t.Errorf("403 page lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "payroll") {
		t.Error("403 page shows the name of an app the user may not view")
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("403 page CSP = %q; want the gateway's", csp)
	}
	resp, body = h.do(t, "GET", "/api/v1/applications/"+appDenied+"/jobs", "alice", nil)
	var e errorJSON
	decodeJSON(t, body, &e)
	if resp.StatusCode != http.StatusForbidden || e.AppID != appDenied || len(e.Reasons) == 0 || e.Grant == "" || len(e.Ask) != 1 {
		t.Errorf("GET denied REST = %d %+v; want JSON 403 with reasons, grant and who to ask", resp.StatusCode, e)
	}
	if n := len(h.drv.requests()); n != 0 {
		t.Errorf("driver got %d requests for a denied user; want 0", n)
	}
	var denied int
	for _, e := range h.audit.FilterMessage("authorization").All() {
		m := e.ContextMap()
		if m["app_id"] == appDenied && m["allow"] == false && m["user"] == "alice" && m["for"] == "request" {
			denied++
		}
	}
	if denied != 2 {
		t.Errorf("audit log has %d denials of alice on %s; want 2", denied, appDenied)
	}
}

func TestNotSignedIn(t *testing.T) {
	h := newHarness(t, nil)
	resp, _ := h.do(t, "GET", "/app/"+appLive+"/stages/?id=3", "", nil)
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusFound || !strings.HasPrefix(loc, "/oauth2/start?rd=") {
		t.Errorf("GET signed out = %d %q; want the Authenticator's challenge", resp.StatusCode, loc)
	}
	resp, body := h.do(t, "GET", "/", "broken", nil)
	if resp.StatusCode != http.StatusInternalServerError || strings.Contains(body, "session store down") {
		t.Errorf("GET with failing authn = %d %q; want 500 without the cause", resp.StatusCode, body)
	}
	if n := len(h.drv.requests()); n != 0 {
		t.Errorf("driver got %d requests; want 0", n)
	}
}

func TestHealthAndReady(t *testing.T) {
	ready := false
	h := newHarness(t, func(o *Options) { o.Ready = func() bool { return ready } })
	if resp, _ := h.do(t, "GET", "/_/healthz", "", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("healthz = %d; want 200", resp.StatusCode)
	}
	if resp, _ := h.do(t, "GET", "/_/readyz", "", nil); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("readyz before ready = %d; want 503", resp.StatusCode)
	}
	ready = true
	if resp, _ := h.do(t, "GET", "/_/readyz", "", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("readyz when ready = %d; want 200", resp.StatusCode)
	}
	if resp, body := h.do(t, "GET", "/_/static/sparkgate.css", "", nil); resp.StatusCode != http.StatusOK || !strings.Contains(body, "--accent") {
		t.Errorf("static css = %d; want 200", resp.StatusCode)
	}
	if resp, _ := h.do(t, "GET", "/_/static/", "", nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("static dir listing = %d; want 404", resp.StatusCode)
	}
}

// TestUnaskedUpgradeRefused: a driver that answers 101 to a request that
// asked for no upgrade gets a 502 for it, and its connection is closed
// rather than left to ReverseProxy's upgrade path.
func TestUnaskedUpgradeRefused(t *testing.T) {
	closed := make(chan error, 1)
	h := htmlDriver(t, func(w http.ResponseWriter, _ *http.Request) {
		c, brw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		_, _ = io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err = brw.ReadByte()
		closed <- err
	})
	resp, body := h.do(t, "GET", "/app/"+appLive+"/jobs/", "alice", http.Header{"Upgrade": {"websocket"}, "Connection": {"Upgrade"}})
	if resp.StatusCode != http.StatusBadGateway {
		t.Errorf("101 from the driver: %d %.200q; want 502", resp.StatusCode, body)
	}
	select {
	case err := <-closed:
		if !errors.Is(err, io.EOF) {
			t.Errorf("the driver's connection after its 101: read %v; want EOF (closed by the gateway)", err)
		}
	case <-time.After(20 * time.Second):
		t.Error("the driver never answered")
	}
}

// TestHugeUpstreamHeadersRefused: a driver's answer with more header
// bytes than Jetty ever sends is a 502, not buffered; one within the bound
// passes.
func TestHugeUpstreamHeadersRefused(t *testing.T) {
	h := htmlDriver(t, func(w http.ResponseWriter, r *http.Request) {
		n := 4 << 10
		if r.URL.Path == "/huge/" {
			n = maxUpstreamHeaderBytes
		}
		w.Header().Set("X-Filler", strings.Repeat("a", n))
		_, _ = io.WriteString(w, "answer")
	})
	if resp, body := h.do(t, "GET", "/app/"+appLive+"/fine/", "alice", nil); resp.StatusCode != http.StatusOK || body != "answer" {
		t.Errorf("4 KiB of headers: %d %.200q; want 200", resp.StatusCode, body)
	}
	if resp, body := h.do(t, "GET", "/app/"+appLive+"/huge/", "alice", nil); resp.StatusCode != http.StatusBadGateway {
		t.Errorf("%d bytes of headers: %d %.200q; want 502", maxUpstreamHeaderBytes, resp.StatusCode, body)
	}
}

// TestUpstreamTrailersDropped: trailers a driver sends never reach the
// client, announced or not.
func TestUpstreamTrailersDropped(t *testing.T) {
	h := htmlDriver(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Trailer", "Set-Cookie, X-Announced")
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "answer")
		w.(http.Flusher).Flush()
		w.Header().Set("Set-Cookie", CookiePrefix+"=planted; Path=/")
		w.Header().Set("X-Announced", "1")
		w.Header().Set(http.TrailerPrefix+"X-Unannounced", "1")
	})
	resp, body := h.do(t, "GET", "/app/"+appLive+"/trailers/", "alice", nil)
	if resp.StatusCode != http.StatusOK || body != "answer" {
		t.Fatalf("%d %.200q; want 200 answer", resp.StatusCode, body)
	}
	if len(resp.Trailer) != 0 || resp.Header.Get("Trailer") != "" {
		t.Errorf("trailers reached the client: %v (Trailer header %q)", resp.Trailer, resp.Header.Get("Trailer"))
	}
	// A chunked HTML page, read ahead and stripped in another goroutine
	// (wholepage.go), as Spark sends a page longer than 32 KiB.
	page := "<html><body>" + strings.Repeat("<p>row</p>\n", 4000) + "</body></html>"
	h = htmlDriver(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Trailer", "Set-Cookie")
		w.Header().Set("Content-Type", "text/html;charset=utf-8")
		writeAsJetty(w, []byte(page))
		w.Header().Set("Set-Cookie", CookiePrefix+"=planted; Path=/")
	})
	resp, body = h.do(t, "GET", "/app/"+appLive+"/jobs/", "alice", nil)
	if resp.StatusCode != http.StatusOK || strings.Count(body, "<p>row</p>") != 4000 || !strings.HasSuffix(body, "</body></html>") {
		t.Fatalf("chunked page: %d, %d bytes; want 200 and the page", resp.StatusCode, len(body))
	}
	if len(resp.Trailer) != 0 || resp.Header.Get("Trailer") != "" {
		t.Errorf("trailers of a chunked page reached the client: %v (Trailer header %q)", resp.Trailer, resp.Header.Get("Trailer"))
	}
}

// TestPageReadAsTheStripperReadsIt: a browser reads a page in the
// encoding the stripper reads it in, and as HTML whenever it would sniff
// it as HTML, so that a kill link cannot hide in a UTF-16 page (whose
// byte order mark a browser obeys before any header) or in an answer of
// an "unknown" type.
func TestPageReadAsTheStripperReadsIt(t *testing.T) {
	const page = `<html><body><a href="/app/x/jobs/job/kill/?id=7" class="kill-link">(kill)</a></body></html>`
	utf16 := func(bom []byte, s string, le bool) string {
		out := append([]byte(nil), bom...)
		for _, c := range []byte(s) {
			if le {
				out = append(out, c, 0)
			} else {
				out = append(out, 0, c)
			}
		}
		return string(out)
	}
	noKill := func(b string) bool { return strings.Contains(b, "<body>") && !strings.Contains(b, "kill") }
	for _, c := range []struct {
		name, ctype, body string
		wantType          string
		wantBody          func(string) bool
		path              string
	}{
		{"unknown type", "application/unknown", page, "text/html; charset=utf-8", noKill, ""},
		{"unknown/unknown", "Unknown/Unknown; x=1", page, "text/html; charset=utf-8", noKill, ""},
		{"empty type", "", page, "text/html; charset=utf-8", noKill, ""},
		{"XHTML goes out as HTML", "application/xhtml+xml", page, "text/html; charset=utf-8", noKill, ""},
		{"HTML from the executors list", "text/html", page, "text/html; charset=utf-8", noKill, "/api/v1/applications/" + appLive + "/executors"},
		{"two byte order marks", "text/html", utf16([]byte{0xFE, 0xFF, 0xFE, 0xFF}, page, false), "text/html; charset=utf-8",
			func(b string) bool { return b == utf16(nil, page, false) }, ""},
		{"a byte order mark after a kill link", "text/html", `<a href="/app/x/jobs/job/kill/?id=7">(kill)</a>` + "\xFE\xFF" + page[6:], "text/html; charset=utf-8",
			func(b string) bool { return strings.HasPrefix(b, "<body>") && !strings.Contains(b, "kill") }, ""},
		{"declared utf-16", "text/html; charset=utf-16", page, "text/html; charset=utf-8", noKill, ""},
		{"UTF-16LE with its byte order mark", "text/html;charset=utf-8", utf16([]byte{0xFF, 0xFE}, page, true), "text/html; charset=utf-8",
			func(b string) bool { return b == utf16(nil, page, true) }, ""},
		{"UTF-16BE with its byte order mark", "text/html", utf16([]byte{0xFE, 0xFF}, page, false), "text/html; charset=utf-8",
			func(b string) bool { return b == utf16(nil, page, false) }, ""},
		{"UTF-8 byte order mark kept", "text/html", "\xEF\xBB\xBF" + page, "text/html; charset=utf-8",
			func(b string) bool { return strings.HasPrefix(b, "\xEF\xBB\xBF<html>") && !strings.Contains(b, "kill") }, ""},
		{"one byte", "text/html", "\xFF", "text/html; charset=utf-8",
			func(b string) bool { return b == "\xFF" }, ""},
		{"JSON untouched", "application/json", `{"kill":"\u003c"}`, "application/json",
			func(b string) bool { return b == `{"kill":"\u003c"}` }, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := htmlDriver(t, func(w http.ResponseWriter, _ *http.Request) {
				w.Header()["Content-Type"] = []string{c.ctype}
				_, _ = io.WriteString(w, c.body)
			})
			path := "/app/" + appLive + "/jobs/"
			if c.path != "" {
				path = "/app/" + appLive + c.path
			}
			resp, body := h.do(t, "GET", path, "alice", nil)
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != c.wantType || !c.wantBody(body) {
				t.Errorf("%d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
			}
		})
	}
}

// TestStoppingDriverClosesUnanswered: a driver that is stopping may
// accept a connection and close it without an answer, plainly or with a
// reset. Like a refused connection, that is a 502 that reloads itself and
// asks discovery to look at the app again, not a dead end.
func TestStoppingDriverClosesUnanswered(t *testing.T) {
	for _, reset := range []bool{false, true} {
		h := htmlDriver(t, func(w http.ResponseWriter, _ *http.Request) {
			c, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			if tc, ok := c.(*net.TCPConn); ok && reset {
				_ = tc.SetLinger(0) // close with RST
			}
			c.Close()
		})
		resp, body := h.do(t, "GET", "/app/"+appLive+"/jobs/", "alice", nil)
		if resp.StatusCode != http.StatusBadGateway || resp.Header.Get("Retry-After") != "5" || !strings.Contains(body, `http-equiv="refresh"`) {
			t.Errorf("reset=%v: %d Retry-After %q %.200q; want a 502 that reloads itself", reset, resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
		select {
		case id := <-h.suspects:
			if id != appLive {
				t.Errorf("reset=%v: Suspect(%q); want %q", reset, id, appLive)
			}
		default:
			t.Errorf("reset=%v: Suspect was not called", reset)
		}
	}
}
