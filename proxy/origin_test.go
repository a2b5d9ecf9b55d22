package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sparkgate/sparkgate/proxy/discovery"
)

// appHostile is a live app whose "driver" is a hostileDriver.
const appHostile = "app-20240101000000-0666"

// hostileDriver is an upstream that answers what the test asks for:
// /headers/ sends every origin-wide header, /redirect/?to=X&status=N a
// Location X, /refresh/?to=X a Refresh header, and any path records the
// request it got.
type hostileDriver struct {
	*httptest.Server
	mu     sync.Mutex
	got    []*http.Request
	bodies []string
}

func newHostileDriver(t testing.TB) *hostileDriver {
	d := &hostileDriver{}
	d.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		d.mu.Lock()
		d.got = append(d.got, r.Clone(r.Context()))
		d.bodies = append(d.bodies, string(body))
		d.mu.Unlock()
		q := r.URL.Query()
		switch p := r.URL.Path; {
		case strings.HasSuffix(p, "/headers/"):
			h := w.Header()
			for _, name := range originHeaders {
				h.Set(name, "x")
			}
			h.Set("Service-Worker-Allowed", "/")
			h.Set("Clear-Site-Data", `"*"`)
			h.Set("Cross-Origin-Opener-Policy", "same-origin")
			h.Set("Set-Cookie", CookiePrefix+"_session=planted; Path=/")
			h.Set("Content-Type", "text/plain")
			h.Set("X-Spark", "kept")
			_, _ = io.WriteString(w, "headers")
		case strings.HasSuffix(p, "/redirect/"):
			w.Header().Set("Location", q.Get("to"))
			status := http.StatusFound
			if q.Get("status") == "201" {
				status = http.StatusCreated
			}
			w.WriteHeader(status)
		case strings.HasSuffix(p, "/refresh/"):
			w.Header().Set("Refresh", q.Get("to"))
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, "refresh")
		default:
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, "upstream "+r.URL.Path)
		}
	}))
	t.Cleanup(d.Close)
	return d
}

func (d *hostileDriver) last(t testing.TB) (*http.Request, string) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.got) == 0 {
		t.Fatal("hostile driver received no request")
	}
	return d.got[len(d.got)-1], d.bodies[len(d.bodies)-1]
}

// newHostileHarness is the usual harness plus appHostile, served by a
// hostileDriver that is also History Server "evil".
func newHostileHarness(t testing.TB) (*harness, *hostileDriver) {
	t.Helper()
	d := newHostileDriver(t)
	u, _ := url.Parse(d.URL)
	h := newHarness(t, func(o *Options) { o.HistoryServers["evil"] = u })
	apps := append([]*discovery.App(nil), h.reg.Load().Apps()...)
	apps = append(apps, &discovery.App{ID: appHostile, Name: "hostile", User: "alice", StartTime: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC),
		State: discovery.Running, UIURL: u, Source: "probe:127.0.0.1:4042"})
	h.reg.Store(discovery.NewSnapshot(apps))
	return h, d
}

// TestUpstreamOriginHeadersDropped: a driver or History Server cannot
// plant cookies, widen a service worker's scope, clear the origin's data,
// join the gateway's pages' browsing context group, pin HSTS or
// Alt-Svc, collect network error reports, open CORS or raise a
// credentials prompt; its other headers pass.
func TestUpstreamOriginHeadersDropped(t *testing.T) {
	t.Parallel()
	h, _ := newHostileHarness(t)
	for _, path := range []string{"/app/" + appHostile + "/headers/", "/hs/evil/static/headers/"} {
		resp, body := h.do(t, http.MethodGet, path, "alice", nil)
		if resp.StatusCode != http.StatusOK || body != "headers" {
			t.Fatalf("GET %s = %d %q; want 200 from the upstream", path, resp.StatusCode, body)
		}
		for _, name := range originHeaders {
			if v, ok := resp.Header[name]; ok {
				t.Errorf("GET %s: %s = %q reached the client", path, name, v)
			}
		}
		if got := resp.Header.Get("X-Spark"); got != "kept" {
			t.Errorf("GET %s: X-Spark = %q; want Spark's own headers kept", path, got)
		}
	}
}

