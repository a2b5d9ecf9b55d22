package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sparkgate/sparkgate/auth"
	"github.com/sparkgate/sparkgate/policy"
	"github.com/sparkgate/sparkgate/proxy"
	"github.com/sparkgate/sparkgate/proxy/diagnosis"
	"github.com/sparkgate/sparkgate/proxy/discovery"
)

// Config is the whole gateway configuration: one YAML file, with secrets
// taken from the environment (see auth.Config). Defaults live in SetDefaults.
type Config struct {
	// Listen is the address the gateway serves on. Default "127.0.0.1:8080":
	// loopback, so that a gateway started without a config exposes nothing.
	Listen string `yaml:"listen"`
	// PublicURL is the URL users reach the gateway at; it builds the OIDC
	// redirect URL and decides whether cookies are Secure. Default
	// "http://<listen>" (or https when TLS is set).
	PublicURL string `yaml:"public_url"`
	// MetricsListen, when set, serves Prometheus metrics at /metrics on
	// this address (host:port), apart from the gateway's own listener so
	// that scrapers need no sign-in and users cannot reach it. Default
	// "": no metrics.
	MetricsListen string `yaml:"metrics_listen"`
	// DebugPprof, when true, also serves Go's runtime profiles (heap,
	// goroutines, CPU, allocations, execution trace) at /debug/pprof/ on
	// metrics_listen, for diagnosing memory and CPU in place. They show
	// code paths and sizes, no request data, but a CPU profile or trace
	// costs the gateway while it runs: keep the metrics listener private.
	// Default false.
	DebugPprof bool `yaml:"debug_pprof"`
	// TLS, when both files are set, makes the gateway serve HTTPS itself.
	TLS TLSConfig `yaml:"tls"`
	// Log selects the log format and level.
	Log LogConfig `yaml:"log"`

	Auth      auth.Config      `yaml:"auth"`
	Policy    policy.Config    `yaml:"policy"`
	Proxy     proxy.Config     `yaml:"proxy"`
	Discovery discovery.Config `yaml:"discovery"`
	// Diagnosis holds the thresholds and limits of app diagnoses
	// (/app/<id>/_/diagnosis); see proxy/diagnosis/thresholds.go.
	Diagnosis diagnosis.Config `yaml:"diagnosis"`
	// Masters are standalone masters whose web UI is served under
	// /master/<name>/ and whose workers' executor logs are served under
	// /app/<id>/_/logs/ (discovery.standalone masters' workers are served
	// too). Default none.
	Masters []proxy.MasterConfig `yaml:"masters"`
}

// TLSConfig names a certificate and key in PEM files.
type TLSConfig struct {
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
}

// LogConfig selects zap's encoder and level.
type LogConfig struct {
	// Format is "console" (default, for people) or "json" (for collectors).
	Format string `yaml:"format"`
	// Level is debug, info (default), warn or error.
	Level string `yaml:"level"`
}

// defaultConfig is what sparkgate runs with when no file is given: the safe
// local mode (loopback, one-time login token, this machine's drivers).
func defaultConfig() Config {
	c := Config{Discovery: discovery.LocalDefaults()}
	c.SetDefaults()
	return c
}

// SetDefaults fills every unset field with its documented default.
func (c *Config) SetDefaults() {
	if c.Listen == "" {
		c.Listen = "127.0.0.1:8080"
	}
	if c.PublicURL == "" {
		scheme := "http"
		if c.TLS.CertFile != "" {
			scheme = "https"
		}
		c.PublicURL = scheme + "://" + c.Listen
	}
	c.PublicURL = strings.TrimSuffix(c.PublicURL, "/")
	if c.Log.Format == "" {
		c.Log.Format = "console"
	}
	if c.Log.Level == "" {
		c.Log.Level = "info"
	}
	c.Auth.SetDefaults()
	c.Policy.SetDefaults()
	c.Proxy.SetDefaults()
	c.Discovery.SetDefaults()
	c.Diagnosis.SetDefaults()
}

