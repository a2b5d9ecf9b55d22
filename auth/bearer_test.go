package auth

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

func signWith(t *testing.T, alg jose.SignatureAlgorithm, key any, kid string, claims map[string]any) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: jose.JSONWebKey{Key: key, KeyID: kid}}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(claims)
	obj, err := signer.Sign(b)
	if err != nil {
		t.Fatal(err)
	}
	s, err := obj.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestBearerTokens(t *testing.T) {
	e := newFlowEnv(t, func(c *Config) { c.OIDC.Audiences = []string{"sparkgate", "spark-api"} })
	now := e.clock.Now()
	claims := func(edit func(map[string]any)) map[string]any {
		c := map[string]any{
			"iss": e.idp.issuer(), "aud": "sparkgate", "sub": "u-2",
			"preferred_username": "bob", "groups": []string{"ops"},
			"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
		}
		if edit != nil {
			edit(c)
		}
		return c
	}
	valid := e.idp.sign(claims(nil))
	b64 := base64.RawURLEncoding.EncodeToString
	payload, _ := json.Marshal(claims(nil))
	pubDER, err := x509.MarshalPKIXPublicKey(&e.idp.key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	otherKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(valid, ".")
	sig := []byte(parts[2])
	sig[10] ^= 0x01
	if sig[10] == '.' {
		sig[10] = 'A'
	}

	tests := []struct {
		name   string
		token  string
		wantOK bool
	}{
		{"valid", valid, true},
		{"second audience", e.idp.sign(claims(func(c map[string]any) { c["aud"] = []string{"spark-api"} })), true},
		{"alg none", b64([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + b64(payload) + ".", false},
		{"alg none with kid", b64([]byte(`{"alg":"none","kid":"k1"}`)) + "." + b64(payload) + ".", false},
		{"wrong issuer", e.idp.sign(claims(func(c map[string]any) { c["iss"] = "https://evil.example" })), false},
		{"wrong audience", e.idp.sign(claims(func(c map[string]any) { c["aud"] = "someone-else" })), false},
		{"no audience", e.idp.sign(claims(func(c map[string]any) { delete(c, "aud") })), false},
		{"expired", e.idp.sign(claims(func(c map[string]any) { c["exp"] = now.Add(-time.Minute).Unix() })), false},
		{"not yet valid", e.idp.sign(claims(func(c map[string]any) { c["nbf"] = now.Add(time.Hour).Unix() })), false},
		{"bad signature", parts[0] + "." + parts[1] + "." + string(sig), false},
		{"changed payload", parts[0] + "." + b64([]byte(strings.Replace(string(payload), "bob", "adm", 1))) + "." + parts[2], false},
		{"HS256 with public key PEM", signWith(t, jose.HS256, pubPEM, "k1", claims(nil)), false},
		{"HS256 with public key DER", signWith(t, jose.HS256, pubDER, "k1", claims(nil)), false},
		{"another key, same kid", signWith(t, jose.RS256, otherKey, "k1", claims(nil)), false},
		{"another key, other kid", signWith(t, jose.RS256, otherKey, "k2", claims(nil)), false},
		{"no user claim", e.idp.sign(claims(func(c map[string]any) { delete(c, "preferred_username") })), false},
		{"garbage", "not.a.jwt", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/api/v1/applications", nil)
			r.Header.Set("Authorization", "Bearer "+tc.token)
			id, ok, err := e.auth.Authenticate(r)
			if err != nil {
				t.Fatalf("Authenticate(%s) error = %v; want none (bad tokens are not errors)", tc.name, err)
			}
			if ok != tc.wantOK {
				t.Fatalf("Authenticate(%s) = %+v, %v; want signed in = %v", tc.name, id, ok, tc.wantOK)
			}
			if ok && (id.User != "bob" || id.Method != MethodBearer || strings.Join(id.Groups, ",") != "ops") {
				t.Errorf("Authenticate(%s) = %+v; want bob/ops/bearer", tc.name, id)
			}
		})
	}

	// A cached valid token still dies at its expiry.
	r := httptest.NewRequest(http.MethodGet, "/api/v1/applications", nil)
	r.Header.Set("Authorization", "Bearer "+valid)
	e.clock.Advance(2 * time.Hour)
	if id, ok, _ := e.auth.Authenticate(r); ok {
		t.Errorf("Authenticate(cached token after expiry) = %+v; want not signed in", id)
	}
}

func TestBearerHeaderParsing(t *testing.T) {
	tests := []struct {
		in     string
		want   string
		wantOK bool
	}{
		{"Bearer abc", "abc", true},
		{"bearer abc", "abc", true},
		{"Bearer  abc ", "abc", true},
		{"Bearer", "", false},
		{"Bearer ", "", false},
		{"Basic YWxhZGRpbjpvcGVuc2VzYW1l", "", false},
		{"Token abc", "", false},
	}
	for _, tc := range tests {
		got, ok := bearerToken(tc.in)
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("bearerToken(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.wantOK)
		}
	}
}

// TestBearerBadSignaturesFetchKeysRarely: go-oidc fetches the provider's
// keys again for every token whose signature fails; tokens with the right
// issuer and a made-up signature, which anyone can send, make at most one
// fetch in keyFetchEvery, and a valid token still verifies meanwhile.
func TestBearerBadSignaturesFetchKeysRarely(t *testing.T) {
	e := newFlowEnv(t, nil)
	now := e.clock.Now()
	claims := map[string]any{"iss": e.idp.issuer(), "aud": "sparkgate", "sub": "u-2", "preferred_username": "bob",
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
	valid := e.idp.sign(claims)
	otherKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ask := func(token string) int {
		req, _ := http.NewRequest(http.MethodGet, e.gw.srv.URL+"/api", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := newBrowser(t, false).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	if code := ask(valid); code != http.StatusOK {
		t.Fatalf("valid token = %d; want 200", code)
	}
	for i := range 20 {
		kid := "k1"
		if i%2 == 1 {
			kid = "unknown-" + string(rune('a'+i))
		}
		claims["sub"] = "u-" + string(rune('a'+i))
		if code := ask(signWith(t, jose.RS256, otherKey, kid, claims)); code == http.StatusOK {
			t.Fatalf("token %d signed with another key = 200", i)
		}
	}
	claims["sub"] = "u-3"
	if code := ask(e.idp.sign(claims)); code != http.StatusOK {
		t.Errorf("valid token after the bad ones = %d; want 200", code)
	}
	e.idp.mu.Lock()
	n := e.idp.jwksCount
	e.idp.mu.Unlock()
	if n > 2 {
		t.Errorf("the provider's keys were fetched %d times for 22 tokens; want at most 2 (the first verification, one refetch)", n)
	}
}
