package proxy

import (
	"fmt"
	"net/url"
)

// MasterConfig is one standalone master under the config's "masters:".
type MasterConfig struct {
	// Name is the master's path segment, /master/<name>/. Required;
	// ^[a-z0-9][a-z0-9-]{0,30}$.
	Name string `yaml:"name"`
	// URL is the master's web UI root, http(s)://host:port. Required.
	URL string `yaml:"url"`
	// Everyone lets every signed-in user see the master's pages. Default
	// false: gateway admins only (the pages list every app and its owner).
	Everyone bool `yaml:"everyone"`
}

// ValidateMasters reports every problem of the config's "masters:", each
// naming its key.
func ValidateMasters(ms []MasterConfig) []error {
	var errs []error
	seen := map[string]bool{}
	for i, m := range ms {
		key := fmt.Sprintf("masters[%d]", i)
		if !ValidServerName(m.Name) {
			errs = append(errs, fmt.Errorf("%s.name: %q must match ^[a-z0-9][a-z0-9-]{0,30}$", key, m.Name))
		} else if seen[m.Name] {
			errs = append(errs, fmt.Errorf("%s.name: %q is used twice", key, m.Name))
		}
		seen[m.Name] = true
		u, err := url.Parse(m.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") ||
			u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			errs = append(errs, fmt.Errorf("%s.url: %q must be http(s)://host[:port]", key, m.URL))
		}
	}
	return errs
}
