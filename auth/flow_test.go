package auth

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
)

// gateway is a test server in front of an Authenticator: /oauth2/ goes to
// Handler, everything else answers with the identity or a Challenge.
type gateway struct {
	srv   *httptest.Server
	auth  atomic.Pointer[Authenticator]
	clock *fakeClock
}

func newKey(t testing.TB) string {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

func oidcConfig(idp *fakeIDP, keys ...string) Config {
	cfg := Config{
		Mode:    ModeOIDC,
		OIDC:    OIDCConfig{Issuer: idp.issuer(), ClientID: idp.clientID, ClientSecret: idp.clientSecret},
		Session: SessionConfig{Keys: keys},
	}
	cfg.SetDefaults()
	return cfg
}

func newGateway(t testing.TB, clock *fakeClock) *gateway {
	t.Helper()
	g := &gateway{clock: clock}
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := g.auth.Load()
		if strings.HasPrefix(r.URL.Path, "/oauth2/") {
			a.Handler().ServeHTTP(w, r)
			return
		}
		id, ok, err := a.Authenticate(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		if !ok {
			a.Challenge(w, r)
			return
		}
		fmt.Fprintf(w, "user=%s groups=%s method=%s uri=%s", id.User, strings.Join(id.Groups, ","), id.Method, r.URL.RequestURI())
	}))
	t.Cleanup(g.srv.Close)
	return g
}

// use builds an Authenticator for cfg and serves it.
func (g *gateway) use(t testing.TB, cfg Config) *Authenticator {
	t.Helper()
	a, err := New(context.Background(), cfg, g.srv.URL, zaptest.NewLogger(t))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	a.now = g.clock.Now
	g.auth.Store(a)
	return a
}

func newBrowser(t testing.TB, follow bool) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	if !follow {
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	}
	return c
}

func get(t testing.TB, c *http.Client, u string) (*http.Response, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// location returns the absolute Location of a redirect.
func location(t testing.TB, resp *http.Response) string {
	t.Helper()
	if resp.StatusCode != http.StatusFound && resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("GET %s = %d; want a redirect", resp.Request.URL, resp.StatusCode)
	}
	u, err := resp.Location()
	if err != nil {
		t.Fatal(err)
	}
	return u.String()
}

type flowEnv struct {
	clock *fakeClock
	idp   *fakeIDP
	gw    *gateway
	auth  *Authenticator
	key   string
}

func newFlowEnv(t testing.TB, edit func(*Config)) *flowEnv {
	t.Helper()
	clock := &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	e := &flowEnv{clock: clock, idp: newFakeIDP(t, clock), gw: newGateway(t, clock), key: newKey(t)}
	cfg := oidcConfig(e.idp, e.key)
	if edit != nil {
		edit(&cfg)
	}
	e.auth = e.gw.use(t, cfg)
	return e
}

// signIn runs the whole flow in a following browser and returns the page.
func (e *flowEnv) signIn(t testing.TB, c *http.Client, path string) string {
	t.Helper()
	resp, body := get(t, c, e.gw.srv.URL+path)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s after sign-in = %d %q; want 200", path, resp.StatusCode, body)
	}
	return body
}

func TestCodeFlowKeepsDeepLink(t *testing.T) {
	e := newFlowEnv(t, nil)
	c := newBrowser(t, true)
	const deep = "/app/app-20260301-0001/stages/stage/?id=3&attempt=0"
	body := e.signIn(t, c, deep)
	want := "user=alice groups=eng,spark-users method=session uri=" + deep
	if body != want {
		t.Errorf("page after sign-in = %q; want %q", body, want)
	}
	if _, pkce, _ := e.idp.counts(); pkce != 1 {
		t.Errorf("provider checked PKCE %d times; want 1", pkce)
	}
	// Signed in now: no second trip to the provider.
	body = e.signIn(t, c, "/x?y=1")
	if !strings.HasSuffix(body, "uri=/x?y=1") {
		t.Errorf("second page = %q; want uri=/x?y=1", body)
	}
	if authz, _, _ := e.idp.counts(); authz != 1 {
		t.Errorf("authorize calls = %d; want 1", authz)
	}
	// No login cookie is left behind.
	for _, ck := range c.Jar.Cookies(mustURL(t, e.gw.srv.URL+"/oauth2/")) {
		if strings.HasPrefix(ck.Name, loginCookiePrefix) {
			t.Errorf("login cookie %s left after callback", ck.Name)
		}
	}
}

