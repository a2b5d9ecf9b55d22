package proxy

import (
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

func TestConfigYAMLDefaults(t *testing.T) {
	var doc struct {
		Proxy Config `yaml:"proxy"`
	}
	doc.Proxy = DefaultConfig() // keys left out keep their defaults
	if err := yaml.Unmarshal([]byte("proxy:\n  kill: modify-acl\n  dial_timeout: 2s\n  max_requests_per_driver: 64\n"), &doc); err != nil {
		t.Fatal(err)
	}
	c := doc.Proxy
	c.SetDefaults()
	want := Config{Kill: KillModifyACL, AllowThreadDump: true, Compress: true, DialTimeout: 2 * time.Second, ResponseHeaderTimeout: 60 * time.Second, IdleConnTimeout: 5 * time.Second, MaxRequestsPerDriver: 64}
	if c != want {
		t.Errorf("decoded config = %+v; want %+v", c, want)
	}
	if errs := c.Validate(); len(errs) != 0 {
		t.Errorf("Validate() = %v; want none", errs)
	}
}

func TestConfigValidate(t *testing.T) {
	c := Config{Kill: "allow", DialTimeout: -time.Second, ResponseHeaderTimeout: time.Second, IdleConnTimeout: time.Second, MaxRequestsPerDriver: -1}
	errs := c.Validate()
	if len(errs) != 3 {
		t.Fatalf("Validate() = %v; want 3 errors", errs)
	}
	for i, prefix := range []string{"proxy.kill: ", "proxy.dial_timeout: ", "proxy.max_requests_per_driver: "} {
		if !strings.HasPrefix(errs[i].Error(), prefix) {
			t.Errorf("Validate()[%d] = %q; want prefix %q", i, errs[i], prefix)
		}
	}
	if _, err := New(Options{Config: c}); err == nil {
		t.Error("New with an invalid config succeeded")
	}
}
