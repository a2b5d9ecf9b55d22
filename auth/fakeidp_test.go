package auth

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// fakeClock is the time shared by the fake provider and the authenticator,
// so tests move time instead of sleeping.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

type codeGrant struct {
	challenge, nonce, redirect string
	claims                     map[string]any
}

// fakeIDP is an in-process OpenID Connect provider: discovery, JWKS,
// authorize (answers at once with a code), token (code with PKCE S256
// check, refresh with rotation), userinfo and end-session.
type fakeIDP struct {
	t      testing.TB
	srv    *httptest.Server
	key    *rsa.PrivateKey
	signer jose.Signer
	clock  *fakeClock

	clientID, clientSecret string

	mu sync.Mutex
	// claims are the user claims of the next sign-in.
	claims map[string]any
	// groupsOnlyInUserinfo leaves "groups" out of ID tokens.
	groupsOnlyInUserinfo bool
	idTokenTTL           time.Duration
	codes                map[string]codeGrant
	refreshTokens        map[string]map[string]any
	accessTokens         map[string]map[string]any
	authorizeCount       int
	pkceChecked          int
	refreshCount         int
	userinfoCount        int
	jwksCount            int
}

func newFakeIDP(t testing.TB, clock *fakeClock) *fakeIDP {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key, KeyID: "k1"}}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	p := &fakeIDP{
		t: t, key: key, signer: signer, clock: clock,
		clientID: "sparkgate", clientSecret: "s3cret",
		claims: map[string]any{
			"sub": "u-1", "preferred_username": "alice", "email": "alice@example.com",
			"email_verified": true, "groups": []any{"eng", "spark-users"},
		},
		idTokenTTL:    5 * time.Minute,
		codes:         map[string]codeGrant{},
		refreshTokens: map[string]map[string]any{},
		accessTokens:  map[string]map[string]any{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", p.discovery)
	mux.HandleFunc("/jwks", p.jwks)
	mux.HandleFunc("/authorize", p.authorize)
	mux.HandleFunc("/token", p.token)
	mux.HandleFunc("/userinfo", p.userinfo)
	mux.HandleFunc("/end_session", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("signed out at idp")) })
	p.srv = httptest.NewServer(mux)
	t.Cleanup(p.srv.Close)
	return p
}

func (p *fakeIDP) issuer() string { return p.srv.URL }

func (p *fakeIDP) discovery(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, map[string]any{
		"issuer":                                p.issuer(),
		"authorization_endpoint":                p.issuer() + "/authorize",
		"token_endpoint":                        p.issuer() + "/token",
		"jwks_uri":                              p.issuer() + "/jwks",
		"userinfo_endpoint":                     p.issuer() + "/userinfo",
		"end_session_endpoint":                  p.issuer() + "/end_session",
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"code_challenge_methods_supported":      []string{"S256"},
		"response_types_supported":              []string{"code"},
	})
}

func (p *fakeIDP) jwks(w http.ResponseWriter, _ *http.Request) {
	p.mu.Lock()
	p.jwksCount++
	p.mu.Unlock()
	writeJSON(w, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &p.key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
}

func (p *fakeIDP) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("response_type") != "code" || q.Get("client_id") != p.clientID ||
		q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" ||
		q.Get("nonce") == "" || q.Get("state") == "" || !strings.Contains(q.Get("scope"), "openid") {
		http.Error(w, "bad authorize request: "+r.URL.RawQuery, http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	p.authorizeCount++
	code := randomString(16)
	p.codes[code] = codeGrant{challenge: q.Get("code_challenge"), nonce: q.Get("nonce"), redirect: q.Get("redirect_uri"), claims: maps.Clone(p.claims)}
	p.mu.Unlock()
	u, err := url.Parse(q.Get("redirect_uri"))
	if err != nil {
		http.Error(w, "bad redirect_uri", http.StatusBadRequest)
		return
	}
	v := url.Values{"code": {code}, "state": {q.Get("state")}}
	u.RawQuery = v.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
}

func tokenError(w http.ResponseWriter, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code})
}

func (p *fakeIDP) token(w http.ResponseWriter, r *http.Request) {
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostFormValue("client_id"), r.PostFormValue("client_secret")
	}
	if id != p.clientID || secret != p.clientSecret {
		w.WriteHeader(http.StatusUnauthorized)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_client"})
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var claims map[string]any
	nonce := ""
	switch r.PostFormValue("grant_type") {
	case "authorization_code":
		g, ok := p.codes[r.PostFormValue("code")]
		delete(p.codes, r.PostFormValue("code"))
		if !ok || g.redirect != r.PostFormValue("redirect_uri") {
			tokenError(w, "invalid_grant")
			return
		}
		sum := sha256.Sum256([]byte(r.PostFormValue("code_verifier")))
		if r.PostFormValue("code_verifier") == "" || base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
			tokenError(w, "invalid_grant")
			return
		}
		p.pkceChecked++
		claims, nonce = g.claims, g.nonce
	case "refresh_token":
		c, ok := p.refreshTokens[r.PostFormValue("refresh_token")]
		delete(p.refreshTokens, r.PostFormValue("refresh_token")) // rotation
		if !ok {
			tokenError(w, "invalid_grant")
			return
		}
		p.refreshCount++
		// Like a real provider, a refresh reads the user's current claims.
		if c["sub"] == p.claims["sub"] {
			c = maps.Clone(p.claims)
		}
		claims = c
	default:
		tokenError(w, "unsupported_grant_type")
		return
	}
	at, rt := randomString(16), randomString(16)
	p.accessTokens[at] = claims
	p.refreshTokens[rt] = claims
	idClaims := maps.Clone(claims)
	if p.groupsOnlyInUserinfo {
		delete(idClaims, "groups")
	}
	if nonce != "" {
		idClaims["nonce"] = nonce
	}
	now := p.clock.Now()
	idClaims["iss"], idClaims["aud"] = p.issuer(), p.clientID
	idClaims["iat"], idClaims["exp"] = now.Unix(), now.Add(p.idTokenTTL).Unix()
	writeJSON(w, map[string]any{
		"access_token": at, "token_type": "Bearer", "expires_in": int(p.idTokenTTL.Seconds()),
		"refresh_token": rt, "id_token": p.sign(idClaims),
	})
}

func (p *fakeIDP) userinfo(w http.ResponseWriter, r *http.Request) {
	at, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	p.mu.Lock()
	c, ok := p.accessTokens[at]
	p.userinfoCount++
	p.mu.Unlock()
	if !ok {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	writeJSON(w, c)
}

// sign signs claims with the provider's key.
func (p *fakeIDP) sign(claims map[string]any) string {
	p.t.Helper()
	b, err := json.Marshal(claims)
	if err != nil {
		p.t.Fatal(err)
	}
	obj, err := p.signer.Sign(b)
	if err != nil {
		p.t.Fatal(err)
	}
	s, err := obj.CompactSerialize()
	if err != nil {
		p.t.Fatal(err)
	}
	return s
}

// revokeRefreshTokens makes every later refresh fail with invalid_grant.
func (p *fakeIDP) revokeRefreshTokens() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.refreshTokens)
}

func (p *fakeIDP) counts() (authorize, pkce, refresh int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.authorizeCount, p.pkceChecked, p.refreshCount
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
