// Package auth decides who sends each request to the gateway: it runs the
// OpenID Connect sign-in (code flow with PKCE), keeps sessions in
// encrypted, authenticated cookies, verifies bearer tokens of API clients,
// and offers a single-user local mode with a login URL printed at start.
// With auth.session.store redis, replicas share sign-outs and take turns
// renewing a session (replicas.go, store.go).
//
// It produces an Identity (user and groups) and nothing else: it knows
// nothing of Spark, never authorizes, and never reads identity from request
// headers such as X-Forwarded-User. It never logs tokens, cookies or
// Authorization headers.
package auth

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
	"go.uber.org/zap"
)

const (
	// cacheSize bounds the decoded-session and bearer caches.
	cacheSize = 4096
	// cacheTTL bounds how long a decoded credential is reused without
	// decrypting or verifying it again; expiry is still checked each time.
	cacheTTL = time.Minute
)

// Authenticator signs users in and identifies the sender of each request.
// It is safe for concurrent use.
type Authenticator struct {
	cfg       Config
	logger    *zap.Logger
	now       func() time.Time
	publicURL string // without trailing slash
	basePath  string // the public URL's path, without trailing slash
	cookies   cookieOptions
	codec     *sessionCodec

	// sessions caches decoded session cookies by the hash of their value,
	// so repeated requests skip decryption.
	sessions *expirable.LRU[[32]byte, *session]
	// refreshed maps the hash of a cookie whose session was renewed inside
	// Authenticate (which cannot set cookies) to the renewed session, so the
	// refresh token is used once; the login handler writes it to a cookie.
	refreshed *expirable.LRU[[32]byte, *session]
	// renewedValues holds the encoded cookie of each renewed session
	// (saveRenewed); nil encodes every time.
	renewedValues *expirable.LRU[*session, string]
	inflight      inflight
	// revoked holds the IDs of sessions signed out of, so that a copy of
	// the cookie taken before sign-out is refused afterwards.
	revoked *revocations
	// shared is the store replicas share (auth.session.store redis), or nil.
	shared *shared

	gate  *gate
	oidc  *oidcClient // mode oidc
	local *localLogin // mode local
	mux   *http.ServeMux
}

// New builds an Authenticator from a defaulted, validated Config. In mode
// oidc it runs provider discovery, bounded by the configured timeout.
// publicURL is the URL users reach the gateway at; the callback and login
// URLs are built from it.
func New(ctx context.Context, cfg Config, publicURL string, logger *zap.Logger) (*Authenticator, error) {
	if errs := cfg.Validate(); len(errs) > 0 {
		return nil, fmt.Errorf("invalid auth config: %w", errors.Join(errs...))
	}
	pu, err := url.Parse(publicURL)
	if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
		return nil, fmt.Errorf("public URL %q is not an http(s) URL", publicURL)
	}
	if logger == nil {
		logger = zap.NewNop()
	}
	a := &Authenticator{
		cfg:       cfg,
		logger:    logger,
		now:       time.Now,
		publicURL: strings.TrimSuffix(publicURL, "/"),
		basePath:  strings.TrimSuffix(pu.Path, "/"),
	}
	a.gate = newGate(cfg)
	if cfg.OIDC.StripEmailDomain && len(cfg.AllowedEmailDomains) == 0 && cfg.Mode == ModeOIDC {
		logger.Warn("auth.oidc.strip_email_domain without auth.allowed_email_domains strips every domain: alice@a.example and alice@b.example become the same user")
	}
	a.sessions, a.refreshed = newCaches(cfg.Session.TTL)
	a.renewedValues = expirable.NewLRU[*session, string](cacheSize, nil, cfg.Session.TTL)
	a.revoked = newRevocations(cfg.Session.TTL)
	a.cookies = cookieOptions{secure: pu.Scheme == "https", path: a.basePath + "/"}
	if cfg.Session.CookieSecure != nil {
		a.cookies.secure = *cfg.Session.CookieSecure
	}
	a.cookies.host = a.cookies.secure && a.cookies.path == "/"

	keys := make([][]byte, 0, len(cfg.Session.Keys))
	for _, k := range cfg.Session.Keys {
		b, err := decodeKey(k)
		if err != nil {
			return nil, fmt.Errorf("session key: %w", err)
		}
		keys = append(keys, b)
	}
	if len(keys) == 0 {
		// Only mode local gets here (Validate requires keys for oidc):
		// sessions then last until the gateway restarts, like the token.
		k := make([]byte, 32)
		if _, err := rand.Read(k); err != nil {
			return nil, fmt.Errorf("generating session key: %w", err)
		}
		keys = append(keys, k)
	}
	if a.codec, err = newSessionCodec(keys); err != nil {
		return nil, err
	}
	if cfg.Session.Store == StoreRedis {
		a.shared = newShared(newRedisStore(cfg.Session.Redis, logger.Named("store")), cfg.Session.Redis.Timeout, cfg.Session.TTL, logger.Named("store"))
		a.shared.start(ctx, cfg.Session.Redis.Addr, cfg.Session.Redis.DialTimeout+cfg.Session.Redis.Timeout)
	}

	switch cfg.Mode {
	case ModeOIDC:
		if a.oidc, err = newOIDCClient(ctx, cfg.OIDC, cfg.AllowedEmailDomains, a.publicURL+"/oauth2/callback", func() time.Time { return a.now() }); err != nil {
			return nil, err
		}
	case ModeLocal:
		if a.local, err = newLocalLogin(cfg.Local); err != nil {
			return nil, err
		}
	}
	a.mux = a.routes()
	return a, nil
}

