package auth

import (
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

func TestConfigDefaults(t *testing.T) {
	t.Setenv(EnvClientSecret, "from-env")
	t.Setenv(EnvSessionKeys, " k1 , k2,")
	var c Config
	if err := yaml.Unmarshal([]byte("mode: oidc\noidc:\n  client_id: gw\nsession:\n  ttl: 2h\n"), &c); err != nil {
		t.Fatal(err)
	}
	c.SetDefaults()
	checks := []struct {
		name      string
		got, want any
	}{
		{"client_secret", c.OIDC.ClientSecret, "from-env"},
		{"keys", strings.Join(c.Session.Keys, "|"), "k1|k2"},
		{"scopes", strings.Join(c.OIDC.Scopes, " "), "openid profile email groups"},
		{"user_claim", c.OIDC.UserClaim, "preferred_username"},
		{"groups_claim", c.OIDC.GroupsClaim, "groups"},
		{"audiences", strings.Join(c.OIDC.Audiences, ","), "gw"},
		{"end_session", *c.OIDC.EndSession, true},
		{"refresh", *c.Session.Refresh, true},
		{"ttl", c.Session.TTL, 2 * time.Hour},
		{"cookie_secure", c.Session.CookieSecure == nil, true},
	}
	for _, ck := range checks {
		if ck.got != ck.want {
			t.Errorf("SetDefaults: %s = %v; want %v", ck.name, ck.got, ck.want)
		}
	}
	var l Config
	l.SetDefaults()
	if l.Mode != ModeLocal || l.Session.TTL != 8*time.Hour {
		t.Errorf("SetDefaults on empty config: mode %q ttl %v; want local, 8h", l.Mode, l.Session.TTL)
	}
}

func TestConfigFileWinsOverEnv(t *testing.T) {
	t.Setenv(EnvClientSecret, "from-env")
	c := Config{OIDC: OIDCConfig{ClientSecret: "from-file"}}
	c.SetDefaults()
	if c.OIDC.ClientSecret != "from-file" {
		t.Errorf("client_secret = %q; want from-file", c.OIDC.ClientSecret)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Setenv(EnvClientSecret, "")
	t.Setenv(EnvSessionKeys, "")
	good := func() Config {
		c := Config{Mode: ModeOIDC, OIDC: OIDCConfig{Issuer: "https://idp.example", ClientID: "gw", ClientSecret: "s"},
			Session: SessionConfig{Keys: []string{"MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="}}}
		c.SetDefaults()
		return c
	}
	tests := []struct {
		name string
		edit func(*Config)
		want []string // each a prefix of one error, in order
	}{
		{"valid oidc", func(*Config) {}, nil},
		{"valid local", func(c *Config) { c.Mode = ModeLocal; c.Session.Keys = nil }, nil},
		{"bad mode", func(c *Config) { c.Mode = "ldap" }, []string{"auth.mode: "}},
		{"everything missing", func(c *Config) {
			c.OIDC.Issuer, c.OIDC.ClientID, c.OIDC.ClientSecret, c.Session.Keys = "", "", "", nil
		}, []string{
			"auth.oidc.issuer: required when auth.mode is oidc",
			"auth.oidc.client_id: required when auth.mode is oidc",
			"auth.oidc.client_secret: required",
			"auth.session.keys: required",
		}},
		{"issuer not a URL", func(c *Config) { c.OIDC.Issuer = "idp.example" }, []string{"auth.oidc.issuer: "}},
		{"no openid scope", func(c *Config) { c.OIDC.Scopes = []string{"email"} }, []string{"auth.oidc.scopes: "}},
		{"bad user claim", func(c *Config) { c.OIDC.UserClaim = "name" }, []string{"auth.oidc.user_claim: "}},
		{"strip without email", func(c *Config) { c.OIDC.StripEmailDomain = true }, []string{"auth.oidc.strip_email_domain: "}},
		{"bad groups claim", func(c *Config) { c.OIDC.GroupsClaim = "a..b" }, []string{"auth.oidc.groups_claim: "}},
		{"short key and bad key", func(c *Config) { c.Session.Keys = []string{"c2hvcnQ=", "!!"} }, []string{"auth.session.keys[0]: ", "auth.session.keys[1]: "}},
		{"ttl", func(c *Config) { c.Session.TTL = -time.Second }, []string{"auth.session.ttl: "}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := good()
			tc.edit(&c)
			errs := c.Validate()
			if len(errs) != len(tc.want) {
				t.Fatalf("Validate() = %v; want %d errors %q", errs, len(tc.want), tc.want)
			}
			for i, err := range errs {
				if !strings.HasPrefix(err.Error(), tc.want[i]) {
					t.Errorf("Validate()[%d] = %q; want prefix %q", i, err, tc.want[i])
				}
			}
		})
	}
}
