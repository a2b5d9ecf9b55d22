package auth

import (
	"crypto/hkdf"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/securecookie"
)

// Cookie names, and the same on https, with hostPrefix (see
// cookieOptions.host). The session's plain name is also the name its
// values are encoded under.
const (
	sessionCookie         = "_sparkgate_session"
	loginCookiePrefix     = "_sparkgate_login_"
	hostSessionCookie     = hostPrefix + "sparkgate_session"
	hostLoginCookiePrefix = hostPrefix + "sparkgate_login_"
)

// hostPrefix starts the gateway's cookie names on https. A browser takes a
// cookie of such a name only from this very host, Secure, with Path=/ and
// no Domain: a sibling host (another app's host under proxy.app_domain,
// whose pages run a driver's scripts) can neither plant one for the
// gateway's host nor shadow it with a cookie of a longer path.
const hostPrefix = "__Host-"

const (
	// cookieChunk is the largest part of a split session cookie value; with
	// the name and attributes a part stays below the 4096-byte browser limit.
	cookieChunk = 3800
	// maxCookieParts bounds how many parts are read or cleared (64 KB).
	maxCookieParts = 16
	// maxEncodedSession bounds the encoded value.
	maxEncodedSession = cookieChunk * maxCookieParts
)

// session is what the session cookie holds, encrypted and authenticated.
// Expiry is checked here, not by the browser or securecookie, so that a
// copied cookie dies with the session.
type session struct {
	// ID names the sign-in; a renewed session keeps it, so signing out
	// revokes every cookie value the sign-in produced (see revocations).
	ID     string   `json:"id,omitempty"`
	User   string   `json:"u"`
	Groups []string `json:"g,omitempty"`
	// Domain is the user's email domain (see Identity.EmailDomain), kept
	// so that the sign-in gate can judge the session again on every use.
	Domain string `json:"d,omitempty"`
	Method string `json:"m"`
	// Expiry ends the session.
	Expiry time.Time `json:"e"`
	// RefreshAt is when the identity should be renewed with RefreshToken
	// (the ID token's expiry); zero when the session is not refreshed.
	RefreshAt    time.Time `json:"r,omitzero"`
	RefreshToken string    `json:"rt,omitempty"`
	// IDToken is kept as the id_token_hint for the provider's sign-out.
	IDToken string `json:"it,omitempty"`
}

func (s *session) identity() Identity {
	return Identity{User: s.User, Groups: s.Groups, Method: s.Method, Expiry: s.Expiry, EmailDomain: s.Domain}
}

// sessionCodec encrypts and authenticates cookie values with every
// configured key; the first key encodes.
type sessionCodec struct {
	codecs []securecookie.Codec
}

// newSessionCodec derives an AES-256 key and an HMAC-SHA256 key from each
// secret with HKDF, so that one operator secret serves both purposes.
func newSessionCodec(keys [][]byte) (*sessionCodec, error) {
	if len(keys) == 0 {
		return nil, errors.New("no session keys")
	}
	pairs := make([][]byte, 0, 2*len(keys))
	for _, k := range keys {
		hashKey, err := hkdf.Key(sha256.New, k, nil, "sparkgate session hmac", 32)
		if err != nil {
			return nil, fmt.Errorf("deriving hmac key: %w", err)
		}
		blockKey, err := hkdf.Key(sha256.New, k, nil, "sparkgate session aes", 32)
		if err != nil {
			return nil, fmt.Errorf("deriving aes key: %w", err)
		}
		pairs = append(pairs, hashKey, blockKey)
	}
	codecs := securecookie.CodecsFromPairs(pairs...)
	for _, c := range codecs {
		sc := c.(*securecookie.SecureCookie)
		// Lifetimes live inside the values (checked with the gateway's
		// clock); length is bounded by maxEncodedSession instead.
		sc.MaxAge(0)
		sc.MaxLength(0)
		sc.SetSerializer(securecookie.JSONEncoder{})
	}
	return &sessionCodec{codecs: codecs}, nil
}

func (c *sessionCodec) encode(name string, v any) (string, error) {
	s, err := securecookie.EncodeMulti(name, v, c.codecs...)
	if err != nil {
		return "", fmt.Errorf("encoding %s: %w", name, err)
	}
	return s, nil
}