// LocalLoginURL returns, in mode local, the login URL to print at start;
// whoever opens it is signed in as the local user. It is "" in mode oidc.
func (a *Authenticator) LocalLoginURL() string {
	if a.local == nil {
		return ""
	}
	return a.publicURL + "/oauth2/token?token=" + hex.EncodeToString(a.local.token)
}

// Handler serves the sign-in endpoints under <public path>/oauth2/:
// login, callback, logout, and token (mode local).
func (a *Authenticator) Handler() http.Handler { return a.mux }

func (a *Authenticator) routes() *http.ServeMux {
	mux := http.NewServeMux()
	p := a.basePath + "/oauth2/"
	mux.Handle(p+"logout", a.handle(a.serveLogout))
	if a.local != nil {
		mux.Handle(p+"token", a.handle(a.serveLocalToken))
		mux.Handle(p+"login", http.HandlerFunc(a.serveLocalChallenge))
	} else {
		mux.Handle(p+"login", a.handle(a.serveLogin))
		mux.Handle(p+"callback", a.handle(a.serveCallback))
	}
	return mux
}

// Authenticate identifies the sender of r. It returns (id, true, nil) when
// r carries a valid session cookie or bearer token, (_, false, nil) when it
// carries none or a bad one, and an error only when a provider needed to
// decide could not be reached. Identity headers sent by the client are
// never read.
//
// A sender the provider knows but the sign-in gate (auth.allowed_*) does
// not admit is not signed in here; Challenge then answers 403.
func (a *Authenticator) Authenticate(r *http.Request) (Identity, bool, error) {
	id, ok, err := a.identify(r)
	if !ok || err != nil {
		return Identity{}, false, err
	}
	if admitted, _ := a.gate.admits(id); !admitted {
		return Identity{}, false, nil
	}
	return id, true, nil
}

// identify is Authenticate without the sign-in gate.
func (a *Authenticator) identify(r *http.Request) (Identity, bool, error) {
	if h := r.Header.Get("Authorization"); h != "" {
		if token, ok := bearerToken(h); ok {
			return a.authenticateBearer(r.Context(), token)
		}
	}
	var s *session
	var err error
	if l, ok := r.Context().Value(sessionCtxKey{}).(sessionLookup); ok {
		s, err = l.s, l.err // Middleware looked this request's cookie up already
	} else {
		s, _, err = a.currentSession(r.Context(), r)
	}
	if err != nil || s == nil {
		return Identity{}, false, err
	}
	return s.identity(), true, nil
}

// currentSession returns the request's live session (renewed if due), or
// nil when there is none. renewed says the session differs from the
// cookie, which should then be rewritten.
func (a *Authenticator) currentSession(ctx context.Context, r *http.Request) (s *session, renewed bool, err error) {
	value := readSessionValue(r, a.cookies.sessionName())
	if value == "" {
		return nil, false, nil
	}
	key := sessionKey(value)
	s, ok := a.sessions.Get(key)
	if !ok {
		s = new(session)
		if err := a.codec.decode(sessionCookie, value, s); err != nil {
			if ce := a.logger.Check(zap.DebugLevel, "session cookie refused"); ce != nil {
				ce.Write(zap.Error(err))
			}
			return nil, false, nil
		}
		a.sessions.Add(key, s)
	}
	if rs, ok := a.refreshed.Get(key); ok {
		s, renewed = rs, true
	}
	if a.isRevoked(ctx, s.ID) {
		return nil, false, nil
	}
	now := a.now()
	if !now.Before(s.Expiry) {
		// A session ends at its expiry, refresh token or not: a sign-out
		// is remembered for one session TTL (revocations), so a copy of
		// the cookie renewed past its expiry would outlive it.
		return nil, false, nil
	}
	if s.RefreshAt.IsZero() || now.Before(s.RefreshAt) || a.oidc == nil || s.RefreshToken == "" || !*a.cfg.Session.Refresh {
		return s, renewed, nil
	}
	ns, err := a.inflight.do(key, func() (*session, error) {
		// Another request may have renewed this cookie's session just now.
		if rs, ok := a.refreshed.Get(key); ok && rs != s && a.now().Before(rs.Expiry) && (rs.RefreshAt.IsZero() || a.now().Before(rs.RefreshAt)) {
			return rs, nil
		}
		if a.shared != nil {
			return a.refreshShared(ctx, value, key, s)
		}
		ns, err := a.refreshSession(ctx, s)
		if err == nil {
			a.refreshed.Add(key, ns)
		}
		return ns, err
	})
	switch {
	case err == nil:
		return ns, true, nil
	case errors.Is(err, errRefreshRefused):
		a.logger.Info("session refresh refused", zap.String("user", s.User), zap.Error(err))
		a.sessions.Remove(key)
		a.refreshed.Remove(key)
		return nil, false, nil
	default:
		// The provider is unreachable but the session itself is still
		// valid: keep serving it rather than sign everyone out.
		a.logger.Warn("session refresh failed; keeping session", zap.String("user", s.User), zap.Error(err))
		return s, renewed, nil
	}
}

