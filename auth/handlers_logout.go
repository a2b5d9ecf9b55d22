package auth

import (
	"html/template"
	"net/http"
	"net/url"
	"strings"

	"go.uber.org/zap"
)

// serveLogout signs out on POST only, so that a link, an image or a
// prefetch cannot sign anyone out, and only from the gateway's own pages
// (see sameOrigin). GET answers a page with the sign-out button.
//
// A sign-out clears every session cookie part and revokes the session,
// then goes to the gateway's start page, or (mode oidc, when discovery
// lists an end-session endpoint) to the provider's sign-out through a page
// that refreshes to it: a redirect would be refused by the form-action
// policy of the page whose form was posted.
func (a *Authenticator) serveLogout(w http.ResponseWriter, r *http.Request) error {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		user := ""
		if s, _, err := a.currentSession(r.Context(), r); err == nil && s != nil {
			user = s.User
		}
		a.renderLogoutPage(w, http.StatusOK, logoutPage{
			Title: "Sign out of sparkgate", User: user, Form: a.basePath + "/oauth2/logout",
		})
		return nil
	case http.MethodPost:
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		return newHTTPError(http.StatusMethodNotAllowed, "Sign out with the button on sparkgate's pages (POST).", nil)
	}
	if ok, why := a.sameOrigin(r); !ok {
		a.logger.Info("sign-out refused: not the browser's own from the gateway's page", zap.String("reason", why))
		a.renderLogoutPage(w, http.StatusForbidden, logoutPage{
			Title:   "Sign-out refused",
			Message: "This sign-out request came from another site or a script, so sparkgate ignored it. To sign out, use this button.",
			Form:    a.basePath + "/oauth2/logout",
		})
		return nil
	}
	var idToken, user string
	if value := readSessionValue(r, a.cookies.sessionName()); value != "" {
		var s session
		if err := a.codec.decode(sessionCookie, value, &s); err == nil {
			idToken, user = s.IDToken, s.User
			a.revoke(r.Context(), s.ID)
			key := sessionKey(value)
			a.sessions.Remove(key)
			a.refreshed.Remove(key)
		}
	}
	clearSession(w, r, a.cookies, nil)
	if user != "" {
		a.logger.Info("signed out", zap.String("user", user))
	}
	home := a.basePath + "/"
	end := a.endSessionURL(idToken)
	if end == "" {
		http.Redirect(w, r, home, http.StatusSeeOther)
		return nil
	}
	a.renderLogoutPage(w, http.StatusOK, logoutPage{
		Title:    "Signed out of sparkgate",
		Message:  "You are signed out of sparkgate. Now signing you out at the identity provider too.",
		Continue: template.URL(end), //nolint:gosec // built from the provider's discovery document, which the operator configured
	})
	return nil
}

// endSessionURL is the provider's end-session URL for this sign-out, or ""
// when there is none to go to.
func (a *Authenticator) endSessionURL(idToken string) string {
	if a.oidc == nil || a.oidc.endSessionURL == "" {
		return ""
	}
	u, err := url.Parse(a.oidc.endSessionURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") {
		return "" // a broken endpoint must not keep the user signed in
	}
	q := u.Query()
	if idToken != "" {
		q.Set("id_token_hint", idToken)
	}
	q.Set("client_id", a.oidc.cfg.ClientID)
	q.Set("post_logout_redirect_uri", a.publicURL+"/")
	u.RawQuery = q.Encode()
	return u.String()
}

// sameOrigin tells a sign-out posted from the gateway's own pages from one
// another site makes a browser send. Browsers send Sec-Fetch-Site (and
// Origin) with every POST; it must say same-origin. Without either header
// the sender is not a browser that another site could drive.
//
// It must also be the user's own navigation (the button clicked), not a
// script's request: the answer's way to the provider's sign-out holds the
// session's ID token, which a bearer token may be, and a script of a page
// on the gateway's origin (a driver's page, without proxy.app_domain)
// must not read it. fetch and XMLHttpRequest say Sec-Fetch-Mode cors,
// no-cors or same-origin; a form a script submits (into a window it
// opened and can read) sends no Sec-Fetch-User. A browser too old to send
// fetch metadata (Safari before 16.4) is judged by Origin alone.
func (a *Authenticator) sameOrigin(r *http.Request) (bool, string) {
	if mode := r.Header.Get("Sec-Fetch-Mode"); mode != "" {
		if mode != "navigate" {
			return false, "Sec-Fetch-Mode: " + mode
		}
		if r.Header.Get("Sec-Fetch-User") != "?1" {
			return false, "no Sec-Fetch-User: not the user's click"
		}
	}
	if dest := r.Header.Get("Sec-Fetch-Dest"); dest != "" && dest != "document" {
		return false, "Sec-Fetch-Dest: " + dest
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" {
		if site == "same-origin" || site == "none" {
			return true, ""
		}
		return false, "Sec-Fetch-Site: " + site
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true, ""
	}
	u, err := url.Parse(a.publicURL)
	if err != nil {
		return false, "Origin: " + origin
	}
	if strings.EqualFold(origin, u.Scheme+"://"+u.Host) {
		return true, ""
	}
	// The gateway reached by another name: its scheme still. http://host
	// is another origin than https://host, and can be anyone's.
	if o, err := url.Parse(origin); err == nil && o.Host != "" && strings.EqualFold(o.Host, r.Host) && strings.EqualFold(o.Scheme, u.Scheme) {
		return true, ""
	}
	return false, "Origin: " + origin
}

// logoutPage is what the sign-out pages show.
type logoutPage struct {
	Title, Message, User string
	// Form, when set, shows the sign-out button posting there.
	Form string
	// Continue, when set, is where the page sends the browser at once.
	Continue template.URL
}

var logoutTemplate = template.Must(template.New("logout").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}} - sparkgate</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
{{- if .Continue}}
<meta http-equiv="refresh" content="0; url={{.Continue}}">
{{- end}}
<style>body{font-family:sans-serif;max-width:40em;margin:4em auto;padding:0 1em;color:#222}</style>
</head><body><h1>{{.Title}}</h1>
{{- if .Message}}<p>{{.Message}}</p>{{end}}
{{- if .User}}<p>You are signed in as <strong>{{.User}}</strong>.</p>{{end}}
{{- if .Form}}<form method="post" action="{{.Form}}"><button type="submit" id="sign-out">Sign out</button></form>{{end}}
{{- if .Continue}}<p><a id="continue" href="{{.Continue}}">Continue</a></p>{{end}}
</body></html>
`))

func (a *Authenticator) renderLogoutPage(w http.ResponseWriter, status int, p logoutPage) {
	pageHeaders(w)
	w.WriteHeader(status)
	_ = logoutTemplate.Execute(w, p)
}
