package auth

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
)

func newLocalEnv(t *testing.T) (*gateway, *Authenticator) {
	t.Helper()
	gw := newGateway(t, &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)})
	cfg := Config{Local: LocalConfig{User: "dev", Groups: []string{"team"}}}
	cfg.SetDefaults()
	return gw, gw.use(t, cfg)
}

func TestLocalLogin(t *testing.T) {
	gw, a := newLocalEnv(t)
	login := a.LocalLoginURL()
	if !strings.HasPrefix(login, gw.srv.URL+"/oauth2/token?token=") || len(login)-len(gw.srv.URL+"/oauth2/token?token=") != 64 {
		t.Fatalf("LocalLoginURL() = %q; want <public>/oauth2/token?token=<64 hex>", login)
	}
	c := newBrowser(t, false)

	resp, body := get(t, c, gw.srv.URL+"/app/x/")
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "login URL printed by sparkgate") {
		t.Errorf("before sign-in GET = %d %q; want 401 page naming the login URL", resp.StatusCode, body)
	}
	wrong := login[:len(login)-1] + map[bool]string{true: "0", false: "1"}[!strings.HasSuffix(login, "0")]
	for _, u := range []string{wrong, gw.srv.URL + "/oauth2/token", gw.srv.URL + "/oauth2/token?token=zz"} {
		if resp, _ := get(t, c, u); resp.StatusCode != http.StatusForbidden {
			t.Errorf("GET %s = %d; want 403", strings.TrimPrefix(u, gw.srv.URL), resp.StatusCode)
		}
	}
	if resp, _ := get(t, c, gw.srv.URL+"/app/x/"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("after wrong tokens GET = %d; want 401", resp.StatusCode)
	}

	resp, _ = get(t, c, login+"&rd=%2Fapp%2Fx%2F")
	if got := location(t, resp); got != gw.srv.URL+"/app/x/" {
		t.Errorf("login redirected to %q; want /app/x/", got)
	}
	resp, body = get(t, c, gw.srv.URL+"/app/x/")
	if want := "user=dev groups=team method=local uri=/app/x/"; resp.StatusCode != http.StatusOK || body != want {
		t.Errorf("after sign-in GET = %d %q; want 200 %q", resp.StatusCode, body, want)
	}

	// The token is spent: a second use, even with the right token, is
	// refused and signs nobody in.
	other := newBrowser(t, false)
	resp, body = get(t, other, login)
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "works once and has been used") {
		t.Errorf("second use of the login URL = %d %q; want 403 saying it was used", resp.StatusCode, body)
	}
	if resp, _ := get(t, other, gw.srv.URL+"/app/x/"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("after a second use of the login URL GET = %d; want 401", resp.StatusCode)
	}
	// Nor is the token a bearer token, before or after its use.
	token := login[strings.Index(login, "token=")+len("token="):]
	r := httptest.NewRequest(http.MethodGet, "/api/v1/applications", nil)
	r.Header.Set("Authorization", "Bearer "+token)
	if id, ok, err := a.Authenticate(r); ok || err != nil {
		t.Errorf("Authenticate(login token as bearer) = %+v, %v, %v; want not signed in", id, ok, err)
	}

	// Logout in local mode goes home and clears the session.
	resp, _ = post(t, c, gw.srv.URL+"/oauth2/logout", gw.srv.URL)
	if got := location(t, resp); got != gw.srv.URL+"/" {
		t.Errorf("logout redirected to %q; want /", got)
	}
	if resp, _ := get(t, c, gw.srv.URL+"/app/x/"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("after logout GET = %d; want 401", resp.StatusCode)
	}
}

func TestLocalSessionExpires(t *testing.T) {
	gw, a := newLocalEnv(t)
	c := newBrowser(t, false)
	get(t, c, a.LocalLoginURL())
	gw.clock.Advance(8*time.Hour + time.Second)
	if resp, _ := get(t, c, gw.srv.URL+"/p"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("after TTL GET = %d; want 401", resp.StatusCode)
	}
}

func TestNewRefusesBadInput(t *testing.T) {
	cfg := Config{Mode: "nope"}
	cfg.SetDefaults()
	if _, err := New(context.Background(), cfg, "https://gw.example", zaptest.NewLogger(t)); err == nil || !strings.Contains(err.Error(), "auth.mode") {
		t.Errorf("New(bad mode) = %v; want an auth.mode error", err)
	}
	cfg = Config{}
	cfg.SetDefaults()
	if _, err := New(context.Background(), cfg, "gw.example", zaptest.NewLogger(t)); err == nil {
		t.Errorf("New(public URL without scheme) succeeded; want an error")
	}
}

// TestLocalTokenNotABearer: the login token is refused as a bearer token
// even before the URL was opened, and trying does not spend it.
func TestLocalTokenNotABearer(t *testing.T) {
	gw, a := newLocalEnv(t)
	login := a.LocalLoginURL()
	token := login[strings.Index(login, "token=")+len("token="):]
	req, _ := http.NewRequest(http.MethodGet, gw.srv.URL+"/api/v1/applications", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET with the login token as bearer = %d; want 401", resp.StatusCode)
	}
	// A HEAD (a link checker) does not spend the token either.
	hresp, err := newBrowser(t, false).Head(login)
	if err != nil {
		t.Fatal(err)
	}
	hresp.Body.Close()
	if hresp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("HEAD login URL = %d; want 405", hresp.StatusCode)
	}
	if resp, _ := get(t, newBrowser(t, false), login); resp.StatusCode != http.StatusFound {
		t.Errorf("first GET of the login URL after those = %d; want 302 (signed in)", resp.StatusCode)
	}
}
