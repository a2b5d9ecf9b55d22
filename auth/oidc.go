package auth

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"go.uber.org/zap"
	"golang.org/x/oauth2"
)

// asymmetricAlgs are the only signatures accepted on ID and bearer tokens:
// "none" and the HMAC algorithms are refused, so that nobody can sign a
// token with the provider's public key as an HMAC secret.
var asymmetricAlgs = []string{
	oidc.RS256, oidc.RS384, oidc.RS512,
	oidc.ES256, oidc.ES384, oidc.ES512,
	oidc.PS256, oidc.PS384, oidc.PS512,
	oidc.EdDSA,
}

// refreshMargin renews a session this long before its ID token expires.
const refreshMargin = 30 * time.Second

// errRefreshRefused means the provider declined a refresh token (revoked,
// expired, user disabled): the user must sign in again.
var errRefreshRefused = errors.New("refresh refused")

// oidcClient is the configured OpenID Connect provider.
type oidcClient struct {
	cfg        OIDCConfig
	provider   *oidc.Provider
	oauth2     oauth2.Config
	idVerifier *oidc.IDTokenVerifier // ID tokens: aud must hold client_id
	bearer     *oidc.IDTokenVerifier // access tokens: aud checked by us
	mapping    claimMapping
	// httpClient carries a timeout so that even background key fetches by
	// go-oidc are bounded.
	httpClient    *http.Client
	endSessionURL string
}

func newOIDCClient(ctx context.Context, cfg OIDCConfig, allowedDomains []string, redirectURL string, now func() time.Time) (*oidcClient, error) {
	hc := &http.Client{Timeout: cfg.Timeout}
	ctx, cancel := context.WithTimeout(oidc.ClientContext(ctx, hc), cfg.Timeout)
	defer cancel()
	provider, err := oidc.NewProvider(ctx, cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("discovering OIDC provider %s: %w", cfg.Issuer, err)
	}
	var meta struct {
		EndSession string `json:"end_session_endpoint"`
		JWKS       string `json:"jwks_uri"`
	}
	if err := provider.Claims(&meta); err != nil {
		return nil, fmt.Errorf("reading discovery document of %s: %w", cfg.Issuer, err)
	}
	if u, err := url.Parse(meta.JWKS); err == nil {
		hc.Transport = &keyFetchLimit{next: http.DefaultTransport, url: u.String(), every: keyFetchEvery}
	}
	c := &oidcClient{
		cfg:      cfg,
		provider: provider,
		oauth2: oauth2.Config{
			ClientID:     cfg.ClientID,
			ClientSecret: cfg.ClientSecret,
			Endpoint:     provider.Endpoint(),
			RedirectURL:  redirectURL,
			Scopes:       cfg.Scopes,
		},
		idVerifier: provider.Verifier(&oidc.Config{
			ClientID:             cfg.ClientID,
			SupportedSigningAlgs: asymmetricAlgs,
			Now:                  now,
		}),
		bearer: provider.Verifier(&oidc.Config{
			SkipClientIDCheck:    true, // several audiences: checked in bearer.go
			SupportedSigningAlgs: asymmetricAlgs,
			Now:                  now,
		}),
		mapping: claimMapping{
			UserClaim:        cfg.UserClaim,
			StripEmailDomain: cfg.StripEmailDomain,
			StripOnly:        lowerAll(allowedDomains),
			GroupsClaim:      cfg.GroupsClaim,
			ExtraGroups:      cfg.ExtraGroups,
		},
		httpClient: hc,
	}
	if *cfg.EndSession {
		c.endSessionURL = meta.EndSession
	}
	return c, nil
}

// keyFetchEvery is how often the provider's keys may be fetched. go-oidc
// fetches them again whenever a token's signature does not verify with
// the keys it has, so without a bound anyone could make every request a
// request to the provider, with a token of the right issuer and a made-up
// signature. A token signed with a key newer than the last fetch verifies
// once the next fetch is allowed.
const keyFetchEvery = 10 * time.Second

var errKeyFetchTooSoon = errors.New("the provider's keys were fetched less than 10s ago")

// keyFetchLimit passes one request for the provider's keys (url) per
// every, and every other request as it is.
type keyFetchLimit struct {
	next  http.RoundTripper
	url   string
	every time.Duration

	mu   sync.Mutex
	last time.Time
}

