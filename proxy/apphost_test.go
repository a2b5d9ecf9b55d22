package proxy

import (
	"context"
	"html"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// appHostHarness is the usual harness with per-app origins under
// apps.test, the main origin being the test server's URL.
func appHostHarness(t *testing.T) *harness {
	t.Helper()
	return newHarness(t, func(o *Options) {
		o.Config.AppDomain = "apps.test"
		o.PublicURL = "http://gw.test:8080"
	})
}

// onHost sends a request to the gateway with the given Host header and
// cookies.
func (h *harness) onHost(t *testing.T, host, path string, cookies ...*http.Cookie) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, h.gw.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	for _, c := range cookies {
		req.AddCookie(c)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

func TestAppHostHandOff(t *testing.T) {
	t.Parallel()
	h := appHostHarness(t)
	alice := &http.Cookie{Name: sessionName, Value: "alice"}
	appHost := appLive + ".apps.test:8080"

	// The main origin hands a signed-in viewer over to the app's host.
	resp := h.onHost(t, "gw.test:8080", "/app/"+appLive+"/jobs/?x=1", alice)
	loc := resp.Header.Get("Location")
	wantPrefix := "http://" + appHost + handoffPath + "?t="
	if resp.StatusCode != http.StatusFound || !strings.HasPrefix(loc, wantPrefix) {
		t.Fatalf("main /app/%s/jobs/ = %d, Location %q; want 302 to %s…", appLive, resp.StatusCode, loc, wantPrefix)
	}
	if n := len(h.drv.requests()); n != 0 {
		t.Fatalf("the main origin proxied %d requests; want none with app_domain", n)
	}
	handoff := strings.TrimPrefix(loc, "http://"+appHost)

	// The app's host takes the token once, sets a host-only cookie and
	// goes on to the page asked for.
	resp = h.onHost(t, appHost, handoff)
	var app *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == appCookie {
			app = c
		}
	}
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/jobs/?x=1" || app == nil {
		t.Fatalf("hand-off = %d, Location %q, cookie %v; want 302 to /jobs/?x=1 with %s", resp.StatusCode, resp.Header.Get("Location"), app, appCookie)
	}
	if sc := resp.Header.Get("Set-Cookie"); strings.Contains(strings.ToLower(sc), "domain=") || !strings.Contains(sc, "HttpOnly") {
		t.Errorf("app cookie %q; want host-only (no Domain) and HttpOnly", sc)
	}
	if resp := h.onHost(t, appHost, handoff); resp.StatusCode != http.StatusForbidden {
		t.Errorf("hand-off token used twice = %d; want 403", resp.StatusCode)
	}
	appC := &http.Cookie{Name: appCookie, Value: app.Value}

	// The app's pages are served at the host's root, without a prefix.
	resp = h.onHost(t, appHost, "/jobs/", appC)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("app host /jobs/ = %d; want 200", resp.StatusCode)
	}
	got := h.drv.last(t)
	if got.Path != "/jobs/" || got.Header.Get("X-Forwarded-Context") != "" || got.Header.Get("Cookie") != "" {
		t.Errorf("driver got %s with X-Forwarded-Context %q, Cookie %q; want /jobs/, none, none", got.Path, got.Header.Get("X-Forwarded-Context"), got.Header.Get("Cookie"))
	}
	// Spark's redirect stays on the app's host.
	resp = h.onHost(t, appHost, "/", appC)
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/jobs/" {
		t.Errorf("app host / = %d, Location %q; want 302 to /jobs/", resp.StatusCode, resp.Header.Get("Location"))
	}

	// Nothing else is honoured on an app's host: no cookie, a forged
	// one, another app's cookie, the main origin's session; each goes
	// back to the main origin, which signs in and hands off again.
	deniedHost := appDenied + ".apps.test:8080"
	for _, c := range []struct {
		name   string
		host   string
		cookie *http.Cookie
	}{
		{"no cookie", appHost, nil},
		{"forged cookie", appHost, &http.Cookie{Name: appCookie, Value: "eyJhIjoiYXBwIn0.AAAA"}},
		{"the main origin's session", appHost, alice},
		{"another app's cookie", deniedHost, appC},
	} {
		var cs []*http.Cookie
		if c.cookie != nil {
			cs = append(cs, c.cookie)
		}
		n := len(h.drv.requests())
		resp := h.onHost(t, c.host, "/jobs/", cs...)
		id := strings.TrimSuffix(c.host, ".apps.test:8080")
		if want := "http://gw.test:8080/app/" + id + "/jobs/"; resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != want {
			t.Errorf("%s: app host /jobs/ = %d, Location %q; want 302 to %s", c.name, resp.StatusCode, resp.Header.Get("Location"), want)
		}
		if len(h.drv.requests()) != n {
			t.Errorf("%s: the driver was asked", c.name)
		}
	}
	// A token for one app does not open another's host.
	resp = h.onHost(t, "gw.test:8080", "/app/"+appLive+"/", alice)
	tok := strings.TrimPrefix(resp.Header.Get("Location"), "http://"+appHost)
	if resp := h.onHost(t, deniedHost, tok); resp.StatusCode != http.StatusForbidden {
		t.Errorf("app A's token on app B's host = %d; want 403", resp.StatusCode)
	}
	// A viewer the app's ACLs leave out gets no token (and the 404 of an
	// unknown app).
	resp = h.onHost(t, "gw.test:8080", "/app/"+appDenied+"/", alice)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("main /app/%s/ for alice = %d; want 404", appDenied, resp.StatusCode)
	}
	// A finished app's host sends the browser to the main origin, whose
	// bookmark leads to the History Server's view.
	resp = h.onHost(t, appHistory+".apps.test:8080", "/jobs/", appC)
	if want := "http://gw.test:8080/app/" + appHistory + "/jobs/"; resp.Header.Get("Location") != want {
		t.Errorf("finished app's host = %d, Location %q; want %s", resp.StatusCode, resp.Header.Get("Location"), want)
	}
	// The gateway pages' "sign out" link on an app's host drops its
	// cookie and signs out on the main origin.
	resp = h.onHost(t, appHost, "/oauth2/logout", appC)
	if sc := resp.Header.Get("Set-Cookie"); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "http://gw.test:8080/oauth2/logout" ||
		!strings.HasPrefix(sc, appCookie+"=;") || !strings.Contains(sc, "Max-Age=0") {
		t.Errorf("app host /oauth2/logout = %d, Location %q, Set-Cookie %q; want 303 to the main origin's sign-out, the cookie deleted", resp.StatusCode, resp.Header.Get("Location"), sc)
	}
	// The main origin keeps the index.
	if resp := h.onHost(t, "gw.test:8080", "/", alice); resp.StatusCode != http.StatusOK {
		t.Errorf("main / = %d; want 200", resp.StatusCode)
	}
}

