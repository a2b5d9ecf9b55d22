package auth

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"go.uber.org/zap"
)

// redisStore keeps what replicas share in Redis, under the configured
// prefix:
//
//	<prefix>revoked:<session id>        "1", expires one session TTL after sign-out
//	<prefix>refresh-lock:<session id>   a random token, SET NX PX: one renewal at a time
//	<prefix>renewed:<sha256 of cookie>  the renewed cookie value, sealed with a key
//	                                    derived from the old value (sealRenewed),
//	                                    expires with the session
//
// Nothing else is stored: a session itself stays in its cookie.
type redisStore struct {
	c      *redis.Client
	prefix string
}

var _ sessionStore = (*redisStore)(nil)

// unlockScript deletes a lock only if it still holds the caller's token, so
// that a replica whose lock expired cannot release another's.
var unlockScript = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`)

// redisLogOnce hands go-redis's own log (a package-level setting) to the
// gateway's logger at debug level: the store's failures are counted and
// logged once per outage by shared, not once per dial.
var redisLogOnce sync.Once

type redisLog struct{ l *zap.Logger }

func (r redisLog) Printf(_ context.Context, format string, v ...any) {
	if ce := r.l.Check(zap.DebugLevel, "redis client"); ce != nil {
		ce.Write(zap.String("detail", fmt.Sprintf(format, v...)))
	}
}

func newRedisStore(cfg RedisConfig, logger *zap.Logger) *redisStore {
	redisLogOnce.Do(func() { redis.SetLogger(redisLog{logger}) })
	opts := &redis.Options{
		Addr:     cfg.Addr,
		Username: cfg.Username,
		Password: cfg.Password,
		DB:       cfg.DB,
		// Each call carries its own deadline (RedisConfig.Timeout); the
		// client's own timeouts match it so a stuck connection is dropped.
		DialTimeout:           cfg.DialTimeout,
		ReadTimeout:           cfg.Timeout,
		WriteTimeout:          cfg.Timeout,
		ContextTimeoutEnabled: true,
		// A failed call marks the store down and the gateway goes on
		// without it (see shared); retrying inside one request only adds
		// latency.
		MaxRetries:    -1,
		DialerRetries: 1,
		// Cluster-upgrade notifications are for Redis Cloud; a plain
		// server need not be asked.
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
		// No CLIENT SETINFO on each new connection: one round trip less
		// within a request's short deadline.
		DisableIdentity: true,
	}
	if cfg.TLS {
		opts.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	return &redisStore{c: redis.NewClient(opts), prefix: cfg.KeyPrefix}
}

func (s *redisStore) revoke(ctx context.Context, id string, ttl time.Duration) error {
	if err := s.c.Set(ctx, s.prefix+"revoked:"+id, "1", ttl).Err(); err != nil {
		return fmt.Errorf("redis set revoked: %w", err)
	}
	return nil
}

func (s *redisStore) revoked(ctx context.Context, id string) (bool, error) {
	n, err := s.c.Exists(ctx, s.prefix+"revoked:"+id).Result()
	if err != nil {
		return false, fmt.Errorf("redis exists revoked: %w", err)
	}
	return n > 0, nil
}

func (s *redisStore) lock(ctx context.Context, name string, ttl time.Duration) (string, bool, error) {
	tok := rand.Text()
	err := s.c.Do(ctx, "SET", s.prefix+"refresh-lock:"+name, tok, "NX", "PX", ttl.Milliseconds()).Err()
	switch {
	case errors.Is(err, redis.Nil):
		return "", false, nil // another replica holds it
	case err != nil:
		return "", false, fmt.Errorf("redis set refresh-lock: %w", err)
	}
	return tok, true, nil
}

func (s *redisStore) unlock(ctx context.Context, name, token string) error {
	if err := unlockScript.Run(ctx, s.c, []string{s.prefix + "refresh-lock:" + name}, token).Err(); err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("redis release refresh-lock: %w", err)
	}
	return nil
}

func (s *redisStore) putRenewed(ctx context.Context, from, value string, ttl time.Duration) error {
	if err := s.c.Set(ctx, s.prefix+"renewed:"+from, value, ttl).Err(); err != nil {
		return fmt.Errorf("redis set renewed: %w", err)
	}
	return nil
}

func (s *redisStore) getRenewed(ctx context.Context, from string) (string, bool, error) {
	v, err := s.c.Get(ctx, s.prefix+"renewed:"+from).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("redis get renewed: %w", err)
	}
	return v, true, nil
}

func (s *redisStore) claim(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	err := s.c.Do(ctx, "SET", s.prefix+"once:"+key, "1", "NX", "PX", ttl.Milliseconds()).Err()
	switch {
	case errors.Is(err, redis.Nil):
		return false, nil // a replica took it before
	case err != nil:
		return false, fmt.Errorf("redis set once: %w", err)
	}
	return true, nil
}

func (s *redisStore) ping(ctx context.Context) error {
	if err := s.c.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis ping: %w", err)
	}
	return nil
}

func (s *redisStore) close() error { return s.c.Close() }
