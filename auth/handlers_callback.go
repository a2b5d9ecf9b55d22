package auth

import (
	"errors"
	"fmt"
	"net/http"

	"go.uber.org/zap"
	"golang.org/x/oauth2"
)

// serveCallback finishes a sign-in: it checks the state against the
// tab's login cookie, exchanges the code with the PKCE verifier, verifies
// the ID token and its nonce, maps the identity, sets the session and
// returns to the deep link the sign-in started from.
func (a *Authenticator) serveCallback(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet {
		return newHTTPError(http.StatusMethodNotAllowed, "Use GET.", nil)
	}
	q := r.URL.Query()
	state := q.Get("state")
	if len(state) < loginIDLen {
		return newHTTPError(http.StatusBadRequest, "The sign-in response has no valid state.", nil)
	}
	name := a.cookies.loginPrefix() + state[:loginIDLen]
	c, err := r.Cookie(name)
	if err != nil {
		return newHTTPError(http.StatusBadRequest, "This sign-in has expired or was started in another browser.", err)
	}
	// The login cookie is used once, whatever happens next.
	http.SetCookie(w, a.cookies.cookie(name, "", -1, a.basePath+a.cookies.loginPath()))
	var ls loginState
	if err := a.codec.decode(name, c.Value, &ls); err != nil {
		return newHTTPError(http.StatusBadRequest, "This sign-in has expired or was started in another browser.", fmt.Errorf("login cookie: %w", err))
	}
	if !constantTimeEqual(ls.State, state) || !a.now().Before(ls.Expiry) {
		return newHTTPError(http.StatusBadRequest, "This sign-in has expired or was started in another browser.", errors.New("state mismatch or expired"))
	}
	if e := q.Get("error"); e != "" {
		if !isErrorCode(e) {
			e = "unknown error"
		}
		return newHTTPError(http.StatusForbidden, "The identity provider refused the sign-in: "+e+".", nil)
	}
	code := q.Get("code")
	if code == "" {
		return newHTTPError(http.StatusBadRequest, "The sign-in response has no code.", nil)
	}

	ctx, cancel := a.oidc.callCtx(r.Context())
	defer cancel()
	tok, err := a.oidc.oauth2.Exchange(ctx, code, oauth2.VerifierOption(ls.Verifier))
	if err != nil {
		if _, ok := errors.AsType[*oauth2.RetrieveError](err); ok {
			return newHTTPError(http.StatusForbidden, "The identity provider refused the sign-in code.", err)
		}
		return newHTTPError(http.StatusBadGateway, "The identity provider could not be reached.", err)
	}
	s, idt, err := a.oidc.sessionFromToken(ctx, tok, ls.Nonce)
	if err != nil {
		return newHTTPError(http.StatusForbidden, "The identity provider's answer was not accepted.", err)
	}
	s.Expiry = a.now().Add(a.cfg.Session.TTL)
	if admitted, reason := a.gate.admits(s.identity()); !admitted {
		a.refuse(w, r, s.identity(), reason) // and no session cookie
		return nil
	}
	if s.RefreshToken != "" && *a.cfg.Session.Refresh {
		s.RefreshAt = idt.Expiry.Add(-refreshMargin)
	} else {
		s.RefreshToken = "" // not needed: keep the cookie small
	}
	// A new cookie replaces whatever session the browser had (no fixation).
	if err := a.saveSession(w, r, s); err != nil {
		return fmt.Errorf("saving session: %w", err)
	}
	a.logger.Info("signed in", zap.String("user", s.User), zap.Int("groups", len(s.Groups)), zap.String("method", MethodSession))
	rd, ok := safeRedirect(ls.Return)
	if !ok {
		rd = a.basePath + "/"
	}
	redirectTo(w, rd)
	return nil
}

// isErrorCode accepts OAuth error codes (RFC 6749 section 5.2 uses a small
// character set), so that nothing else from the query reaches the page.
func isErrorCode(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if (c < 'a' || c > 'z') && c != '_' {
			return false
		}
	}
	return true
}
