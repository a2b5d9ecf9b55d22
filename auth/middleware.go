package auth

import (
	"net/http"

	"go.uber.org/zap"
)

// Middleware rewrites the session cookie when the session behind it was
// renewed with the refresh token, before next runs. Authenticate has no
// ResponseWriter, so without this the renewed session would live only in
// this replica's memory: another replica, or this one after a restart, would
// present the spent refresh token again and sign the user out.
func (a *Authenticator) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "" {
			s, renewed, err := a.currentSession(r.Context(), r)
			if err == nil && s != nil && renewed {
				if err := a.saveSession(w, r, s); err != nil {
					a.logger.Warn("writing renewed session cookie", zap.String("user", s.User), zap.Error(err))
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}
