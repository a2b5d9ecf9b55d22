package auth

import (
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

func TestStoreConfig(t *testing.T) {
	t.Setenv(EnvRedisPassword, "from-env")
	var c Config
	if err := yaml.Unmarshal([]byte("session:\n  store: redis\n  redis:\n    addr: redis.internal:6379\n    db: 2\n"), &c); err != nil {
		t.Fatal(err)
	}
	c.SetDefaults()
	r := c.Session.Redis
	if c.Session.Store != StoreRedis || r.Addr != "redis.internal:6379" || r.DB != 2 || r.Password != "from-env" ||
		r.KeyPrefix != "sparkgate:" || r.DialTimeout != time.Second || r.Timeout != 250*time.Millisecond {
		t.Errorf("SetDefaults: store %q, redis %+v; want redis with the defaults and the password from the environment", c.Session.Store, r)
	}
	if errs := c.Validate(); len(errs) != 0 {
		t.Errorf("Validate = %v; want none", errs)
	}

	var d Config
	d.SetDefaults()
	if d.Session.Store != StoreMemory {
		t.Errorf("default store = %q; want memory", d.Session.Store)
	}

	for _, tt := range []struct {
		yaml, want string
	}{
		{"session:\n  store: etcd\n", `auth.session.store: "etcd" is not one of memory, redis`},
		{"session:\n  store: redis\n", "auth.session.redis.addr: required"},
		{"session:\n  store: redis\n  redis:\n    addr: nohost\n", `auth.session.redis.addr: "nohost" is not host:port`},
		{"session:\n  store: redis\n  redis:\n    addr: h:1\n    timeout: -1s\n", "auth.session.redis.timeout: must be positive"},
	} {
		var c Config
		if err := yaml.Unmarshal([]byte(tt.yaml), &c); err != nil {
			t.Fatal(err)
		}
		c.SetDefaults()
		var msgs []string
		for _, err := range c.Validate() {
			msgs = append(msgs, err.Error())
		}
		if !strings.Contains(strings.Join(msgs, "\n"), tt.want) {
			t.Errorf("Validate(%q) = %q; want %q", tt.yaml, msgs, tt.want)
		}
	}
}
