package auth

import (
	"errors"
	"fmt"
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
	GroupsClaim      string
	ExtraGroups      []string
}

// mapIdentity turns the claims of an ID token, access token or userinfo
// answer into a user and groups. It is pure so that every mapping rule is
// table-tested; an error means the claims name no usable user.
func mapIdentity(claims map[string]any, m claimMapping) (user string, groups []string, err error) {
	raw, ok := claims[m.UserClaim]
	if !ok {
		return "", nil, fmt.Errorf("claim %q missing", m.UserClaim)
	}
	user, ok = raw.(string)
	if !ok || user == "" {
		return "", nil, fmt.Errorf("claim %q is not a non-empty string", m.UserClaim)
	}
	if m.UserClaim == "email" {
		if v, ok := claims["email_verified"].(bool); ok && !v {
			return "", nil, errors.New("email is not verified")
		}
		// One "@" exactly: "a@b@c" has been used to pass domain checks.
		local, domain, found := strings.Cut(user, "@")
		if !found || local == "" || domain == "" || strings.Contains(domain, "@") {
			return "", nil, fmt.Errorf("claim %q is not an email address", m.UserClaim)
		}
		if m.StripEmailDomain {
			user = local
		}
	}
	if !cleanName(user) {
		return "", nil, fmt.Errorf("claim %q has control characters or is too long", m.UserClaim)
	}

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
	return user, groups, nil
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
