package proxy

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Per-app origins (Config.AppDomain): each app is served on a host of its
// own, <app-id>.<app_domain>, so that a page one driver serves runs its
// scripts on an origin no other app and no gateway page shares. The main
// origin keeps the index, the History Servers' views and sign-in; its
// /app/<id>/… and /proxy/<id>/… hand the signed-in user over to the app's
// host with a one-time token, and the app's host answers it with a cookie
// of its own (host-only: no Domain attribute), bound to that app alone.
//
// The token is bound to the browser, as OAuth binds a code to its client
// (PKCE): the app's host first gives the browser a random binder cookie
// and sends it to the main origin with the binder's hash, the main origin
// puts the hash in the token, and the app's host takes the token only with
// the binder that hashes to it. A token someone else obtained, sent to the
// browser as a link, does not sign it in as them (login CSRF): the browser
// is handed over afresh, as whoever it is signed in as on the main origin.
//
//	main   /app/<id>/<p>                    → app host /_/handoff?p=<p>
//	app    /_/handoff?p=<p>   (sets binder) → main /app/<id>/_/handoff?b=<hash>&p=<p>
//	main   /app/<id>/_/handoff?b=…&p=…      → app host /_/handoff?t=<token>
//	app    /_/handoff?t=…     (binder, token) → <p>, with the app host's cookie

// appCookieName is appCookie's name, on https hostAppCookie: a browser
// takes a "__Host-" cookie only from the app's very host (Secure, Path=/,
// no Domain), so that another app's host cannot plant or shadow it.
func (s *Server) appCookieName() string {
	if s.publicURL.Scheme == "https" {
		return hostAppCookie
	}
	return appCookie
}

// appCookie is the app host's own session cookie, bindCookie the binder of
// a hand-off under way. Their names start with CookiePrefix, so they never
// reach Spark.
const (
	appCookie      = CookiePrefix + "_app"
	hostAppCookie  = "__Host-sparkgate_app"
	bindCookie     = CookiePrefix + "_bind"
	hostBindCookie = "__Host-sparkgate_bind"
)

// setHostCookie sets (or, with a negative ttl, deletes) a cookie of the
// app's host: no Domain, so the cookie is that host's alone; Path=/,
// HttpOnly and SameSite=Lax always, Secure when the public URL is https
// (as the "__Host-" names need).
func (s *Server) setHostCookie(w http.ResponseWriter, name, value string, ttl time.Duration) {
	maxAge := -1
	if ttl > 0 {
		maxAge = int(ttl / time.Second)
	}
	http.SetCookie(w, &http.Cookie{ //nolint:gosec // G124: HttpOnly and SameSite=Lax always; Secure when the public URL is https
		Name: name, Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, Secure: s.publicURL.Scheme == "https", SameSite: http.SameSiteLaxMode,
	})
}

// bindCookieName is bindCookie's name, "__Host-" on https as for
// appCookieName: no other app's host can plant a binder for this one.
func (s *Server) bindCookieName() string {
	if s.publicURL.Scheme == "https" {
		return hostBindCookie
	}
	return bindCookie
}

// Lifetimes of the hand-off token (one redirect) and of an app host's
// cookie. Signing out on the main origin does not reach app hosts: their
// cookie expires within appCookieTTL, and is then renewed only through a
// main-origin session.
const (
	handoffTTL   = 30 * time.Second
	appCookieTTL = 30 * time.Minute
)

// handoffPath is the one gateway path on an app host besides /_/static/.
const handoffPath = "/_/handoff"

