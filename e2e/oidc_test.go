//go:build e2e

package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestOIDC checks the real provider the suite signs in with, then signs in
// to the gateway through it (authorization code + PKCE with the provider's
// development login form) and uses a client_credentials JWT as a bearer.
func TestOIDC(t *testing.T) {
	s := newSuite(t)
	ctx := ctxFor(t, 5*time.Minute)
	dir := s.freshDir(t, "oidc")
	const secret = "e2e-client-secret-not-secret"
	op, err := StartOIDC(ctx, s.root, dir, secret, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = op.Stop() })

	t.Run("discovery", func(t *testing.T) {
		var disc struct {
			Issuer  string   `json:"issuer"`
			Methods []string `json:"code_challenge_methods_supported"`
		}
		getJSON(t, op.Issuer+"/.well-known/openid-configuration", &disc)
		if disc.Issuer != op.Issuer {
			t.Errorf("issuer = %q; want %q", disc.Issuer, op.Issuer)
		}
		if strings.Join(disc.Methods, ",") != "S256" {
			t.Errorf("code_challenge_methods_supported = %v; want [S256]", disc.Methods)
		}
	})

	t.Run("client_credentials JWT", func(t *testing.T) {
		tok, err := op.ClientCredentialsToken(ctx)
		if err != nil {
			t.Fatal(err)
		}
		claims := jwtClaims(t, tok)
		for k, want := range map[string]any{"aud": "sparkgate", "iss": op.Issuer, "preferred_username": "svc-reporter"} {
			if claims[k] != want {
				t.Errorf("claim %s = %v; want %v", k, claims[k], want)
			}
		}
		if g, _ := json.Marshal(claims["groups"]); string(g) != `["analysts"]` {
			t.Errorf("claim groups = %s; want [\"analysts\"]", g)
		}
	})
}

