//go:build e2e

package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// TestSignInGate runs a gateway in OIDC mode with auth.allowed_groups
// [analysts] in front of the real provider (no Spark needed): alice
// (analysts) signs in with Chromium and sees the index; bob (eng) gets the
// refusal page, which names him, the allowed group and who to ask, and no
// session; the same split holds for client_credentials bearer tokens
// (svc-reporter in analysts, svc-builder in eng). Then sign-out: a GET of
// /oauth2/logout and a form posted by a page on another port of the same
// host sign nobody out; the sign-out button on the index does.
func TestSignInGate(t *testing.T) {
	s := newSuite(t)
	s.requireGateway(t)
	ctx := ctxFor(t, 4*time.Minute)
	dir := s.freshDir(t, "gate")
	op, gwPort, gwURL := s.providerFor(ctx, t, dir, aclSecret)
	const contact = "spark-admins@example.test"
	gw, err := StartGateway(ctx, s.gwBin, dir, GatewayOptions{
		Port:     gwPort,
		LogGlobs: []string{filepath.Join(dir, "no-drivers", "*.log")},
		Auth: map[string]any{
			"mode":           "oidc",
			"oidc":           map[string]any{"issuer": op.Issuer, "client_id": "sparkgate", "audiences": []string{"sparkgate"}},
			"session":        map[string]any{"keys": []string{base64.StdEncoding.EncodeToString([]byte("gate-e2e-session-key-0123456789abcdef"))}},
			"allowed_groups": []string{"analysts"},
			"access_contact": contact,
		},
		Env: []string{"SPARKGATE_OIDC_CLIENT_SECRET=" + aclSecret},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gw.Stop)
	logged := func(t *testing.T, re string) {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if _, _, err := gw.Watch.WaitFor(wctx, regexp.MustCompile(re), nil); err != nil {
			t.Errorf("the gateway log has no line matching %q: %v", re, err)
		}
	}

	alice, err := NewBrowser(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()

	t.Run("member signs in", func(t *testing.T) {
		final, err := alice.Login(gwURL+"/", op.Issuer, "alice", 60*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		text, _ := alice.Text()
		if final != gwURL+"/" || !strings.Contains(text, "signed in as alice") {
			t.Fatalf("alice's sign-in ended at %s with %.300q; want the index, signed in as alice", final, text)
		}
		if n := gateSessionCookies(t, alice, gwURL); n == 0 {
			t.Errorf("alice holds no session cookie after signing in")
		}
	})

	t.Run("non-member refused", func(t *testing.T) {
		bob, err := NewBrowser(ctx, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer bob.Close()
		final, err := bob.Login(gwURL+"/", op.Issuer, "bob", 60*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		text, _ := bob.Text()
		if !strings.HasPrefix(final, gwURL+"/oauth2/callback?") {
			t.Errorf("bob's sign-in ended at %s; want the gateway's callback answering the refusal", final)
		}
		for _, want := range []string{
			"Not admitted to sparkgate",
			"You are signed in as bob (email at example.test), in the groups eng.",
			"This gateway admits only members of the groups analysts.",
			"To get access, ask " + contact + ".",
		} {
			if !strings.Contains(text, want) {
				t.Errorf("bob's refusal page lacks %q; page text: %q", want, text)
			}
		}
		if n := gateSessionCookies(t, bob, gwURL); n != 0 {
			t.Errorf("bob holds %d session cookies after the refusal; want none", n)
		}
		logged(t, `refused by the sign-in gate.*"user": "bob"`)
		// Coming back changes nothing: the provider signs bob in again at
		// once, and the gateway refuses him again.
		if err := gateNavigate(bob, gwURL+"/app/x/jobs/"); err != nil {
			t.Fatal(err)
		}
		if text, _ := bob.Text(); !strings.Contains(text, "Not admitted to sparkgate") {
			t.Errorf("bob's second visit shows %.300q; want the refusal again", text)
		}
		if n := gateSessionCookies(t, bob, gwURL); n != 0 {
			t.Errorf("bob holds %d session cookies after his second visit; want none", n)
		}

		// The same through a Go client: the refusal is a 403 and the
		// cookie jar ends without a session.
		jar, _ := cookiejar.New(nil)
		c := &http.Client{Jar: jar, Timeout: 60 * time.Second}
		_, body, err := BrowserlessLogin(ctx, c, gwURL+"/", "bob")
		if err != nil {
			t.Fatal(err)
		}
		u, _ := url.Parse(gwURL)
		for _, ck := range jar.Cookies(u) {
			if strings.HasPrefix(ck.Name, "_sparkgate_session") {
				t.Errorf("bob's Go client holds %s after the refusal", ck.Name)
			}
		}
		if a, err := Get(ctx, NoRedirectClient(jar), gwURL+"/api/v1/applications", nil); err != nil || a.Status != http.StatusUnauthorized {
			t.Errorf("bob's API call after the refusal = %d, %v; want 401 (not signed in); refusal page was %.200s", a.Status, err, body)
		}
	})

	t.Run("bearer", func(t *testing.T) {
		for _, c := range []struct {
			client, user string
			want         int
		}{
			{"api-client", "svc-reporter", http.StatusOK},
			{"api-client-eng", "svc-builder", http.StatusForbidden},
		} {
			tok, err := op.ClientCredentialsTokenFor(ctx, c.client)
			if err != nil {
				t.Fatal(err)
			}
			a, err := Get(ctx, &http.Client{Timeout: 30 * time.Second, Transport: bearer{tok}}, gwURL+"/api/v1/applications", nil)
			if err != nil {
				t.Fatal(err)
			}
			if a.Status != c.want {
				t.Errorf("%s's token on /api/v1/applications = %d %.300s; want %d", c.user, a.Status, a.Body, c.want)
			}
			if c.want == http.StatusForbidden {
				if !a.JSONError() || !strings.Contains(string(a.Body), "signed in as "+c.user+", who is not admitted") ||
					!strings.Contains(string(a.Body), "members of the groups analysts") || !strings.Contains(string(a.Body), contact) {
					t.Errorf("%s's refusal = %s %.300s; want a JSON error naming the user, the group and the contact", c.user, a.ContentType, a.Body)
				}
				logged(t, `refused by the sign-in gate.*"user": "`+c.user+`".*"method": "bearer"`)
			}
		}
	})

	t.Run("GET logout does not sign out", func(t *testing.T) {
		before := gateSessionValues(t, alice, gwURL)
		if err := gateNavigate(alice, gwURL+"/oauth2/logout"); err != nil {
			t.Fatal(err)
		}
		text, _ := alice.Text()
		if !strings.Contains(text, "Sign out of sparkgate") || !strings.Contains(text, "You are signed in as alice") {
			t.Errorf("GET /oauth2/logout shows %.300q; want the page with the sign-out button", text)
		}
		requireSameSession(t, alice, gwURL, "alice", before)
	})

	t.Run("same-site form post does not sign out", func(t *testing.T) {
		before := gateSessionValues(t, alice, gwURL)
		// A page on another port of the gateway's host (a driver UI, say,
		// whose pages anyone running a driver writes) posts a sign-out form
		// by script. Same-site: the browser sends the session cookie.
		evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, `<!DOCTYPE html><form id="f" method="post" action="%s/oauth2/logout"></form>
<script>document.getElementById("f").submit()</script>`, gwURL)
		}))
		defer evil.Close()
		if !strings.HasPrefix(evil.URL, "http://127.0.0.1:") {
			t.Fatalf("attacker page at %s; want the gateway's host 127.0.0.1", evil.URL)
		}
		if err := gateNavigate(alice, evil.URL+"/"); err != nil {
			t.Fatal(err)
		}
		text, err := gateWaitText(alice, "Sign-out refused")
		if err != nil {
			t.Errorf("after the attacker's form: %v; page text %.300q", err, text)
		}
		requireSameSession(t, alice, gwURL, "alice", before)
	})

	t.Run("sign-out button", func(t *testing.T) {
		if err := gateNavigate(alice, gwURL+"/"); err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithTimeout(alice.ctx, 30*time.Second)
		defer cancel()
		if err := chromedp.Do(cctx, chromedp.Click(chromedp.CSS(`button.signout`))); err != nil {
			t.Fatalf("clicking sign out: %v", err)
		}
		// The gateway's page sends the browser on to the provider's
		// end-session confirmation.
		loc, err := waitEval(cctx, `document.readyState === "complete" && location.href.startsWith(`+fmt.Sprintf("%q", op.Issuer+"/")+`) ? location.href : ""`)
		if err != nil {
			text, _ := alice.Text()
			t.Errorf("after clicking sign out the browser did not reach the provider: %v; page text %.300q", err, text)
		} else if !strings.Contains(loc, "/session/end") {
			t.Errorf("after clicking sign out the browser is at %s; want the provider's end-session page", loc)
		}
		if n := gateSessionCookies(t, alice, gwURL); n != 0 {
			t.Errorf("alice holds %d session cookies after signing out; want none", n)
		}
		logged(t, `signed out.*"user": "alice"`)
	})
}

// requireSameSession fails t unless the browser still holds the session
// cookie it held before (not a new one from signing in again, which the
// provider would do at once) and the index shows user signed in.
func requireSameSession(t *testing.T, b *Browser, gwURL, user string, before []string) {
	t.Helper()
	if now := gateSessionValues(t, b, gwURL); len(before) == 0 || !slices.Equal(now, before) {
		t.Errorf("%s's session cookie changed (%d cookies before, %d now, equal=%v); want the same session", user, len(before), len(now), slices.Equal(now, before))
	}
	if err := gateNavigate(b, gwURL+"/"); err != nil {
		t.Fatal(err)
	}
	loc, _ := chromedp.Run(b.ctx, chromedp.Location())
	text, _ := b.Text()
	if loc != gwURL+"/" || !strings.Contains(text, "signed in as "+user) {
		t.Errorf("the index is at %s showing %.300q; want %s still signed in", loc, text, user)
	}
}

// gateNavigate opens u and waits for the page (and any redirects) to load.
func gateNavigate(b *Browser, u string) error {
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(u)); err != nil {
		return fmt.Errorf("navigating to %s: %w", u, err)
	}
	_, err := waitEval(ctx, `document.readyState === "complete" ? "yes" : ""`)
	return err
}

