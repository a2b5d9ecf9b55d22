//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// BuildGateway runs `go build -o out ./cmd/sparkgate` in root.
func BuildGateway(ctx context.Context, root, out string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./cmd/sparkgate")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/sparkgate: %w\n%s", err, b)
	}
	return out, nil
}

// GatewayOptions is what the harness puts into the gateway's YAML config.
type GatewayOptions struct {
	Port        int      // listen port; 0 picks a free one
	LogGlobs    []string // discovery.logs[0].paths
	LogHost     string   // discovery.logs[0].host (default 127.0.0.1)
	HistoryURL  string   // discovery.history[0].url, "" for none
	HistoryACLs bool     // discovery.history[0].acls_enable
	// HistoryAdminGroups is discovery.history[0].admin_acls_groups.
	HistoryAdminGroups []string
	// Static is discovery.static: driver UI root URLs.
	Static []string
	// YARN is discovery.yarn[].url: ResourceManager web URLs. With no
	// LogGlobs, the logs source is left out.
	YARN []string
	// Auth is the auth section; nil means {mode: local}.
	Auth map[string]any
	// Policy is the policy section; nil leaves the defaults.
	Policy map[string]any
	// Proxy is the proxy section; nil means {kill: deny}.
	Proxy map[string]any
	// Env adds environment variables (e.g. SPARKGATE_OIDC_CLIENT_SECRET).
	Env []string
	// Discovery, when not nil, is the whole discovery section instead of
	// the one built from LogGlobs and HistoryURL (e.g. only a probe).
	Discovery map[string]any
	// PublicURL is public_url when the gateway is reached through
	// something else (a load balancer); "" means its own URL.
	PublicURL string
	// TLS makes the gateway serve HTTPS itself (tls.cert_file and
	// tls.key_file) with a certificate for 127.0.0.1 made for the test.
	TLS bool
	// LogFormat is log.format ("" leaves the default, console).
	LogFormat string
	// Masters is the top-level "masters:" section (standalone masters
	// served under /master/<name>/); nil for none.
	Masters []any
}

// Gateway is a running sparkgate.
type Gateway struct {
	Proc  *Proc
	Watch *LogWatch
	URL   string // public URL, http://127.0.0.1:<port>
	// MetricsURL is the Prometheus endpoint, http://127.0.0.1:<port>/metrics.
	MetricsURL string
	// LoginURL is the one-time login URL printed in mode local.
	LoginURL string
	// Transport trusts the gateway's test certificate (GatewayOptions.TLS);
	// nil for plain HTTP.
	Transport *http.Transport
}

var reLoginURL = regexp.MustCompile(`(https?://[^\s"']+/oauth2/token\?token=[0-9a-fA-F]+)`)

// StartGateway writes <dir>/sparkgate.yaml, starts bin with it and waits for
// /_/readyz; in mode local it also waits for the login URL on stderr.
func StartGateway(ctx context.Context, bin, dir string, opt GatewayOptions) (*Gateway, error) {
	port := opt.Port
	if port == 0 {
		p, err := FreePort()
		if err != nil {
			return nil, err
		}
		port = p
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	var tlsCfg map[string]any
	var tr *http.Transport
	if opt.TLS {
		certFile, keyFile, pool, err := writeTestCert(dir)
		if err != nil {
			return nil, err
		}
		tlsCfg = map[string]any{"cert_file": certFile, "key_file": keyFile}
		tr = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
		base = fmt.Sprintf("https://127.0.0.1:%d", port)
	}
	metricsPort, err := FreePort()
	if err != nil {
		return nil, err
	}
	host := opt.LogHost
	if host == "" {
		host = "127.0.0.1"
	}
	disc := map[string]any{
		"interval": "1s",
		"logs":     []any{map[string]any{"paths": opt.LogGlobs, "host": host}},
	}
	if opt.Discovery != nil {
		disc = opt.Discovery
	} else if opt.HistoryURL != "" {
		hs := map[string]any{"name": "local", "url": opt.HistoryURL, "acls_enable": opt.HistoryACLs}
		if len(opt.HistoryAdminGroups) > 0 {
			hs["admin_acls_groups"] = opt.HistoryAdminGroups
		}
		disc["history"] = []any{hs}
	}
	if len(opt.Static) > 0 {
		disc["static"] = opt.Static
	}
	if len(opt.YARN) > 0 {
		rms := make([]any, 0, len(opt.YARN))
		for _, u := range opt.YARN {
			rms = append(rms, map[string]any{"url": u})
		}
		disc["yarn"] = rms
		if len(opt.LogGlobs) == 0 {
			delete(disc, "logs")
		}
	}
	auth := opt.Auth
	if auth == nil {
		auth = map[string]any{"mode": "local"}
	}
	proxyCfg := opt.Proxy
	if proxyCfg == nil {
		proxyCfg = map[string]any{"kill": "deny"}
	}
	cfg := map[string]any{
		"listen":         fmt.Sprintf("127.0.0.1:%d", port),
		"metrics_listen": fmt.Sprintf("127.0.0.1:%d", metricsPort),
		"public_url":     base,
		"log":            map[string]any{"level": "debug"},
		"auth":           auth,
		"discovery":      disc,
		"proxy":          proxyCfg,
	}
	if opt.Policy != nil {
		cfg["policy"] = opt.Policy
	}
	if tlsCfg != nil {
		cfg["tls"] = tlsCfg
	}
	if opt.LogFormat != "" {
		cfg["log"] = map[string]any{"level": "debug", "format": opt.LogFormat}
	}
	if opt.PublicURL != "" {
		cfg["public_url"] = opt.PublicURL
	}
	if opt.Masters != nil {
		cfg["masters"] = opt.Masters
	}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("encoding gateway config: %w", err)
	}
	cfgPath := filepath.Join(dir, "sparkgate.yaml")
	if err := os.WriteFile(cfgPath, data, 0o600); err != nil {
		return nil, fmt.Errorf("writing %s: %w", cfgPath, err)
	}
	cmd := exec.Command(bin, "--config", cfgPath)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), opt.Env...)
	logPath := filepath.Join(dir, "sparkgate.log")
	p, err := StartProc("sparkgate", cmd, logPath)
	if err != nil {
		return nil, err
	}
	g := &Gateway{Proc: p, Watch: WatchLog(logPath), URL: base, MetricsURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort), Transport: tr}
	if err := waitHTTPWith(ctx, &http.Client{Timeout: 2 * time.Second, Transport: g.roundTripper()}, base+"/_/readyz", p.Exited); err != nil {
		g.Stop()
		return nil, fmt.Errorf("gateway: %w\n%s", err, g.Watch.Tail(40))
	}
	if mode, _ := auth["mode"].(string); mode == "local" {
		m, _, err := g.Watch.WaitFor(ctx, reLoginURL, p.Exited)
		if err != nil {
			g.Stop()
			return nil, fmt.Errorf("gateway login URL: %w", err)
		}
		g.LoginURL = m[1]
	}
	return g, nil
}

