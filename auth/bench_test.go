package auth

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
	"go.uber.org/zap"
)

func BenchmarkAuthenticateSession(b *testing.B) {
	for _, tc := range []struct {
		name  string
		cache bool
	}{{"cached", true}, {"decode", false}} {
		b.Run(tc.name, func(b *testing.B) {
			c := testCodec(b, newKey(b))
			a := &Authenticator{codec: c, now: func() time.Time { return time.Unix(1.9e9, 0) }, logger: zap.NewNop(), cfg: Config{Session: SessionConfig{Refresh: ptr(true)}}, gate: newGate(Config{})}
			a.sessions, a.refreshed = newCaches(time.Hour)
			groups := make([]string, 40)
			for i := range groups {
				groups[i] = "group-" + string(rune('a'+i%26))
			}
			value, err := c.encode(sessionCookie, &session{User: "alice", Groups: groups, Method: MethodSession, Expiry: time.Unix(2e9, 0)})
			if err != nil {
				b.Fatal(err)
			}
			r := httptest.NewRequest(http.MethodGet, "/app/app-1/jobs/", nil)
			r.AddCookie(&http.Cookie{Name: sessionCookie, Value: value})
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if !tc.cache {
					a.sessions.Purge()
				}
				if _, ok, err := a.Authenticate(r); !ok || err != nil {
					b.Fatalf("Authenticate = %v, %v; want signed in", ok, err)
				}
			}
		})
	}
}

// BenchmarkAuthenticateSessionRedis is the cached session check plus the
// shared revocation check on a real redis-server over loopback.
func BenchmarkAuthenticateSessionRedis(b *testing.B) {
	r := startRedis(b)
	c := testCodec(b, newKey(b))
	a := &Authenticator{codec: c, now: func() time.Time { return time.Unix(1.9e9, 0) }, logger: zap.NewNop(), cfg: Config{Session: SessionConfig{Refresh: ptr(true)}}, gate: newGate(Config{})}
	a.sessions, a.refreshed = newCaches(time.Hour)
	a.revoked = newRevocations(time.Hour)
	cfg := StoreConfig{Store: StoreRedis, Redis: RedisConfig{Addr: r.addr()}}
	cfg.setDefaults()
	a.shared = newShared(newRedisStore(cfg.Redis, zap.NewNop()), cfg.Redis.Timeout, time.Hour, zap.NewNop())
	b.Cleanup(func() { _ = a.Close() })
	value, err := c.encode(sessionCookie, &session{ID: "bench", User: "alice", Method: MethodSession, Expiry: time.Unix(2e9, 0)})
	if err != nil {
		b.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, "/app/app-1/jobs/", nil)
	req.AddCookie(&http.Cookie{Name: sessionCookie, Value: value})
	b.ReportAllocs()
	for b.Loop() {
		if _, ok, err := a.Authenticate(req); !ok || err != nil {
			b.Fatalf("Authenticate = %v, %v; want signed in", ok, err)
		}
	}
	if st := a.shared.stats(); !st.Up || st.Unchecked != 0 {
		b.Fatalf("store stats %+v; want every check asked of redis", st)
	}
}

// BenchmarkMiddlewareStaleCookie is a request carrying the cookie from
// before its session was renewed (a client that ignores Set-Cookie): the
// renewed cookie is written again, encoded once ("cached") or per request
// ("encode", as before saveRenewed).
func BenchmarkMiddlewareStaleCookie(b *testing.B) {
	for _, cached := range []bool{true, false} {
		name := "encode"
		if cached {
			name = "cached"
		}
		b.Run(name, func(b *testing.B) {
			c := testCodec(b, newKey(b))
			a := &Authenticator{codec: c, now: func() time.Time { return time.Unix(1.9e9, 0) }, logger: zap.NewNop(),
				cfg: Config{Session: SessionConfig{Refresh: ptr(true)}}, gate: newGate(Config{}), oidc: &oidcClient{}}
			a.sessions, a.refreshed = newCaches(time.Hour)
			if cached {
				a.renewedValues = expirable.NewLRU[*session, string](cacheSize, nil, time.Hour)
			}
			old := &session{User: "alice", Method: MethodSession, RefreshToken: "r", Expiry: time.Unix(2e9, 0)}
			value, err := c.encode(sessionCookie, old)
			if err != nil {
				b.Fatal(err)
			}
			renewed := *old
			renewed.Groups = []string{"eng"}
			a.refreshed.Add(sessionKey(value), &renewed)
			h := a.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
			r := httptest.NewRequest(http.MethodGet, "/app/app-1/jobs/", nil)
			r.AddCookie(&http.Cookie{Name: sessionCookie, Value: value})
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if len(w.Result().Cookies()) == 0 {
					b.Fatal("no renewed cookie written")
				}
			}
		})
	}
}