func (c *sessionCodec) decode(name, value string, dst any) error {
	if len(value) > maxEncodedSession {
		return errors.New("value too long")
	}
	return securecookie.DecodeMulti(name, value, dst, c.codecs...)
}

// cookieOptions are the attributes of every cookie the gateway sets.
type cookieOptions struct {
	secure bool
	path   string // "/" or the public URL's path prefix
	// host says names take hostPrefix (secure, path "/").
	host bool
}

// sessionName is the session cookie's name.
func (o cookieOptions) sessionName() string {
	if o.host {
		return hostSessionCookie
	}
	return sessionCookie
}

// loginPrefix starts the login cookies' names.
func (o cookieOptions) loginPrefix() string {
	if o.host {
		return hostLoginCookiePrefix
	}
	return loginCookiePrefix
}

// loginPath is the path of the login cookies: /oauth2/, where they are
// read, unless names take hostPrefix, which needs /.
func (o cookieOptions) loginPath() string {
	if o.host {
		return "/"
	}
	return "/oauth2/"
}

func (o cookieOptions) cookie(name, value string, maxAge int, path string) *http.Cookie {
	return &http.Cookie{ //nolint:gosec // HttpOnly and SameSite=Lax always; Secure whenever the public URL is https
		Name:     name,
		Value:    value,
		Path:     path,
		MaxAge:   maxAge,
		HttpOnly: true,
		Secure:   o.secure,
		SameSite: http.SameSiteLaxMode,
	}
}

// sessionKey is the cache key of an encoded session: its SHA-256, so the
// caches hold no cookie. A value that fits one cookie (most) is copied
// into a buffer on the stack rather than converted on the heap: every
// request hashes its cookie, and the copy was a 2 KB allocation each.
func sessionKey(value string) [32]byte {
	if len(value) > cookieChunk {
		return sha256.Sum256([]byte(value))
	}
	var buf [cookieChunk]byte
	return sha256.Sum256(append(buf[:0], value...))
}

// readSessionValue joins the session cookie name from the request: either
// the single cookie or the parts _0.._N in order.
func readSessionValue(r *http.Request, name string) string {
	if c, err := r.Cookie(name); err == nil {
		return c.Value
	}
	var b strings.Builder
	for i := range maxCookieParts {
		c, err := r.Cookie(name + "_" + strconv.Itoa(i))
		if err != nil {
			break
		}
		b.WriteString(c.Value)
	}
	return b.String()
}

// writeSession sets the session cookie, split into parts when large, and
// expires every other session cookie the request carried, so stale parts
// of a bigger, older session never join the new one.
func writeSession(w http.ResponseWriter, r *http.Request, opts cookieOptions, value string, maxAge int) error {
	if len(value) > maxEncodedSession {
		return fmt.Errorf("session of %d bytes is too large for cookies", len(value))
	}
	set := make(map[string]bool)
	base := opts.sessionName()
	if len(value) <= cookieChunk {
		http.SetCookie(w, opts.cookie(base, value, maxAge, opts.path))
		set[base] = true
	} else {
		for i := 0; len(value) > 0; i++ {
			n := min(cookieChunk, len(value))
			name := base + "_" + strconv.Itoa(i)
			http.SetCookie(w, opts.cookie(name, value[:n], maxAge, opts.path))
			set[name] = true
			value = value[n:]
		}
	}
	clearSession(w, r, opts, set)
	return nil
}

// clearSession expires every session cookie (whole or part) the request
// carries, except those named in keep.
func clearSession(w http.ResponseWriter, r *http.Request, opts cookieOptions, keep map[string]bool) {
	if keep == nil {
		keep = make(map[string]bool)
	}
	base := opts.sessionName()
	for _, c := range r.Cookies() {
		if !isSessionCookieName(c.Name, base) || keep[c.Name] {
			continue
		}
		keep[c.Name] = true // each name once
		http.SetCookie(w, opts.cookie(c.Name, "", -1, opts.path))
	}
}

// isSessionCookieName reports whether name is the session cookie base, or
// one of its parts.
func isSessionCookieName(name, base string) bool {
	if name == base {
		return true
	}
	rest, ok := strings.CutPrefix(name, base+"_")
	if !ok {
		return false
	}
	n, err := strconv.Atoi(rest)
	return err == nil && n >= 0 && strconv.Itoa(n) == rest
}
