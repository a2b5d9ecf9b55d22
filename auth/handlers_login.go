package auth

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

const (
	// loginTTL is how long a started sign-in may take at the provider.
	loginTTL = 10 * time.Minute
	// loginIDLen is how much of the state names the login cookie.
	loginIDLen = 12
	// maxLoginCookies caps parallel sign-ins, so that abandoned ones cannot
	// grow the Cookie header until requests fail with 431.
	maxLoginCookies = 8
)

// loginState is what a login cookie holds between /oauth2/login and
// /oauth2/callback. Each sign-in has its own cookie, named after its state,
// so that several tabs signing in at once do not overwrite each other.
type loginState struct {
	State    string    `json:"s"`
	Nonce    string    `json:"n"`
	Verifier string    `json:"v"`
	Return   string    `json:"rd"`
	Expiry   time.Time `json:"e"`
}

// serveLogin starts a sign-in: it returns at once when the session is
// still valid or can be refreshed (writing the renewed cookie), and
// otherwise redirects to the provider with state, nonce and a PKCE S256
// challenge.
func (a *Authenticator) serveLogin(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return newHTTPError(http.StatusMethodNotAllowed, "Use GET.", nil)
	}
	rd := a.redirectTarget(r)
	s, renewed, err := a.currentSession(r.Context(), r)
	if err == nil && s != nil {
		if renewed {
			if err := a.saveSession(w, r, s); err != nil {
				return fmt.Errorf("saving refreshed session: %w", err)
			}
		}
		redirectTo(w, rd) // from redirectTarget: safeRedirect-validated or the base path
		return nil
	}

	ls := loginState{
		State:    randomString(24),
		Nonce:    randomString(24),
		Verifier: oauth2.GenerateVerifier(),
		Return:   rd,
		Expiry:   a.now().Add(loginTTL),
	}
	name := a.cookies.loginPrefix() + ls.State[:loginIDLen]
	value, err := a.codec.encode(name, &ls)
	if err != nil {
		return err
	}
	a.capLoginCookies(w, r)
	http.SetCookie(w, a.cookies.cookie(name, value, int(loginTTL/time.Second), a.basePath+a.cookies.loginPath()))
	authURL := a.oidc.oauth2.AuthCodeURL(ls.State,
		oauth2.S256ChallengeOption(ls.Verifier),
		oidc.Nonce(ls.Nonce))
	http.Redirect(w, r, authURL, http.StatusFound)
	return nil
}

// capLoginCookies expires the pending login cookies when there are too
// many; the newest sign-in then proceeds alone.
func (a *Authenticator) capLoginCookies(w http.ResponseWriter, r *http.Request) {
	var names []string
	for _, c := range r.Cookies() {
		if strings.HasPrefix(c.Name, a.cookies.loginPrefix()) {
			names = append(names, c.Name)
		}
	}
	if len(names) < maxLoginCookies {
		return
	}
	for _, n := range names {
		http.SetCookie(w, a.cookies.cookie(n, "", -1, a.basePath+a.cookies.loginPath()))
	}
}

// randomString returns n random bytes, base64url-encoded.
func randomString(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand panics instead)
	return base64.RawURLEncoding.EncodeToString(b)
}

func constantTimeEqual(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}