// TestServiceWorkerRefused: the browser's service-worker script fetch is
// refused on every upstream path, and never reaches the upstream.
func TestServiceWorkerRefused(t *testing.T) {
	t.Parallel()
	h, d := newHostileHarness(t)
	for _, path := range []string{
		"/app/" + appHostile + "/static/sw.js",
		"/proxy/" + appYarn + "/static/sw.js",
		"/hs/evil/static/sw.js",
		"/api/v1/applications/" + appHostile + "/sw.js",
		"/",
	} {
		for _, hdr := range []http.Header{
			{"Service-Worker": {"script"}},
			{"Sec-Fetch-Dest": {"serviceworker"}},
			{"Sec-Fetch-Dest": {"ServiceWorker"}},
		} {
			resp, body := h.do(t, http.MethodGet, path, "alice", hdr)
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "service workers are not served") {
				t.Errorf("GET %s with %v = %d %.100q; want 403 from the gateway", path, hdr, resp.StatusCode, body)
			}
		}
	}
	d.mu.Lock()
	n := len(d.got)
	d.mu.Unlock()
	if n != 0 {
		t.Errorf("the upstream received %d service-worker fetches; want none", n)
	}
	// A plain script fetch of the same path still works.
	resp, body := h.do(t, http.MethodGet, "/app/"+appHostile+"/static/sw.js", "alice", http.Header{"Sec-Fetch-Dest": {"script"}})
	if resp.StatusCode != http.StatusOK || body != "upstream /static/sw.js" {
		t.Errorf("GET sw.js as a plain script = %d %q; want 200 from the upstream", resp.StatusCode, body)
	}
}

// TestUpstreamRequestHeadersAllowlist: only what Spark's UI and REST API
// read reaches the driver, whatever else the client forges; a GET's body
// does not reach it either.
func TestUpstreamRequestHeadersAllowlist(t *testing.T) {
	t.Parallel()
	h, d := newHostileHarness(t)
	kept := http.Header{
		"Accept":            {"text/html"},
		"Accept-Language":   {"de"},
		"Cache-Control":     {"max-age=0"},
		"Pragma":            {"no-cache"},
		"If-Modified-Since": {"Mon, 01 Jan 2024 00:00:00 GMT"},
		"If-None-Match":     {`"abc"`},
		"If-Range":          {`"abc"`},
		"Range":             {"bytes=0-10"},
		"User-Agent":        {"Mozilla/5.0 test"},
		"X-Request-Id":      {"req-12345678"},
	}
	forged := http.Header{
		"X-Forwarded-For": {"1.2.3.4"}, "X-Forwarded-User": {"admin"}, "X-Forwarded-Context": {"/evil"},
		"Forwarded": {"for=1.2.3.4"}, "X-Remote-User": {"admin"}, "Remote-User": {"admin"},
		"Authorization": {"Basic YWRtaW46YWRtaW4="}, "Proxy-Authorization": {"Basic x"},
		"X-Http-Method-Override": {"POST"}, "X-Spark-Trust": {"yes"}, "X-Original-Url": {"/jobs/job/kill/?id=1"},
		"X-Rewrite-Url": {"/jobs/job/kill/?id=1"}, "Content-Type": {"application/x-www-form-urlencoded"},
		"Origin": {"http://evil.example"}, "Referer": {"http://evil.example/"}, "Accept-Encoding": {"gzip"},
		"Sec-Fetch-Site": {"cross-site"}, "Upgrade": {"websocket"}, "X-Requested-With": {"XMLHttpRequest"},
		"Te": {"trailers"}, "Via": {"1.1 evil"}, "Max-Forwards": {"0"},
	}
	all := kept.Clone()
	for k, v := range forged {
		all[k] = v
	}
	// A raw request so that the body and the unusual headers go out
	// exactly as written.
	c := h.gw.Client()
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		req, err := http.NewRequest(method, h.gw.URL+"/app/"+appHostile+"/jobs/?x=1", strings.NewReader("id=1&terminate=true"))
		if err != nil {
			t.Fatal(err)
		}
		req.Header = all.Clone()
		req.Header.Set("Cookie", sessionName+"=alice")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s with forged headers = %d; want 200", method, resp.StatusCode)
		}
		got, body := d.last(t)
		want := kept.Clone()
		want.Set("X-Forwarded-Context", "/app/"+appHostile)
		if diff := cmp.Diff(want, got.Header); diff != "" {
			t.Errorf("%s: headers the driver received (-want +got):\n%s", method, diff)
		}
		if body != "" || got.ContentLength > 0 || len(got.TransferEncoding) > 0 {
			t.Errorf("%s: the driver received a body %q (length %d, %v); want none", method, body, got.ContentLength, got.TransferEncoding)
		}
		if got.URL.RawQuery != "x=1" {
			t.Errorf("%s: query %q; want x=1", method, got.URL.RawQuery)
		}
	}
}