// saveSession encodes s and writes it as the session cookie.
func (a *Authenticator) saveSession(w http.ResponseWriter, r *http.Request, s *session) error {
	value, err := a.codec.encode(sessionCookie, s)
	if err != nil {
		return err
	}
	return a.writeSessionValue(w, r, s, value)
}

// saveRenewed is saveSession for a renewed session, encoded once: every
// request that still carries the cookie from before the renewal (those
// already in flight, a client that ignores Set-Cookie) is sent the same
// new cookie, not encrypted anew each time.
func (a *Authenticator) saveRenewed(w http.ResponseWriter, r *http.Request, s *session) error {
	if a.renewedValues == nil {
		return a.saveSession(w, r, s)
	}
	value, ok := a.renewedValues.Get(s)
	if !ok {
		var err error
		if value, err = a.codec.encode(sessionCookie, s); err != nil {
			return err
		}
		a.renewedValues.Add(s, value)
	}
	return a.writeSessionValue(w, r, s, value)
}

// writeSessionValue writes value, the encoding of s, as the session cookie.
func (a *Authenticator) writeSessionValue(w http.ResponseWriter, r *http.Request, s *session, value string) error {
	maxAge := int(s.Expiry.Sub(a.now()) / time.Second)
	if s.RefreshToken != "" && *a.cfg.Session.Refresh {
		// A refreshable session outlives its first expiry: let the browser
		// keep the cookie; the value's own expiry still rules.
		maxAge = 0
	}
	if maxAge < 0 {
		maxAge = -1
	}
	return writeSession(w, r, a.cookies, value, maxAge)
}

// Challenge answers a request that is not signed in. Browsers are sent to
// sign in (302, keeping path and query to return to); API clients (a path
// with /api/, Accept: application/json, or an Authorization header) get 401
// with a JSON error and WWW-Authenticate: Bearer.
//
// A request whose credential is valid but refused by the sign-in gate gets
// 403 instead, saying who it is signed in as and who to ask.
func (a *Authenticator) Challenge(w http.ResponseWriter, r *http.Request) {
	if id, ok, err := a.identify(r); ok && err == nil {
		if admitted, reason := a.gate.admits(id); !admitted {
			a.refuse(w, r, id, reason)
			return
		}
	}
	w.Header().Set("Cache-Control", "no-store")
	if isAPIRequest(r) {
		challenge := `Bearer realm="sparkgate"`
		if _, ok := bearerToken(r.Header.Get("Authorization")); ok {
			challenge += `, error="invalid_token"`
		}
		w.Header().Set("WWW-Authenticate", challenge)
		writeJSONError(w, http.StatusUnauthorized, "not signed in")
		return
	}
	if a.local != nil {
		a.serveLocalChallenge(w, r)
		return
	}
	loc := a.basePath + "/oauth2/login"
	if rd, ok := safeRedirect(r.URL.RequestURI()); ok && rd != "/" {
		loc += "?rd=" + url.QueryEscape(rd)
	}
	http.Redirect(w, r, loc, http.StatusFound)
}

// isAPIRequest tells programs, which cannot follow a sign-in, from browsers.
func isAPIRequest(r *http.Request) bool {
	return strings.Contains(r.URL.Path, "/api/") ||
		strings.Contains(r.Header.Get("Accept"), "application/json") ||
		r.Header.Get("Authorization") != ""
}

// redirectTarget returns the validated rd parameter of r, or "/".
func (a *Authenticator) redirectTarget(r *http.Request) string {
	if rd, ok := safeRedirect(r.URL.Query().Get("rd")); ok {
		return rd
	}
	return a.basePath + "/"
}

// newCaches builds the decoded-session cache and the renewed-session cache;
// renewed sessions are kept for a session lifetime at most.
func newCaches(ttl time.Duration) (sessions, refreshed *expirable.LRU[[32]byte, *session]) {
	return expirable.NewLRU[[32]byte, *session](cacheSize, nil, cacheTTL),
		expirable.NewLRU[[32]byte, *session](cacheSize, nil, ttl)
}