// TestOIDCGateway signs in to the gateway through the real provider.
func TestOIDCGateway(t *testing.T) {
	s := newSuite(t)
	s.requireGateway(t)
	ctx := ctxFor(t, 5*time.Minute)
	dir := s.freshDir(t, "oidc-gateway")
	const secret = "e2e-client-secret-not-secret"
	op, gwPort, _ := s.providerFor(ctx, t, dir, secret)
	gw, err := StartGateway(ctx, s.gwBin, dir, GatewayOptions{
		Port:     gwPort,
		LogGlobs: []string{filepath.Join(dir, "no-drivers", "*.log")},
		Auth: map[string]any{
			"mode": "oidc",
			"oidc": map[string]any{
				"issuer": op.Issuer, "client_id": "sparkgate",
				"audiences": []string{"sparkgate"},
			},
			"session": map[string]any{"keys": []string{base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))}},
		},
		Env: []string{"SPARKGATE_OIDC_CLIENT_SECRET=" + secret},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gw.Stop)

	// Without a session the gateway challenges, in the one way each kind of
	// client can follow: a program gets 401 with a Bearer challenge, a
	// browser a 302 to sign in that returns to where it was going. Any other
	// refusal (a 500, a 404, a transport error) is a failure, not a pass.
	t.Run("not signed in", func(t *testing.T) {
		c := NoRedirectClient(nil)
		code, h, err := answer(ctx, c, gw.URL+"/api/v1/applications")
		if err != nil {
			t.Fatal(err)
		}
		if want := `Bearer realm="sparkgate"`; code != http.StatusUnauthorized || h.Get("WWW-Authenticate") != want {
			t.Errorf("GET /api/v1/applications without a session = %d, WWW-Authenticate %q; want 401, %q", code, h.Get("WWW-Authenticate"), want)
		}
		code, h, err = answer(ctx, c, gw.URL+"/?q=deep-link")
		if err != nil {
			t.Fatal(err)
		}
		if want := "/oauth2/login?rd=" + url.QueryEscape("/?q=deep-link"); code != http.StatusFound || h.Get("Location") != want {
			t.Errorf("GET /?q=deep-link without a session = %d, Location %q; want 302 to %q", code, h.Get("Location"), want)
		}
	})

	t.Run("code flow as alice", func(t *testing.T) {
		jar, _ := cookiejar.New(nil)
		c := &http.Client{Jar: jar, Timeout: 60 * time.Second}
		final, body, err := BrowserlessLogin(ctx, c, gw.URL+"/", "alice")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(final.String(), gw.URL+"/") {
			t.Fatalf("login ended at %s; want the gateway (page: %.300s)", final, body)
		}
		if _, err := gw.Apps(ctx, c); err != nil {
			t.Errorf("app list after sign-in: %v", err)
		}
		// The gateway's access log names the user of each request.
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if _, _, err := gw.Watch.WaitFor(wctx, regexp.MustCompile(`/api/v1/applications".*"user": "alice"`), nil); err != nil {
			t.Errorf("no request as alice in the gateway log: %v", err)
		}
	})

	t.Run("chromium as bob", func(t *testing.T) {
		b, err := NewBrowser(ctx, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		// A deep link must survive the sign-in round trip.
		want := gw.URL + "/?q=deep-link"
		final, err := b.Login(want, op.Issuer, "bob", 60*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if final != want {
			t.Errorf("after sign-in the browser is at %s; want %s", final, want)
		}
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if _, _, err := gw.Watch.WaitFor(wctx, regexp.MustCompile(`signed in.*"user": "bob"`), nil); err != nil {
			t.Errorf("the gateway did not sign bob in: %v", err)
		}
	})

	// Two tabs of one browser start a sign-in at once (each is sent to the
	// provider before either comes back); both must land on their own deep
	// link: one sign-in must not spoil the other's state.
	t.Run("chromium two tabs", func(t *testing.T) {
		b, err := NewBrowser(ctx, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		tab2, err := b.Tab()
		if err != nil {
			t.Fatal(err)
		}
		tabs := []*Browser{b, tab2}
		want := []string{gw.URL + "/?q=tab-one", gw.URL + "/?q=tab-two"}
		for i, tab := range tabs {
			if _, err := tab.StartLogin(want[i], op.Issuer, 60*time.Second); err != nil {
				t.Fatalf("tab %d: %v", i+1, err)
			}
		}
		// The first tab to start finishes last: the older sign-in is the
		// one a shared state would lose.
		for i := len(tabs) - 1; i >= 0; i-- {
			final, err := tabs[i].FinishLogin(op.Issuer, "carol", 60*time.Second)
			if err != nil {
				t.Fatalf("tab %d: %v", i+1, err)
			}
			if final != want[i] {
				t.Errorf("tab %d ended at %s; want %s", i+1, final, want[i])
			}
			text, err := tabs[i].Text()
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(text, "signed in as carol") {
				t.Errorf("tab %d does not show carol signed in: %.300s", i+1, text)
			}
		}
	})

	t.Run("bearer JWT", func(t *testing.T) {
		tok, err := op.ClientCredentialsToken(ctx)
		if err != nil {
			t.Fatal(err)
		}
		c := &http.Client{Timeout: 30 * time.Second, Transport: bearer{tok}}
		if _, err := gw.Apps(ctx, c); err != nil {
			t.Errorf("app list with a bearer JWT: %v", err)
		}
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if _, _, err := gw.Watch.WaitFor(wctx, regexp.MustCompile(`/api/v1/applications".*"user": "svc-reporter"`), nil); err != nil {
			t.Errorf("no request as svc-reporter in the gateway log: %v", err)
		}
		// A forged token is refused as an invalid token (401), not by some
		// failure on the way (a transport error or a 5xx would also make
		// the app list fail).
		bad := &http.Client{Timeout: 30 * time.Second, Transport: bearer{tok[:len(tok)-4] + "AAAA"}}
		code, h, err := answer(ctx, bad, gw.URL+"/api/v1/applications")
		if err != nil {
			t.Fatal(err)
		}
		if want := `Bearer realm="sparkgate", error="invalid_token"`; code != http.StatusUnauthorized || h.Get("WWW-Authenticate") != want {
			t.Errorf("app list with a forged bearer JWT = %d, WWW-Authenticate %q; want 401, %q", code, h.Get("WWW-Authenticate"), want)
		}
	})
}

// answer GETs u once, without following redirects, and returns the status
// and headers.
func answer(ctx context.Context, c *http.Client, u string) (int, http.Header, error) {
	rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, nil, fmt.Errorf("building request: %w", err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("GET %s: %w", u, err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header, nil
}

type bearer struct{ tok string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.tok)
	return http.DefaultTransport.RoundTrip(r)
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("decoding %s: %v", url, err)
	}
}

func jwtClaims(t *testing.T, tok string) map[string]any {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("token has %d parts; want a JWT", len(parts))
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatalf("decoding JWT payload: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("parsing JWT payload: %v", err)
	}
	return m
}
