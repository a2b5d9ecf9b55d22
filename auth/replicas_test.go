package auth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// replicaEnv is two gateways (replicas) built from one config, in front of
// one provider, sharing a real redis-server.
type replicaEnv struct {
	clock *fakeClock
	idp   *fakeIDP
	redis *redisServer
	cfg   Config
	a, b  *gateway
}

func newReplicaEnv(t *testing.T, store string) *replicaEnv {
	t.Helper()
	e := &replicaEnv{clock: &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}}
	e.idp = newFakeIDP(t, e.clock)
	if store == StoreRedis {
		e.redis = startRedis(t)
		e.cfg = redisConfig(e.idp, e.redis, newKey(t))
	} else {
		e.cfg = oidcConfig(e.idp, newKey(t))
	}
	e.a, e.b = newGateway(t, e.clock), newGateway(t, e.clock)
	for _, g := range []*gateway{e.a, e.b} {
		a := g.use(t, e.cfg)
		t.Cleanup(func() { _ = a.Close() })
	}
	return e
}

// signIn signs a new browser in through replica a; the browser does not
// follow redirects afterwards.
func (e *replicaEnv) signIn(t *testing.T) *http.Client {
	t.Helper()
	c := newBrowser(t, true)
	resp, body := get(t, c, e.a.srv.URL+"/")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "user=alice") {
		t.Fatalf("sign-in through replica a = %d %q; want 200 as alice", resp.StatusCode, body)
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return c
}

// copyOf returns a browser holding a copy of c's session cookie.
func (e *replicaEnv) copyOf(t *testing.T, c *http.Client) *http.Client {
	t.Helper()
	cp := newBrowser(t, false)
	cp.Jar.SetCookies(mustURL(t, e.a.srv.URL+"/"), sessionCookies(t, c, e.a.srv.URL))
	return cp
}

func signedIn(t *testing.T, c *http.Client, g *gateway) bool {
	t.Helper()
	resp, body := get(t, c, g.srv.URL+"/p")
	return resp.StatusCode == http.StatusOK && strings.Contains(body, "user=alice")
}

// TestSignOutHoldsOnEveryReplica: with auth.session.store redis, a copy of
// the session cookie taken before sign-out on one replica is refused by
// another replica that never saw the sign-out, and by a replica started
// afterwards; other sessions stay valid. The store keeps the revocation
// for one session TTL.
func TestSignOutHoldsOnEveryReplica(t *testing.T) {
	e := newReplicaEnv(t, StoreRedis)
	c := e.signIn(t)
	stolen := e.copyOf(t, c)
	other := e.signIn(t)
	if !signedIn(t, stolen, e.b) {
		t.Fatal("copied cookie on replica b before sign-out refused; want accepted")
	}

	post(t, c, e.a.srv.URL+"/oauth2/logout", e.a.srv.URL)
	if signedIn(t, stolen, e.a) {
		t.Error("copied cookie on replica a after sign-out there accepted; want refused")
	}
	if signedIn(t, stolen, e.b) {
		t.Error("copied cookie on replica b after sign-out on a accepted; want refused")
	}
	if !signedIn(t, other, e.b) {
		t.Error("another sign-in on replica b after the sign-out refused; want accepted")
	}
	// A replica that starts afterwards (or b after a restart) knows too.
	restarted := e.b.use(t, e.cfg)
	t.Cleanup(func() { _ = restarted.Close() })
	if signedIn(t, stolen, e.b) {
		t.Error("copied cookie on a restarted replica accepted; want refused")
	}

	keys, err := e.redis.client().Keys(context.Background(), e.cfg.Session.Redis.KeyPrefix+"revoked:*").Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("revoked keys in redis = %v, %v; want one", keys, err)
	}
	ttl, err := e.redis.client().PTTL(context.Background(), keys[0]).Result()
	if err != nil || ttl > e.cfg.Session.TTL || ttl < e.cfg.Session.TTL-time.Minute {
		t.Errorf("TTL of %s = %v, %v; want the session TTL %v", keys[0], ttl, err, e.cfg.Session.TTL)
	}
	for _, g := range []*gateway{e.a, e.b} {
		st, ok := g.auth.Load().StoreStats()
		if !ok || !st.Up || st.Unchecked != 0 || st.Pending != 0 {
			t.Errorf("store stats = %+v, %v; want up, nothing unchecked or pending", st, ok)
		}
	}
}