// LocalSession signs in with the one-time login URL and returns the cookie
// jar holding the session.
func (g *Gateway) LocalSession(ctx context.Context) (http.CookieJar, error) {
	jar, err := cookiejar.New(nil)
	if err != nil {
		return nil, fmt.Errorf("cookie jar: %w", err)
	}
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second, Transport: g.roundTripper()}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.LoginURL, nil)
	if err != nil {
		return nil, fmt.Errorf("login request: %w", err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("opening login URL: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("login URL answered %s", resp.Status)
	}
	return jar, nil
}

// GatewayApp is the part of Spark's ApplicationInfo the tests read.
type GatewayApp struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Attempts []struct {
		Completed bool   `json:"completed"`
		SparkUser string `json:"sparkUser"`
	} `json:"attempts"`
}

// Apps GETs the gateway's /api/v1/applications with client.
func (g *Gateway) Apps(ctx context.Context, client *http.Client) ([]GatewayApp, error) {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, g.URL+"/api/v1/applications", nil)
	if err != nil {
		return nil, fmt.Errorf("building request: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("listing apps: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("listing apps: %s", resp.Status)
	}
	var apps []GatewayApp
	if err := json.NewDecoder(resp.Body).Decode(&apps); err != nil {
		return nil, fmt.Errorf("decoding app list: %w", err)
	}
	return apps, nil
}

// WaitListed polls the app list every 50 ms until an app for which match
// returns true is in it, and returns its id and when it first was listed.
func (g *Gateway) WaitListed(ctx context.Context, client *http.Client, match func(id string) bool) (string, time.Time, error) {
	for {
		apps, err := g.Apps(ctx, client)
		if err == nil {
			for _, a := range apps {
				if match(a.ID) {
					return a.ID, time.Now(), nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return "", time.Time{}, fmt.Errorf("gateway never listed the app (last error: %s): %w", lastErr(err), ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Metric sums the samples of the Prometheus metric name whose labels
// include every one of match (e.g. `state="running"`), from the gateway's
// metrics listener.
func (g *Gateway) Metric(ctx context.Context, name string, match ...string) (float64, error) {
	a, err := Get(ctx, http.DefaultClient, g.MetricsURL, nil)
	if err != nil {
		return 0, err
	}
	if a.Status != http.StatusOK {
		return 0, fmt.Errorf("GET %s = %d", g.MetricsURL, a.Status)
	}
	sum := 0.0
	for line := range strings.SplitSeq(string(a.Body), "\n") {
		series, value, ok := strings.Cut(line, " ")
		if !ok || (series != name && !strings.HasPrefix(series, name+"{")) {
			continue
		}
		all := true
		for _, m := range match {
			all = all && strings.Contains(series, m)
		}
		if !all {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return 0, fmt.Errorf("metric line %q: %w", line, err)
		}
		sum += v
	}
	return sum, nil
}

// roundTripper is g.Transport, or nil (the default) for plain HTTP.
func (g *Gateway) roundTripper() http.RoundTripper {
	if g.Transport == nil {
		return nil
	}
	return g.Transport
}

// Stop ends the gateway.
func (g *Gateway) Stop() {
	_ = g.Proc.Stop(10 * time.Second)
	g.Watch.Close()
}
