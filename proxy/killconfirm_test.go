package proxy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/sparkgate/sparkgate/proxy/discovery"
)

var csrfInput = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func TestKillConfirmModifyACL(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Config.Kill = KillModifyACL })
	target := "/app/" + appLive + "/jobs/job/kill/?id=7"

	// alice owns the app: she gets the confirmation page, not a kill.
	resp, body := h.do(t, "GET", target, "alice", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "Kill job 7?") {
		t.Fatalf("GET kill link = %d; want the confirmation page:\n%s", resp.StatusCode, body)
	}
	if n := len(h.drv.requests()); n != 0 {
		t.Fatalf("driver got %d requests before confirmation; want 0", n)
	}
	m := csrfInput.FindStringSubmatch(body)
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == csrfCookie {
			cookie = c
		}
	}
	if m == nil || cookie == nil {
		t.Fatalf("confirmation page has token %v, cookie %v; want both", m, cookie)
	}
	token := m[1]

	post := func(user, tok string, c *http.Cookie, hdr http.Header) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("POST", h.gw.URL+target, strings.NewReader(url.Values{"csrf": {tok}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range hdr {
			req.Header[k] = v
		}
		req.AddCookie(&http.Cookie{Name: sessionName, Value: user})
		if c != nil {
			req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
		}
		resp, err := h.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	refused := []struct {
		name, user, token string
		cookie            *http.Cookie
		hdr               http.Header
		want              int
	}{
		{"no token", "alice", "", cookie, nil, http.StatusForbidden},
		{"no cookie", "alice", token, nil, nil, http.StatusForbidden},
		{"other cookie", "alice", token, &http.Cookie{Name: csrfCookie, Value: "x"}, nil, http.StatusForbidden},
		{"other user", "bob", token, cookie, nil, http.StatusForbidden},
		{"not a viewer", "dave", token, cookie, nil, http.StatusNotFound},
		{"cross origin", "alice", token, cookie, http.Header{"Origin": {"https://evil.example"}}, http.StatusForbidden},
		// Fetch metadata: what a script on the gateway's origin sends.
		{"script fetch()", "alice", token, cookie, fetchMeta("cors", "empty", "same-origin", ""), http.StatusForbidden},
		{"script form.submit()", "alice", token, cookie, fetchMeta("navigate", "document", "same-origin", ""), http.StatusForbidden},
		{"form in a frame", "alice", token, cookie, fetchMeta("navigate", "iframe", "same-origin", "?1"), http.StatusForbidden},
		{"cross-site form", "alice", token, cookie, fetchMeta("navigate", "document", "same-site", "?1"), http.StatusForbidden},
	}
	for _, tt := range refused {
		if resp := post(tt.user, tt.token, tt.cookie, tt.hdr); resp.StatusCode != tt.want {
			t.Errorf("POST kill (%s) = %d; want %d", tt.name, resp.StatusCode, tt.want)
		}
	}
	if n := len(h.drv.requests()); n != 0 {
		t.Fatalf("driver got %d requests from refused confirmations; want 0", n)
	}

	// A script cannot read the confirmation page either.
	for name, hdr := range map[string]http.Header{
		"fetch()": fetchMeta("cors", "empty", "same-origin", ""),
		"frame":   fetchMeta("navigate", "iframe", "same-origin", ""),
	} {
		if resp, body := h.do(t, "GET", target, "alice", hdr); resp.StatusCode != http.StatusForbidden || csrfInput.MatchString(body) {
			t.Errorf("GET confirmation page by %s = %d; want 403 without a token", name, resp.StatusCode)
		}
	}
	if resp, _ := h.do(t, "GET", target, "alice", fetchMeta("navigate", "document", "same-origin", "?1")); resp.StatusCode != http.StatusOK {
		t.Errorf("GET confirmation page by a click = %d; want 200", resp.StatusCode)
	}

	// The user's own click on the form, as a browser sends it.
	resp = post("alice", token, cookie, fetchMeta("navigate", "document", "same-origin", "?1"))
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != "/app/"+appLive+"/jobs/" {
		t.Fatalf("POST kill = %d %q; want 303 to the jobs page", resp.StatusCode, loc)
	}
	got := h.drv.last(t)
	if got.Method != "GET" || got.Path != "/jobs/job/kill/" || got.RawQuery != "id=7" || got.Header.Get("Cookie") != "" {
		t.Errorf("driver got %s %s?%s cookie %q; want GET /jobs/job/kill/?id=7 without cookies", got.Method, got.Path, got.RawQuery, got.Header.Get("Cookie"))
	}

	// Other state-changing paths stay refused in this mode.
	if resp, _ := h.raw(t, "GET", "/app/"+appLive+"/jobs/hold/", "alice"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("GET hold in modify-acl mode = %d; want 403", resp.StatusCode)
	}
	if resp, _ := h.raw(t, "GET", "/app/"+appDenied+"/jobs/job/kill/?id=1", "alice"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("kill page of an app alice may not view = %d; want 404, as for an unknown app", resp.StatusCode)
	}
}

// TestSendKillSpark4 uses a driver that behaves as Spark 4.0.5 does (read
// from its classes and checked against a real driver in the e2e suite):
// the kill handler takes only POST, with the per-UI token of its kill form.
func TestSendKillSpark4(t *testing.T) {
	const token = "0f3a9c2b7d1e4f5a6b7c8d9e0f1a2b3c"
	var mu sync.Mutex
	var kills []url.Values
	drv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/jobs/", "/stages/":
			w.Header().Set("Content-Type", "text/html;charset=utf-8")
			_, _ = io.WriteString(w, `<form method="post" action="/jobs/job/kill/"><input type="hidden" name="id" value="7"/>`+
				`<input type="hidden" name="csrfToken" value="`+token+`"/><a href="#" class="kill-link">(kill)</a></form>`)
		case "/jobs/job/kill/", "/stages/stage/kill/":
			if r.Method != http.MethodPost {
				w.WriteHeader(http.StatusMethodNotAllowed)
				return
			}
			_ = r.ParseForm()
			if r.PostForm.Get("csrfToken") != token {
				w.WriteHeader(http.StatusForbidden)
				return
			}
			mu.Lock()
			kills = append(kills, r.PostForm)
			mu.Unlock()
			w.Header().Set("Location", "http://"+r.Host+"/jobs/")
			w.WriteHeader(http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	defer drv.Close()
	h := newHarness(t, func(o *Options) { o.Config.Kill = KillModifyACL })
	u, _ := url.Parse(drv.URL)
	app := &discovery.App{ID: appLive, State: discovery.Running, UIURL: u}
	for _, tt := range []struct{ path, id string }{{"/jobs/job/kill/", "7"}, {"/stages/stage/kill/", "12"}} {
		if err := h.srv.sendKill(context.Background(), app, tt.path, tt.id); err != nil {
			t.Errorf("sendKill(%q, %q) = %v; want nil", tt.path, tt.id, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(kills) != 2 || kills[0].Get("id") != "7" || kills[1].Get("id") != "12" {
		t.Errorf("driver took kills %v; want ids 7 and 12 posted with the token", kills)
	}
}

// TestKillLinksByPermission: in modify-acl mode a user who may modify the
// app gets Spark's kill control as a plain link to the confirmation page; a
// user who may only view it, and everyone in deny mode, gets none. The
// Authorizer is asked about Modify once per HTML page and not for other
// answers.
func TestKillLinksByPermission(t *testing.T) {
	confirmJob7 := func(prefix string) string {
		return `<a href="` + prefix + `/jobs/job/kill/?id=7" class="kill-link">(kill)</a>`
	}
	// vic may view appLive but not modify it.
	withViewer := func(h *harness) {
		var apps []*discovery.App
		for _, a := range h.reg.Load().Apps() {
			c := *a
			if c.ID == appLive {
				c.ACLProps = map[string]string{"spark.ui.view.acls": "bob,vic", "spark.modify.acls": "bob"}
			}
			apps = append(apps, &c)
		}
		h.reg.Store(discovery.NewSnapshot(apps))
	}
	tests := []struct {
		name, mode, user, path string
		want                   string // the confirmation link, "" for none
		asked                  int    // Modify decisions for kill links
	}{
		{"owner", KillModifyACL, "alice", "/app/" + appLive + "/jobs/", confirmJob7("/app/" + appLive), 1},
		{"modify acl", KillModifyACL, "bob", "/app/" + appLive + "/jobs/", confirmJob7("/app/" + appLive), 1},
		{"proxy route", KillModifyACL, "alice", "/proxy/" + appYarn + "/jobs/", confirmJob7("/proxy/" + appYarn), 1},
		{"viewer only", KillModifyACL, "vic", "/app/" + appLive + "/jobs/", "", 1},
		{"not html", KillModifyACL, "alice", "/app/" + appLive + "/static/x.js", "", 0},
		{"deny mode owner", KillDeny, "alice", "/app/" + appLive + "/jobs/", "", 0},
		{"history server", KillModifyACL, "alice", "/hs/main/history/" + appHistory + "/1/jobs/", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, func(o *Options) { o.Config.Kill = tt.mode })
			withViewer(h)
			resp, body := h.do(t, "GET", tt.path, tt.user, nil)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET %s as %s = %d; want 200", tt.path, tt.user, resp.StatusCode)
			}
			n := strings.Count(body, "kill-link")
			switch {
			case tt.want != "" && (!strings.Contains(body, tt.want) || n != 1):
				t.Errorf("GET %s as %s:\n%s\nwant the one confirmation link %s", tt.path, tt.user, body, tt.want)
			case tt.want == "" && (n != 0 || strings.Contains(body, "/kill/")):
				t.Errorf("GET %s as %s:\n%s\nwant no kill control", tt.path, tt.user, body)
			}
			if strings.Contains(body, "window.confirm") {
				t.Errorf("GET %s as %s kept Spark's kill script:\n%s", tt.path, tt.user, body)
			}
			if got := h.audit.FilterField(zap.String("for", "kill links")).Len(); got != tt.asked {
				t.Errorf("GET %s as %s asked the Authorizer %d times about kill links; want %d", tt.path, tt.user, got, tt.asked)
			}
		})
	}
}

// TestKillLinkLeadsToConfirmation follows the rewritten link of the real
// Spark 4.0.5 Jobs page: it is the confirmation page, and Spark's own form
// (a POST of id and its csrfToken to the kill path) stays refused.
func TestKillLinkLeadsToConfirmation(t *testing.T) {
	page, err := os.ReadFile("testdata/spark-4.0.5-jobs.html")
	if err != nil {
		t.Fatal(err)
	}
	drv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/jobs/" {
			w.WriteHeader(http.StatusTeapot)
			return
		}
		w.Header().Set("Content-Type", "text/html;charset=utf-8")
		_, _ = w.Write(page)
	}))
	defer drv.Close()
	h := newHarness(t, func(o *Options) { o.Config.Kill = KillModifyACL })
	u, _ := url.Parse(drv.URL)
	var apps []*discovery.App
	for _, a := range h.reg.Load().Apps() {
		c := *a
		if c.ID == appLive {
			c.UIURL = u
		}
		apps = append(apps, &c)
	}
	h.reg.Store(discovery.NewSnapshot(apps))

	_, body := h.do(t, "GET", "/app/"+appLive+"/jobs/", "alice", nil)
	m := regexp.MustCompile(`<a href="([^"]*)" class="kill-link">\(kill\)</a>`).FindStringSubmatch(body)
	if m == nil || strings.Contains(body, "csrfToken") {
		t.Fatalf("Jobs page has link %v and csrfToken %v; want a confirmation link and no Spark form", m, strings.Contains(body, "csrfToken"))
	}
	if want := "/app/" + appLive + "/jobs/job/kill/?id=1"; m[1] != want {
		t.Errorf("confirmation link = %q; want %q", m[1], want)
	}
	resp, body := h.do(t, "GET", m[1], "alice", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "Kill job 1?") {
		t.Errorf("GET %s = %d; want the confirmation page:\n%s", m[1], resp.StatusCode, body)
	}
	form := url.Values{"id": {"1"}, "csrfToken": {"5f140ff529cc389e22bd7a4900871acc"}}
	req, _ := http.NewRequest("POST", h.gw.URL+"/app/"+appLive+"/jobs/job/kill/", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: sessionName, Value: "alice"})
	resp, err = h.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode < 400 || resp.StatusCode >= 500 {
		t.Errorf("Spark's own kill form through the gateway = %d; want it refused", resp.StatusCode)
	}
}