// TestGatewayPageIsolation: every page the gateway renders itself (the
// index, error pages, the waiting page, the kill confirmation) and the
// sign-in pages wrapped by PageHeaders are isolated from the shared
// origin's scripts: their own browsing context group, no framing, a CSP
// without inline script; proxied Spark pages keep Spark's headers.
func TestGatewayPageIsolation(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(o *Options) { o.Config.Kill = KillModifyACL })
	want := map[string]string{
		"Cross-Origin-Opener-Policy": "same-origin",
		"X-Frame-Options":            "DENY",
		"X-Content-Type-Options":     "nosniff",
		"Referrer-Policy":            "same-origin",
	}
	check := func(what string, hdr http.Header) {
		t.Helper()
		for k, v := range want {
			if got := hdr.Get(k); got != v {
				t.Errorf("%s: %s = %q; want %q", what, k, got, v)
			}
		}
		csp := hdr.Get("Content-Security-Policy")
		if !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "frame-ancestors 'none'") ||
			strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
			t.Errorf("%s: Content-Security-Policy %q; want default-src 'none', frame-ancestors 'none', no inline script", what, csp)
		}
	}
	for _, p := range []struct {
		path   string
		status int
	}{
		{"/", http.StatusOK},
		{"/app/" + appLive + "/jobs/job/kill/?id=7", http.StatusOK},
		{"/app/app-20991231000000-9999/", http.StatusNotFound},
		{"/app/" + appDenied + "/", http.StatusNotFound}, // denied looks unknown
		{"/app/" + appWaiting + "/", http.StatusServiceUnavailable},
		{"/app/" + appLive + "/jobs/job/kill/?id=x", http.StatusBadRequest},
	} {
		resp, body := h.do(t, http.MethodGet, p.path, "alice", http.Header{"Accept": {"text/html"}})
		if resp.StatusCode != p.status || !strings.Contains(body, "<!doctype html>") {
			t.Fatalf("GET %s = %d; want %d and a gateway page", p.path, resp.StatusCode, p.status)
		}
		check("GET "+p.path, resp.Header)
		if strings.Contains(body, "<script>") {
			t.Errorf("GET %s: the page has inline script, which its CSP would block", p.path)
		}
	}
	// A proxied Spark page is Spark's: no gateway COOP on it (a driver
	// page with the gateway's COOP would share the confirmation's group).
	resp, _ := h.do(t, http.MethodGet, "/app/"+appLive+"/jobs/", "alice", nil)
	if v := resp.Header.Get("Cross-Origin-Opener-Policy"); v != "" {
		t.Errorf("proxied Spark page: Cross-Origin-Opener-Policy %q; want none", v)
	}
	// Sign-in pages: PageHeaders, and a page's own CSP wins over its default.
	signin := httptest.NewServer(PageHeaders(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/own" {
			w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
		}
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, "<p>sign in</p>")
	})))
	defer signin.Close()
	r, err := signin.Client().Get(signin.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	check("PageHeaders", r.Header)
	r, err = signin.Client().Get(signin.URL + "/own")
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if got := r.Header.Get("Content-Security-Policy"); got != "default-src 'none'; style-src 'unsafe-inline'" || r.Header.Get("Cross-Origin-Opener-Policy") != "same-origin" {
		t.Errorf("PageHeaders with the page's own CSP: CSP %q, COOP %q; want the page's CSP and same-origin", got, r.Header.Get("Cross-Origin-Opener-Policy"))
	}
}