// renewAtOnce sends n requests carrying c's session cookie at once,
// alternately to replicas a and b, and returns how many were signed in.
func (e *replicaEnv) renewAtOnce(t *testing.T, c *http.Client, n int) int {
	t.Helper()
	cookies := sessionCookies(t, c, e.a.srv.URL)
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for i := range n {
		g := e.a
		if i%2 == 1 {
			g = e.b
		}
		wg.Go(func() {
			r := httptest.NewRequest(http.MethodGet, "/p", nil)
			for _, ck := range cookies {
				r.AddCookie(ck)
			}
			_, in, err := g.auth.Load().Authenticate(r)
			if err == nil && in {
				mu.Lock()
				ok++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return ok
}

// TestRefreshRotatesOnceAcrossReplicas: a session due for renewal, asked
// for at once on two replicas, is renewed once with the provider (which
// rotates refresh tokens: a second use is refused) and every request stays
// signed in. Without the shared store the replica that loses the race
// spends a dead refresh token and signs the user out: the control.
func TestRefreshRotatesOnceAcrossReplicas(t *testing.T) {
	const n = 16
	t.Run("redis", func(t *testing.T) {
		e := newReplicaEnv(t, StoreRedis)
		c := e.signIn(t)
		e.clock.Advance(10 * time.Minute) // the 5-minute ID token expired
		if ok := e.renewAtOnce(t, c, n); ok != n {
			t.Errorf("signed-in requests during renewal on two replicas = %d; want %d", ok, n)
		}
		if _, _, refresh := e.idp.counts(); refresh != 1 {
			t.Errorf("refresh grants = %d; want 1", refresh)
		}
		// Later requests with the old cookie, on either replica, reuse the
		// renewal instead of spending the refresh token again.
		for _, g := range []*gateway{e.a, e.b} {
			if !signedIn(t, c, g) {
				t.Errorf("old cookie on %s after the renewal refused; want accepted", g.srv.URL)
			}
		}
		if _, _, refresh := e.idp.counts(); refresh != 1 {
			t.Errorf("refresh grants after more requests = %d; want still 1", refresh)
		}
		e.checkStoreHoldsNoCredential(t)
	})
	t.Run("memory (control)", func(t *testing.T) {
		e := newReplicaEnv(t, StoreMemory)
		c := e.signIn(t)
		e.clock.Advance(10 * time.Minute)
		if ok := e.renewAtOnce(t, c, n); ok == n {
			t.Errorf("signed-in requests during renewal on two replicas without a store = %d; want some refused (the control must fail)", ok)
		}
	})
}

// TestStoreDownFailsOpen: with the store down, sessions keep working on
// every replica (fail open, counted), a sign-out holds at once on its own
// replica and is queued; once the store answers again the queued sign-out
// is written and every replica refuses the signed-out session.
func TestStoreDownFailsOpen(t *testing.T) {
	e := newReplicaEnv(t, StoreRedis)
	c := e.signIn(t)
	stolen := e.copyOf(t, c)
	e.redis.stop()

	if !signedIn(t, stolen, e.b) {
		t.Fatal("session on replica b with the store down refused; want accepted (fail open)")
	}
	st, _ := e.b.auth.Load().StoreStats()
	if st.Up || st.Errors[OpCheck] == 0 || st.Unchecked == 0 {
		t.Errorf("replica b's store stats with the store down = %+v; want down, a check error, an unchecked request", st)
	}

	post(t, c, e.a.srv.URL+"/oauth2/logout", e.a.srv.URL)
	if signedIn(t, stolen, e.a) {
		t.Error("copied cookie on replica a after sign-out there, store down, accepted; want refused")
	}
	if st, _ := e.a.auth.Load().StoreStats(); st.Pending != 1 {
		t.Errorf("replica a's queued sign-outs = %d; want 1", st.Pending)
	}
	if !signedIn(t, stolen, e.b) {
		t.Error("copied cookie on replica b, store down = refused; want accepted until the store returns (documented)")
	}

	e.redis.start()
	deadline := time.Now().Add(30 * time.Second)
	for {
		sa, _ := e.a.auth.Load().StoreStats()
		sb, _ := e.b.auth.Load().StoreStats()
		if sa.Up && sb.Up && sa.Pending == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("store never counted as up again: a %+v, b %+v", sa, sb)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if signedIn(t, stolen, e.b) {
		t.Error("copied cookie on replica b once the store returned accepted; want refused (the queued sign-out)")
	}
}

// TestRenewWaitsForTheLockHolder: a replica that finds the renewal lock
// taken waits for the holder's result rather than spending the refresh
// token itself.
func TestRenewWaitsForTheLockHolder(t *testing.T) {
	e := newReplicaEnv(t, StoreRedis)
	c := e.signIn(t)
	e.clock.Advance(10 * time.Minute)
	a := e.a.auth.Load()
	// Find the session's ID, and hold its lock as another replica would.
	value := readSessionValue(cookieRequest(t, c, e.a.srv.URL), sessionCookie)
	var s session
	if err := a.codec.decode(sessionCookie, value, &s); err != nil {
		t.Fatal(err)
	}
	tok, ok, err := a.shared.lock(context.Background(), s.ID, time.Minute)
	if err != nil || !ok {
		t.Fatalf("taking the lock: %v %v", ok, err)
	}
	done := make(chan bool, 1)
	go func() { done <- signedIn(t, c, e.b) }()
	select {
	case <-done:
		t.Fatal("replica b answered while another held the renewal lock; want it to wait")
	case <-time.After(300 * time.Millisecond):
	}
	// The holder renews and shares the result, then releases the lock.
	ns, err := a.refreshSession(context.Background(), &s)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := a.codec.encode(sessionCookie, ns)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := sealRenewed(value, enc)
	if err != nil {
		t.Fatal(err)
	}
	a.shared.putRenewed(context.Background(), storeKey(value), sealed)
	a.shared.unlock(context.Background(), s.ID, tok)
	if !<-done {
		t.Error("replica b after the holder's renewal refused the session; want it to take the shared result")
	}
	if _, _, refresh := e.idp.counts(); refresh != 1 {
		t.Errorf("refresh grants = %d; want 1 (the holder's)", refresh)
	}
}

// checkStoreHoldsNoCredential reads every value the gateways wrote to
// Redis: none is a session cookie the gateway accepts, and none contains a
// refresh token the provider issued.
func (e *replicaEnv) checkStoreHoldsNoCredential(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	rc := e.redis.client()
	keys, err := rc.Keys(ctx, e.cfg.Session.Redis.KeyPrefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	renewed := 0
	e.idp.mu.Lock()
	var tokens []string
	for rt := range e.idp.refreshTokens {
		tokens = append(tokens, rt)
	}
	e.idp.mu.Unlock()
	a := e.a.auth.Load()
	for _, k := range keys {
		v, err := rc.Get(ctx, k).Result()
		if err != nil {
			continue // a lock that expired meanwhile
		}
		if strings.Contains(k, ":renewed:") {
			renewed++
		}
		var s session
		if a.codec.decode(sessionCookie, v, &s) == nil {
			t.Errorf("redis key %s holds a session cookie the gateway accepts", k)
		}
		for _, rt := range tokens {
			if strings.Contains(v, rt) {
				t.Errorf("redis key %s holds a refresh token in clear", k)
			}
		}
	}
	if renewed != 1 {
		t.Errorf("renewed sessions in redis = %d (keys %q); want 1", renewed, keys)
	}
}

// TestRenewedSessionBoundToItsCookie: a renewal shared in the store opens
// only with the cookie value it renews; moved under another session's key
// (by someone who can write the store) it is ignored.
func TestRenewedSessionBoundToItsCookie(t *testing.T) {
	e := newReplicaEnv(t, StoreRedis)
	c := e.signIn(t)
	mallory := e.signIn(t)
	e.clock.Advance(10 * time.Minute)
	if !signedIn(t, c, e.a) {
		t.Fatal("renewal on replica a failed")
	}
	ctx := context.Background()
	value := readSessionValue(cookieRequest(t, c, e.a.srv.URL), sessionCookie)
	sealed, err := e.redis.client().Get(ctx, e.cfg.Session.Redis.KeyPrefix+"renewed:"+storeKey(value)).Result()
	if err != nil {
		t.Fatalf("renewed session in redis: %v", err)
	}
	mvalue := readSessionValue(cookieRequest(t, mallory, e.a.srv.URL), sessionCookie)
	if _, err := openRenewed(mvalue, sealed); err == nil {
		t.Error("a renewal opened with another cookie's value; want an error")
	}
	// Plant it under mallory's cookie: b must not hand alice's renewal to
	// mallory's cookie (it renews mallory's own session instead).
	if err := e.redis.client().Set(ctx, e.cfg.Session.Redis.KeyPrefix+"renewed:"+storeKey(mvalue), sealed, time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	b := e.b.auth.Load()
	s, _, err := b.currentSession(ctx, cookieRequest(t, mallory, e.a.srv.URL))
	var ms session
	if derr := b.codec.decode(sessionCookie, mvalue, &ms); derr != nil {
		t.Fatal(derr)
	}
	if err != nil || s == nil || s.ID != ms.ID {
		t.Errorf("mallory's cookie with alice's renewal planted = %+v, %v; want mallory's own session (ID %s)", s, err, ms.ID)
	}
}

func cookieRequest(t *testing.T, c *http.Client, base string) *http.Request {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, "/p", nil)
	for _, ck := range sessionCookies(t, c, base) {
		r.AddCookie(ck)
	}
	return r
}

// storeKey is how the store names a cookie value: the hex SHA-256.
func storeKey(value string) string {
	sum := sha256.Sum256([]byte(value))
	return hex.EncodeToString(sum[:])
}

// TestClaimOnceAcrossReplicas: with the store, a key claimed on one
// replica is refused on the other (and on it again) until its TTL ends,
// and other keys are not; while the store is down every claim is taken
// (fail open, the caller's own memory then holds) and counted as an
// error. Without a store every claim is taken: the control.
func TestClaimOnceAcrossReplicas(t *testing.T) {
	ctx := context.Background()
	e := newReplicaEnv(t, StoreRedis)
	a, b := e.a.auth.Load(), e.b.auth.Load()
	if !a.ClaimOnce(ctx, "handoff:n1", time.Minute) {
		t.Fatal("first claim of n1 on replica a refused")
	}
	if b.ClaimOnce(ctx, "handoff:n1", time.Minute) || a.ClaimOnce(ctx, "handoff:n1", time.Minute) {
		t.Error("n1 claimed again on replica b or a; want refused")
	}
	if !b.ClaimOnce(ctx, "handoff:n2", time.Minute) {
		t.Error("first claim of n2 on replica b refused")
	}
	if !a.ClaimOnce(ctx, "handoff:short", time.Millisecond) {
		t.Fatal("first claim of a 1 ms key refused")
	}
	deadline := time.Now().Add(10 * time.Second)
	for !b.ClaimOnce(ctx, "handoff:short", time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a 1 ms claim still held after 10 s; want expired")
		}
		time.Sleep(10 * time.Millisecond)
	}

	e.redis.stop()
	if !b.ClaimOnce(ctx, "handoff:n1", time.Minute) {
		t.Error("claim with the store down refused; want taken (fail open)")
	}
	if st, _ := b.StoreStats(); st.Errors[OpClaim] == 0 {
		t.Errorf("replica b's store stats after a failed claim = %+v; want a claim error", st)
	}

	m := newReplicaEnv(t, StoreMemory)
	for _, g := range []*gateway{m.a, m.a, m.b} {
		if !g.auth.Load().ClaimOnce(ctx, "handoff:n1", time.Minute) {
			t.Error("claim without a store refused; want taken (the replica's own memory decides)")
		}
	}
}

// TestSignOutOutlivesOutageRenewal: with the Redis store a sign-out is
// revoked on every replica, and on replicas started later, for one session
// TTL, which no cookie value of the sign-in outlives (README, Replicas). A
// replica that fails open while the store is down still renews a cookie
// (a copy taken before the sign-out, used after its ID token's expiry): the
// renewal must not give the session more time than it had, or, once the
// store has forgotten the revocation, the renewed value is good again past
// the signed-out session's TTL, and renews itself on from there.
func TestSignOutOutlivesOutageRenewal(t *testing.T) {
	e := newReplicaEnv(t, StoreRedis)
	c := e.signIn(t)
	stolen := e.copyOf(t, c)
	e.redis.stop()

	// The owner signs out on replica a during the outage: queued.
	post(t, c, e.a.srv.URL+"/oauth2/logout", e.a.srv.URL)

	// The thief uses the copy on replica b after the ID token's expiry:
	// b fails open and renews it.
	e.clock.Advance(10 * time.Minute)
	b := e.b.auth.Load()
	rec := httptest.NewRecorder()
	b.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})).ServeHTTP(rec, cookieRequest(t, stolen, e.a.srv.URL))
	var renewed []*http.Cookie
	for _, ck := range rec.Result().Cookies() {
		if isSessionCookieName(ck.Name, sessionCookie) && ck.Value != "" {
			renewed = append(renewed, ck)
		}
	}
	if len(renewed) == 0 {
		t.Fatal("replica b did not renew the copied cookie during the outage")
	}

	// The store returns; the queued sign-out is written and holds.
	e.redis.start()
	deadline := time.Now().Add(30 * time.Second)
	for {
		sa, _ := e.a.auth.Load().StoreStats()
		sb, _ := e.b.auth.Load().StoreStats()
		if sa.Up && sb.Up && sa.Pending == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("store never up again: a %+v, b %+v", sa, sb)
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
	if _, ok, _ := e.b.auth.Load().Authenticate(req(renewed)); ok {
		t.Fatal("renewed copy accepted right after the store returned; the sign-out should hold then")
	}

	// One session TTL after the sign-out the store forgets it (its key's
	// TTL, stood for here by deleting the key), and a replica started since
	// has never seen it.
	e.clock.Advance(e.cfg.Session.TTL - 5*time.Minute)
	keys, err := e.redis.client().Keys(context.Background(), e.cfg.Session.Redis.KeyPrefix+"revoked:*").Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("revoked keys = %v, %v; want one", keys, err)
	}
	if ttl, _ := e.redis.client().PTTL(context.Background(), keys[0]).Result(); ttl > e.cfg.Session.TTL {
		t.Fatalf("revocation kept %v; want at most the session TTL", ttl)
	}
	e.redis.client().Del(context.Background(), keys...)
	restarted := e.b.use(t, e.cfg)
	t.Cleanup(func() { _ = restarted.Close() })

	if _, ok, _ := restarted.Authenticate(cookieRequest(t, stolen, e.a.srv.URL)); ok {
		t.Error("the copy as taken before the sign-out accepted one TTL later; want refused (control)")
	}
	if id, ok, err := restarted.Authenticate(req(renewed)); ok {
		t.Errorf("a signed-out session (sign-out %v ago, session TTL %v) is accepted again as %q (err %v): "+
			"the copy renewed during the store outage outlives its revocation", 10*time.Minute+e.cfg.Session.TTL-5*time.Minute, e.cfg.Session.TTL, id.User, err)
	}
}