func mustURL(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// startLogin follows a tab from a deep link to the provider's authorize
// URL and returns that URL.
func (e *flowEnv) startLogin(t testing.TB, c *http.Client, path string) string {
	t.Helper()
	resp, _ := get(t, c, e.gw.srv.URL+path)
	loginURL := location(t, resp)
	resp, _ = get(t, c, loginURL)
	authURL := location(t, resp)
	if !strings.HasPrefix(authURL, e.idp.issuer()+"/authorize?") {
		t.Fatalf("login redirected to %q; want the provider", authURL)
	}
	return authURL
}

func TestTwoTabsSignInAtOnce(t *testing.T) {
	e := newFlowEnv(t, nil)
	c := newBrowser(t, false)
	authA := e.startLogin(t, c, "/app/a/jobs/?tab=A")
	authB := e.startLogin(t, c, "/app/b/executors/?tab=B")
	// Tab B finishes first, then tab A: each returns to its own page.
	for _, tc := range []struct{ auth, want string }{{authB, "/app/b/executors/?tab=B"}, {authA, "/app/a/jobs/?tab=A"}} {
		resp, _ := get(t, c, tc.auth)
		callback := location(t, resp)
		resp, body := get(t, c, callback)
		if got := location(t, resp); got != e.gw.srv.URL+tc.want {
			t.Errorf("callback redirected to %q (%s); want %q", got, body, e.gw.srv.URL+tc.want)
		}
	}
	resp, body := get(t, c, e.gw.srv.URL+"/app/a/jobs/")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "user=alice") {
		t.Errorf("after two sign-ins GET = %d %q; want 200 as alice", resp.StatusCode, body)
	}
}

func TestCodeInjectionRefusedByPKCE(t *testing.T) {
	e := newFlowEnv(t, nil)
	c := newBrowser(t, false)
	authA := e.startLogin(t, c, "/a")
	authB := e.startLogin(t, c, "/b")
	// The code issued for A arrives with B's state: B's verifier does not
	// match A's challenge, so the provider must refuse the exchange.
	resp, _ := get(t, c, authA)
	codeA := mustURL(t, location(t, resp)).Query().Get("code")
	stateB := mustURL(t, authB).Query().Get("state")
	cb := e.gw.srv.URL + "/oauth2/callback?" + url.Values{"code": {codeA}, "state": {stateB}}.Encode()
	resp, _ = get(t, c, cb)
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("callback with a foreign code = %d; want 403", resp.StatusCode)
	}
	if _, pkce, _ := e.idp.counts(); pkce != 0 {
		t.Errorf("provider accepted PKCE %d times; want 0", pkce)
	}
}

func TestCallbackRefusesBadState(t *testing.T) {
	e := newFlowEnv(t, nil)
	c := newBrowser(t, false)
	authA := e.startLogin(t, c, "/a")
	resp, _ := get(t, c, authA)
	cb := mustURL(t, location(t, resp))
	q := cb.Query()
	state := q.Get("state")
	// One character after the login id, changed (to 'x', or 'y' where it
	// was an 'x' already).
	changed := byte('x')
	if state[loginIDLen] == changed {
		changed = 'y'
	}
	for name, st := range map[string]string{
		"missing":          "",
		"other cookie":     "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz",
		"same id, changed": state[:loginIDLen] + string(changed) + state[loginIDLen+1:],
	} {
		t.Run(name, func(t *testing.T) {
			q.Set("state", st)
			resp, _ := get(t, c, e.gw.srv.URL+"/oauth2/callback?"+q.Encode())
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("callback with state %q = %d; want 400", st, resp.StatusCode)
			}
		})
	}
	// The login cookie expires with its sign-in.
	e.clock.Advance(loginTTL + time.Second)
	q.Set("state", state)
	resp, _ = get(t, c, e.gw.srv.URL+"/oauth2/callback?"+q.Encode())
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("callback after the login expired = %d; want 400", resp.StatusCode)
	}
}