// gateWaitText waits until the page's text contains want.
func gateWaitText(b *Browser, want string) (string, error) {
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	_, err := waitEval(ctx, `document.readyState === "complete" && document.body && document.body.innerText.includes(`+fmt.Sprintf("%q", want)+`) ? "yes" : ""`)
	text, _ := b.Text()
	return text, err
}

// gateSessionCookies counts the gateway session cookies the browser holds.
func gateSessionCookies(t *testing.T, b *Browser, gwURL string) int {
	t.Helper()
	return len(gateSessionValues(t, b, gwURL))
}

// gateSessionValues returns the gateway session cookies the browser holds,
// as name=value.
func gateSessionValues(t *testing.T, b *Browser, gwURL string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	var cookies []*network.Cookie
	err := chromedp.Do(ctx, func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		res, err := cdp.Call(ctx, tg, network.GetCookies, network.GetCookiesParams{URLs: []string{gwURL + "/"}})
		cookies = res.Cookies
		return chromedp.Void{}, err
	})
	if err != nil {
		t.Fatalf("reading cookies: %v", err)
	}
	var out []string
	for _, c := range cookies {
		if strings.HasPrefix(c.Name, "_sparkgate_session") {
			out = append(out, c.Name+"="+c.Value)
		}
	}
	slices.Sort(out)
	return out
}

