package policy

import (
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	var c Config
	c.SetDefaults()
	if c.WhenACLsOff != ModeOpen || c.CacheSize != DefaultCacheSize || c.CacheTTL != DefaultCacheTTL {
		t.Errorf("SetDefaults() = %+v; want open, %d, %v", c, DefaultCacheSize, DefaultCacheTTL)
	}
	if errs := c.Validate(); len(errs) != 0 {
		t.Errorf("Validate() of defaults = %v; want none", errs)
	}
	kept := Config{WhenACLsOff: ModeOwnerAndAdmins, CacheSize: 5, CacheTTL: time.Second}
	kept.SetDefaults()
	if kept.WhenACLsOff != ModeOwnerAndAdmins || kept.CacheSize != 5 || kept.CacheTTL != time.Second {
		t.Errorf("SetDefaults() overwrote set fields: %+v", kept)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	c := Config{
		Admins:      []string{"ok", "", " padded", "*"},
		AdminGroups: []string{"*"},
		WhenACLsOff: "closed",
		CacheSize:   -1,
		CacheTTL:    -time.Second,
	}
	errs := c.Validate()
	wantPrefixes := []string{
		"policy.admins[1]: ", "policy.admins[2]: ", "policy.admins[3]: ",
		"policy.admin_groups[0]: ", "policy.when_acls_off: ", "policy.cache_size: ", "policy.cache_ttl: ",
	}
	if len(errs) != len(wantPrefixes) {
		t.Fatalf("Validate() = %v; want %d errors", errs, len(wantPrefixes))
	}
	for i, p := range wantPrefixes {
		if !strings.HasPrefix(errs[i].Error(), p) {
			t.Errorf("Validate()[%d] = %q; want prefix %q", i, errs[i], p)
		}
	}
}

func TestConfigYAML(t *testing.T) {
	t.Parallel()
	const doc = `
admins: [root]
admin_groups: [sre, ops]
when_acls_off: owner-and-admins
cache_size: 50
cache_ttl: 30s
`
	var c Config
	if err := yaml.Unmarshal([]byte(doc), &c); err != nil {
		t.Fatalf("yaml.Unmarshal: %v", err)
	}
	want := Config{Admins: []string{"root"}, AdminGroups: []string{"sre", "ops"}, WhenACLsOff: ModeOwnerAndAdmins, CacheSize: 50, CacheTTL: 30 * time.Second}
	if c.WhenACLsOff != want.WhenACLsOff || c.CacheSize != want.CacheSize || c.CacheTTL != want.CacheTTL ||
		strings.Join(c.Admins, ",") != "root" || strings.Join(c.AdminGroups, ",") != "sre,ops" {
		t.Errorf("yaml.Unmarshal(%q) = %+v; want %+v", doc, c, want)
	}
}

// TestNewUnknownModeFailsClosed: an unvalidated, unknown mode must not open
// apps that run with ACLs off.
func TestNewUnknownModeFailsClosed(t *testing.T) {
	t.Parallel()
	acl := FromSparkProperties(map[string]string{}, "alice")
	if d := New(Config{WhenACLsOff: "bogus"}).Decide(Subject{User: "eve"}, acl, View); d.Allow {
		t.Errorf("Decide with mode %q = allow (%q); want deny", "bogus", d.Reasons)
	}
	if d := New(Config{}).Decide(Subject{User: "eve"}, acl, View); !d.Allow {
		t.Errorf("Decide with empty mode = deny (%q); want allow (open is the default)", d.Reasons)
	}
}
