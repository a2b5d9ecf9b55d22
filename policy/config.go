package policy

import (
	"fmt"
	"time"
)

// Mode says what the gateway does for an app that runs with ACLs off.
type Mode string

const (
	// ModeOpen does what Spark does: with ACLs off every signed-in user may
	// view (and, on a live driver, modify) the app.
	ModeOpen Mode = "open"
	// ModeOwnerAndAdmins lets in only the app's owner, its admins
	// (spark.admin.acls and .groups, plus the History Server's admin acls
	// for finished apps) and the gateway admins.
	ModeOwnerAndAdmins Mode = "owner-and-admins"
)

// Defaults for Config.
const (
	DefaultCacheSize = 10000
	DefaultCacheTTL  = time.Minute
)

// Config is the policy section of the gateway configuration (key "policy").
type Config struct {
	// Admins are user names allowed to view and modify every app, whatever
	// its ACLs say. Default: none. "*" is refused.
	Admins []string `yaml:"admins"`
	// AdminGroups are groups whose members are gateway admins. Default:
	// none. "*" is refused.
	AdminGroups []string `yaml:"admin_groups"`
	// WhenACLsOff is "open" (Spark's own behaviour: everyone signed in) or
	// "owner-and-admins". Default: "open".
	WhenACLsOff Mode `yaml:"when_acls_off"`
	// CacheSize bounds each of the two decision caches, in entries.
	// Default: 10000.
	CacheSize int `yaml:"cache_size"`
	// CacheTTL is how long a cached ACL or decision is reused, as a Go
	// duration ("1m", "30s"). Default: 1m. It bounds how long a changed
	// History Server rule takes to apply; changed app properties apply at
	// once because they change the cache key.
	CacheTTL time.Duration `yaml:"cache_ttl"`
}

// SetDefaults fills in every unset field with its default.
func (c *Config) SetDefaults() {
	if c.WhenACLsOff == "" {
		c.WhenACLsOff = ModeOpen
	}
	if c.CacheSize == 0 {
		c.CacheSize = DefaultCacheSize
	}
	if c.CacheTTL == 0 {
		c.CacheTTL = DefaultCacheTTL
	}
}

// Validate reports every problem in c at once; each error names its full
// config key. It does not change c.
func (c *Config) Validate() []error {
	var errs []error
	check := func(key string, list []string) {
		for i, s := range list {
			switch {
			case s == "":
				errs = append(errs, fmt.Errorf("policy.%s[%d]: empty name", key, i))
			case javaTrim(s) != s:
				errs = append(errs, fmt.Errorf("policy.%s[%d]: %q has leading or trailing whitespace", key, i, s))
			case s == wildcard:
				errs = append(errs, fmt.Errorf("policy.%s[%d]: \"*\" would make everyone a gateway admin", key, i))
			}
		}
	}
	check("admins", c.Admins)
	check("admin_groups", c.AdminGroups)
	switch c.WhenACLsOff {
	case "", ModeOpen, ModeOwnerAndAdmins:
	default:
		errs = append(errs, fmt.Errorf("policy.when_acls_off: %q is not %q or %q", c.WhenACLsOff, ModeOpen, ModeOwnerAndAdmins))
	}
	if c.CacheSize < 0 {
		errs = append(errs, fmt.Errorf("policy.cache_size: %d is negative", c.CacheSize))
	}
	if c.CacheTTL < 0 {
		errs = append(errs, fmt.Errorf("policy.cache_ttl: %v is negative", c.CacheTTL))
	}
	return errs
}
