//go:build e2e

package e2e

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// authTTL is the session lifetime of TestAuth's gateway; the test waits
// past it once, to see the behaviour of an expired session.
const authTTL = 15 * time.Second

// TestAuth checks sessions against the real provider: a tampered cookie,
// sign-out through the provider's end-session form, an expired session
// that signs in again and returns to the same page, and bearer tokens with
// the wrong audience or signature. Its gateway accepts bearer tokens only
// for the audience "sparkgate-reports", so the provider's JWT (aud
// sparkgate, which TestACL's gateway accepts) has the wrong audience here.
func TestAuth(t *testing.T) {
	s := newSuite(t)
	s.requireGateway(t)
	ctx := ctxFor(t, 3*time.Minute)
	dir := s.freshDir(t, "auth")
	op, gwPort, gwURL := s.providerFor(ctx, t, dir, aclSecret)
	gw, err := StartGateway(ctx, s.gwBin, dir, GatewayOptions{
		Port:     gwPort,
		LogGlobs: []string{filepath.Join(dir, "no-drivers", "*.log")},
		Auth: map[string]any{
			"mode": "oidc",
			"oidc": map[string]any{"issuer": op.Issuer, "client_id": "sparkgate", "audiences": []string{"sparkgate-reports"}},
			"session": map[string]any{
				"keys":    []string{base64.StdEncoding.EncodeToString([]byte("auth-e2e-session-key-0123456789abcdef"))},
				"ttl":     authTTL.String(),
				"refresh": false,
			},
		},
		Env: []string{"SPARKGATE_OIDC_CLIENT_SECRET=" + aclSecret},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gw.Stop)

	// bob signs in at a deep page; his session expires while the other
	// subtests run.
	page := gwURL + "/?q=session-check"
	bobJar, _ := cookiejar.New(nil)
	bob := &http.Client{Jar: bobJar, Timeout: 60 * time.Second}
	final, _, err := BrowserlessLogin(ctx, bob, page, "bob")
	if err != nil {
		t.Fatal(err)
	}
	signedIn := time.Now()
	if final.String() != page {
		t.Fatalf("sign-in ended at %s; want %s", final, page)
	}
	bobCookie := sessionCookieHeader(t, bobJar, gwURL)

	t.Run("valid cookie replayed", func(t *testing.T) {
		a := getWithCookie(ctx, t, page, bobCookie)
		if a.Status != http.StatusOK {
			t.Errorf("GET %s with bob's cookie = %d; want 200", page, a.Status)
		}
	})

	t.Run("tampered cookie", func(t *testing.T) {
		name, value, _ := strings.Cut(bobCookie, "=")
		// Not the last characters: base64's final symbol before padding
		// carries unused bits, so flipping it can leave the decoded bytes
		// (and so a valid MAC) unchanged — not a tamper at all.
		for i, pos := range []int{len(value) / 2, len(value) / 3, 1} {
			b := []byte(value)
			if b[pos] == 'A' {
				b[pos] = 'B'
			} else {
				b[pos] = 'A'
			}
			cookie := name + "=" + string(b)
			a := getWithCookie(ctx, t, page, cookie)
			if a.Verdict() != "login" || !strings.Contains(a.Location, "rd="+url.QueryEscape("/?q=session-check")) {
				t.Errorf("tamper %d: GET page = %d Location %q; want 302 to sign-in returning to the page", i, a.Status, a.Location)
			}
			a = getWithCookie(ctx, t, gwURL+"/api/v1/applications", cookie)
			if a.Status != http.StatusUnauthorized || !a.JSONError() {
				t.Errorf("tamper %d: GET /api/v1/applications = %d %s %.200s; want a 401 JSON error", i, a.Status, a.ContentType, a.Body)
			}
		}
	})

	t.Run("bearer", func(t *testing.T) {
		tok, err := op.ClientCredentialsToken(ctx)
		if err != nil {
			t.Fatal(err)
		}
		parts := strings.Split(tok, ".")
		sig := []byte(parts[2])
		if sig[len(sig)/2] == 'A' {
			sig[len(sig)/2] = 'B'
		} else {
			sig[len(sig)/2] = 'A'
		}
		for _, c := range []struct {
			name, tok, reason string
		}{
			{"wrong audience (aud sparkgate, gateway wants sparkgate-reports)", tok, "audience"},
			{"tampered signature", parts[0] + "." + parts[1] + "." + string(sig), "verify"},
		} {
			a, err := Get(ctx, &http.Client{Timeout: 30 * time.Second, Transport: bearer{c.tok}}, gwURL+"/api/v1/applications", nil)
			if err != nil {
				t.Fatal(err)
			}
			if a.Status != http.StatusUnauthorized || !a.JSONError() {
				t.Errorf("%s: %d %s %.200s; want a 401 JSON error", c.name, a.Status, a.ContentType, a.Body)
			}
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, _, err = gw.Watch.WaitFor(wctx, regexp.MustCompile(`bearer token refused.*"reason": "`+c.reason+`"`), nil)
			cancel()
			if err != nil {
				t.Errorf("%s: the gateway log has no refusal for reason %q: %v", c.name, c.reason, err)
			}
		}
	})

	t.Run("sign-out", func(t *testing.T) {
		jar, _ := cookiejar.New(nil)
		alice := &http.Client{Jar: jar, Timeout: 60 * time.Second}
		if _, _, err := BrowserlessLogin(ctx, alice, gwURL+"/", "alice"); err != nil {
			t.Fatal(err)
		}
		before := sessionCookieHeader(t, jar, gwURL)
		final, body, err := SignOut(ctx, alice, gwURL)
		if err != nil {
			t.Fatal(err)
		}
		// After the provider's confirmation the browser returns to the
		// gateway's start page, which needs a sign-in again, and the
		// provider asks for the password again (its session ended too).
		if !strings.HasPrefix(final.String(), op.Issuer+"/interaction/") || !strings.Contains(string(body), `name="login"`) {
			t.Errorf("after sign-out the client is at %s; want the provider's login form (page %.300s)", final, body)
		}
		a, err := Get(ctx, NoRedirectClient(jar), gwURL+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		if a.Verdict() != "login" {
			t.Errorf("GET / after sign-out = %d %q; want a redirect to sign-in", a.Status, a.Location)
		}
		// Sign-out revokes the session, so a copy of its cookie taken
		// before (malware, a shared machine) is refused too.
		if v := getWithCookie(ctx, t, gwURL+"/", before).Verdict(); v != "login" {
			t.Errorf("a copy of the session cookie taken before sign-out, replayed after it: %s; want login", v)
		}
	})

	t.Run("expired session", func(t *testing.T) {
		wait := time.Until(signedIn.Add(authTTL + time.Second))
		t.Logf("waiting %v for bob's session (ttl %v) to expire", wait.Round(time.Millisecond), authTTL)
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(wait):
		}
		a := getWithCookie(ctx, t, page, bobCookie)
		if a.Verdict() != "login" || !strings.Contains(a.Location, "rd="+url.QueryEscape("/?q=session-check")) {
			t.Errorf("expired cookie on the page = %d Location %q; want 302 to sign-in returning to the page", a.Status, a.Location)
		}
		a = getWithCookie(ctx, t, gwURL+"/api/v1/applications", bobCookie)
		if a.Status != http.StatusUnauthorized || !a.JSONError() {
			t.Errorf("expired cookie on the API = %d %.200s; want a 401 JSON error", a.Status, a.Body)
		}
		// The browser reloads the page: sign-in again (the provider still
		// knows bob) and back to the same page.
		final, body, err := BrowserlessLogin(ctx, bob, page, "bob")
		if err != nil {
			t.Fatal(err)
		}
		if final.String() != page || !strings.Contains(string(body), "you may view") {
			t.Errorf("after the session expired, reloading %s ended at %s (%.200s); want the same page, signed in", page, final, body)
		}
	})
}

// sessionCookieHeader returns the gateway session cookie(s) in jar as a
// Cookie header value.
func sessionCookieHeader(t *testing.T, jar http.CookieJar, gwURL string) string {
	t.Helper()
	u, _ := url.Parse(gwURL)
	var parts []string
	for _, c := range jar.Cookies(u) {
		if strings.HasPrefix(c.Name, "_sparkgate_session") {
			parts = append(parts, c.Name+"="+c.Value)
		}
	}
	if len(parts) != 1 {
		t.Fatalf("want one session cookie; jar holds %v", parts)
	}
	return parts[0]
}

// getWithCookie GETs u with no cookie jar and exactly the given Cookie
// header, not following redirects.
func getWithCookie(ctx context.Context, t *testing.T, u, cookie string) Answer {
	t.Helper()
	a, err := Get(ctx, NoRedirectClient(nil), u, http.Header{"Cookie": {cookie}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}
