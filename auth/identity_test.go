package auth

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMapIdentity(t *testing.T) {
	def := claimMapping{UserClaim: "preferred_username", GroupsClaim: "groups"}
	tests := []struct {
		name       string
		claims     map[string]any
		m          claimMapping
		wantUser   string
		wantGroups []string
		wantErr    bool
	}{
		{"preferred_username", map[string]any{"preferred_username": "alice", "groups": []any{"a", "b"}}, def, "alice", []string{"a", "b"}, false},
		{"sub", map[string]any{"sub": "123", "preferred_username": "alice"}, claimMapping{UserClaim: "sub", GroupsClaim: "groups"}, "123", nil, false},
		{"email kept", map[string]any{"email": "alice@example.com"}, claimMapping{UserClaim: "email"}, "alice@example.com", nil, false},
		{"email stripped", map[string]any{"email": "alice@example.com"}, claimMapping{UserClaim: "email", StripEmailDomain: true}, "alice", nil, false},
		{"email unverified", map[string]any{"email": "alice@example.com", "email_verified": false}, claimMapping{UserClaim: "email"}, "", nil, true},
		{"email unverified, as a string", map[string]any{"email": "alice@example.com", "email_verified": "false"}, claimMapping{UserClaim: "email", StripEmailDomain: true}, "", nil, true},
		{"email two @", map[string]any{"email": "alice@evil.example@example.com"}, claimMapping{UserClaim: "email", StripEmailDomain: true}, "", nil, true},
		{"email no domain", map[string]any{"email": "alice@"}, claimMapping{UserClaim: "email"}, "", nil, true},
		{"user missing", map[string]any{"sub": "1"}, def, "", nil, true},
		{"user not string", map[string]any{"preferred_username": 42}, def, "", nil, true},
		{"user empty", map[string]any{"preferred_username": ""}, def, "", nil, true},
		{"user control char", map[string]any{"preferred_username": "alice\nadmin"}, def, "", nil, true},
		{"groups string", map[string]any{"preferred_username": "a", "groups": "solo"}, def, "a", []string{"solo"}, false},
		{"groups mixed array", map[string]any{"preferred_username": "a", "groups": []any{"x", 1, nil, "y", ""}}, def, "a", []string{"x", "y"}, false},
		{"groups object ignored", map[string]any{"preferred_username": "a", "groups": map[string]any{"x": 1}}, def, "a", nil, false},
		{"nested groups", map[string]any{"preferred_username": "a", "realm_access": map[string]any{"roles": []any{"r1", "r2"}}},
			claimMapping{UserClaim: "preferred_username", GroupsClaim: "realm_access.roles"}, "a", []string{"r1", "r2"}, false},
		{"nested missing", map[string]any{"preferred_username": "a", "realm_access": "x"},
			claimMapping{UserClaim: "preferred_username", GroupsClaim: "realm_access.roles"}, "a", nil, false},
		{"namespaced claim with dots", map[string]any{"preferred_username": "a", "https://example.com/groups": []any{"ns"}},
			claimMapping{UserClaim: "preferred_username", GroupsClaim: "https://example.com/groups"}, "a", []string{"ns"}, false},
		{"extra groups and dedupe", map[string]any{"preferred_username": "a", "groups": []any{"x", "y", "x"}},
			claimMapping{UserClaim: "preferred_username", GroupsClaim: "groups", ExtraGroups: []string{"y", "all"}}, "a", []string{"x", "y", "all"}, false},
		{"only extra groups", map[string]any{"preferred_username": "a"},
			claimMapping{UserClaim: "preferred_username", GroupsClaim: "groups", ExtraGroups: []string{"all"}}, "a", []string{"all"}, false},
		{"strip an allowed domain", map[string]any{"email": "alice@Corp.example"},
			claimMapping{UserClaim: "email", StripEmailDomain: true, StripOnly: []string{"corp.example"}}, "alice", nil, false},
		{"keep another domain", map[string]any{"email": "alice@other.example"},
			claimMapping{UserClaim: "email", StripEmailDomain: true, StripOnly: []string{"corp.example"}}, "alice@other.example", nil, false},
		{"keep a look-alike domain", map[string]any{"email": "alice@corp.example.evil"},
			claimMapping{UserClaim: "email", StripEmailDomain: true, StripOnly: []string{"corp.example"}}, "alice@corp.example.evil", nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := mapIdentity(tc.claims, tc.m)
			user, groups := m.user, m.groups
			if (err != nil) != tc.wantErr {
				t.Fatalf("mapIdentity(%v) error = %v; want error %v", tc.claims, err, tc.wantErr)
			}
			if user != tc.wantUser {
				t.Errorf("mapIdentity(%v) user = %q; want %q", tc.claims, user, tc.wantUser)
			}
			if diff := cmp.Diff(tc.wantGroups, groups); diff != "" && !tc.wantErr {
				t.Errorf("mapIdentity(%v) groups (-want +got):\n%s", tc.claims, diff)
			}
		})
	}
}