func TestAppDomainConfig(t *testing.T) {
	t.Parallel()
	for _, d := range []string{"apps.example.com", "apps.test", "a-1.b"} {
		c := DefaultConfig()
		c.AppDomain = d
		if errs := c.Validate(); len(errs) != 0 {
			t.Errorf("app_domain %q: %v; want valid", d, errs)
		}
	}
	for _, d := range []string{"apps", "Apps.example.com", "https://apps.example.com", "apps.example.com:443", ".apps.example.com", "apps..com", "-a.b", "*.apps.example.com"} {
		c := DefaultConfig()
		c.AppDomain = d
		if errs := c.Validate(); len(errs) != 1 || !strings.Contains(errs[0].Error(), "proxy.app_domain") {
			t.Errorf("app_domain %q: %v; want one proxy.app_domain error", d, errs)
		}
	}
}

// TestAppHostKillConfirm: with per-app origins and proxy.kill modify-acl,
// the app's pages link kill controls to the confirmation page on the
// app's own host, and the confirmation works there.
func TestAppHostKillConfirm(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(o *Options) {
		o.Config.AppDomain = "apps.test"
		o.Config.Kill = KillModifyACL
		o.PublicURL = "http://gw.test:8080"
	})
	appHost := appLive + ".apps.test:8080"
	resp := h.onHost(t, "gw.test:8080", "/app/"+appLive+"/", &http.Cookie{Name: sessionName, Value: "alice"})
	resp = h.onHost(t, appHost, strings.TrimPrefix(resp.Header.Get("Location"), "http://"+appHost))
	var appC *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == appCookie {
			appC = &http.Cookie{Name: c.Name, Value: c.Value}
		}
	}
	if appC == nil {
		t.Fatal("no app cookie after the hand-off")
	}
	do := func(method, path string, body string, cookies ...*http.Cookie) (*http.Response, string) {
		req, _ := http.NewRequest(method, h.gw.URL+path, strings.NewReader(body))
		req.Host = appHost
		if body != "" {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		for _, c := range cookies {
			req.AddCookie(c)
		}
		resp, err := h.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	_, page := do(http.MethodGet, "/jobs/", "", appC)
	if !strings.Contains(page, `<a href="/jobs/job/kill/?id=7" class="kill-link">(kill)</a>`) {
		t.Fatalf("jobs page on the app host lacks a confirmation link at the host's root:\n%s", page)
	}
	resp, body := do(http.MethodGet, "/jobs/job/kill/?id=7", "", appC)
	m := csrfInput.FindStringSubmatch(body)
	var csrf *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == csrfCookie {
			csrf = &http.Cookie{Name: c.Name, Value: c.Value}
		}
	}
	if resp.StatusCode != http.StatusOK || m == nil || csrf == nil {
		t.Fatalf("confirmation page on the app host = %d (token %v, cookie %v); want 200 with both", resp.StatusCode, m != nil, csrf)
	}
	resp, _ = do(http.MethodPost, "/jobs/job/kill/?id=7", "csrf="+url.QueryEscape(html.UnescapeString(m[1])), appC, csrf)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/jobs/" {
		t.Fatalf("confirmed kill on the app host = %d, Location %q; want 303 to /jobs/", resp.StatusCode, resp.Header.Get("Location"))
	}
	if got := h.drv.last(t); got.Path != "/jobs/job/kill/" || got.RawQuery != "id=7" {
		t.Errorf("driver got %s?%s; want the kill of job 7", got.Path, got.RawQuery)
	}
}

