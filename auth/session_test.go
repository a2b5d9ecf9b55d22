package auth

import (
	"context"
	"crypto/sha256"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
)

func testCodec(t testing.TB, keys ...string) *sessionCodec {
	t.Helper()
	var raw [][]byte
	for _, k := range keys {
		b, err := decodeKey(k)
		if err != nil {
			t.Fatal(err)
		}
		raw = append(raw, b)
	}
	c, err := newSessionCodec(raw)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestSessionRoundTripAndSplit(t *testing.T) {
	c := testCodec(t, newKey(t))
	opts := cookieOptions{secure: true, path: "/"}
	for _, n := range []int{1, 50, 600} {
		s := &session{User: "alice", Method: MethodSession, Expiry: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
		for i := range n {
			s.Groups = append(s.Groups, strings.Repeat("g", 10)+string(rune('a'+i%26))+strings.Repeat("x", i%7))
		}
		value, err := c.encode(sessionCookie, s)
		if err != nil {
			t.Fatal(err)
		}
		w := httptest.NewRecorder()
		if err := writeSession(w, httptest.NewRequest(http.MethodGet, "/", nil), opts, value, 60); err != nil {
			t.Fatal(err)
		}
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		for _, ck := range w.Result().Cookies() {
			if !ck.HttpOnly || !ck.Secure || ck.SameSite != http.SameSiteLaxMode || ck.Path != "/" {
				t.Errorf("cookie %s attributes = %+v; want HttpOnly, Secure, Lax, Path=/", ck.Name, ck)
			}
			if len(ck.String()) > 4096 {
				t.Errorf("cookie %s is %d bytes; want <= 4096", ck.Name, len(ck.String()))
			}
			r.AddCookie(ck)
		}
		if wantParts := (len(value) + cookieChunk - 1) / cookieChunk; len(r.Cookies()) != wantParts {
			t.Errorf("%d groups: %d cookies; want %d", n, len(r.Cookies()), wantParts)
		}
		var got session
		if err := c.decode(sessionCookie, readSessionValue(r, sessionCookie), &got); err != nil {
			t.Fatalf("%d groups: decode: %v", n, err)
		}
		if diff := cmp.Diff(*s, got); diff != "" {
			t.Errorf("%d groups: round trip (-want +got):\n%s", n, diff)
		}
	}
}

func TestWriteSessionExpiresStaleParts(t *testing.T) {
	opts := cookieOptions{path: "/"}
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	for _, n := range []string{"_sparkgate_session_0", "_sparkgate_session_1", "_sparkgate_session_2", "_sparkgate_login_abc", "other"} {
		r.AddCookie(&http.Cookie{Name: n, Value: "x"})
	}
	w := httptest.NewRecorder()
	if err := writeSession(w, r, opts, "small", 60); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, ck := range w.Result().Cookies() {
		got[ck.Name] = ck.MaxAge
	}
	want := map[string]int{"_sparkgate_session": 60, "_sparkgate_session_0": -1, "_sparkgate_session_1": -1, "_sparkgate_session_2": -1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cookies set (-want +got):\n%s", diff)
	}
}

func TestSessionCookieName(t *testing.T) {
	for name, want := range map[string]bool{
		"_sparkgate_session": true, "_sparkgate_session_0": true, "_sparkgate_session_15": true,
		"_sparkgate_session_": false, "_sparkgate_session_01": false, "_sparkgate_session_-1": false,
		"_sparkgate_session_x": false, "_sparkgate_login_abc": false,
	} {
		if got := isSessionCookieName(name, sessionCookie); got != want {
			t.Errorf("isSessionCookieName(%q) = %v; want %v", name, got, want)
		}
	}
}

func FuzzSessionDecode(f *testing.F) {
	// A fresh key per run: values kept in the fuzz cache from earlier runs
	// were really encoded, with that run's key.
	c := testCodec(f, newKey(f))
	valid, err := c.encode(sessionCookie, &session{User: "alice", Expiry: time.Unix(2e9, 0)})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	f.Add(valid[:len(valid)-2])
	f.Add("")
	f.Add("MTIzfGFiY3xkZWY=")
	f.Add(strings.Repeat("A", 5000))
	a := &Authenticator{codec: c, now: func() time.Time { return time.Unix(1e9, 0) }, logger: zap.NewNop()}
	a.sessions, a.refreshed = newCaches(time.Hour)
	f.Fuzz(func(t *testing.T, value string) {
		var s session
		err := c.decode(sessionCookie, value, &s)
		if value == valid {
			return
		}
		if err == nil {
			t.Fatalf("decode(%q) = %+v; want an error for a value the gateway did not encode", value, s)
		}
		// Through the request path as well: never signed in, never panics.
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("Cookie", sessionCookie+"="+value)
		if _, ok, _ := a.Authenticate(r); ok {
			t.Fatalf("Authenticate(cookie %q) signed in", value)
		}
	})
}

// TestHostPrefixedCookiesOnHTTPS: on https the gateway's cookies are named
// with __Host- (Secure, Path=/, no Domain), which a browser takes only from
// the gateway's very host; a _sparkgate_session cookie, which a sibling
// host (another app's, under proxy.app_domain) could plant for the whole
// site, is not read.
func TestHostPrefixedCookiesOnHTTPS(t *testing.T) {
	e := newFlowEnv(t, nil)
	a, err := New(context.Background(), oidcConfig(e.idp, e.key), "https://gw.example", zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	s := &session{ID: "s1", User: "mallory", Method: MethodSession, Expiry: time.Now().Add(time.Hour)}
	w := httptest.NewRecorder()
	if err := a.saveSession(w, httptest.NewRequest(http.MethodGet, "https://gw.example/", nil), s); err != nil {
		t.Fatal(err)
	}
	cks := w.Result().Cookies()
	if len(cks) != 1 || cks[0].Name != "__Host-sparkgate_session" || !cks[0].Secure || cks[0].Path != "/" || cks[0].Domain != "" {
		t.Fatalf("session cookies = %v; want one __Host-sparkgate_session, Secure, Path=/, no Domain", cks)
	}
	for name, want := range map[string]bool{"__Host-sparkgate_session": true, "_sparkgate_session": false} {
		r := httptest.NewRequest(http.MethodGet, "https://gw.example/", nil)
		r.AddCookie(&http.Cookie{Name: name, Value: cks[0].Value})
		id, ok, err := a.Authenticate(r)
		if err != nil || ok != want || (ok && id.User != "mallory") {
			t.Errorf("cookie %s: signed in %v as %q (%v); want %v", name, ok, id.User, err, want)
		}
	}

	w = httptest.NewRecorder()
	a.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "https://gw.example/oauth2/login?rd=%2F", nil))
	cks = w.Result().Cookies()
	if len(cks) != 1 || !strings.HasPrefix(cks[0].Name, "__Host-sparkgate_login_") || !cks[0].Secure || cks[0].Path != "/" {
		t.Errorf("login cookies = %v; want one __Host-sparkgate_login_…, Secure, Path=/", cks)
	}
}

// TestSessionKey: the cache key is the SHA-256 of the value on both sides
// of the one-cookie size, and hashing a one-cookie value allocates nothing.
func TestSessionKey(t *testing.T) {
	for _, n := range []int{0, 1, 1935, cookieChunk, cookieChunk + 1, maxEncodedSession} {
		v := strings.Repeat("x", n)
		if got, want := sessionKey(v), sha256.Sum256([]byte(v)); got != want {
			t.Errorf("sessionKey(%d bytes) = %x; want %x", n, got, want)
		}
	}
	v := strings.Repeat("x", cookieChunk)
	if n := testing.AllocsPerRun(100, func() { sessionKey(v) }); n != 0 {
		t.Errorf("sessionKey(%d bytes) allocates %v times; want 0", len(v), n)
	}
}
