package proxy

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/sparkgate/sparkgate/proxy/discovery"
)

// masterPage is the shape of a standalone master's pages (MasterPage,
// ApplicationPage in 3.5 and 4.x): kill forms, absolute links to workers,
// drivers, workers' executor logs and a History Server, and 4.x's
// hard-coded root links.
const masterPage = `<!DOCTYPE html><html><head>
<link rel="stylesheet" href="/static/bootstrap.min.css" type="text/css"/>
<script src="/static/sorttable.js"></script><title>Spark Master at spark://127.0.0.1:7077</title></head><body>
<a href="/"><img src="/static/spark-logo-77x50px-hd.png" /></a>
<a href="/environment/">Environment</a> <a href="/logPage/?self&amp;logType=out">Log</a>
<table><tr><td><a href="http://127.0.0.1:1/">worker-20261201-127.0.0.1-1</a></td></tr>
<tr><td><a href="app/?appId=` + appLive + `">` + appLive + `</a>
<form action="app/kill/" method="POST" style="display:inline"><input type="hidden" name="id" value="` + appLive + `"/><input type="hidden" name="terminate" value="true"/><a href="#" onclick="if (window.confirm('Are you sure you want to kill application ` + appLive + ` ?')) { this.parentNode.submit(); return true; } else { return false; }" class="kill-link">(kill)</a></form></td>
<td><a href="DRIVER">etl</a></td></tr>
<tr><td><form action="driver/kill/" method="POST"><input type="hidden" name="id" value="driver-1"/><a href="#" class="kill-link">(kill)</a></form></td></tr>
<tr><td><a href="http://127.0.0.1:1/logPage/?appId=` + appLive + `&amp;executorId=0&amp;logType=stdout">stdout</a>
<a href="http://127.0.0.1:1/logPage/?driverId=driver-1&amp;logType=stderr">driver stderr</a>
<a href="HISTORY/history/` + appHistory + `">history</a>
<a href="http://10.9.9.9:9999/secret">elsewhere</a> <a href="javascript:alert(1)">js</a> <a href="/\evil.example/">slash</a>
<a href="/master/m1/static/x.js">prefixed</a></td></tr></table></body></html>`

func masterHarness(t *testing.T, everyone bool) (*harness, *[]string) {
	t.Helper()
	var mu sync.Mutex
	var seen []string
	var page string
	master := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.RequestURI()+" xfc="+r.Header.Get("X-Forwarded-Context"))
		mu.Unlock()
		switch r.URL.Path {
		case "/", "/app/":
			w.Header().Set("Content-Type", "text/html;charset=utf-8")
			_, _ = w.Write([]byte(page))
		case "/json/":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"workers":[]}`))
		default:
			w.Header().Set("Location", "http://"+r.Host+"/")
			w.WriteHeader(http.StatusFound)
		}
	}))
	t.Cleanup(master.Close)
	h := newHarness(t, func(o *Options) {
		o.Masters = []MasterConfig{{Name: "m1", URL: master.URL, Everyone: everyone}}
		o.IsAdmin = func(id Identity) bool { return id.User == "admin" }
	})
	drv := newBackend(t)
	apps := append(h.reg.Load().Apps(), &discovery.App{ID: appStandalone, Name: "sa", User: "alice", State: discovery.Running, UIURL: drv.url()})
	h.reg.Store(discovery.NewSnapshot(apps))
	page = strings.NewReplacer("DRIVER", drv.URL, "HISTORY", h.hs.URL).Replace(masterPage)
	return h, &seen
}

func TestMasterPage(t *testing.T) {
	h, seen := masterHarness(t, false)
	resp, body := h.do(t, "GET", "/master/m1/", "admin", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("admin GET /master/m1/ = %d\n%s", resp.StatusCode, body)
	}
	for _, want := range []string{
		`href="/master/m1/static/bootstrap.min.css"`, `src="/master/m1/static/sorttable.js"`,
		`<a href="/master/m1/">`, `href="/master/m1/environment/"`, `<a>Log</a>`, `href="/master/m1/app/?appId=` + appLive + `"`,
		`<a href="/app/` + appStandalone + `/">etl</a>`,
		`<a href="/app/` + appLive + `/_/logs/0/stdout">stdout</a>`,
		`<a href="/hs/main/history/` + appHistory + `">history</a>`,
		`<a>worker-20261201-127.0.0.1-1</a>`, `<a>elsewhere</a>`, `<a>js</a>`, `<a>slash</a>`, `<a>driver stderr</a>`,
		`href="/master/m1/static/x.js"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	for _, bad := range []string{"kill", "127.0.0.1:1", h.drv.Listener.Addr().String(), h.hs.Listener.Addr().String(), "10.9.9.9", "javascript:", "evil"} {
		if strings.Contains(strings.ToLower(body), bad) {
			t.Errorf("page still contains %q:\n%s", bad, body)
		}
	}
	if got := (*seen)[0]; got != "GET / xfc=/master/m1" {
		t.Errorf("master got %q; want GET / with X-Forwarded-Context /master/m1", got)
	}
	// The master's redirect stays under its prefix.
	resp, _ = h.do(t, "GET", "/master/m1/elsewhere", "admin", nil)
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusFound || loc != "/master/m1/" {
		t.Errorf("redirect = %d %q; want 302 /master/m1/", resp.StatusCode, loc)
	}
}