func TestExpiredSessionIsRefreshed(t *testing.T) {
	e := newFlowEnv(t, nil)
	c := newBrowser(t, false)
	cf := newBrowser(t, true)
	cf.Jar = c.Jar
	e.signIn(t, cf, "/")
	e.clock.Advance(10 * time.Minute) // ID token (5m) expired
	e.idp.mu.Lock()
	e.idp.claims["groups"] = []any{"eng", "new-team"}
	e.idp.mu.Unlock()

	for i := range 3 {
		resp, body := get(t, c, e.gw.srv.URL+"/page")
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, "user=alice") {
			t.Fatalf("request %d after expiry = %d %q; want 200 as alice", i, resp.StatusCode, body)
		}
	}
	if _, _, refresh := e.idp.counts(); refresh != 1 {
		t.Errorf("refresh grants = %d; want 1 (renewed once, then reused)", refresh)
	}
	// The login endpoint writes the renewed session without a new sign-in.
	resp, _ := get(t, c, e.gw.srv.URL+"/oauth2/login?rd=%2Fback")
	if got := location(t, resp); got != e.gw.srv.URL+"/back" {
		t.Errorf("login with a renewed session redirected to %q; want /back", got)
	}
	if len(resp.Cookies()) == 0 {
		t.Errorf("login with a renewed session set no cookie")
	}
	if authz, _, _ := e.idp.counts(); authz != 1 {
		t.Errorf("authorize calls = %d; want 1", authz)
	}
	// A fresh authenticator (another replica) reads the new cookie as is.
	e.gw.use(t, oidcConfig(e.idp, e.key))
	resp, body := get(t, c, e.gw.srv.URL+"/page")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "groups=eng,new-team") {
		t.Errorf("renewed cookie on a new replica = %d %q; want 200 with groups eng,new-team", resp.StatusCode, body)
	}
	if _, _, refresh := e.idp.counts(); refresh != 1 {
		t.Errorf("refresh grants = %d; want still 1", refresh)
	}

	// Once the provider refuses the refresh token, the user is signed out.
	e.idp.revokeRefreshTokens()
	e.clock.Advance(10 * time.Minute)
	resp, _ = get(t, c, e.gw.srv.URL+"/page")
	if got := location(t, resp); !strings.Contains(got, "/oauth2/login") {
		t.Errorf("after refused refresh redirected to %q; want the login", got)
	}
}

func TestSessionExpiresWithoutRefresh(t *testing.T) {
	e := newFlowEnv(t, func(c *Config) { c.Session.Refresh = ptr(false) })
	c := newBrowser(t, true)
	e.signIn(t, c, "/")
	e.clock.Advance(7 * time.Hour) // past the ID token, within the TTL
	nf := newBrowser(t, false)
	nf.Jar = c.Jar
	if resp, _ := get(t, nf, e.gw.srv.URL+"/p"); resp.StatusCode != http.StatusOK {
		t.Errorf("within TTL = %d; want 200", resp.StatusCode)
	}
	e.clock.Advance(2 * time.Hour)
	resp, _ := get(t, nf, e.gw.srv.URL+"/p")
	if got := location(t, resp); !strings.Contains(got, "/oauth2/login?rd=%2Fp") {
		t.Errorf("after TTL redirected to %q; want the login with rd=/p", got)
	}
	if _, _, refresh := e.idp.counts(); refresh != 0 {
		t.Errorf("refresh grants = %d; want 0", refresh)
	}
}

// A session ends at its expiry even with a refresh token the provider
// still honours: a sign-out is remembered one TTL, so a copy of the cookie
// taken before it, renewed once past its expiry, would bring the session
// back. A session in use is renewed before then and goes on.
func TestSessionEndsAtExpiryDespiteRefreshToken(t *testing.T) {
	e := newFlowEnv(t, nil)
	c := newBrowser(t, true)
	e.signIn(t, c, "/")
	nf := newBrowser(t, false)
	nf.Jar = c.Jar
	e.clock.Advance(8*time.Hour + time.Minute) // the default TTL
	resp, _ := get(t, nf, e.gw.srv.URL+"/p")
	if got := location(t, resp); !strings.Contains(got, "/oauth2/login") {
		t.Errorf("past the TTL with a live refresh token redirected to %q; want the login", got)
	}
	if _, _, refresh := e.idp.counts(); refresh != 0 {
		t.Errorf("refresh grants = %d; want 0", refresh)
	}

	e = newFlowEnv(t, nil)
	e.signIn(t, c, "/")
	e.clock.Advance(8*time.Hour - time.Minute) // the ID token long expired, within the TTL
	if resp, _ := get(t, nf, e.gw.srv.URL+"/p"); resp.StatusCode != http.StatusOK {
		t.Fatalf("within the TTL = %d; want 200", resp.StatusCode)
	}
	e.clock.Advance(2 * time.Hour) // past the first value's expiry, within the renewed one's
	if resp, _ := get(t, nf, e.gw.srv.URL+"/p"); resp.StatusCode != http.StatusOK {
		t.Errorf("renewed session 2h later = %d; want 200", resp.StatusCode)
	}
	if _, _, refresh := e.idp.counts(); refresh != 2 {
		t.Errorf("refresh grants = %d; want 2", refresh)
	}
}