// TestAppHostCookieHostPrefixed: on https the app host's cookie is
// __Host-sparkgate_app (Secure, Path=/, no Domain), which a browser takes
// only from that very host: another app's host cannot plant one for it,
// and one named _sparkgate_app, which it could plant for all the app
// hosts, is not read.
func TestAppHostCookieHostPrefixed(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(o *Options) {
		o.Config.AppDomain = "apps.test"
		o.PublicURL = "https://gw.test:8443"
	})
	alice := &http.Cookie{Name: sessionName, Value: "alice"}
	appHost := appLive + ".apps.test:8443"
	resp := h.onHost(t, "gw.test:8443", "/app/"+appLive+"/jobs/", alice)
	handoff := strings.TrimPrefix(resp.Header.Get("Location"), "https://"+appHost)
	resp = h.onHost(t, appHost, handoff)
	var app *http.Cookie
	for _, c := range resp.Cookies() {
		app = c
	}
	if app == nil || app.Name != "__Host-sparkgate_app" || !app.Secure || app.Path != "/" || app.Domain != "" {
		t.Fatalf("hand-off cookie = %v; want __Host-sparkgate_app, Secure, Path=/, no Domain", app)
	}
	if resp := h.onHost(t, appHost, "/jobs/", app); resp.StatusCode != http.StatusOK {
		t.Errorf("app host with %s = %d; want 200", app.Name, resp.StatusCode)
	}
	if resp := h.onHost(t, appHost, "/jobs/", &http.Cookie{Name: appCookie, Value: app.Value}); resp.StatusCode != http.StatusFound {
		t.Errorf("app host with %s = %d; want 302 to the main origin (not read)", appCookie, resp.StatusCode)
	}
}

// TestHandOffOnceAcrossReplicas: two replicas with one key and a shared
// store (Options.ClaimOnce; auth's TestClaimOnceAcrossReplicas proves it
// on Redis): a hand-off token taken on one replica is refused by the
// other, and the claim lasts as long as the token. Without the store
// (the control) the other replica takes it again, as documented.
func TestHandOffOnceAcrossReplicas(t *testing.T) {
	t.Parallel()
	key := []byte("0123456789abcdef0123456789abcdef")
	type claim struct {
		key string
		ttl time.Duration
	}
	for _, shared := range []bool{true, false} {
		var mu sync.Mutex
		claims := map[string]bool{}
		var asked []claim
		replica := func() *harness {
			return newHarness(t, func(o *Options) {
				o.Config.AppDomain = "apps.test"
				o.PublicURL = "http://gw.test:8080"
				o.CSRFKey = key
				if shared {
					o.ClaimOnce = func(_ context.Context, k string, ttl time.Duration) bool {
						mu.Lock()
						defer mu.Unlock()
						asked = append(asked, claim{k, ttl})
						first := !claims[k]
						claims[k] = true
						return first
					}
				}
			})
		}
		a, b := replica(), replica()
		alice := &http.Cookie{Name: sessionName, Value: "alice"}
		appHost := appLive + ".apps.test:8080"
		resp := a.onHost(t, "gw.test:8080", "/app/"+appLive+"/jobs/", alice)
		handoff := strings.TrimPrefix(resp.Header.Get("Location"), "http://"+appHost)
		if resp.StatusCode != http.StatusFound || !strings.HasPrefix(handoff, handoffPath) {
			t.Fatalf("main /app/%s/jobs/ = %d, Location %q; want a hand-off", appLive, resp.StatusCode, resp.Header.Get("Location"))
		}
		if resp := b.onHost(t, appHost, handoff); resp.StatusCode != http.StatusFound {
			t.Fatalf("shared %t: hand-off on replica b = %d; want 302", shared, resp.StatusCode)
		}
		want := http.StatusForbidden
		if !shared {
			want = http.StatusFound
		}
		if resp := a.onHost(t, appHost, handoff); resp.StatusCode != want {
			t.Errorf("shared %t: the same hand-off on replica a = %d; want %d", shared, resp.StatusCode, want)
		}
		if !shared {
			continue
		}
		if len(asked) != 2 || !strings.HasPrefix(asked[0].key, "handoff:") || asked[0].key != asked[1].key ||
			asked[0].ttl <= handoffTTL-time.Second || asked[0].ttl > handoffTTL+time.Second {
			t.Errorf("claims asked = %+v; want the token's nonce twice, each for about %s", asked, handoffTTL)
		}
	}
}
