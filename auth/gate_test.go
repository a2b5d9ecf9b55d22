package auth

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestGateAdmits(t *testing.T) {
	alice := Identity{User: "alice", Groups: []string{"eng", "spark-users"}, EmailDomain: "corp.example"}
	dave := Identity{User: "dave", EmailDomain: "corp.example"}
	mallory := Identity{User: "mallory", Groups: []string{"spark-users"}, EmailDomain: "other.example"}
	svc := Identity{User: "svc", Groups: []string{"spark-users"}} // a token without email
	tests := []struct {
		name string
		cfg  Config
		id   Identity
		want bool
	}{
		{"no lists: everyone", Config{}, dave, true},
		{"in an allowed group", Config{AllowedGroups: []string{"ops", "spark-users"}}, alice, true},
		{"in no allowed group", Config{AllowedGroups: []string{"spark-users"}}, dave, false},
		{"group names are exact", Config{AllowedGroups: []string{"Spark-Users"}}, alice, false},
		{"named user", Config{AllowedUsers: []string{"dave"}}, dave, true},
		{"user names are exact", Config{AllowedUsers: []string{"Dave"}}, dave, false},
		{"user or group suffices", Config{AllowedGroups: []string{"spark-users"}, AllowedUsers: []string{"dave"}}, dave, true},
		{"only users listed: a group is not enough", Config{AllowedUsers: []string{"dave"}}, alice, false},
		{"allowed domain", Config{AllowedEmailDomains: []string{"Corp.Example"}}, dave, true},
		{"other domain", Config{AllowedEmailDomains: []string{"corp.example"}}, mallory, false},
		{"no email when domains are set", Config{AllowedEmailDomains: []string{"corp.example"}}, svc, false},
		{"domain is required on top of the group", Config{AllowedGroups: []string{"spark-users"}, AllowedEmailDomains: []string{"corp.example"}}, mallory, false},
		{"domain and group", Config{AllowedGroups: []string{"spark-users"}, AllowedEmailDomains: []string{"corp.example"}}, alice, true},
		{"domain but no group", Config{AllowedGroups: []string{"spark-users"}, AllowedEmailDomains: []string{"corp.example"}}, dave, false},
		{"no sub-domains", Config{AllowedEmailDomains: []string{"example"}}, dave, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, reason := newGate(tc.cfg).admits(tc.id)
			if got != tc.want {
				t.Errorf("admits(%+v) = %v (%s); want %v", tc.id, got, reason, tc.want)
			}
			if !got && reason == "" {
				t.Errorf("admits(%+v) refused without a reason", tc.id)
			}
		})
	}
}

func TestGateRuleText(t *testing.T) {
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{AllowedGroups: []string{"a", "b"}}, "This gateway admits only members of the groups a, b."},
		{Config{AllowedGroups: []string{"a"}, AllowedUsers: []string{"u"}}, "This gateway admits only members of the groups a and the users u."},
		{Config{AllowedEmailDomains: []string{"Corp.Example"}}, "This gateway admits only people with an email address at corp.example."},
		{Config{AllowedUsers: []string{"u"}, AllowedEmailDomains: []string{"x.example"}}, "This gateway admits only the users u, and only with an email address at x.example."},
	}
	for _, tc := range tests {
		if got := newGate(tc.cfg).rule(); got != tc.want {
			t.Errorf("rule(%+v) = %q; want %q", tc.cfg, got, tc.want)
		}
	}
	for contact, want := range map[string]string{
		"":                           "",
		"the data platform team":     "",
		"ops@corp.example":           "mailto:ops@corp.example",
		"mailto:ops@corp.example":    "mailto:ops@corp.example",
		"https://wiki.example/spark": "https://wiki.example/spark",
	} {
		if got := newGate(Config{AccessContact: contact}).contactURL(); got != want {
			t.Errorf("contactURL(%q) = %q; want %q", contact, got, want)
		}
	}
}

func TestGateConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Config)
		want string // "" for valid
	}{
		{"valid lists", func(c *Config) {
			c.AllowedGroups, c.AllowedUsers, c.AllowedEmailDomains = []string{"spark-users"}, []string{"alice"}, []string{"corp.example", "xn--bcher-kva.example"}
			c.AccessContact = "https://wiki.example/access"
		}, ""},
		{"contact text", func(c *Config) { c.AccessContact = "the data platform team (#spark-help)" }, ""},
		{"contact mail", func(c *Config) { c.AccessContact = "ops@corp.example" }, ""},
		{"empty group", func(c *Config) { c.AllowedGroups = []string{""} }, "auth.allowed_groups[0]: "},
		{"group with spaces", func(c *Config) { c.AllowedGroups = []string{"ok", " eng"} }, "auth.allowed_groups[1]: "},
		{"user with newline", func(c *Config) { c.AllowedUsers = []string{"a\nb"} }, "auth.allowed_users[0]: "},
		{"domain with @", func(c *Config) { c.AllowedEmailDomains = []string{"@corp.example"} }, "auth.allowed_email_domains[0]: \"@corp.example\": write the domain alone"},
		{"wildcard domain", func(c *Config) { c.AllowedEmailDomains = []string{"*.corp.example"} }, "auth.allowed_email_domains[0]: \"*.corp.example\": wildcards"},
		{"not a domain", func(c *Config) { c.AllowedEmailDomains = []string{"corp..example"} }, "auth.allowed_email_domains[0]: \"corp..example\" is not a domain name"},
		{"javascript contact", func(c *Config) { c.AccessContact = "javascript:alert(1)" }, "auth.access_contact: "},
		{"long contact", func(c *Config) { c.AccessContact = strings.Repeat("x", 301) }, "auth.access_contact: "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{Mode: ModeOIDC, OIDC: OIDCConfig{Issuer: "https://idp.example", ClientID: "c", ClientSecret: "s"}, Session: SessionConfig{Keys: []string{strings.Repeat("A", 44)}}}
			tc.edit(&c)
			c.SetDefaults()
			errs := c.Validate()
			if tc.want == "" {
				if len(errs) > 0 {
					t.Errorf("Validate() = %v; want no error", errs)
				}
				return
			}
			if len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), tc.want) {
				t.Errorf("Validate() = %v; want one error starting %q", errs, tc.want)
			}
		})
	}
	c := Config{Local: LocalConfig{User: "dev"}, AllowedGroups: []string{"x"}, AllowedEmailDomains: []string{"corp.example"}}
	c.SetDefaults()
	errs := c.Validate()
	if len(errs) != 2 || !strings.HasPrefix(errs[0].Error(), "auth.allowed_groups: only used when auth.mode is oidc") ||
		!strings.HasPrefix(errs[1].Error(), "auth.allowed_email_domains: only used when auth.mode is oidc") {
		t.Errorf("Validate(local with gate lists) = %v; want errors naming auth.allowed_groups and auth.allowed_email_domains", errs)
	}
}

// TestGateRefusesAtCallback: a user the provider knows but the gate does
// not admit gets a 403 page that names them, whom the gateway admits and
// who to ask, and no session cookie.
func TestGateRefusesAtCallback(t *testing.T) {
	e := newFlowEnv(t, func(c *Config) {
		c.AllowedGroups = []string{"spark-users"}
		c.AccessContact = "ops@corp.example"
	})
	e.idp.claims["preferred_username"] = "dave"
	e.idp.claims["groups"] = []any{"marketing"}
	c := newBrowser(t, true)
	resp, body := get(t, c, e.gw.srv.URL+"/app/x/")
	if resp.StatusCode != http.StatusForbidden || resp.Request.URL.Path != "/oauth2/callback" {
		t.Fatalf("sign-in of dave ended at %s with %d; want 403 at the callback", resp.Request.URL.Path, resp.StatusCode)
	}
	for _, want := range []string{
		"You are signed in as <strong>dave</strong> (email at example.com), in the groups marketing.",
		"This gateway admits only members of the groups spark-users.",
		`To get access, ask <a href="mailto:ops@corp.example">ops@corp.example</a>.`,
		`<form method="post" action="/oauth2/logout">`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("refusal page lacks %q:\n%s", want, body)
		}
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("refusal page CSP = %q; want default-src 'none'", csp)
	}
	if got := sessionCookies(t, c, e.gw.srv.URL); len(got) != 0 {
		t.Errorf("after a refused sign-in the browser holds %d session cookies; want none", len(got))
	}
	// The next request starts a sign-in again; it is refused again.
	if resp, _ := get(t, c, e.gw.srv.URL+"/app/x/"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("second visit = %d; want 403 again", resp.StatusCode)
	}

	// A member of the group gets in.
	e.idp.claims["preferred_username"] = "alice"
	e.idp.claims["groups"] = []any{"spark-users"}
	body = e.signIn(t, newBrowser(t, true), "/app/x/")
	if !strings.HasPrefix(body, "user=alice ") {
		t.Errorf("alice's page = %q; want her identity", body)
	}
}