// sessionCookies returns the gateway's session cookies in the jar.
func sessionCookies(t testing.TB, c *http.Client, base string) []*http.Cookie {
	t.Helper()
	var out []*http.Cookie
	for _, ck := range c.Jar.Cookies(mustURL(t, base+"/")) {
		if isSessionCookieName(ck.Name, sessionCookie) {
			out = append(out, ck)
		}
	}
	return out
}

func TestTamperedCookieRefused(t *testing.T) {
	e := newFlowEnv(t, nil)
	c := newBrowser(t, true)
	e.signIn(t, c, "/")
	cks := sessionCookies(t, c, e.gw.srv.URL)
	if len(cks) != 1 {
		t.Fatalf("session cookies = %d; want 1", len(cks))
	}
	v := []byte(cks[0].Value)
	for _, i := range []int{0, len(v) / 2, len(v) - 1} {
		tampered := append([]byte(nil), v...)
		tampered[i] ^= 0x01
		if tampered[i] == '=' || tampered[i] == ';' {
			tampered[i] = 'A'
		}
		r := httptest.NewRequest(http.MethodGet, "/p", nil)
		r.AddCookie(&http.Cookie{Name: sessionCookie, Value: string(tampered)})
		id, ok, err := e.auth.Authenticate(r)
		if ok || err != nil {
			t.Errorf("Authenticate(cookie with byte %d flipped) = %+v, %v, %v; want not signed in", i, id, ok, err)
		}
	}
	// The same value under another cookie name (the name is authenticated
	// too) is refused as well.
	r := httptest.NewRequest(http.MethodGet, "/p", nil)
	r.AddCookie(&http.Cookie{Name: sessionCookie + "_0", Value: cks[0].Value})
	r.AddCookie(&http.Cookie{Name: sessionCookie + "_1", Value: "AAAA"})
	if _, ok, _ := e.auth.Authenticate(r); ok {
		t.Errorf("Authenticate(value with appended part) signed in; want not signed in")
	}
}

func TestKeyRotation(t *testing.T) {
	e := newFlowEnv(t, nil)
	c := newBrowser(t, false)
	cf := newBrowser(t, true)
	cf.Jar = c.Jar
	e.signIn(t, cf, "/")
	newK := newKey(t)

	e.gw.use(t, oidcConfig(e.idp, newK, e.key))
	if resp, body := get(t, c, e.gw.srv.URL+"/p"); resp.StatusCode != http.StatusOK {
		t.Errorf("old-key cookie with keys [new, old] = %d %q; want 200", resp.StatusCode, body)
	}
	e.gw.use(t, oidcConfig(e.idp, newK))
	if resp, _ := get(t, c, e.gw.srv.URL+"/p"); resp.StatusCode != http.StatusFound {
		t.Errorf("old-key cookie with keys [new] = %d; want 302 to sign in", resp.StatusCode)
	}
}

func TestLogoutClearsEverySessionPart(t *testing.T) {
	e := newFlowEnv(t, nil)
	// Enough groups to split the session cookie into parts.
	var groups []any
	for i := range 400 {
		groups = append(groups, fmt.Sprintf("team-%04d-analytics", i))
	}
	e.idp.claims["groups"] = groups
	c := newBrowser(t, false)
	cf := newBrowser(t, true)
	cf.Jar = c.Jar
	body := e.signIn(t, cf, "/")
	if !strings.Contains(body, "team-0399-analytics") {
		t.Fatalf("page = %.200q...; want all 400 groups", body)
	}
	parts := sessionCookies(t, c, e.gw.srv.URL)
	if len(parts) < 2 {
		t.Fatalf("session cookie parts = %d; want a split cookie", len(parts))
	}
	for _, p := range parts {
		if len(p.Name)+len(p.Value) > 4000 {
			t.Errorf("cookie %s is %d bytes; want < 4000", p.Name, len(p.Name)+len(p.Value))
		}
	}

	resp, body := post(t, c, e.gw.srv.URL+"/oauth2/logout", e.gw.srv.URL)
	end := mustURL(t, continueURL(t, resp, body))
	if got := end.Scheme + "://" + end.Host + end.Path; got != e.idp.issuer()+"/end_session" {
		t.Errorf("logout redirected to %q; want the end-session endpoint", got)
	}
	q := end.Query()
	if q.Get("id_token_hint") == "" || q.Get("post_logout_redirect_uri") != e.gw.srv.URL+"/" {
		t.Errorf("end-session query = %v; want id_token_hint and post_logout_redirect_uri", q)
	}
	if left := sessionCookies(t, c, e.gw.srv.URL); len(left) != 0 {
		t.Errorf("after logout %d session cookies remain; want 0", len(left))
	}
	resp, _ = get(t, c, e.gw.srv.URL+"/p")
	if resp.StatusCode != http.StatusFound {
		t.Errorf("after logout GET = %d; want 302 to sign in", resp.StatusCode)
	}
}

