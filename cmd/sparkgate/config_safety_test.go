package main

import (
	"os"
	"strings"
	"testing"

	"github.com/sparkgate/sparkgate/proxy"
)

// TestAppDomainMustNotCoverPublicHost: with public_url's host under
// proxy.app_domain, the proxy takes the main origin for an app's host
// (gw.apps.example.com is app "gw"'s): the index and sign-in are never
// served there, and the main origin's cookies share the app hosts' domain.
// -check-config must say so, naming the key, rather than "config ok".
func TestAppDomainMustNotCoverPublicHost(t *testing.T) {
	tests := []struct {
		publicURL, appDomain string
		ok                   bool
	}{
		{"https://spark.example.com", "apps.example.com", true},
		{"https://apps.example.com", "apps.example.com", true},
		{"https://spark.example.com", "example.com", false},
		{"https://gw.apps.example.com:8443", "apps.example.com", false},
		{"https://GW.Apps.Example.com.", "apps.example.com", false},
	}
	for _, tc := range tests {
		c := Config{PublicURL: tc.publicURL, Proxy: proxy.DefaultConfig()}
		c.Proxy.AppDomain = tc.appDomain
		c.SetDefaults()
		var got []string
		for _, err := range c.Validate() {
			if strings.HasPrefix(err.Error(), "proxy.app_domain:") {
				got = append(got, err.Error())
			}
		}
		if tc.ok && len(got) > 0 {
			t.Errorf("public_url %q, app_domain %q: Validate() = %q; want no proxy.app_domain error", tc.publicURL, tc.appDomain, got)
		}
		if !tc.ok && len(got) == 0 {
			t.Errorf("public_url %q, app_domain %q: Validate() has no error naming proxy.app_domain; want one (the main host would be an app's host)", tc.publicURL, tc.appDomain)
		}
	}
}

// TestMultiDocumentConfigIsAnError: a second YAML document (after "---")
// was silently ignored, so a sign-in gate written there left the gateway
// open to everyone the IdP knows while -check-config said "config ok".
func TestMultiDocumentConfigIsAnError(t *testing.T) {
	write := configFiles(t)
	for name, body := range map[string]string{
		"gate in a second document": "listen: 127.0.0.1:8080\n---\nauth:\n  allowed_groups: [spark-users]\n",
		"empty first document":      "---\n# sparkgate\n---\nlisten: 0.0.0.0:8080\n",
	} {
		if _, err := loadConfig(write(strings.ReplaceAll(name, " ", "-")+".yaml", body)); err == nil {
			t.Errorf("%s: loadConfig = nil error; want one saying the file has more than one YAML document", name)
		}
	}
	// One document, with or without the markers, stays fine.
	for name, body := range map[string]string{
		"start marker":       "---\nlisten: 127.0.0.1:8080\n",
		"start and end":      "---\nlisten: 127.0.0.1:8080\n...\n",
		"trailing separator": "listen: 127.0.0.1:8080\n---\n",
		"empty file":         "",
	} {
		if _, err := loadConfig(write(strings.ReplaceAll(name, " ", "-")+".yaml", body)); err != nil {
			t.Errorf("%s: loadConfig = %v; want no error", name, err)
		}
	}
}

// TestPublicURLIsOriginOnly: public_url builds the OIDC redirect URL and
// the app hosts' origins by appending to it; a query, fragment or
// credentials in it were accepted and made broken (or credential-bearing,
// and logged at start) URLs.
func TestPublicURLIsOriginOnly(t *testing.T) {
	for _, u := range []string{"http://127.0.0.1:8080?x=1", "http://127.0.0.1:8080#x", "http://user:pw@127.0.0.1:8080"} {
		c := Config{PublicURL: u}
		c.SetDefaults()
		found := false
		for _, err := range c.Validate() {
			if strings.HasPrefix(err.Error(), "public_url:") {
				found = true
				if strings.Contains(err.Error(), "pw") {
					t.Errorf("public_url %q: the error repeats the password: %v", u, err)
				}
			}
		}
		if !found {
			t.Errorf("public_url %q: Validate() has no error naming public_url", u)
		}
	}
}

// TestCookieSecureOffOnHTTPSIsAnError: auth.session.cookie_secure: false
// with an https public_url drops the __Host- prefix (so an app host or
// sibling can plant or shadow the session cookie) and lets the browser
// send the session, which holds the refresh and ID tokens, over plain
// http. Nothing needs it: users reach an https public_url over https.
func TestCookieSecureOffOnHTTPSIsAnError(t *testing.T) {
	f := false
	c := Config{PublicURL: "https://spark.example.com"}
	c.Auth.Session.CookieSecure = &f
	c.SetDefaults()
	for _, err := range c.Validate() {
		if strings.HasPrefix(err.Error(), "auth.session.cookie_secure:") {
			return
		}
	}
	t.Error("cookie_secure: false with an https public_url: Validate() has no error naming auth.session.cookie_secure")
}

// TestConfigErrorsHideCredentials: a URL written with credentials where
// none belong is refused, and the error (printed to stderr, so to the
// journal or the pod's log) must not repeat the password.
func TestConfigErrorsHideCredentials(t *testing.T) {
	const pw = "hunter2secret"
	c := Config{Masters: []proxy.MasterConfig{{Name: "main", URL: "http://admin:" + pw + "@master:8080"}}}
	c.Auth.Session.Store = "redis"
	c.Auth.Session.Redis.Addr = "redis://:" + pw + "@redis:6379"
	c.SetDefaults()
	errs := c.Validate()
	msg := configErrors(errs).Error()
	for _, key := range []string{"masters[0].url:", "auth.session.redis.addr:"} {
		if !strings.Contains(msg, key) {
			t.Errorf("Validate() lacks an error naming %s:\n%s", key, msg)
		}
	}
	if strings.Contains(msg, pw) {
		t.Errorf("Validate() repeats the password:\n%s", msg)
	}
}

// TestSystemdUnitBoundsMemory: the Kubernetes manifests and the chart
// limit the gateway's memory (and it takes nine tenths of the cgroup's
// limit as GOMEMLIMIT); the systemd unit set none, so a burst of
// connections grew it without bound on a shared host, and setMemoryLimit
// had no limit to read.
func TestSystemdUnitBoundsMemory(t *testing.T) {
	b, err := os.ReadFile("../../deploy/systemd/sparkgate.service")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "MemoryMax=") {
			return
		}
	}
	t.Error("sparkgate.service sets no MemoryMax=; want a memory bound as the Kubernetes manifests have")
}
