package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sparkgate/sparkgate/auth"
	"github.com/sparkgate/sparkgate/proxy"
	"github.com/sparkgate/sparkgate/proxy/discovery"
)

const csrfAppID = "app-20260301120000-0001"

var confirmToken = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// killDriver is a fake driver UI that records the kill requests it gets.
type killDriver struct {
	*httptest.Server
	mu    sync.Mutex
	kills []string
}

func newKillDriver(t *testing.T) *killDriver {
	d := &killDriver{}
	d.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/kill") {
			d.mu.Lock()
			d.kills = append(d.kills, r.URL.RequestURI())
			d.mu.Unlock()
			http.Redirect(w, r, "/jobs/", http.StatusFound)
			return
		}
		_, _ = io.WriteString(w, "driver "+r.URL.Path)
	}))
	t.Cleanup(d.Close)
	return d
}

func (d *killDriver) killCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.kills)
}

// csrfGateway is the auth and proxy parts of a gateway built from cfg the
// way run builds them, in front of one live app owned by alice.
type csrfGateway struct {
	srv   *httptest.Server
	authn *auth.Authenticator
}

// csrfAppStart is the start time of the app every csrfGateway serves.
var csrfAppStart = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func newCSRFGateway(t *testing.T, cfg Config, drv *killDriver) *csrfGateway {
	t.Helper()
	g := &csrfGateway{}
	g.srv = httptest.NewUnstartedServer(nil)
	publicURL := "http://" + g.srv.Listener.Addr().String()
	authn, err := auth.New(context.Background(), cfg.Auth, publicURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = authn.Close() })
	key, err := csrfKey(cfg.Auth.Session)
	if err != nil {
		t.Fatal(err)
	}
	reg := discovery.NewRegistry()
	u, _ := url.Parse(drv.URL)
	// Every replica reads the same start time from the driver's REST API:
	// the kill confirmation is bound to it.
	reg.Store(discovery.NewSnapshot([]*discovery.App{{ID: csrfAppID, Name: "etl", User: "alice", State: discovery.Running,
		UIURL: u, Source: "static", StartTime: csrfAppStart, ACLProps: map[string]string{"spark.acls.enable": "true"}}}))
	p, err := proxy.New(proxy.Options{Config: cfg.Proxy, Registry: reg, Authn: authnAdapter{authn},
		Authz: newAuthorizer(cfg.Policy, nil), CSRFKey: key, Ready: func() bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	authHandler, app := authn.Handler(), authn.Middleware(p)
	g.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/oauth2/") {
			authHandler.ServeHTTP(w, r)
			return
		}
		app.ServeHTTP(w, r)
	})
	g.srv.Start()
	t.Cleanup(g.srv.Close)
	g.authn = authn
	return g
}

// csrfConfig writes a config file with the session keys in it (none in
// the environment) and loads it as the gateway does.
func csrfConfig(t *testing.T, keys ...string) Config {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("auth:\n  mode: local\n  local:\n    user: alice\n  session:\n    keys:\n")
	for _, k := range keys {
		b.WriteString("      - " + k + "\n")
	}
	b.WriteString("proxy:\n  kill: modify-acl\n")
	path := filepath.Join(t.TempDir(), "sparkgate.yaml")
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func mustParse(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func testKey(fill byte) string {
	return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{fill}, 32))
}

// TestKillConfirmationAcrossReplicas: two gateways built from the same
// config (session keys in the YAML file, none in the environment: the case
// that used to give each replica a random CSRF key) accept each other's
// kill confirmation forms; a gateway whose first session key differs
// refuses them, though it accepts the session.
func TestKillConfirmationAcrossReplicas(t *testing.T) {
	t.Setenv(auth.EnvSessionKeys, "")
	drv := newKillDriver(t)
	k1, k2 := testKey(1), testKey(2)
	cfg := csrfConfig(t, k1)
	a := newCSRFGateway(t, cfg, drv)
	b := newCSRFGateway(t, csrfConfig(t, k1), drv)
	other := newCSRFGateway(t, csrfConfig(t, k2, k1), drv)

	jar, _ := cookiejar.New(nil) // cookies of 127.0.0.1 go to every port
	c := &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(a.authn.LocalLoginURL())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode >= 400 || len(jar.Cookies(mustParse(t, a.srv.URL))) == 0 {
		t.Fatalf("local sign-in = %d; want a session cookie", resp.StatusCode)
	}

	path := "/app/" + csrfAppID + "/jobs/job/kill/?id=3"
	open := func(g *csrfGateway) string {
		t.Helper()
		resp, err := c.Get(g.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m := confirmToken.FindSubmatch(body)
		if resp.StatusCode != http.StatusOK || m == nil {
			t.Fatalf("GET %s on %s = %d; want the confirmation page with a token: %.300s", path, g.srv.URL, resp.StatusCode, body)
		}
		return string(m[1])
	}
	post := func(g *csrfGateway, token string) int {
		t.Helper()
		resp, err := c.PostForm(g.srv.URL+path, url.Values{"csrf": {token}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	if code := post(other, open(a)); code != http.StatusForbidden {
		t.Errorf("form opened on a, posted to a gateway with another first session key = %d; want 403", code)
	}
	if n := drv.killCount(); n != 0 {
		t.Fatalf("driver got %d kills from a refused form; want 0", n)
	}
	if code := post(b, open(a)); code != http.StatusSeeOther {
		t.Errorf("form opened on a, posted to b (same config) = %d; want 303 (killed)", code)
	}
	if code := post(a, open(b)); code != http.StatusSeeOther {
		t.Errorf("form opened on b, posted to a (same config) = %d; want 303 (killed)", code)
	}
	if n := drv.killCount(); n != 2 {
		t.Errorf("driver got %d kills; want 2", n)
	}
}

// TestCSRFKeyFromFileOrEnvironment: the key is derived from the first
// session key wherever it was configured, differs for another key, and is
// nil (the proxy then picks a random one) without keys.
func TestCSRFKeyFromFileOrEnvironment(t *testing.T) {
	k1 := testKey(1)
	t.Setenv(auth.EnvSessionKeys, "")
	fromFile, err := csrfKey(csrfConfig(t, k1).Auth.Session)
	if err != nil || len(fromFile) != 32 {
		t.Fatalf("csrfKey with keys in the file = %x, %v; want 32 bytes", fromFile, err)
	}
	t.Setenv(auth.EnvSessionKeys, k1+","+testKey(3))
	fromEnv, err := csrfKey(csrfConfig(t).Auth.Session)
	if err != nil || !bytes.Equal(fromEnv, fromFile) {
		t.Errorf("csrfKey with the same key in %s = %x, %v; want %x", auth.EnvSessionKeys, fromEnv, err, fromFile)
	}
	other, _ := csrfKey(csrfConfig(t, testKey(2)).Auth.Session)
	if bytes.Equal(other, fromFile) {
		t.Error("csrfKey of another session key is the same; want different")
	}
	if bytes.Equal(fromFile, bytes.Repeat([]byte{1}, 32)) {
		t.Error("csrfKey is the session key itself; want a derived key")
	}
	t.Setenv(auth.EnvSessionKeys, "")
	if none, err := csrfKey(csrfConfig(t).Auth.Session); none != nil || err != nil {
		t.Errorf("csrfKey without keys = %x, %v; want nil", none, err)
	}
}