func TestLogoutWithoutEndSession(t *testing.T) {
	e := newFlowEnv(t, func(c *Config) { c.OIDC.EndSession = ptr(false) })
	c := newBrowser(t, false)
	resp, _ := post(t, c, e.gw.srv.URL+"/oauth2/logout", e.gw.srv.URL)
	if got := location(t, resp); got != e.gw.srv.URL+"/" {
		t.Errorf("logout redirected to %q; want /", got)
	}
}

func TestGroupsFromUserinfo(t *testing.T) {
	e := newFlowEnv(t, func(c *Config) { c.OIDC.UseUserinfo = true; c.OIDC.ExtraGroups = []string{"all"} })
	e.idp.groupsOnlyInUserinfo = true
	body := e.signIn(t, newBrowser(t, true), "/")
	if !strings.Contains(body, "groups=eng,spark-users,all ") {
		t.Errorf("page = %q; want groups from userinfo plus extra", body)
	}
}

func TestForgedIdentityHeadersIgnored(t *testing.T) {
	e := newFlowEnv(t, nil)
	c := newBrowser(t, true)
	e.signIn(t, c, "/")
	forged := map[string]string{
		"X-Forwarded-User":               "admin",
		"X-Forwarded-Email":              "admin@example.com",
		"X-Forwarded-Groups":             "admins",
		"X-Forwarded-Preferred-Username": "admin",
		"X-Remote-User":                  "admin",
		"Remote-User":                    "admin",
		"X-Auth-Request-User":            "admin",
		"X-Auth-Request-Email":           "admin@example.com",
		"X-Auth-Request-Groups":          "admins",
	}
	cookies := c.Jar.Cookies(mustURL(t, e.gw.srv.URL+"/"))
	for _, withSession := range []bool{false, true} {
		r := httptest.NewRequest(http.MethodGet, "/p", nil)
		for k, v := range forged {
			r.Header.Set(k, v)
		}
		want := Identity{}
		if withSession {
			for _, ck := range cookies {
				r.AddCookie(ck)
			}
			want = Identity{User: "alice", Groups: []string{"eng", "spark-users"}, Method: MethodSession}
		}
		id, ok, err := e.auth.Authenticate(r)
		if err != nil || ok != withSession || id.User != want.User || strings.Join(id.Groups, ",") != strings.Join(want.Groups, ",") {
			t.Errorf("Authenticate(forged headers, session=%v) = %+v, %v, %v; want %+v", withSession, id, ok, err, want)
		}
	}
}

func TestChallenge(t *testing.T) {
	e := newFlowEnv(t, nil)
	tests := []struct {
		name, path string
		header     map[string]string
		wantStatus int
		wantLoc    string
	}{
		{"browser deep link", "/app/x/jobs/?id=1", nil, 302, "/oauth2/login?rd=%2Fapp%2Fx%2Fjobs%2F%3Fid%3D1"},
		{"browser root", "/", nil, 302, "/oauth2/login"},
		{"api path", "/api/v1/applications", nil, 401, ""},
		{"json accept", "/app/x/", map[string]string{"Accept": "application/json"}, 401, ""},
		{"authorization", "/app/x/", map[string]string{"Authorization": "Bearer junk"}, 401, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, tc.path, nil)
			for k, v := range tc.header {
				r.Header.Set(k, v)
			}
			w := httptest.NewRecorder()
			e.auth.Challenge(w, r)
			if w.Code != tc.wantStatus {
				t.Fatalf("Challenge(%s) = %d; want %d", tc.path, w.Code, tc.wantStatus)
			}
			if tc.wantStatus == 302 {
				if got := w.Header().Get("Location"); got != tc.wantLoc {
					t.Errorf("Challenge(%s) Location = %q; want %q", tc.path, got, tc.wantLoc)
				}
				return
			}
			if got := w.Header().Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
				t.Errorf("Challenge(%s) WWW-Authenticate = %q; want Bearer", tc.path, got)
			}
			if got := w.Body.String(); !strings.Contains(got, `"error"`) {
				t.Errorf("Challenge(%s) body = %q; want JSON error", tc.path, got)
			}
		})
	}
}

