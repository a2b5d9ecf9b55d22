package proxy

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Kill modes.
const (
	// KillDeny refuses every kill request and removes the kill links.
	KillDeny = "deny"
	// KillModifyACL shows the gateway's own confirmation page for the
	// driver's job and stage kill links and sends the kill only if the
	// Authorizer grants Modify (Spark's spark.modify.acls).
	KillModifyACL = "modify-acl"
)

// Config is the proxy part of the configuration, under the top-level key
// "proxy:". Decode YAML over DefaultConfig (so that keys left out keep their
// defaults), then call SetDefaults and Validate.
type Config struct {
	// Kill is "deny" (default): no kill through the gateway, or
	// "modify-acl": kill links lead to a confirmation page and the kill is
	// sent only for users with modify permission.
	Kill string `yaml:"kill"`
	// AllowHeapHistogram lets executor heap histograms through. Default
	// false: a histogram runs "jmap -histo:live", which forces a full GC on
	// the executor.
	AllowHeapHistogram bool `yaml:"allow_heap_histogram"`
	// AllowThreadDump lets executor and task thread dumps through. Default
	// true, as Spark's spark.ui.threadDumpsEnabled.
	AllowThreadDump bool `yaml:"allow_thread_dump"`
	// RevealDenied answers a user who may not view an app with 403 and the
	// reasons (who owns it, which lists would let them in), as Spark's own
	// UI does. Default false: such a user gets the same 404 as for an app
	// that does not exist, so that app ids, and whether they run, are
	// learnt by no one who may not view them; the reasons go to the audit
	// log. A user who may view an app but not modify it is always told why
	// a kill is refused.
	RevealDenied bool `yaml:"reveal_denied"`
	// Compress compresses answers for clients that accept zstd or gzip, as
	// Spark's own UI does. Default true; turn it off where a load balancer
	// in front compresses already.
	Compress bool `yaml:"compress"`
	// DialTimeout bounds connecting to a driver or History Server. Default
	// 5s: upstreams are on the same network, and a driver that has exited
	// must fall back to history quickly rather than hold the user's page.
	DialTimeout time.Duration `yaml:"dial_timeout"`
	// ResponseHeaderTimeout bounds the wait for an upstream's response
	// headers. Default 60s: a History Server replays the whole event log
	// of an app on its first view, which takes long for big apps, but a
	// hung driver must still end in a 502 rather than a spinning tab.
	ResponseHeaderTimeout time.Duration `yaml:"response_header_timeout"`
	// IdleConnTimeout closes idle upstream connections. Default 5s: Spark
	// 4 closes idle connections after 8s (SPARK-45248); closing ours first
	// avoids sending a request on a connection the driver is closing.
	IdleConnTimeout time.Duration `yaml:"idle_conn_timeout"`
	// MaxRequestsPerDriver bounds the page and REST requests this
	// gateway proxies to one driver that wait for an answer, from
	// connecting until the answer's headers arrive; more wait up to
	// DialTimeout for one to be answered, then get a 503. Default 256, a
	// little above the 200 threads of the Jetty pool a driver's UI runs
	// on, so that the gateway never keeps a driver from using all of
	// them; a driver that hangs before answering, by accident or on
	// purpose, holds no more of these requests' connections than this
	// while every browser showing it keeps asking. Answers being sent
	// hold nothing (a slow reader locks no one out); History Servers and
	// masters are not bounded, nor the gateway's own calls (executor
	// logs, kill, diagnosis), which have bounds of their own.
	MaxRequestsPerDriver int `yaml:"max_requests_per_driver"`
	// AppDomain, when set ("apps.example.com"), serves each app on a host
	// of its own, <app-id>.<app_domain> (wildcard DNS and certificate), so
	// that one driver's page cannot script another app or the gateway's
	// pages. Default "": every app under /app/<id>/ on the main origin.
	AppDomain string `yaml:"app_domain"`
}

// DefaultConfig returns the configuration with every default applied.
func DefaultConfig() Config {
	c := Config{AllowThreadDump: true, Compress: true}
	c.SetDefaults()
	return c
}

// SetDefaults fills zero fields. The defaults of AllowThreadDump and
// Compress (true) cannot be told from false here: decode YAML over
// DefaultConfig to keep them.
func (c *Config) SetDefaults() {
	if c.Kill == "" {
		c.Kill = KillDeny
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = 5 * time.Second
	}
	if c.ResponseHeaderTimeout == 0 {
		c.ResponseHeaderTimeout = 60 * time.Second
	}
	if c.IdleConnTimeout == 0 {
		c.IdleConnTimeout = 5 * time.Second
	}
	if c.MaxRequestsPerDriver == 0 {
		c.MaxRequestsPerDriver = 256
	}
}

// Validate reports every problem at once, each naming its key.
func (c *Config) Validate() []error {
	var errs []error
	if c.Kill != KillDeny && c.Kill != KillModifyACL {
		errs = append(errs, fmt.Errorf("proxy.kill: must be %q or %q, got %q", KillDeny, KillModifyACL, c.Kill))
	}
	for _, d := range []struct {
		key string
		v   time.Duration
	}{
		{"proxy.dial_timeout", c.DialTimeout},
		{"proxy.response_header_timeout", c.ResponseHeaderTimeout},
		{"proxy.idle_conn_timeout", c.IdleConnTimeout},
	} {
		if d.v <= 0 {
			errs = append(errs, fmt.Errorf("%s: must be positive, got %v", d.key, d.v))
		}
	}
	if c.MaxRequestsPerDriver < 1 || c.MaxRequestsPerDriver > 10000 {
		errs = append(errs, fmt.Errorf("proxy.max_requests_per_driver: must be from 1 to 10000, got %d", c.MaxRequestsPerDriver))
	}
	if c.AppDomain != "" && !validAppDomain(c.AppDomain) {
		errs = append(errs, fmt.Errorf("proxy.app_domain: %q must be a lower-case DNS name with a dot, without scheme or port", c.AppDomain))
	}
	return errs
}

// validAppDomain accepts lower-case DNS names of two labels or more.
func validAppDomain(d string) bool {
	labels := strings.Split(d, ".")
	if len(labels) < 2 || len(d) > 200 {
		return false
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for i := 0; i < len(l); i++ {
			if c := l[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

var errNoRegistry = errors.New("proxy: Options.Registry is nil")