func (l *keyFetchLimit) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.String() == l.url {
		l.mu.Lock()
		now := time.Now()
		if !l.last.IsZero() && now.Sub(l.last) < l.every {
			l.mu.Unlock()
			return nil, errKeyFetchTooSoon
		}
		l.last = now
		l.mu.Unlock()
	}
	return l.next.RoundTrip(r)
}

// callCtx bounds one call to the provider.
func (c *oidcClient) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(oidc.ClientContext(ctx, c.httpClient), c.cfg.Timeout)
}

// sessionFromToken verifies the ID token of a token response and maps it to
// a session. nonce is checked when not empty (code flow; refresh responses
// carry none or the original).
func (c *oidcClient) sessionFromToken(ctx context.Context, tok *oauth2.Token, nonce string) (*session, *oidc.IDToken, error) {
	raw, ok := tok.Extra("id_token").(string)
	if !ok || raw == "" {
		return nil, nil, errors.New("token response has no id_token")
	}
	idt, err := c.idVerifier.Verify(ctx, raw)
	if err != nil {
		return nil, nil, fmt.Errorf("verifying ID token: %w", err)
	}
	if nonce != "" && !constantTimeEqual(idt.Nonce, nonce) {
		return nil, nil, errors.New("ID token nonce does not match")
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return nil, nil, fmt.Errorf("reading ID token claims: %w", err)
	}
	if c.cfg.UseUserinfo && !hasClaim(claims, c.cfg.GroupsClaim) && c.provider.UserInfoEndpoint() != "" {
		ui, err := c.provider.UserInfo(ctx, oauth2.StaticTokenSource(tok))
		if err != nil {
			return nil, nil, fmt.Errorf("fetching userinfo: %w", err)
		}
		if ui.Subject != idt.Subject {
			return nil, nil, errors.New("userinfo subject differs from ID token subject")
		}
		var extra map[string]any
		if err := ui.Claims(&extra); err != nil {
			return nil, nil, fmt.Errorf("reading userinfo claims: %w", err)
		}
		for k, v := range extra {
			if _, ok := claims[k]; !ok {
				claims[k] = v
			}
		}
	}
	m, err := mapIdentity(claims, c.mapping)
	if err != nil {
		return nil, nil, fmt.Errorf("mapping identity: %w", err)
	}
	return &session{ID: rand.Text(), User: m.user, Groups: m.groups, Domain: m.domain, Method: MethodSession, RefreshToken: tok.RefreshToken, IDToken: raw}, idt, nil
}

// refreshSession renews s with its refresh token. It returns
// errRefreshRefused (wrapped) when the provider or the new ID token says
// no, and other errors when the provider could not be asked.
func (a *Authenticator) refreshSession(ctx context.Context, s *session) (*session, error) {
	c := a.oidc
	ctx, cancel := c.callCtx(context.WithoutCancel(ctx))
	defer cancel()
	// An expired token makes the source refresh at once.
	tok, err := c.oauth2.TokenSource(ctx, &oauth2.Token{RefreshToken: s.RefreshToken, Expiry: time.Unix(1, 0)}).Token()
	if err != nil {
		if _, ok := errors.AsType[*oauth2.RetrieveError](err); ok {
			return nil, fmt.Errorf("%w: %w", errRefreshRefused, err)
		}
		return nil, err
	}
	var ns *session
	if _, ok := tok.Extra("id_token").(string); ok {
		var idt *oidc.IDToken
		if ns, idt, err = c.sessionFromToken(ctx, tok, ""); err != nil {
			return nil, fmt.Errorf("%w: %w", errRefreshRefused, err)
		}
		ns.RefreshAt = idt.Expiry.Add(-refreshMargin)
	} else {
		// No new ID token: keep the identity until the access token expires.
		cp := *s
		ns = &cp
		ns.RefreshAt = tok.Expiry.Add(-refreshMargin)
		if tok.Expiry.IsZero() {
			ns.RefreshAt = time.Time{}
		}
	}
	if ns.RefreshToken == "" {
		ns.RefreshToken = s.RefreshToken // not rotated
	}
	if s.ID != "" {
		ns.ID = s.ID // the same sign-in: signing out revokes both values
	}
	ns.Expiry = a.now().Add(a.cfg.Session.TTL)
	a.logger.Debug("session refreshed", zap.String("user", ns.User))
	return ns, nil
}