func TestLoginRefusesOpenRedirect(t *testing.T) {
	e := newFlowEnv(t, nil)
	c := newBrowser(t, true)
	for _, rd := range []string{"//evil.example/", "/\\evil.example", "https://evil.example/", "/%2F%2Fevil.example"} {
		resp, body := get(t, c, e.gw.srv.URL+"/oauth2/login?rd="+url.QueryEscape(rd))
		if resp.Request.URL.Host != mustURL(t, e.gw.srv.URL).Host || resp.Request.URL.Path != "/" {
			t.Errorf("sign-in with rd=%q ended at %s (%q); want the gateway's /", rd, resp.Request.URL, body)
		}
	}
}

// TestLoginRedirectSentAsChecked: the place to return to goes out in
// Location exactly as safeRedirect checked it, from /oauth2/login when
// signed in and from the callback after a sign-in; a value net/http's
// Redirect would have cleaned into "/\\evil.example" (a fragment holding
// "/../\\") goes to the gateway's root.
func TestLoginRedirectSentAsChecked(t *testing.T) {
	e := newFlowEnv(t, nil)
	for _, tc := range []struct{ rd, want string }{
		{"/app/a-1/jobs/?x=1&y=%2F..%2F", "/app/a-1/jobs/?x=1&y=%2F..%2F"},
		{"/#/../\\evil.example", "/"},
		{"/app/x#/../../\\evil.example/p", "/"},
	} {
		// Not signed in: login, provider, callback.
		c := newBrowser(t, false)
		u := e.gw.srv.URL + "/oauth2/login?rd=" + url.QueryEscape(tc.rd)
		var loc string
		for range 6 {
			resp, _ := get(t, c, u)
			if resp.StatusCode != http.StatusFound {
				t.Fatalf("rd=%q: %s = %d; want a redirect", tc.rd, u, resp.StatusCode)
			}
			loc = resp.Header.Get("Location")
			if strings.Contains(u, "/oauth2/callback") {
				break
			}
			u = mustURL(t, u).ResolveReference(mustURL(t, loc)).String()
		}
		if loc != tc.want {
			t.Errorf("rd=%q: callback Location %q; want %q", tc.rd, loc, tc.want)
		}
		// Signed in: login answers at once.
		resp, _ := get(t, c, e.gw.srv.URL+"/oauth2/login?rd="+url.QueryEscape(tc.rd))
		if got := resp.Header.Get("Location"); resp.StatusCode != http.StatusFound || got != tc.want {
			t.Errorf("rd=%q signed in: login = %d, Location %q; want 302 to %q", tc.rd, resp.StatusCode, got, tc.want)
		}
	}
}

func TestDiscoveryFailure(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	cfg := Config{Mode: ModeOIDC, OIDC: OIDCConfig{Issuer: srv.URL, ClientID: "c", ClientSecret: "s"}, Session: SessionConfig{Keys: []string{newKey(t)}}}
	cfg.SetDefaults()
	_, err := New(context.Background(), cfg, "https://gw.example", zaptest.NewLogger(t))
	if err == nil || !strings.Contains(err.Error(), "discovering OIDC provider") {
		t.Errorf("New with a broken issuer = %v; want a discovery error", err)
	}
	var ue *url.Error
	_ = errors.As(err, &ue)
}