// TestMapIdentityEmailDomain: the domain the sign-in gate judges comes
// from a verified email only, in lower case, whichever claim names the user.
func TestMapIdentityEmailDomain(t *testing.T) {
	pu := claimMapping{UserClaim: "preferred_username", GroupsClaim: "groups"}
	tests := []struct {
		name   string
		claims map[string]any
		m      claimMapping
		want   string
	}{
		{"from the email claim", map[string]any{"preferred_username": "a", "email": "a@Corp.Example", "email_verified": true}, pu, "corp.example"},
		{"verification not stated", map[string]any{"preferred_username": "a", "email": "a@corp.example"}, pu, "corp.example"},
		{"unverified email", map[string]any{"preferred_username": "a", "email": "a@corp.example", "email_verified": false}, pu, ""},
		{"unverified, as a string", map[string]any{"preferred_username": "a", "email": "a@corp.example", "email_verified": "false"}, pu, ""},
		{"verified, as a string", map[string]any{"preferred_username": "a", "email": "a@corp.example", "email_verified": "True"}, pu, "corp.example"},
		{"verification of another type", map[string]any{"preferred_username": "a", "email": "a@corp.example", "email_verified": float64(1)}, pu, ""},
		{"verification null", map[string]any{"preferred_username": "a", "email": "a@corp.example", "email_verified": nil}, pu, "corp.example"},
		{"two @", map[string]any{"preferred_username": "a", "email": "a@evil.example@corp.example"}, pu, ""},
		{"no email", map[string]any{"preferred_username": "a"}, pu, ""},
		{"email not a string", map[string]any{"preferred_username": "a", "email": []any{"a@corp.example"}}, pu, ""},
		{"user claim email, stripped", map[string]any{"email": "a@corp.example"}, claimMapping{UserClaim: "email", StripEmailDomain: true}, "corp.example"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := mapIdentity(tc.claims, tc.m)
			if err != nil {
				t.Fatalf("mapIdentity(%v) = %v", tc.claims, err)
			}
			if m.domain != tc.want {
				t.Errorf("mapIdentity(%v) domain = %q; want %q", tc.claims, m.domain, tc.want)
			}
		})
	}
}

// TestMapIdentityDomainFoldsASCIIOnly: an email domain is compared with the
// allowed ones in ASCII case only. strings.ToLower folds U+0130 (İ) to "i"
// and U+212A (Kelvin sign) to "k", so a verified address at "İcorp.example"
// (an IDN, another domain than icorp.example) was stripped to its local
// part and admitted as if it were at icorp.example: alice@İcorp.example
// became the user "alice" of the allowed domain.
func TestMapIdentityDomainFoldsASCIIOnly(t *testing.T) {
	for _, d := range []string{"\u0130corp.example", "\u212Acorp.example"} {
		allowed := "icorp.example"
		if d[0] == 0xe2 { // the Kelvin sign
			allowed = "kcorp.example"
		}
		m, err := mapIdentity(map[string]any{"email": "alice@" + d, "email_verified": true},
			claimMapping{UserClaim: "email", StripEmailDomain: true, StripOnly: []string{allowed}})
		if err != nil {
			t.Fatalf("mapIdentity(alice@%s) = %v", d, err)
		}
		if m.user == "alice" {
			t.Errorf("alice@%s was stripped to %q, the user of allowed domain %s", d, m.user, allowed)
		}
		g := newGate(Config{AllowedEmailDomains: []string{allowed}})
		if ok, _ := g.admits(Identity{User: m.user, EmailDomain: m.domain}); ok {
			t.Errorf("alice@%s (domain %q) admitted by auth.allowed_email_domains [%s]", d, m.domain, allowed)
		}
	}
	// Real ASCII case differences still fold.
	m, err := mapIdentity(map[string]any{"email": "alice@ICorp.Example", "email_verified": true},
		claimMapping{UserClaim: "email", StripEmailDomain: true, StripOnly: []string{"icorp.example"}})
	if err != nil || m.user != "alice" || m.domain != "icorp.example" {
		t.Errorf("alice@ICorp.Example = %+v, %v; want alice at icorp.example", m, err)
	}
}