// TestLocalLoginOnce runs the built gateway in local mode (no Spark): the
// printed login URL signs in once; opening it again is refused; the token
// is no bearer token; and -check-config refuses local mode on an address
// that is not loopback unless auth.local.allow_remote is set.
func TestLocalLoginOnce(t *testing.T) {
	s := newSuite(t)
	s.requireGateway(t)
	ctx := ctxFor(t, 2*time.Minute)
	dir := s.freshDir(t, "local-once")
	gw, err := StartGateway(ctx, s.gwBin, dir, GatewayOptions{LogGlobs: []string{filepath.Join(dir, "no-drivers", "*.log")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gw.Stop)
	token := gw.LoginURL[strings.Index(gw.LoginURL, "token=")+len("token="):]

	// Tried as a bearer token first: refused, and the URL still works.
	a, err := Get(ctx, &http.Client{Timeout: 30 * time.Second, Transport: bearer{token}}, gw.URL+"/api/v1/applications", nil)
	if err != nil || a.Status != http.StatusUnauthorized {
		t.Errorf("the login token as a bearer token = %d, %v; want 401", a.Status, err)
	}
	jar, err := gw.LocalSession(ctx)
	if err != nil {
		t.Fatalf("first use of the login URL: %v", err)
	}
	if apps, err := gw.Apps(ctx, NoRedirectClient(jar)); err != nil {
		t.Errorf("app list with the session from the login URL: %v (%d apps)", err, len(apps))
	}
	// A second browser opening the same URL gets no session.
	a, err = Get(ctx, NoRedirectClient(nil), gw.LoginURL, nil)
	if err != nil || a.Status != http.StatusForbidden || !strings.Contains(string(a.Body), "works once and has been used") {
		t.Errorf("second use of the login URL = %d %.200s, %v; want 403 saying it was used", a.Status, a.Body, err)
	}
	if _, err := gw.LocalSession(ctx); err == nil {
		t.Errorf("a second LocalSession with the same login URL succeeded; want a refusal")
	}
	if a, err := Get(ctx, &http.Client{Timeout: 30 * time.Second, Transport: bearer{token}}, gw.URL+"/api/v1/applications", nil); err != nil || a.Status != http.StatusUnauthorized {
		t.Errorf("the spent login token as a bearer token = %d, %v; want 401", a.Status, err)
	}

	for _, c := range []struct {
		args []string
		ok   bool
	}{
		{[]string{"-check-config", "-listen", "0.0.0.0:18123"}, false},
		{[]string{"-check-config", "-listen", "127.0.0.1:18123"}, true},
	} {
		out, err := exec.CommandContext(ctx, s.gwBin, c.args...).CombinedOutput()
		if c.ok != (err == nil) || !c.ok && !strings.Contains(string(out), "auth.local.allow_remote") {
			t.Errorf("sparkgate %s = %v %q; want ok=%v (a refusal names auth.local.allow_remote)", strings.Join(c.args, " "), err, out, c.ok)
		}
	}
}