func TestConcurrentRequestsRefreshOnce(t *testing.T) {
	e := newFlowEnv(t, nil)
	c := newBrowser(t, true)
	e.signIn(t, c, "/")
	cookies := c.Jar.Cookies(mustURL(t, e.gw.srv.URL+"/"))
	e.clock.Advance(10 * time.Minute)
	const n = 8
	errs := make(chan error, n)
	for range n {
		go func() {
			r := httptest.NewRequest(http.MethodGet, "/p", nil)
			for _, ck := range cookies {
				r.AddCookie(ck)
			}
			_, ok, err := e.auth.Authenticate(r)
			if err == nil && !ok {
				err = errors.New("not signed in")
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Errorf("Authenticate during refresh: %v", err)
		}
	}
	if _, _, refresh := e.idp.counts(); refresh != 1 {
		t.Errorf("refresh grants = %d; want 1 for %d concurrent requests", refresh, n)
	}
}

func TestLoginCookiesAreCapped(t *testing.T) {
	e := newFlowEnv(t, nil)
	c := newBrowser(t, false)
	for range maxLoginCookies + 3 {
		e.startLogin(t, c, "/p")
	}
	n := 0
	for _, ck := range c.Jar.Cookies(mustURL(t, e.gw.srv.URL+"/oauth2/")) {
		if strings.HasPrefix(ck.Name, loginCookiePrefix) {
			n++
		}
	}
	if n > maxLoginCookies {
		t.Errorf("pending login cookies = %d; want at most %d", n, maxLoginCookies)
	}
}

func TestCallbackProviderError(t *testing.T) {
	e := newFlowEnv(t, nil)
	c := newBrowser(t, false)
	auth := e.startLogin(t, c, "/p")
	state := mustURL(t, auth).Query().Get("state")
	resp, body := get(t, c, e.gw.srv.URL+"/oauth2/callback?"+url.Values{"state": {state}, "error": {"<script>x</script>"}}.Encode())
	if resp.StatusCode != http.StatusForbidden || strings.Contains(body, "<script>") {
		t.Errorf("callback with provider error = %d %q; want 403 without the raw error", resp.StatusCode, body)
	}
}

// TestLogoutRevokesCopiedCookie: a copy of the session cookie taken before
// sign-out (by malware, a shared machine, a log) is refused after it, as is
// any value the same sign-in was renewed to; other sign-ins stay valid.
func TestLogoutRevokesCopiedCookie(t *testing.T) {
	e := newFlowEnv(t, nil)
	base := mustURL(t, e.gw.srv.URL+"/")
	a := newBrowser(t, false)
	af := newBrowser(t, true)
	af.Jar = a.Jar
	e.signIn(t, af, "/")
	stolen := newBrowser(t, false)
	stolen.Jar.SetCookies(base, sessionCookies(t, a, e.gw.srv.URL))
	other := newBrowser(t, true)
	e.signIn(t, other, "/")

	// Renew a's session so the sign-in has two cookie values.
	e.clock.Advance(10 * time.Minute)
	if resp, body := get(t, a, e.gw.srv.URL+"/p"); resp.StatusCode != http.StatusOK {
		t.Fatalf("renewing = %d %q; want 200", resp.StatusCode, body)
	}
	resp, _ := get(t, a, e.gw.srv.URL+"/oauth2/login?rd=%2Fp")
	if len(resp.Cookies()) == 0 {
		t.Fatal("login with a renewed session set no cookie")
	}
	renewed := newBrowser(t, false)
	renewed.Jar.SetCookies(base, sessionCookies(t, a, e.gw.srv.URL))
	if resp, _ := get(t, stolen, e.gw.srv.URL+"/p"); resp.StatusCode != http.StatusOK {
		t.Fatalf("copied cookie before sign-out = %d; want 200", resp.StatusCode)
	}

	post(t, a, e.gw.srv.URL+"/oauth2/logout", e.gw.srv.URL)
	for name, c := range map[string]*http.Client{"copy of the first value": stolen, "copy of the renewed value": renewed} {
		resp, _ := get(t, c, e.gw.srv.URL+"/p")
		if got := location(t, resp); !strings.Contains(got, "/oauth2/login") {
			t.Errorf("%s after sign-out redirected to %q; want the login", name, got)
		}
	}
	// Both values of a signed-out session stay refused until they expire.
	e.clock.Advance(time.Hour)
	if resp, _ := get(t, stolen, e.gw.srv.URL+"/p"); resp.StatusCode == http.StatusOK {
		t.Errorf("copied cookie an hour after sign-out = 200; want refused")
	}
	if resp, body := get(t, other, e.gw.srv.URL+"/p"); resp.StatusCode != http.StatusOK || !strings.Contains(body, "user=alice") {
		t.Errorf("another sign-in after the sign-out = %d %q; want 200", resp.StatusCode, body)
	}
}