// TestKillConfirmCookieSecureBehindTLSProxy: TLS may end at a load balancer,
// so the request itself is plain HTTP; an https public URL still makes the
// confirmation cookie Secure.
func TestKillConfirmCookieSecureBehindTLSProxy(t *testing.T) {
	for _, secure := range []bool{false, true} {
		h := newHarness(t, func(o *Options) { o.Config.Kill = KillModifyACL; o.SecureCookies = secure })
		resp, _ := h.do(t, "GET", "/app/"+appLive+"/jobs/job/kill/?id=7", "alice", nil)
		var got *http.Cookie
		for _, c := range resp.Cookies() {
			if c.Name == csrfCookie {
				got = c
			}
		}
		if got == nil {
			t.Fatalf("SecureCookies=%v: no confirmation cookie", secure)
		}
		if got.Secure != secure || !got.HttpOnly || got.SameSite != http.SameSiteStrictMode {
			t.Errorf("SecureCookies=%v: cookie Secure=%v HttpOnly=%v SameSite=%v; want Secure=%v, HttpOnly, Strict",
				secure, got.Secure, got.HttpOnly, got.SameSite, secure)
		}
	}
}

// fetchMeta is the fetch metadata a browser sends with a request.
func fetchMeta(mode, dest, site, user string) http.Header {
	h := http.Header{"Sec-Fetch-Mode": {mode}, "Sec-Fetch-Dest": {dest}, "Sec-Fetch-Site": {site}}
	if user != "" {
		h.Set("Sec-Fetch-User", user)
	}
	return h
}