// TestGateJudgesExistingSessions: a session signed in while the gate was
// open is refused once the gateway runs with allowed_groups (a restart with
// the same keys), and its cookie is cleared.
func TestGateJudgesExistingSessions(t *testing.T) {
	e := newFlowEnv(t, nil)
	e.idp.claims["groups"] = []any{"marketing"}
	c := newBrowser(t, false)
	cf := newBrowser(t, true)
	cf.Jar = c.Jar
	e.signIn(t, cf, "/p")
	if len(sessionCookies(t, c, e.gw.srv.URL)) == 0 {
		t.Fatal("no session after sign-in")
	}

	cfg := oidcConfig(e.idp, e.key)
	cfg.AllowedGroups = []string{"spark-users"}
	a := e.gw.use(t, cfg)
	resp, body := get(t, c, e.gw.srv.URL+"/p")
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "signed in as <strong>alice</strong>") {
		t.Errorf("old session under the new gate = %d %q; want the 403 refusal", resp.StatusCode, body)
	}
	if got := sessionCookies(t, c, e.gw.srv.URL); len(got) != 0 {
		t.Errorf("after the refusal the browser holds %d session cookies; want none", len(got))
	}
	// Authenticate itself never admits the refused session.
	r := httptest.NewRequest(http.MethodGet, "/p", nil)
	for _, ck := range cf.Jar.Cookies(mustURL(t, e.gw.srv.URL)) {
		r.AddCookie(ck)
	}
	if id, ok, _ := a.Authenticate(r); ok {
		t.Errorf("Authenticate(refused session) = %+v; want not signed in", id)
	}
}

// TestGateRefusesBearer: bearer tokens pass the same gate; a refused token
// gets a 403 JSON that names the user, not a 401.
func TestGateRefusesBearer(t *testing.T) {
	e := newFlowEnv(t, func(c *Config) {
		c.AllowedGroups = []string{"spark-users"}
		c.AllowedEmailDomains = []string{"corp.example"}
	})
	now := e.clock.Now()
	token := func(user, email string, groups ...string) string {
		c := map[string]any{
			"iss": e.idp.issuer(), "aud": "sparkgate", "sub": user, "preferred_username": user,
			"groups": groups, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
		}
		if email != "" {
			c["email"], c["email_verified"] = email, true
		}
		return e.idp.sign(c)
	}
	tests := []struct {
		name, token string
		want        int
	}{
		{"member in the domain", token("alice", "alice@corp.example", "spark-users"), http.StatusOK},
		{"not a member", token("dave", "dave@corp.example", "marketing"), http.StatusForbidden},
		{"member in another domain", token("mallory", "mallory@other.example", "spark-users"), http.StatusForbidden},
		{"member without email", token("svc", "", "spark-users"), http.StatusForbidden},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, e.gw.srv.URL+"/api/v1/applications", nil)
			req.Header.Set("Authorization", "Bearer "+tc.token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var b bytes.Buffer
			_, _ = b.ReadFrom(resp.Body)
			if resp.StatusCode != tc.want {
				t.Fatalf("GET with bearer = %d %q; want %d", resp.StatusCode, b.String(), tc.want)
			}
			if tc.want == http.StatusForbidden && (!strings.Contains(b.String(), `"error":"signed in as `) || !strings.Contains(b.String(), "admits only members of the groups spark-users") ||
				resp.Header.Get("Content-Type") != "application/json") {
				t.Errorf("refused bearer body = %q (%s); want a JSON error naming the user and the rule", b.String(), resp.Header.Get("Content-Type"))
			}
		})
	}
}

// TestStripEmailDomainOnlyAllowed: with allowed_email_domains, only those
// domains are stripped; a user of another domain is refused, never
// mistaken for the local part's namesake.
func TestStripEmailDomainOnlyAllowed(t *testing.T) {
	e := newFlowEnv(t, func(c *Config) {
		c.OIDC.UserClaim = "email"
		c.OIDC.StripEmailDomain = true
		c.AllowedEmailDomains = []string{"corp.example"}
	})
	e.idp.claims["email"] = "alice@Corp.Example"
	if body := e.signIn(t, newBrowser(t, true), "/p"); !strings.HasPrefix(body, "user=alice ") {
		t.Errorf("alice@Corp.Example signed in as %q; want user=alice", body)
	}
	e.idp.claims["email"] = "alice@other.example"
	resp, body := get(t, newBrowser(t, true), e.gw.srv.URL+"/p")
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "signed in as <strong>alice@other.example</strong>") {
		t.Errorf("alice@other.example = %d %q; want 403 naming the full address", resp.StatusCode, body)
	}
}
