package auth

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"

	"go.uber.org/zap"
)

// localLogin is mode local: one user, and a random token in a URL printed
// at start (as Jupyter does). The first to open the URL gets a session;
// the token is then spent, so a copy of the URL (shell history, a shared
// terminal, a log) is worth nothing, and it is never a bearer token.
type localLogin struct {
	user   string
	groups []string
	token  []byte
	used   atomic.Bool
}

func newLocalLogin(cfg LocalConfig) (*localLogin, error) {
	t := make([]byte, 32)
	if _, err := rand.Read(t); err != nil {
		return nil, fmt.Errorf("generating login token: %w", err)
	}
	return &localLogin{user: cfg.User, groups: slices.Clone(cfg.Groups), token: t}, nil
}

// check compares a hex token with the login token in constant time.
func (l *localLogin) check(s string) bool {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(l.token) {
		return false
	}
	return subtle.ConstantTimeCompare(b, l.token) == 1
}

// serveLocalToken signs in whoever holds the token first, then returns to
// rd. Only GET spends it: a HEAD from a link checker does not.
func (a *Authenticator) serveLocalToken(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		return newHTTPError(http.StatusMethodNotAllowed, "Use GET.", nil)
	}
	if !a.local.check(r.URL.Query().Get("token")) {
		a.renderPage(w, http.StatusForbidden, "Wrong login token",
			"This login link is not valid. Open the login URL printed by sparkgate at start.", "", "")
		return nil
	}
	if !a.local.used.CompareAndSwap(false, true) {
		a.logger.Warn("the local login URL was opened again after its first use; refused")
		a.renderPage(w, http.StatusForbidden, "Login link already used",
			"This login link works once and has been used. If that was not you, stop sparkgate. "+
				"Restart sparkgate for a new login URL.", "", "")
		return nil
	}
	s := &session{
		ID:     rand.Text(),
		User:   a.local.user,
		Groups: a.local.groups,
		Method: MethodLocal,
		Expiry: a.now().Add(a.cfg.Session.TTL),
	}
	if err := a.saveSession(w, r, s); err != nil {
		return fmt.Errorf("saving local session: %w", err)
	}
	a.logger.Info("signed in", zap.String("user", s.User), zap.String("method", MethodLocal))
	redirectTo(w, a.redirectTarget(r)) // a safeRedirect-validated path or the base path
	return nil
}

// serveLocalChallenge tells a browser how to sign in in mode local.
func (a *Authenticator) serveLocalChallenge(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	a.renderPage(w, http.StatusUnauthorized, "Sign in to sparkgate",
		"Open the login URL printed by sparkgate at start (it contains a token).", "", "")
}
