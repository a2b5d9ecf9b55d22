package auth

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestMiddlewareWritesRenewedSession: after a refresh, the next response
// carries the renewed cookie, which a fresh replica accepts without asking
// the provider again.
func TestMiddlewareWritesRenewedSession(t *testing.T) {
	e := newFlowEnv(t, nil)
	c := newBrowser(t, false)
	cf := newBrowser(t, true)
	cf.Jar = c.Jar
	e.signIn(t, cf, "/")

	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := e.gw.auth.Load()
		id, ok, err := a.Authenticate(r)
		if err != nil || !ok {
			http.Error(w, "not signed in", http.StatusUnauthorized)
			return
		}
		fmt.Fprintf(w, "user=%s groups=%s", id.User, strings.Join(id.Groups, ","))
	})
	// Same origin as the flow's gateway, so the browser's cookies apply.
	e.gw.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.gw.auth.Load().Middleware(page).ServeHTTP(w, r)
	})

	e.clock.Advance(10 * time.Minute) // the ID token (5m) has expired
	e.idp.mu.Lock()
	e.idp.claims["groups"] = []any{"eng", "renewed"}
	e.idp.mu.Unlock()

	resp, body := get(t, c, e.gw.srv.URL+"/page")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "groups=eng,renewed") {
		t.Fatalf("request after expiry = %d %q; want 200 with renewed groups", resp.StatusCode, body)
	}
	var rewritten bool
	for _, ck := range resp.Cookies() {
		if strings.HasPrefix(ck.Name, sessionCookie) && ck.Value != "" {
			rewritten = true
		}
	}
	if !rewritten {
		t.Fatalf("response after refresh set no session cookie; want the renewed session written")
	}
	// The next request carries the new cookie: nothing more to write.
	resp, _ = get(t, c, e.gw.srv.URL+"/page")
	if n := len(resp.Cookies()); n != 0 {
		t.Errorf("second request set %d cookies; want 0 once the browser holds the renewed session", n)
	}
	// A new replica reads the renewed cookie as is: no second refresh.
	e.gw.use(t, oidcConfig(e.idp, e.key))
	resp, body = get(t, c, e.gw.srv.URL+"/page")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "groups=eng,renewed") {
		t.Errorf("renewed cookie on a new replica = %d %q; want 200", resp.StatusCode, body)
	}
	if _, _, refresh := e.idp.counts(); refresh != 1 {
		t.Errorf("refresh grants = %d; want 1", refresh)
	}
}

// TestStaleCookieGetsTheSameRenewedCookie: requests that still carry the
// cookie from before a refresh (in flight at the time, or from a client
// that ignores Set-Cookie) are all sent the renewed session, encoded once
// rather than encrypted anew per request, and the provider is asked once.
func TestStaleCookieGetsTheSameRenewedCookie(t *testing.T) {
	e := newFlowEnv(t, nil)
	c := newBrowser(t, false)
	cf := newBrowser(t, true)
	cf.Jar = c.Jar
	e.signIn(t, cf, "/")
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok, err := e.gw.auth.Load().Authenticate(r); err != nil || !ok {
			http.Error(w, "not signed in", http.StatusUnauthorized)
		}
	})
	e.gw.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.gw.auth.Load().Middleware(page).ServeHTTP(w, r)
	})
	u, _ := url.Parse(e.gw.srv.URL + "/page")
	var stale []string
	for _, ck := range c.Jar.Cookies(u) {
		stale = append(stale, ck.Name+"="+ck.Value)
	}
	e.clock.Advance(10 * time.Minute) // the ID token (5m) has expired

	var first string
	for i := range 3 {
		req, _ := http.NewRequest(http.MethodGet, u.String(), nil)
		req.Header.Set("Cookie", strings.Join(stale, "; "))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		var set []string
		for _, ck := range resp.Cookies() {
			if strings.HasPrefix(ck.Name, sessionCookie) && ck.Value != "" {
				set = append(set, ck.Name+"="+ck.Value)
			}
		}
		got := strings.Join(set, "; ")
		if resp.StatusCode != http.StatusOK || got == "" {
			t.Fatalf("request %d with the stale cookie = %d, session cookie %q; want 200 and the renewed session", i, resp.StatusCode, got)
		}
		if i == 0 {
			first = got
		} else if got != first {
			t.Errorf("request %d was sent another renewed cookie than the first; want the one encoding again", i)
		}
	}
	if _, _, refresh := e.idp.counts(); refresh != 1 {
		t.Errorf("refresh grants = %d; want 1", refresh)
	}
}
