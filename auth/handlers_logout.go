package auth

import (
	"crypto/sha256"
	"net/http"
	"net/url"

	"go.uber.org/zap"
)

// serveLogout clears every session cookie part, then sends the browser to
// the provider's end-session endpoint (mode oidc, when discovery lists one)
// or to the gateway's start page.
func (a *Authenticator) serveLogout(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		return newHTTPError(http.StatusMethodNotAllowed, "Use GET or POST.", nil)
	}
	var idToken, user string
	if value := readSessionValue(r); value != "" {
		var s session
		if err := a.codec.decode(sessionCookie, value, &s); err == nil {
			idToken, user = s.IDToken, s.User
			a.revoke(r.Context(), s.ID)
			key := sha256.Sum256([]byte(value))
			a.sessions.Remove(key)
			a.refreshed.Remove(key)
		}
	}
	clearSession(w, r, a.cookies, nil)
	if user != "" {
		a.logger.Info("signed out", zap.String("user", user))
	}
	home := a.basePath + "/"
	if a.oidc == nil || a.oidc.endSessionURL == "" {
		http.Redirect(w, r, home, http.StatusFound)
		return nil
	}
	u, err := url.Parse(a.oidc.endSessionURL)
	if err != nil {
		http.Redirect(w, r, home, http.StatusFound)
		return nil //nolint:nilerr // a broken endpoint must not keep the user signed in
	}
	q := u.Query()
	if idToken != "" {
		q.Set("id_token_hint", idToken)
	}
	q.Set("client_id", a.oidc.cfg.ClientID)
	q.Set("post_logout_redirect_uri", a.publicURL+"/")
	u.RawQuery = q.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
	return nil
}