// TestKillConfirmBoundToDriverRun: alice is shown "Kill job 7?" for the
// driver of appLive. Before she clicks, the app's driver is replaced: a new
// attempt on another address (a YARN AM retry), or the same attempt id
// started again (a driver pod restarted under the same spark.app.id). Job
// ids start again at 0 in the new run, so its job 7 is another job: the
// confirmation is refused and the new driver gets no kill. The run it was
// shown for still takes it.
func TestKillConfirmBoundToDriverRun(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Config.Kill = KillModifyACL })
	target := "/app/" + appLive + "/jobs/job/kill/?id=7"
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	runOn := func(attempt string, started time.Time, drv *backend) {
		h.reg.Store(discovery.NewSnapshot([]*discovery.App{{ID: appLive, Name: "etl", User: "alice", AttemptID: attempt,
			SparkVersion: "3.5.9", StartTime: started, State: discovery.Running, UIURL: drv.url(), Source: "yarn"}}))
	}
	for _, tc := range []struct {
		name    string
		attempt string
		started time.Time
	}{
		{"a new attempt", "2", start.Add(5 * time.Minute)},
		{"the same attempt started again", "1", start.Add(5 * time.Minute)},
	} {
		first := newBackend(t)
		runOn("1", start, first)
		token, cookie := openConfirmation(t, h, target, "alice")
		next := newBackend(t)
		runOn(tc.attempt, tc.started, next)
		if code := postConfirmation(t, h, target, "alice", token, cookie); code != http.StatusForbidden || killsAt(next) != 0 {
			t.Errorf("%s: a confirmation shown for the run before = %d, %d kills sent to the new run; want 403 and none", tc.name, code, killsAt(next))
		}
		// The run it was shown for, now at another address (same
		// attempt and start): the confirmation holds.
		runOn("1", start, next)
		if code := postConfirmation(t, h, target, "alice", token, cookie); code != http.StatusSeeOther || killsAt(next) != 1 {
			t.Errorf("%s: the confirmation on its own run = %d, %d kills sent; want 303 and one", tc.name, code, killsAt(next))
		}
	}
}

