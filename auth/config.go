package auth

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/user"
	"slices"
	"strings"
	"time"
)

// Environment variables that may carry secrets instead of the config file.
const (
	// EnvClientSecret holds auth.oidc.client_secret when the file omits it.
	EnvClientSecret = "SPARKGATE_OIDC_CLIENT_SECRET" //nolint:gosec // the name of an environment variable, not a credential
	// EnvSessionKeys holds auth.session.keys (comma-separated base64) when
	// the file omits them.
	EnvSessionKeys = "SPARKGATE_SESSION_KEYS"
)

// Modes of authentication.
const (
	ModeLocal = "local"
	ModeOIDC  = "oidc"
)

// minKeyBytes is the shortest session key accepted: keys are stretched with
// HKDF into an AES-256 key and an HMAC key, so they need 256 bits of entropy.
const minKeyBytes = 32

// Config is the `auth:` section of the gateway configuration.
type Config struct {
	// Mode is "local" (one user, a login URL printed at start; default) or
	// "oidc" (single sign-on with an OpenID Connect provider).
	Mode string `yaml:"mode"`
	// Local configures mode "local".
	Local LocalConfig `yaml:"local"`
	// OIDC configures mode "oidc".
	OIDC OIDCConfig `yaml:"oidc"`
	// Session configures the session cookie.
	Session SessionConfig `yaml:"session"`

	// The sign-in gate (mode oidc): who, of everyone the provider knows,
	// may use the gateway at all. It is checked at sign-in, for every
	// bearer token and on every use of a session, so a change takes effect
	// on existing cookies at the next restart. Spark's ACLs still decide
	// per app; the gate only narrows who reaches them.

	// AllowedGroups admits members of any of these groups (compared exactly
	// with the groups the provider's groups claim names, extra_groups
	// included). Default: none; when AllowedGroups and AllowedUsers are both
	// empty, every user the provider knows passes this part of the gate.
	AllowedGroups []string `yaml:"allowed_groups"`
	// AllowedUsers admits these user names (compared exactly with the user
	// that user_claim and strip_email_domain make). Default: none (see
	// AllowedGroups): a user passes when named here or in an allowed group.
	AllowedUsers []string `yaml:"allowed_users"`
	// AllowedEmailDomains, when set, is required on top of the two lists
	// above: the user's verified email claim must be in one of these
	// domains (exact match, case-insensitive; sub-domains are not included).
	// Tokens without an email, such as client_credentials tokens, are then
	// refused. Default: none, every domain.
	AllowedEmailDomains []string `yaml:"allowed_email_domains"`
	// AccessContact tells a refused user who to ask for access: a name, an
	// email address or an http(s) or mailto URL (shown as a link). Default:
	// none; the page then says to ask the people who run the gateway.
	AccessContact string `yaml:"access_contact"`
}

// LocalConfig configures the single-user local mode.
type LocalConfig struct {
	// User is the identity everyone holding the login URL gets. Default: the
	// operating-system user running the gateway.
	User string `yaml:"user"`
	// Groups are the groups of User. Default: none.
	Groups []string `yaml:"groups"`
	// AllowRemote lets local mode serve on a listen address that is not
	// loopback. Anyone who learns the printed login URL before its owner
	// opens it becomes that user, so this is off by default and
	// -check-config refuses local mode on another address. Default: false.
	AllowRemote bool `yaml:"allow_remote"`
}

// OIDCConfig configures OpenID Connect sign-in and bearer tokens.
type OIDCConfig struct {
	// Issuer is the provider's issuer URL; discovery reads
	// <issuer>/.well-known/openid-configuration. Required in mode oidc.
	Issuer string `yaml:"issuer"`
	// ClientID is the gateway's client id at the provider. Required in mode oidc.
	ClientID string `yaml:"client_id"`
	// ClientSecret is the client secret. Default: the environment variable
	// SPARKGATE_OIDC_CLIENT_SECRET, so the file need not hold it.
	ClientSecret string `yaml:"client_secret"`
	// Scopes asked for at login. Default: openid profile email groups.
	Scopes []string `yaml:"scopes"`
	// UserClaim names the claim that becomes the user name:
	// preferred_username (default), email or sub.
	UserClaim string `yaml:"user_claim"`
	// StripEmailDomain drops "@domain" from the user when UserClaim is
	// email. When auth.allowed_email_domains is set, only those domains are
	// stripped (others are refused by the gate anyway); without it every
	// domain is, so alice@a.example and alice@b.example become the same
	// user "alice". Default: false.
	StripEmailDomain bool `yaml:"strip_email_domain"`
	// GroupsClaim names the claim holding the groups; a dotted path reaches
	// nested claims such as realm_access.roles. Default: groups.
	GroupsClaim string `yaml:"groups_claim"`
	// ExtraGroups are added to every signed-in user's groups. Default: none.
	ExtraGroups []string `yaml:"extra_groups"`
	// Audiences accepted in the aud claim of bearer tokens. Default: [ClientID].
	Audiences []string `yaml:"audiences"`
	// UseUserinfo fetches the groups from the userinfo endpoint when the ID
	// token has none. Default: false.
	UseUserinfo bool `yaml:"use_userinfo"`
	// EndSession sends sign-out on to the provider's end_session_endpoint
	// (with id_token_hint and post_logout_redirect_uri) when discovery lists
	// one. Default: true.
	EndSession *bool `yaml:"end_session"`
	// Timeout bounds every call to the provider (discovery, token, userinfo,
	// keys). Default: 10s.
	Timeout time.Duration `yaml:"timeout"`
}