// Validate reports every problem at once; each error names its key.
func (c *Config) Validate() []error {
	var errs []error
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		errs = append(errs, fmt.Errorf("listen: %q is not host:port", c.Listen))
	}
	if c.MetricsListen != "" {
		if _, _, err := net.SplitHostPort(c.MetricsListen); err != nil {
			errs = append(errs, fmt.Errorf("metrics_listen: %q is not host:port", c.MetricsListen))
		} else if c.MetricsListen == c.Listen {
			errs = append(errs, fmt.Errorf("metrics_listen: %q is the gateway's own listen address; metrics need one of their own", c.MetricsListen))
		}
	} else if c.DebugPprof {
		errs = append(errs, errors.New("debug_pprof: the profiles are served on metrics_listen, which is not set"))
	}
	if u, err := url.Parse(c.PublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("public_url: %q is not an http(s) URL", redactURL(c.PublicURL)))
	} else if u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		// The redirect URL and app hosts' origins are built by appending to
		// it, and it is logged at start.
		errs = append(errs, fmt.Errorf("public_url: %q must be scheme://host[:port], without credentials, query or fragment", u.Redacted()))
	} else if u.Path != "" {
		errs = append(errs, fmt.Errorf("public_url: %q: serving under a path prefix is not supported; use a host of its own", c.PublicURL))
	} else {
		host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
		if d := c.Proxy.AppDomain; d != "" && strings.HasSuffix(host, "."+d) {
			// proxy.Server.appHostID would take the main origin for an
			// app's host: no index or sign-in there, and the main
			// origin's cookies within the app hosts' domain.
			errs = append(errs, fmt.Errorf("proxy.app_domain: %q covers public_url's host %q; the gateway's own host must not be under the app domain (e.g. public_url https://spark.example.com, app_domain apps.example.com)", d, host))
		}
		if cs := c.Auth.Session.CookieSecure; cs != nil && !*cs && u.Scheme == "https" {
			errs = append(errs, errors.New("auth.session.cookie_secure: false with an https public_url would send the session cookie (with its refresh and ID tokens) over plain http and drop its __Host- prefix; remove the key"))
		}
	}
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		errs = append(errs, errors.New("tls: cert_file and key_file must be set together"))
	}
	switch c.Log.Format {
	case "console", "json":
	default:
		errs = append(errs, fmt.Errorf("log.format: %q is not console or json", c.Log.Format))
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("log.level: %q is not debug, info, warn or error", c.Log.Level))
	}
	errs = append(errs, c.Auth.Validate()...)
	if c.Auth.Mode == auth.ModeLocal && !c.Auth.Local.AllowRemote && !isLoopback(c.Listen) {
		errs = append(errs, fmt.Errorf("auth.local.allow_remote: local mode on listen %q, which is not loopback: whoever opens the printed login URL first is signed in; listen on 127.0.0.1, use auth.mode oidc, or set auth.local.allow_remote: true", c.Listen))
	}
	errs = append(errs, c.Policy.Validate()...)
	errs = append(errs, c.Proxy.Validate()...)
	errs = append(errs, c.Discovery.Validate()...)
	errs = append(errs, c.Diagnosis.Validate()...)
	errs = append(errs, proxy.ValidateMasters(c.Masters)...)
	return errs
}

// isLoopback reports whether a listen address (host:port) serves on
// loopback only; an empty host serves on every interface.
func isLoopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return true // reported as a listen problem instead
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// loadConfig reads path (or returns the local default when path is empty),
// refusing unknown keys so that a typo is an error, not a silent default.
func loadConfig(path string) (Config, error) {
	if path == "" {
		return defaultConfig(), nil
	}
	data, err := os.ReadFile(path) //nolint:gosec // path is the operator's own -config flag
	if err != nil {
		return Config{}, fmt.Errorf("reading config: %w", err)
	}
	// Decoding over the defaults keeps those that a zero value cannot
	// express (proxy.allow_thread_dump defaults to true).
	c := Config{Proxy: proxy.DefaultConfig()}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return Config{}, fmt.Errorf("parsing %s: %w", path, err)
	}
	// A second document ("---") would be ignored, and whatever it sets
	// (a sign-in gate, say) silently left at its default.
	for {
		var more yaml.Node
		err := dec.Decode(&more)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Config{}, fmt.Errorf("parsing %s: %w", path, err)
		}
		if len(more.Content) > 0 && more.Content[0].Kind != 0 && !(more.Content[0].Kind == yaml.ScalarNode && more.Content[0].Tag == "!!null") {
			return Config{}, fmt.Errorf("parsing %s: line %d: a second YAML document (after ---); the whole configuration is one document", path, more.Line)
		}
	}
	c.SetDefaults()
	return c, nil
}

// redactURL hides the password of a URL that may not parse.
func redactURL(s string) string {
	if u, err := url.Parse(s); err == nil {
		return u.Redacted()
	}
	return s
}
