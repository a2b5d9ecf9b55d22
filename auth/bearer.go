package auth

import (
	"context"
	"crypto/sha256"
	"slices"
	"strings"

	"go.uber.org/zap"
)

// bearerToken extracts the token of an "Authorization: Bearer" header.
func bearerToken(h string) (string, bool) {
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// authenticateBearer verifies a JWT sent by an API client: signature
// against the issuer's keys (asymmetric algorithms only), issuer, expiry,
// and an audience from auth.oidc.audiences. A bad token means not signed
// in, never an error. Local mode accepts none.
func (a *Authenticator) authenticateBearer(ctx context.Context, token string) (Identity, bool, error) {
	if a.local != nil {
		// Local mode has no bearer tokens: the login token works once, in
		// a browser, and is spent.
		return Identity{}, false, nil
	}
	key := sha256.Sum256([]byte("bearer\x00" + token))
	if s, ok := a.sessions.Get(key); ok {
		if a.now().Before(s.Expiry) {
			return s.identity(), true, nil
		}
		a.sessions.Remove(key)
		return Identity{}, false, nil
	}
	c := a.oidc
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	refuse := func(reason string, err error) (Identity, bool, error) {
		if ce := a.logger.Check(zap.DebugLevel, "bearer token refused"); ce != nil {
			ce.Write(zap.String("reason", reason), zap.Error(err))
		}
		return Identity{}, false, nil
	}
	idt, err := c.bearer.Verify(ctx, token)
	if err != nil {
		return refuse("verify", err)
	}
	if !slices.ContainsFunc(idt.Audience, func(aud string) bool { return slices.Contains(c.cfg.Audiences, aud) }) {
		return refuse("audience", nil)
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return refuse("claims", err)
	}
	m, err := mapIdentity(claims, c.mapping)
	if err != nil {
		return refuse("mapping", err)
	}
	s := &session{User: m.user, Groups: m.groups, Domain: m.domain, Method: MethodBearer, Expiry: idt.Expiry}
	a.sessions.Add(key, s)
	return s.identity(), true, nil
}
