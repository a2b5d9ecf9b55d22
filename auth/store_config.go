package auth

import (
	"fmt"
	"net"
	"os"
	"strings"
	"time"
)

// EnvRedisPassword holds auth.session.redis.password when the file omits it.
const EnvRedisPassword = "SPARKGATE_REDIS_PASSWORD" //nolint:gosec // the name of an environment variable, not a credential

// Session stores.
const (
	// StoreMemory keeps revocations in each replica's memory (default).
	StoreMemory = "memory"
	// StoreRedis shares revocations and refresh-token rotation between
	// replicas through Redis.
	StoreRedis = "redis"
)

// StoreConfig chooses where replicas keep what they must agree on: the IDs
// of sessions signed out of, and who is renewing a session right now.
type StoreConfig struct {
	// Store is "memory" (default: each replica remembers its own
	// sign-outs) or "redis" (every replica refuses a session signed out of
	// on any of them, and one replica at a time renews a session).
	Store string `yaml:"store"`
	// Redis configures store "redis".
	Redis RedisConfig `yaml:"redis"`
}

// RedisConfig reaches the Redis server of store "redis".
type RedisConfig struct {
	// Addr is the server's host:port. Required with store redis.
	Addr string `yaml:"addr"`
	// Username for Redis ACLs (Redis 6+). Default: none (the default user).
	Username string `yaml:"username"`
	// Password. Default: the environment variable SPARKGATE_REDIS_PASSWORD.
	Password string `yaml:"password"`
	// DB is the database number. Default: 0.
	DB int `yaml:"db"`
	// KeyPrefix starts every key the gateway writes, so that gateways of
	// different deployments can share one server. Default: "sparkgate:".
	KeyPrefix string `yaml:"key_prefix"`
	// TLS connects with TLS (system roots). Default: false.
	TLS bool `yaml:"tls"`
	// DialTimeout bounds connecting. Default: 1s.
	DialTimeout time.Duration `yaml:"dial_timeout"`
	// Timeout bounds each command. Requests wait for the revocation check,
	// so it is short: past it the store counts as down (see README).
	// Default: 250ms.
	Timeout time.Duration `yaml:"timeout"`
}

func (c *StoreConfig) setDefaults() {
	if c.Store == "" {
		c.Store = StoreMemory
	}
	r := &c.Redis
	if r.Password == "" {
		r.Password = os.Getenv(EnvRedisPassword)
	}
	if r.KeyPrefix == "" {
		r.KeyPrefix = "sparkgate:"
	}
	if r.DialTimeout == 0 {
		r.DialTimeout = time.Second
	}
	if r.Timeout == 0 {
		r.Timeout = 250 * time.Millisecond
	}
}

func (c *StoreConfig) validate() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	switch c.Store {
	case StoreMemory:
	case StoreRedis:
		if c.Redis.Addr == "" {
			add("auth.session.redis.addr: required when auth.session.store is redis")
		} else if _, _, err := net.SplitHostPort(c.Redis.Addr); err != nil {
			shown := c.Redis.Addr
			if i := strings.LastIndex(shown, "@"); i >= 0 {
				// A redis://user:password@host URL: never repeat its password.
				shown = "…@" + shown[i+1:]
			}
			add("auth.session.redis.addr: %q is not host:port", shown)
		}
		if c.Redis.DB < 0 {
			add("auth.session.redis.db: must not be negative")
		}
		if c.Redis.DialTimeout < 0 {
			add("auth.session.redis.dial_timeout: must be positive")
		}
		if c.Redis.Timeout < 0 {
			add("auth.session.redis.timeout: must be positive")
		}
	default:
		add("auth.session.store: %q is not one of memory, redis", c.Store)
	}
	return errs
}
