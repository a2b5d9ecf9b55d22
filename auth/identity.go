package auth

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Identity is a signed-in user.
type Identity struct {
	// User is the user name, mapped from the configured claim.
	User string
	// Groups are the user's groups, deduplicated, extra groups included.
	Groups []string
	// Method is how the user signed in: "session", "bearer" or "local".
	Method string
	// Expiry is when the credential stops being valid.
	Expiry time.Time
	// EmailDomain is the lower-case domain of the user's verified email,
	// or "" when the credential has none; auth.allowed_email_domains is
	// checked against it.
	EmailDomain string
}

// Methods of signing in, as found in Identity.Method.
const (
	MethodSession = "session"
	MethodBearer  = "bearer"
	MethodLocal   = "local"
)

// maxNameLen bounds user and group names taken from tokens.
const maxNameLen = 256

// claimMapping says how token claims become a user and groups.
type claimMapping struct {
	UserClaim        string
	StripEmailDomain bool
	// StripOnly limits StripEmailDomain to these lower-case domains (the
	// allowed ones); empty strips every domain.
	StripOnly   []string
	GroupsClaim string
	ExtraGroups []string
}

// mapped is a user, groups and email domain taken from claims.
type mapped struct {
	user   string
	groups []string
	domain string // lower-case, of a verified email; "" when none
}

// emailUnverified reads an email_verified claim: true, or the string
// "true" (Amazon Cognito's userinfo sends strings), says verified; false,
// "false" or anything else does not. A provider that states nothing (no
// claim, or null) is taken at its word, as oauth2-proxy does.
func emailUnverified(v any) bool {
	switch v := v.(type) {
	case nil:
		return false
	case bool:
		return !v
	case string:
		return !strings.EqualFold(v, "true")
	}
	return true
}

// mapIdentity turns the claims of an ID token, access token or userinfo
// answer into a user and groups. It is pure so that every mapping rule is
// table-tested; an error means the claims name no usable user.
func mapIdentity(claims map[string]any, m claimMapping) (mapped, error) {
	raw, ok := claims[m.UserClaim]
	if !ok {
		return mapped{}, fmt.Errorf("claim %q missing", m.UserClaim)
	}
	user, ok := raw.(string)
	if !ok || user == "" {
		return mapped{}, fmt.Errorf("claim %q is not a non-empty string", m.UserClaim)
	}
	unverified := emailUnverified(claims["email_verified"])
	var domain string
	if m.UserClaim == "email" {
		if unverified {
			return mapped{}, errors.New("email is not verified")
		}
		local, d, ok := splitEmail(user)
		if !ok {
			return mapped{}, fmt.Errorf("claim %q is not an email address", m.UserClaim)
		}
		domain = asciiLower(d)
		// Only an allowed domain is stripped: with another one kept, two
		// people called alice in two domains never become one user.
		if m.StripEmailDomain && (len(m.StripOnly) == 0 || slices.Contains(m.StripOnly, domain)) {
			user = local
		}
	} else if email, ok := claims["email"].(string); ok && !unverified {
		if _, d, ok := splitEmail(email); ok {
			domain = asciiLower(d)
		}
	}
	if !cleanName(user) {
		return mapped{}, fmt.Errorf("claim %q has control characters or is too long", m.UserClaim)
	}
	if !cleanName(domain) {
		domain = ""
	}
	var groups []string

	seen := make(map[string]bool)
	add := func(g string) {
		if g != "" && cleanName(g) && !seen[g] {
			seen[g] = true
			groups = append(groups, g)
		}
	}
	switch v := lookupClaim(claims, m.GroupsClaim).(type) {
	case string:
		add(v)
	case []any:
		for _, e := range v {
			if s, ok := e.(string); ok {
				add(s)
			}
		}
	case []string:
		for _, s := range v {
			add(s)
		}
	}
	for _, g := range m.ExtraGroups {
		add(g)
	}
	return mapped{user: user, groups: groups, domain: domain}, nil
}

// asciiLower lower-cases the ASCII letters of s and nothing else. The
// allowed domains are ASCII (IDNs in their xn-- form), and an email domain
// is matched against them: strings.ToLower would fold U+0130 to "i" and
// the Kelvin sign to "k", making another (Unicode) domain one of them.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// splitEmail splits an address with exactly one "@": "a@b@c" has been used
// to pass domain checks.
func splitEmail(s string) (local, domain string, ok bool) {
	local, domain, found := strings.Cut(s, "@")
	if !found || local == "" || domain == "" || strings.Contains(domain, "@") {
		return "", "", false
	}
	return local, domain, true
}

// lookupClaim finds a claim by its exact name first (namespaced claims such
// as "https://example.com/groups" contain dots), then as a dotted path
// through nested objects.
func lookupClaim(claims map[string]any, name string) any {
	if name == "" {
		return nil
	}
	if v, ok := claims[name]; ok {
		return v
	}
	var cur any = claims
	for part := range strings.SplitSeq(name, ".") {
		obj, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		if cur, ok = obj[part]; !ok {
			return nil
		}
	}
	return cur
}

// hasClaim reports whether the claims hold the (possibly dotted) name.
func hasClaim(claims map[string]any, name string) bool {
	return lookupClaim(claims, name) != nil
}

// cleanName refuses names that could forge log lines or headers.
func cleanName(s string) bool {
	if len(s) > maxNameLen {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return false
		}
	}
	return true
}