// SessionConfig configures the session cookie.
type SessionConfig struct {
	// Keys are base64 secrets of at least 32 bytes. The first encodes new
	// cookies, all decode, so a key is rotated by putting the new one first.
	// Default: the environment variable SPARKGATE_SESSION_KEYS
	// (comma-separated); in local mode a random key when none is set.
	// Replicas behind one load balancer must share them.
	Keys []string `yaml:"keys"`
	// TTL is how long a session lasts from sign-in or its last renewal
	// (which is due when its ID token expires); one past it is not renewed,
	// the user signs in again. Default: 8h.
	TTL time.Duration `yaml:"ttl"`
	// CookieSecure marks cookies Secure. Default: true when the public URL
	// is https.
	CookieSecure *bool `yaml:"cookie_secure"`
	// Refresh renews a session with the provider's refresh token before the
	// ID token or the session expires. Default: true.
	Refresh *bool `yaml:"refresh"`

	// StoreConfig (store_config.go): what replicas share.
	StoreConfig `yaml:",inline"`
}

// SetDefaults fills every unset field with its default. It reads the
// environment variables named above for secrets the file leaves out.
func (c *Config) SetDefaults() {
	// An auth.oidc section without auth.mode is a forgotten "mode: oidc",
	// not a reason to sign in the OS user: the mode stays unset, and
	// Validate names it.
	if c.Mode == "" && c.OIDC.Issuer == "" && c.OIDC.ClientID == "" {
		c.Mode = ModeLocal
	}
	if c.Local.User == "" {
		if u, err := user.Current(); err == nil {
			c.Local.User = u.Username
		}
	}
	o := &c.OIDC
	if o.ClientSecret == "" {
		o.ClientSecret = os.Getenv(EnvClientSecret)
	}
	if len(o.Scopes) == 0 {
		o.Scopes = []string{"openid", "profile", "email", "groups"}
	}
	if o.UserClaim == "" {
		o.UserClaim = "preferred_username"
	}
	if o.GroupsClaim == "" {
		o.GroupsClaim = "groups"
	}
	if len(o.Audiences) == 0 && o.ClientID != "" {
		o.Audiences = []string{o.ClientID}
	}
	if o.EndSession == nil {
		o.EndSession = ptr(true)
	}
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Second
	}
	s := &c.Session
	if len(s.Keys) == 0 {
		if env := os.Getenv(EnvSessionKeys); env != "" {
			for k := range strings.SplitSeq(env, ",") {
				if k = strings.TrimSpace(k); k != "" {
					s.Keys = append(s.Keys, k)
				}
			}
		}
	}
	if s.TTL == 0 {
		s.TTL = 8 * time.Hour
	}
	if s.Refresh == nil {
		s.Refresh = ptr(true)
	}
	s.setDefaults() // StoreConfig's
}

// Validate reports every problem of a defaulted Config at once; each
// message starts with the full config key.
func (c *Config) Validate() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	switch c.Mode {
	case ModeLocal:
		if c.Local.User == "" {
			add("auth.local.user: required (the operating-system user could not be found)")
		}
		for _, l := range c.gateLists() {
			if len(l.list) > 0 {
				add("auth.%s: only used when auth.mode is oidc (local mode has one user, auth.local.user)", l.key)
			}
		}
	case ModeOIDC:
		o := c.OIDC
		if o.Issuer == "" {
			add("auth.oidc.issuer: required when auth.mode is oidc")
		} else if u, err := url.Parse(o.Issuer); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			add("auth.oidc.issuer: %q is not an http(s) URL", o.Issuer)
		}
		if o.ClientID == "" {
			add("auth.oidc.client_id: required when auth.mode is oidc")
		}
		if o.ClientSecret == "" {
			add("auth.oidc.client_secret: required when auth.mode is oidc (or set %s)", EnvClientSecret)
		}
		if !slices.Contains(o.Scopes, "openid") {
			add("auth.oidc.scopes: must contain openid")
		}
		switch o.UserClaim {
		case "preferred_username", "email", "sub":
		default:
			add("auth.oidc.user_claim: %q is not one of preferred_username, email, sub", o.UserClaim)
		}
		if o.StripEmailDomain && o.UserClaim != "email" {
			add("auth.oidc.strip_email_domain: only valid when auth.oidc.user_claim is email")
		}
		if strings.Trim(o.GroupsClaim, ".") != o.GroupsClaim || strings.Contains(o.GroupsClaim, "..") {
			add("auth.oidc.groups_claim: %q is not a claim name or dotted path", o.GroupsClaim)
		}
		if len(o.Audiences) == 0 {
			add("auth.oidc.audiences: at least one audience is required")
		}
		if o.Timeout < 0 {
			add("auth.oidc.timeout: must be positive")
		}
		if len(c.Session.Keys) == 0 {
			add("auth.session.keys: required when auth.mode is oidc, so sessions survive restarts and replicas agree (or set %s)", EnvSessionKeys)
		}
	case "":
		add("auth.mode: required when auth.oidc is set: oidc (or local, to ignore auth.oidc)")
	default:
		add("auth.mode: %q is not one of local, oidc", c.Mode)
	}
	errs = append(errs, c.validateGate()...)
	for i, k := range c.Session.Keys {
		if _, err := decodeKey(k); err != nil {
			add("auth.session.keys[%d]: %w", i, err)
		}
	}
	if c.Session.TTL <= 0 {
		add("auth.session.ttl: must be positive")
	}
	errs = append(errs, c.Session.validate()...) // StoreConfig's
	return errs
}

// decodeKey decodes one session key, accepting standard and URL base64 with
// or without padding.
func decodeKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			if len(b) < minKeyBytes {
				return nil, fmt.Errorf("key is %d bytes; want at least %d (e.g. openssl rand -base64 32)", len(b), minKeyBytes)
			}
			return b, nil
		}
	}
	return nil, errors.New("not valid base64")
}

func ptr[T any](v T) *T { return &v }
