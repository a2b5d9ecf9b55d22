package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestExampleConfigsValidate keeps the documented examples in deploy/ working.
func TestExampleConfigsValidate(t *testing.T) {
	t.Setenv("SPARKGATE_OIDC_CLIENT_SECRET", "example-secret")
	t.Setenv("SPARKGATE_SESSION_KEYS", "c3BhcmtnYXRlLXRlc3Qta2V5LTMyLWJ5dGVzLWxvbmchIQ==")
	files, err := filepath.Glob("../../deploy/examples/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example configs found: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			c, err := loadConfig(f)
			if err != nil {
				t.Fatalf("loadConfig(%q): %v", f, err)
			}
			if errs := c.Validate(); len(errs) > 0 {
				t.Errorf("Validate(%q) = %v; want no errors", f, errs)
			}
		})
	}
}

// TestKubernetesConfigValidates keeps the configuration inside the
// Kubernetes manifest's ConfigMap working too.
func TestKubernetesConfigValidates(t *testing.T) {
	t.Setenv("SPARKGATE_OIDC_CLIENT_SECRET", "example-secret")
	t.Setenv("SPARKGATE_SESSION_KEYS", "c3BhcmtnYXRlLXRlc3Qta2V5LTMyLWJ5dGVzLWxvbmchIQ==")
	data, err := os.ReadFile("../../deploy/kubernetes/sparkgate.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	found := false
	for {
		var doc struct {
			Kind string            `yaml:"kind"`
			Data map[string]string `yaml:"data"`
		}
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("parsing the manifest: %v", err)
		}
		cfg, ok := doc.Data["sparkgate.yaml"]
		if doc.Kind != "ConfigMap" || !ok {
			continue
		}
		found = true
		path := filepath.Join(t.TempDir(), "sparkgate.yaml")
		if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := loadConfig(path)
		if err != nil {
			t.Fatalf("loadConfig(ConfigMap sparkgate.yaml): %v", err)
		}
		if errs := c.Validate(); len(errs) > 0 {
			t.Errorf("Validate(ConfigMap sparkgate.yaml) = %v; want no errors", errs)
		}
	}
	if !found {
		t.Fatal("the manifest has no ConfigMap with sparkgate.yaml")
	}
}

// TestValidateReportsEveryProblem checks that one run names every bad key.
func TestValidateReportsEveryProblem(t *testing.T) {
	t.Setenv("SPARKGATE_OIDC_CLIENT_SECRET", "")
	t.Setenv("SPARKGATE_SESSION_KEYS", "")
	path := filepath.Join(t.TempDir(), "bad.yaml")
	bad := `listen: nope
metrics_listen: nowhere
log: {format: xml, level: loud}
auth: {mode: oidc}
proxy: {kill: maybe}
policy: {when_acls_off: sometimes}
discovery:
  probe: [{hosts: [127.0.0.1], ports: "40x0"}]
  history: [{name: History, url: "ftp://x"}]
`
	if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := loadConfig(path)
	if err != nil {
		t.Fatalf("loadConfig: %v", err)
	}
	msg := configErrors(c.Validate()).Error()
	for _, key := range []string{"listen:", "metrics_listen:", "log.format:", "log.level:", "auth.oidc.issuer:", "proxy.kill:",
		"policy.when_acls_off:", "discovery.probe[0].ports:", "discovery.history[0].name:", "discovery.history[0].url:"} {
		if !strings.Contains(msg, key) {
			t.Errorf("Validate() output lacks %q:\n%s", key, msg)
		}
	}
}

// TestDebugPprofNeedsMetricsListen: the profiles have no listener of
// their own, so asking for them without metrics_listen is an error that
// names the key rather than a setting silently ignored.
func TestDebugPprofNeedsMetricsListen(t *testing.T) {
	c := Config{DebugPprof: true}
	c.SetDefaults()
	msg := configErrors(c.Validate()).Error()
	if !strings.Contains(msg, "debug_pprof:") {
		t.Errorf("Validate(debug_pprof without metrics_listen) = %q; want an error naming debug_pprof", msg)
	}
	c.MetricsListen = "127.0.0.1:9464"
	for _, err := range c.Validate() {
		if strings.Contains(err.Error(), "debug_pprof") {
			t.Errorf("Validate(debug_pprof with metrics_listen) = %v", err)
		}
	}
}

// TestUnknownKeyIsAnError guards against typos silently falling back to defaults.
func TestUnknownKeyIsAnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "typo.yaml")
	if err := os.WriteFile(path, []byte("listen: 127.0.0.1:1\nproxy: {kil: deny}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := loadConfig(path)
	if err == nil || !strings.Contains(err.Error(), "kil") {
		t.Fatalf("loadConfig(typo) = %v; want an error naming the unknown key", err)
	}
}

// TestNoConfigIsSafeLocalMode: without a file the gateway listens on loopback
// and uses the local (token) sign-in.
func TestNoConfigIsSafeLocalMode(t *testing.T) {
	c, err := loadConfig("")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(c.Listen, "127.0.0.1:") {
		t.Errorf("default listen = %q; want loopback", c.Listen)
	}
	if c.Auth.Mode != "local" {
		t.Errorf("default auth.mode = %q; want local", c.Auth.Mode)
	}
	if len(c.Discovery.Probe) == 0 || len(c.Discovery.History) == 0 {
		t.Errorf("default discovery = %+v; want a port probe and a local History Server", c.Discovery)
	}
	if errs := c.Validate(); len(errs) > 0 {
		t.Errorf("default config invalid: %v", errs)
	}
}

// TestLocalModeStaysOnLoopback: -check-config refuses local mode on an
// address that is not loopback unless auth.local.allow_remote is set.
func TestLocalModeStaysOnLoopback(t *testing.T) {
	write := configFiles(t)
	remote := write("remote.yaml", "listen: 0.0.0.0:8080\n")
	allowed := write("allowed.yaml", "listen: 0.0.0.0:8080\nauth: {local: {allow_remote: true}}\n")
	tests := []struct {
		name string
		args []string
		ok   bool
	}{
		{"no config", []string{"-check-config"}, true},
		{"loopback override", []string{"-check-config", "-listen", "127.0.0.2:8080"}, true},
		{"localhost", []string{"-check-config", "-listen", "localhost:8080"}, true},
		{"IPv6 loopback", []string{"-check-config", "-listen", "[::1]:8080"}, true},
		{"every interface", []string{"-check-config", "-listen", ":8080"}, false},
		{"a LAN address", []string{"-check-config", "-listen", "192.0.2.10:8080"}, false},
		{"file on 0.0.0.0", []string{"-check-config", "-config", remote}, false},
		{"file on 0.0.0.0 with allow_remote", []string{"-check-config", "-config", allowed}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := mainErr(tc.args)
			if tc.ok {
				if err != nil {
					t.Errorf("mainErr(%q) = %v; want config ok", tc.args, err)
				}
				return
			}
			var ce configErrors
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), "auth.local.allow_remote: local mode on listen") {
				t.Errorf("mainErr(%q) = %v; want a configuration error naming auth.local.allow_remote", tc.args, err)
			}
		})
	}
}

// configFiles returns a function that writes a config file into a
// temporary directory and returns its path.
func configFiles(t *testing.T) func(name, body string) string {
	t.Helper()
	dir := t.TempDir()
	return func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
}
