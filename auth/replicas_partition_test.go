package auth

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// cutProxy is a TCP relay to redis that can be cut, as a network
// partition between one replica and the store would.
type cutProxy struct {
	ln    net.Listener
	to    string
	mu    sync.Mutex
	down  bool
	conns []net.Conn
}

func newCutProxy(t *testing.T, to string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, to: to}
	t.Cleanup(func() { _ = ln.Close(); p.cut() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			down := p.down
			p.mu.Unlock()
			if down {
				_ = c.Close()
				continue
			}
			u, err := net.Dial("tcp", to)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(u, c); _ = u.Close() }()
			go func() { _, _ = io.Copy(c, u); _ = c.Close() }()
		}
	}()
	return p
}

func (p *cutProxy) addr() string { return p.ln.Addr().String() }

func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

func (p *cutProxy) restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}

// TestSignOutOutlivesPartitionRenewal: a sign-out is queued on the
// replica it was posted to whenever that replica cannot write it (a
// partition of that replica alone), while another replica, whose store
// answers and knows of no revocation, renews a copy of the cookie with a
// whole new TTL. The queued revocation, once written, must outlive that
// value: it is kept a whole TTL from its write, not what was left of one
// from the sign-out, after which the renewed value was good again and
// renewed itself on. Found by a review (of the fix of
// TestSignOutOutlivesOutageRenewal).
func TestSignOutOutlivesPartitionRenewal(t *testing.T) {
	e := &replicaEnv{clock: &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}}
	e.idp = newFakeIDP(t, e.clock)
	e.redis = startRedis(t)
	e.cfg = redisConfig(e.idp, e.redis, newKey(t))
	link := newCutProxy(t, e.redis.addr())
	cfgA := e.cfg
	cfgA.Session.Redis.Addr = link.addr() // replica a reaches the store through link
	e.a, e.b = newGateway(t, e.clock), newGateway(t, e.clock)
	aa := e.a.use(t, cfgA)
	t.Cleanup(func() { _ = aa.Close() })
	ab := e.b.use(t, e.cfg)
	t.Cleanup(func() { _ = ab.Close() })

	c := e.signIn(t)
	stolen := e.copyOf(t, c)

	// Replica a loses the store (b does not); the owner signs out on a:
	// queued there.
	link.cut()
	post(t, c, e.a.srv.URL+"/oauth2/logout", e.a.srv.URL)
	if st, _ := aa.StoreStats(); st.Pending != 1 {
		t.Fatalf("replica a's queued sign-outs = %d; want 1 (store cut off)", st.Pending)
	}

	// The thief uses the copy on replica b after the ID token's expiry:
	// b's store answers, knows no revocation, and b renews the copy.
	e.clock.Advance(10 * time.Minute)
	rec := httptest.NewRecorder()
	ab.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})).ServeHTTP(rec, cookieRequest(t, stolen, e.a.srv.URL))
	var renewed []*http.Cookie
	for _, ck := range rec.Result().Cookies() {
		if isSessionCookieName(ck.Name, sessionCookie) && ck.Value != "" {
			renewed = append(renewed, ck)
		}
	}
	if len(renewed) == 0 {
		t.Fatal("replica b did not renew the copied cookie")
	}

	// a reaches the store again and writes the queued sign-out.
	link.restore()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if st, _ := aa.StoreStats(); st.Up && st.Pending == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("replica a never wrote its queued sign-out")
		}
		time.Sleep(50 * time.Millisecond)
	}
	req := func(cks []*http.Cookie) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/p", nil)
		for _, ck := range cks {
			r.AddCookie(&http.Cookie{Name: ck.Name, Value: ck.Value})
		}
		return r
	}
	if _, ok, _ := ab.Authenticate(req(renewed)); ok {
		t.Fatal("renewed copy accepted right after the sign-out was written; the sign-out should hold then")
	}

	// The revocation is kept a whole TTL from when it was written, after
	// b's renewal, so it outlives every value renewed while it was queued
	// (a key's TTL runs in Redis's own time: what is checked is the TTL
	// it was given). Near the renewed value's own expiry, one TTL after the
	// sign-out and more, a replica started since refuses it.
	keys, err := e.redis.client().Keys(context.Background(), e.cfg.Session.Redis.KeyPrefix+"revoked:*").Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("revoked keys = %v, %v; want one", keys, err)
	}
	if ttl, _ := e.redis.client().PTTL(context.Background(), keys[0]).Result(); ttl < e.cfg.Session.TTL-time.Minute || ttl > e.cfg.Session.TTL {
		t.Errorf("revocation written after the partition kept %v; want a whole session TTL (%v) from then", ttl, e.cfg.Session.TTL)
	}
	e.clock.Advance(e.cfg.Session.TTL - 5*time.Minute)
	restarted := e.b.use(t, e.cfg)
	t.Cleanup(func() { _ = restarted.Close() })

	if _, ok, _ := restarted.Authenticate(cookieRequest(t, stolen, e.a.srv.URL)); ok {
		t.Error("the copy as taken before the sign-out accepted one TTL later; want refused (control)")
	}
	if id, ok, err := restarted.Authenticate(req(renewed)); ok {
		t.Errorf("a signed-out session (sign-out %v ago, session TTL %v) is accepted again as %q (err %v): "+
			"the copy renewed by a replica whose store answered, while the sign-out was queued on another, outlives its revocation",
			10*time.Minute+e.cfg.Session.TTL-5*time.Minute, e.cfg.Session.TTL, id.User, err)
	}
}
