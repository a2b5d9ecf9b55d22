package auth

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.uber.org/zap"
)

func BenchmarkAuthenticateSession(b *testing.B) {
	for _, tc := range []struct {
		name  string
		cache bool
	}{{"cached", true}, {"decode", false}} {
		b.Run(tc.name, func(b *testing.B) {
			c := testCodec(b, newKey(b))
			a := &Authenticator{codec: c, now: func() time.Time { return time.Unix(1.9e9, 0) }, logger: zap.NewNop(), cfg: Config{Session: SessionConfig{Refresh: ptr(true)}}}
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