// appHostID returns the app id that host (a Host header, with or without a
// port) names under the app domain.
func (s *Server) appHostID(host string) (string, bool) {
	if s.cfg.AppDomain == "" {
		return "", false
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	id, ok := strings.CutSuffix(host, "."+s.cfg.AppDomain)
	if !ok || !ValidAppID(id) {
		return "", false
	}
	return id, true
}

// IsAppHost reports whether a request's Host is an app's own host, so
// that the caller sends every path there (sign-in ones too) to the Server.
func (s *Server) IsAppHost(host string) bool {
	_, ok := s.appHostID(host)
	return ok
}

// appOrigin is the origin of an app's host: the public URL's scheme and
// port, the app's name under the app domain.
func (s *Server) appOrigin(id string) string {
	host := id + "." + s.cfg.AppDomain
	if p := s.publicURL.Port(); p != "" {
		host = net.JoinHostPort(host, p)
	}
	return s.publicURL.Scheme + "://" + host
}

// appClaims is what a hand-off token and an app host's cookie carry.
type appClaims struct {
	App    string   `json:"a"`
	User   string   `json:"u"`
	Groups []string `json:"g,omitempty"`
	Method string   `json:"m,omitempty"`
	Exp    int64    `json:"e"`
	// Hand-off only: where to go on the app host, the nonce that makes
	// the token good for one use, the hash of the browser's binder, and
	// whether this is the browser's second try (a browser that keeps no
	// binder gets an error page, not a loop of redirects).
	Path  string `json:"p,omitempty"`
	Nonce string `json:"n,omitempty"`
	Bind  string `json:"b,omitempty"`
	Again bool   `json:"r,omitempty"`
}

// sealClaims signs c for purpose ("handoff" or "cookie"), which keeps a
// token from being used as a cookie and the other way round.
func (s *Server) sealClaims(purpose string, c appClaims) string {
	b, _ := json.Marshal(c) // plain strings and numbers
	p := base64.RawURLEncoding.EncodeToString(b)
	return p + "." + s.claimsMAC(purpose, p)
}

func (s *Server) claimsMAC(purpose, payload string) string {
	m := hmac.New(sha256.New, s.csrfKey)
	m.Write([]byte("app-host\x00" + purpose + "\x00" + payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// openClaims verifies v for purpose, app and time; ok is false for
// anything forged, expired or for another app.
func (s *Server) openClaims(purpose, v, app string) (appClaims, bool) {
	var c appClaims
	p, mac, ok := strings.Cut(v, ".")
	if !ok || !hmac.Equal([]byte(mac), []byte(s.claimsMAC(purpose, p))) {
		return c, false
	}
	b, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil || json.Unmarshal(b, &c) != nil {
		return c, false
	}
	if c.App != app || c.User == "" || s.now().Unix() > c.Exp {
		return c, false
	}
	return c, true
}

// handoffNonces remembers used one-time nonces (hand-off tokens, kill
// confirmations) until their token expires.
type handoffNonces struct {
	mu   sync.Mutex
	used map[string]int64 // nonce -> expiry (unix seconds)
}

// use reports whether nonce is fresh, and marks it used.
func (n *handoffNonces) use(nonce string, exp, now int64) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.used == nil {
		n.used = make(map[string]int64)
	}
	if len(n.used) > 4096 {
		for k, e := range n.used {
			if e < now {
				delete(n.used, k)
			}
		}
	}
	if _, seen := n.used[nonce]; seen {
		return false
	}
	n.used[nonce] = exp
	return true
}

// handOff answers a main-origin request for an app's page (already
// authorized). Without a binder's hash (the browser's first request) it
// sends the browser to the app's host for a binder; with one it mints the
// one-time token, bound to it, for the signed-in user.
//
// An app whose id has capital letters has no host of its own: a browser
// asks for a host name in lower case, and appHostID reads it so, so the
// host of "App-1" would be the host of another app, "app-1" (any user can
// start an app of that id), and a hand-off there would take the user to
// that app's driver.
func (s *Server) handOff(w http.ResponseWriter, r *http.Request, st *reqState, id, path string) error {
	if id != strings.ToLower(id) {
		return errorf(http.StatusNotFound, "app %s has capital letters in its id, and host names ignore case: "+
			"with proxy.app_domain set, the gateway serves only apps whose ids are in lower case (Spark's own ids are)", id)
	}
	if r.URL.RawQuery != "" {
		path += "?" + r.URL.RawQuery
	}
	if st.handoffBind == "" {
		handOffRedirect(w, s.appOrigin(id)+handoffPath+"?p="+url.QueryEscape(path))
		return nil
	}
	nonce := make([]byte, 16)
	_, _ = rand.Read(nonce)
	tok := s.sealClaims("handoff", appClaims{
		App: id, User: st.ident.User, Groups: st.ident.Groups, Method: st.ident.Method,
		Exp: s.now().Add(handoffTTL).Unix(), Path: path, Nonce: base64.RawURLEncoding.EncodeToString(nonce),
		Bind: st.handoffBind, Again: st.handoffAgain,
	})
	handOffRedirect(w, s.appOrigin(id)+handoffPath+"?t="+url.QueryEscape(tok))
	return nil
}

// handOffRedirect sends the browser on to the next step of a hand-off:
// never cached, and with no Referer, which would carry the token or the
// binder's hash to the next host.
func handOffRedirect(w http.ResponseWriter, loc string) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("Location", loc)
	w.WriteHeader(http.StatusFound)
}

// bindHandOff serves the main origin's /app/<id>/_/handoff?b=<hash>&p=<p>:
// the app's host gave the browser a binder and sent it back here. The
// request is judged as the page p of the app it names would be (sign-in,
// the kill guard, lookup, authorization, the History Server's view once
// the app has ended), and a token is minted only where that page would be
// handed over.
func (s *Server) bindHandOff(w http.ResponseWriter, r *http.Request, st *reqState) error {
	q := r.URL.Query()
	bind, p := q.Get("b"), q.Get("p")
	id := st.route.AppID
	target := "/app/" + id + p
	if strings.HasPrefix(p, "/proxy/"+id+"/") || p == "/proxy/"+id {
		target = p
	}
	u, err := url.ParseRequestURI(target)
	if err != nil || len(bind) != bindHashLen || !localPath(p) {
		return errorf(http.StatusBadRequest, "malformed hand-off request")
	}
	rt, err := ParseRoute(SentPath(u))
	if err != nil || (rt.Kind != KindApp && rt.Kind != KindProxy) || rt.AppID != id || rt.Path == handoffPath {
		return errorf(http.StatusBadRequest, "malformed hand-off request")
	}
	r2 := r.Clone(r.Context())
	r2.URL, r2.RequestURI = u, u.RequestURI()
	st.route = rt
	st.handoffBind, st.handoffAgain = bind, q.Has("r")
	return s.serveApp(w, r2, st)
}

// localPath reports whether p is a path on this host, not a way to another
// ("//host", "/\host" and the like).
func localPath(p string) bool {
	return strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "//") && !strings.HasPrefix(p, "/\\")
}

// bindHashLen is the length of a binder's hash as sent: base64url of
// SHA-256.
var bindHashLen = base64.RawURLEncoding.EncodedLen(sha256.Size)

func bindHash(binder string) string {
	h := sha256.Sum256([]byte(binder))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

// beginHandOff gives the browser a fresh binder on the app's host and
// sends it to the main origin for a token bound to it; again marks the
// second try.
func (s *Server) beginHandOff(w http.ResponseWriter, id, path string, again bool) error {
	if !localPath(path) {
		return errorf(http.StatusBadRequest, "malformed hand-off request")
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	binder := base64.RawURLEncoding.EncodeToString(b)
	s.setHostCookie(w, s.bindCookieName(), binder, handoffTTL)
	loc := s.publicURL.Scheme + "://" + s.publicURL.Host + "/app/" + id + handoffPath +
		"?b=" + bindHash(binder) + "&p=" + url.QueryEscape(path)
	if again {
		loc += "&r=1"
	}
	handOffRedirect(w, loc)
	return nil
}

// serveAppHost answers every request to an app's host: the hand-off, the
// gateway's static files, and the app itself (the driver while it runs;
// the main origin's view once it has finished).
func (s *Server) serveAppHost(w http.ResponseWriter, r *http.Request, st *reqState, id string) {
	if strings.HasPrefix(r.URL.Path, "/_/static/") {
		s.static.ServeHTTP(w, r)
		return
	}
	if err := s.serveAppHostPath(w, r, st, id); err != nil {
		s.writeError(w, r, st, err)
	}
}

func (s *Server) serveAppHostPath(w http.ResponseWriter, r *http.Request, st *reqState, id string) error {
	st.appID = id
	if r.URL.Path == handoffPath {
		if q := r.URL.Query(); !q.Has("t") {
			return s.beginHandOff(w, id, q.Get("p"), false)
		}
		return s.acceptHandOff(w, r, st, id)
	}
	if r.URL.Path == "/oauth2/logout" {
		// The "sign out" link of the gateway's pages shown on this host:
		// this host's cookie goes, and the main origin signs out.
		s.setHostCookie(w, s.appCookieName(), "", -1)
		w.Header().Set("Location", s.publicURL.Scheme+"://"+s.publicURL.Host+"/oauth2/logout")
		w.WriteHeader(http.StatusSeeOther)
		return nil
	}
	p, err := CanonicalPath(SentPath(r.URL))
	if err != nil {
		return err
	}
	rt := Route{Kind: KindApp, AppID: id, Path: p}
	if rest, ok := strings.CutPrefix(p, "/proxy/"+id); ok && (rest == "" || rest[0] == '/') {
		// A driver with spark.ui.proxyBase links under /proxy/<id>.
		if rest == "" {
			rest = "/"
		}
		rt = Route{Kind: KindProxy, AppID: id, Prefix: "/proxy/" + id, Path: rest}
	}
	st.route, st.routed = rt, true
	st.json = wantsJSON(r, rt)
	c, err := r.Cookie(s.appCookieName())
	var claims appClaims
	ok := false
	if err == nil {
		claims, ok = s.openClaims("cookie", c.Value, id)
	}
	app, known := s.reg.Lookup(id)
	if !ok || !known || !app.Live() {
		// No session on this host yet (or it expired), or nothing live to
		// serve here: the main origin signs in, hands off again, or shows
		// the History Server's view.
		back := s.publicURL.Scheme + "://" + s.publicURL.Host + "/app/" + id + rt.Prefix + rt.Path
		if rt.Kind == KindProxy {
			back = s.publicURL.Scheme + "://" + s.publicURL.Host + rt.Prefix + rt.Path
		}
		redirect(w, r, back)
		return nil
	}
	st.ident = Identity{User: claims.User, Groups: claims.Groups, Method: claims.Method}
	st.user = claims.User
	return s.serveApp(w, r, st)
}

// acceptHandOff turns a hand-off token into the app host's cookie and
// sends the browser on to the page it asked for.
func (s *Server) acceptHandOff(w http.ResponseWriter, r *http.Request, st *reqState, id string) error {
	c, ok := s.openClaims("handoff", r.URL.Query().Get("t"), id)
	if ok && localPath(c.Path) && !s.boundHere(r, c.Bind) {
		// A token minted for another browser (a link someone sent), or
		// this one's binder has expired: hand this browser over afresh,
		// as whoever it is signed in as. Once only.
		if c.Again {
			s.log.Info("hand-off refused: no binder", zap.String("request_id", st.requestID), zap.String("app_id", id))
			return &httpError{Status: http.StatusForbidden, Title: "Sign-in failed", AppID: id,
				Msg: "this browser did not keep the gateway's sign-in cookie for the application's host; allow cookies for it and open the application from the index again"}
		}
		return s.beginHandOff(w, id, c.Path, true)
	}
	if ok {
		ok = s.nonces.use(c.Nonce, c.Exp, s.now().Unix())
	}
	if ok && s.claimOnce != nil {
		// Once across replicas too, where they share a store; the token
		// is kept until it expires (and a second more: clocks differ).
		ttl := time.Unix(c.Exp, 0).Sub(s.now()) + time.Second
		ok = s.claimOnce(r.Context(), "handoff:"+c.Nonce, ttl)
	}
	if !ok || !localPath(c.Path) {
		s.log.Info("hand-off refused", zap.String("request_id", st.requestID), zap.String("app_id", id))
		return &httpError{Status: http.StatusForbidden, Title: "Sign-in expired", AppID: id,
			Msg: "this sign-in link was used already or has expired; open the application from the index again"}
	}
	s.setHostCookie(w, s.appCookieName(),
		s.sealClaims("cookie", appClaims{App: id, User: c.User, Groups: c.Groups, Method: c.Method, Exp: s.now().Add(appCookieTTL).Unix()}),
		appCookieTTL)
	s.setHostCookie(w, s.bindCookieName(), "", -1) // the binder has served
	handOffRedirect(w, c.Path)
	return nil
}

// boundHere reports whether the request carries the binder whose hash the
// token holds.
func (s *Server) boundHere(r *http.Request, hash string) bool {
	c, err := r.Cookie(s.bindCookieName())
	return err == nil && hash != "" && hmac.Equal([]byte(bindHash(c.Value)), []byte(hash))
}