func TestMasterAccessAndKill(t *testing.T) {
	h, seen := masterHarness(t, false)
	if resp, _ := h.do(t, "GET", "/master/m1/", "alice", nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("alice GET /master/m1/ = %d; want 403 (admins only)", resp.StatusCode)
	}
	if resp, _ := h.do(t, "GET", "/master/m1/", "", nil); resp.StatusCode != http.StatusFound {
		t.Errorf("anonymous GET /master/m1/ = %d; want the sign-in redirect", resp.StatusCode)
	}
	if resp, _ := h.do(t, "GET", "/master/nope/", "admin", nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /master/nope/ = %d; want 404", resp.StatusCode)
	}
	for _, p := range []string{"app/kill/?id=" + appLive + "&terminate=true", "app/kill", "driver/kill/?id=driver-1", "workers/kill/?host=127.0.0.1",
		"app/KILL/", "app/%6Bill/", "app/ｋｉｌｌ/", "app/kill%20/", "app/kill./", "app/k%C4%B1ll/"} {
		for _, m := range []string{"GET", "POST", "HEAD"} {
			resp, _ := h.do(t, m, "/master/m1/"+p, "admin", nil)
			if resp.StatusCode < 400 {
				t.Errorf("%s /master/m1/%s = %d; want refused", m, p, resp.StatusCode)
			}
		}
	}
	if resp, _ := h.do(t, "GET", "/master/m1/logPage/?self&logType=out", "admin", nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET the master's daemon log = %d; want 404", resp.StatusCode)
	}
	if resp, _ := h.do(t, "POST", "/master/m1/", "admin", nil); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /master/m1/ = %d; want 405", resp.StatusCode)
	}
	if len(*seen) != 0 {
		t.Errorf("master received %v; want nothing", *seen)
	}
	h2, seen2 := masterHarness(t, true)
	if resp, _ := h2.do(t, "GET", "/master/m1/", "alice", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("with everyone: alice GET /master/m1/ = %d; want 200", resp.StatusCode)
	}
	// The master's reverse proxy would relay to any app's driver (or a
	// worker) past that app's ACLs: not served.
	for _, p := range []string{"proxy/" + appLive + "/jobs/", "proxy/worker-20261201120000-10.0.0.1-35000/logPage/?appId=" + appLive + "&logType=stdout", "proxy", "proxy/"} {
		if resp, _ := h2.do(t, "GET", "/master/m1/"+p, "alice", nil); resp.StatusCode != http.StatusNotFound {
			t.Errorf("with everyone: alice GET /master/m1/%s = %d; want 404", p, resp.StatusCode)
		}
	}
	if len(*seen2) != 1 {
		t.Errorf("master received %v; want only GET /", *seen2)
	}
}

func TestValidateMasters(t *testing.T) {
	errs := ValidateMasters([]MasterConfig{
		{Name: "ok", URL: "http://m:8080"},
		{Name: "ok", URL: "http://m:8080"},
		{Name: "Bad", URL: "http://m:8080"},
		{Name: "p", URL: "http://m:8080/x"},
		{Name: "q", URL: "ftp://m"},
	})
	if len(errs) != 4 {
		t.Errorf("ValidateMasters = %v; want 4 problems (twice, name, path, scheme)", errs)
	}
}

// TestIndexLinksMasters: the index links each standalone master to the
// users who may open it, and to no one else.
func TestIndexLinksMasters(t *testing.T) {
	const link = `<a href="/master/m1/">m1</a>`
	for _, tc := range []struct {
		everyone bool
		user     string
		want     bool
	}{
		{false, "admin", true},
		{false, "alice", false},
		{true, "alice", true},
	} {
		h, _ := masterHarness(t, tc.everyone)
		resp, body := h.do(t, "GET", "/", tc.user, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("index as %s = %d", tc.user, resp.StatusCode)
		}
		if got := strings.Contains(body, link); got != tc.want {
			t.Errorf("everyone=%t, index as %s links the master: %t; want %t", tc.everyone, tc.user, got, tc.want)
		}
	}
}
