package auth

import (
	"context"
	"net/http"

	"go.uber.org/zap"
)

// sessionCtxKey carries Middleware's session lookup to Authenticate.
type sessionCtxKey struct{}

// sessionLookup is the result of one currentSession call.
type sessionLookup struct {
	s   *session
	err error
}

// Middleware rewrites the session cookie when the session behind it was
// renewed with the refresh token, before next runs. Authenticate has no
// ResponseWriter, so without this the renewed session would live only in
// this replica's memory: another replica, or this one after a restart, would
// present the spent refresh token again and sign the user out. The lookup it
// makes is handed on in the request's context, so that Authenticate does not
// decode the same cookie again.
func (a *Authenticator) Middleware(next http.Handler) http.Handler {
	if a.oidc == nil || !*a.cfg.Session.Refresh {
		// Sessions are never renewed: there is no cookie to rewrite.
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			next.ServeHTTP(w, r)
			return
		}
		s, renewed, err := a.currentSession(r.Context(), r)
		if s == nil && err == nil {
			next.ServeHTTP(w, r) // no session cookie: nothing to hand on
			return
		}
		if renewed {
			if err := a.saveRenewed(w, r, s); err != nil {
				a.logger.Warn("writing renewed session cookie", zap.String("user", s.User), zap.Error(err))
			}
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), sessionCtxKey{}, sessionLookup{s, err})))
	})
}