// TestKillConfirmOnce: a confirmation kills once. Posted again with the
// same cookie and token (a copied form, a browser resending it), it is
// refused on the replica that took it and, through the shared store
// (Options.ClaimOnce), on another.
func TestKillConfirmOnce(t *testing.T) {
	var mu sync.Mutex
	claimed := map[string]bool{}
	shared := func(o *Options) {
		o.Config.Kill = KillModifyACL
		o.CSRFKey = []byte("0123456789abcdef0123456789abcdef")
		o.ClaimOnce = func(_ context.Context, k string, _ time.Duration) bool {
			mu.Lock()
			defer mu.Unlock()
			first := !claimed[k]
			claimed[k] = true
			return first
		}
	}
	a, b := newHarness(t, shared), newHarness(t, shared)
	b.reg.Store(a.reg.Load()) // one driver behind both replicas
	target := "/app/" + appLive + "/jobs/job/kill/?id=7"
	token, cookie := openConfirmation(t, a, target, "alice")
	for i, tc := range []struct {
		h    *harness
		want int
	}{{a, http.StatusSeeOther}, {a, http.StatusForbidden}, {b, http.StatusForbidden}} {
		if code := postConfirmation(t, tc.h, target, "alice", token, cookie); code != tc.want {
			t.Errorf("post %d = %d; want %d", i+1, code, tc.want)
		}
	}
	kills := killsAt(a.drv)
	if kills != 1 {
		t.Errorf("one confirmation posted three times sent %d kills; want 1", kills)
	}
}

