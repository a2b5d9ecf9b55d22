package auth

import (
	"net/http"
	"net/url"
	"strings"
)

// maxRedirectLen bounds a return URL; deep links into the Spark UI are short.
const maxRedirectLen = 4096

// safeRedirect reports whether s may be used as the place to return to
// after sign-in, and returns it. Only same-origin paths are accepted: a
// single leading "/", no scheme or host, no backslash in the path, no
// whitespace or control characters, and none of those hidden behind
// percent-encoding. Browsers strip tabs and newlines and read "\" as "/",
// which is how "/\evil" and "/%09/evil" became open redirects in other
// gateways. A fragment is refused: a browser never sends one, and
// net/http's Redirect would clean "/#/../\evil" into "/\evil"; redirectTo
// sends the value as it was checked.
func safeRedirect(s string) (string, bool) {
	if s == "" || len(s) > maxRedirectLen {
		return "", false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || c == '\\' || c == '#' {
			return "", false
		}
	}
	path, _, _ := strings.Cut(s, "?")
	// Decode repeatedly: a value may have been encoded more than once on its
	// way through query strings, and any layer must be safe.
	p := path
	for range 4 {
		if !safePath(p) {
			return "", false
		}
		d, err := url.PathUnescape(p)
		if err != nil {
			return "", false
		}
		if d == p {
			break
		}
		p = d
	}
	if p != path && !safePath(p) {
		return "", false
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return "", false
	}
	return s, true
}

// safePath checks one decoding layer of a path.
func safePath(p string) bool {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") {
		return false
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; c <= ' ' || c >= 0x7f || c == '\\' {
			return false
		}
	}
	// Dot segments never occur in gateway links; refusing them avoids
	// arguing about how each browser normalises "/..//host".
	for seg := range strings.SplitSeq(p, "/") {
		if seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// redirectTo answers with a 302 to loc exactly as given: a path that
// safeRedirect accepted, or the base path. Unlike http.Redirect it does not
// clean loc, which could turn a checked value into another.
func redirectTo(w http.ResponseWriter, loc string) {
	w.Header().Set("Location", loc)
	w.WriteHeader(http.StatusFound)
}
