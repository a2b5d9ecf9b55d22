package auth

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// post sends an empty form to u as a browser on origin would (Origin and
// Sec-Fetch-Site same-origin when origin is the page's own; a navigation
// of the whole page).
func post(t testing.TB, c *http.Client, u, origin string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", origin)
	site := "cross-site"
	if strings.HasPrefix(u, origin+"/") {
		site = "same-origin"
	}
	req.Header.Set("Sec-Fetch-Site", site)
	req.Header.Set("Sec-Fetch-Mode", "navigate")
	req.Header.Set("Sec-Fetch-Dest", "document")
	req.Header.Set("Sec-Fetch-User", "?1")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

var reContinue = regexp.MustCompile(`<a id="continue" href="([^"]+)">`)

// continueURL returns where a sign-out page sends the browser next.
func continueURL(t testing.TB, resp *http.Response, body string) string {
	t.Helper()
	m := reContinue.FindStringSubmatch(body)
	if resp.StatusCode != http.StatusOK || m == nil {
		t.Fatalf("sign-out answer = %d %q; want 200 with a continue link", resp.StatusCode, body)
	}
	if !strings.Contains(body, `<meta http-equiv="refresh" content="0; url=`) {
		t.Errorf("sign-out page does not refresh to the provider: %q", body)
	}
	return strings.ReplaceAll(m[1], "&amp;", "&")
}

// TestLogoutOnlyByPost: GET shows the sign-out button and signs nobody
// out; other methods get 405; POST from the gateway's own page signs out.
func TestLogoutOnlyByPost(t *testing.T) {
	e := newFlowEnv(t, nil)
	c := newBrowser(t, false)
	cf := newBrowser(t, true)
	cf.Jar = c.Jar
	e.signIn(t, cf, "/")

	resp, body := get(t, c, e.gw.srv.URL+"/oauth2/logout")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `<form method="post" action="/oauth2/logout"><button type="submit" id="sign-out">Sign out</button></form>`) ||
		!strings.Contains(body, "You are signed in as <strong>alice</strong>") {
		t.Errorf("GET /oauth2/logout = %d %q; want 200 with the sign-out button", resp.StatusCode, body)
	}
	for _, m := range []string{http.MethodPut, http.MethodDelete} {
		req, _ := http.NewRequest(m, e.gw.srv.URL+"/oauth2/logout", nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s /oauth2/logout = %d; want 405", m, resp.StatusCode)
		}
	}
	if resp, body := get(t, c, e.gw.srv.URL+"/p"); resp.StatusCode != http.StatusOK {
		t.Fatalf("after GET and other methods on /oauth2/logout GET /p = %d %q; want 200 (still signed in)", resp.StatusCode, body)
	}

	resp, body = post(t, c, e.gw.srv.URL+"/oauth2/logout", e.gw.srv.URL)
	continueURL(t, resp, body)
	if resp, _ := get(t, c, e.gw.srv.URL+"/p"); resp.StatusCode != http.StatusFound {
		t.Errorf("after POST /oauth2/logout GET /p = %d; want 302 to sign in", resp.StatusCode)
	}
}

// TestLogoutRefusesCrossSite: a form on another site posting to
// /oauth2/logout signs nobody out, whichever header the browser sends.
func TestLogoutRefusesCrossSite(t *testing.T) {
	e := newFlowEnv(t, nil)
	c := newBrowser(t, false)
	cf := newBrowser(t, true)
	cf.Jar = c.Jar
	e.signIn(t, cf, "/")
	tests := []struct {
		name    string
		headers map[string]string
	}{
		{"fetch metadata cross-site", map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}},
		{"fetch metadata same-site", map[string]string{"Sec-Fetch-Site": "same-site", "Origin": "http://other.localhost"}},
		{"fetch metadata lies about nothing, Origin differs", map[string]string{"Origin": "https://evil.example"}},
		{"opaque origin (sandboxed frame, data: URL)", map[string]string{"Origin": "null"}},
		// The gateway's host on another scheme is another origin (a page
		// on http://host can be anyone's), for browsers without fetch
		// metadata.
		{"Origin of another scheme", map[string]string{"Origin": strings.Replace(e.gw.srv.URL, "http://", "https://", 1)}},
		// A script of a page on the gateway's origin (a driver's page)
		// must not read the answer: its way to the provider's sign-out
		// holds the ID token, a bearer token.
		{"a script's fetch from the gateway's origin", map[string]string{"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty", "Origin": e.gw.srv.URL}},
		{"a script's no-cors fetch", map[string]string{"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "empty", "Origin": e.gw.srv.URL}},
		{"a form posted into a frame", map[string]string{"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "iframe", "Sec-Fetch-User": "?1", "Origin": e.gw.srv.URL}},
		// A form a script submits into a window it opened (whose page it
		// could read): a navigation of a document, but not the user's.
		{"a form a script submits into a window", map[string]string{"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document", "Origin": e.gw.srv.URL}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, e.gw.srv.URL+"/oauth2/logout", strings.NewReader(""))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), "came from another site or a script") || strings.Contains(string(b), "id_token_hint") {
				t.Errorf("cross-site POST /oauth2/logout = %d %q; want 403", resp.StatusCode, b)
			}
			if len(resp.Header.Values("Set-Cookie")) != 0 {
				t.Errorf("cross-site POST /oauth2/logout set cookies %v; want none", resp.Header.Values("Set-Cookie"))
			}
			if resp, _ := get(t, c, e.gw.srv.URL+"/p"); resp.StatusCode != http.StatusOK {
				t.Errorf("after the cross-site POST GET /p = %d; want 200 (still signed in)", resp.StatusCode)
			}
		})
	}
	// A client that is no browser (no Origin, no fetch metadata) may sign
	// out: no other site can make it send anything.
	req, _ := http.NewRequest(http.MethodPost, e.gw.srv.URL+"/oauth2/logout", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("POST /oauth2/logout without browser headers = %d; want 200", resp.StatusCode)
	}
	if resp, _ := get(t, c, e.gw.srv.URL+"/p"); resp.StatusCode != http.StatusFound {
		t.Errorf("after sign-out GET /p = %d; want 302", resp.StatusCode)
	}
}