// openConfirmation opens the kill confirmation at target as user, by a
// click, and returns its form's token and double-submit cookie.
func openConfirmation(t *testing.T, h *harness, target, user string) (string, *http.Cookie) {
	t.Helper()
	resp, body := h.do(t, "GET", target, user, fetchMeta("navigate", "document", "same-origin", "?1"))
	if m := csrfInput.FindStringSubmatch(body); m != nil {
		for _, c := range resp.Cookies() {
			if c.Name == csrfCookie {
				return m[1], &http.Cookie{Name: c.Name, Value: c.Value}
			}
		}
	}
	t.Fatalf("confirmation page = %d; want one with a token and a cookie:\n%s", resp.StatusCode, body)
	return "", nil
}

// postConfirmation submits a confirmation form to h as user, as the
// browser does on the user's click, and returns the status.
func postConfirmation(t *testing.T, h *harness, target, user, token string, cookie *http.Cookie) int {
	t.Helper()
	req, _ := http.NewRequest("POST", h.gw.URL+target, strings.NewReader(url.Values{"csrf": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range fetchMeta("navigate", "document", "same-origin", "?1") {
		req.Header[k] = v
	}
	req.AddCookie(&http.Cookie{Name: sessionName, Value: user})
	req.AddCookie(cookie)
	resp, err := h.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// killsAt counts the kill requests b received.
func killsAt(b *backend) int {
	n := 0
	for _, r := range b.requests() {
		if strings.Contains(r.Path, "/kill") {
			n++
		}
	}
	return n
}

// TestKillConfirmReachesOnlyTheConfirmedDriver: a kill names a job, not
// the app, so it must go over a connection confirmed to reach the app's
// driver, as every proxied request does. alice opens a confirmation, her
// driver exits and another user's app takes its port before discovery has
// seen the end: her confirmed kill must not reach the newcomer (whose job
// of that number it would kill), nor must the read of its kill form.
func TestKillConfirmReachesOnlyTheConfirmedDriver(t *testing.T) {
	t.Parallel()
	var (
		mu       sync.Mutex
		replaced bool
		asked    []string
	)
	h := newHarness(t, func(o *Options) {
		o.Config.Kill = KillModifyACL
		o.Confirm = func(_ context.Context, id string) error {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, id)
			if replaced {
				return fmt.Errorf("%w: answers as app-20240101000000-0099", discovery.ErrReplaced)
			}
			return nil
		}
	})
	target := "/app/" + appLive + "/jobs/job/kill/?id=7"
	token, cookie := openConfirmation(t, h, target, "alice")
	mu.Lock()
	replaced = true
	mu.Unlock()
	h.srv.upstreams.transport.CloseIdleConnections() // the exited driver's connections are gone

	before := len(h.drv.requests())
	if code := postConfirmation(t, h, target, "alice", token, cookie); code == http.StatusSeeOther {
		t.Errorf("the confirmed kill = %d; want it refused", code)
	}
	if n := len(h.drv.requests()) - before; n != 0 || killsAt(h.drv) != 0 {
		t.Errorf("the replaced address got %d requests, %d kills; want none", n, killsAt(h.drv))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) == 0 || asked[len(asked)-1] != appLive {
		t.Errorf("discovery was asked to confirm %q; want %s last", asked, appLive)
	}
}

// TestFindKillToken: Spark 4's kill-form token is found in a page as it is
// read, wherever the reads split it, in a fixed buffer: a driver's page
// may be any length (16 MiB are read at most), and every confirmed kill
// reads one. Not parallel: it counts the process's allocations.
func TestFindKillToken(t *testing.T) {
	const tok = "0123456789abcdef0123456789ABCDEF"
	input := `<input type="hidden" name="csrfToken" value="` + tok + `">`
	for _, pad := range []int{0, 1, 100, 32<<10 - 60, 32<<10 - 20, 32 << 10, 64<<10 - 30, 1 << 20} {
		page := strings.Repeat("x", pad) + input + "</form>"
		for _, chunk := range []int{1, 7, 4096, 1 << 20} {
			if pad > 64<<10 && chunk < 4096 {
				continue
			}
			got, err := findKillToken(&chunkReader{s: page, n: chunk})
			if got != tok || err != nil {
				t.Errorf("token after %d bytes, read %d at a time: %q, %v; want %q", pad, chunk, got, err, tok)
			}
		}
	}
	if got, err := findKillToken(strings.NewReader(strings.Repeat("<tr><td>job</td></tr>", 1000))); got != "" || err != nil {
		t.Errorf("a page without a token: %q, %v; want none", got, err)
	}
	// A 16 MiB page costs its buffer, not its length.
	big := strings.Repeat("<tr><td>job</td></tr>", (16<<20)/21) + input
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got, _ := findKillToken(strings.NewReader(big))
	runtime.ReadMemStats(&after)
	if got != tok {
		t.Errorf("token at the end of a 16 MiB page: %q; want %q", got, tok)
	}
	// The process's count (the race detector's and other tests' leftover
	// goroutines' allocations in it): reading the page whole is 16 MiB
	// and more, the buffer 32 KiB.
	if n := after.TotalAlloc - before.TotalAlloc; n > 8<<20 {
		t.Errorf("reading a 16 MiB page for its token allocated %d KiB; want its buffer's 32 KiB, not the page", n>>10)
	}
}
