package proxy

import (
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"
)

// RequestError is a client error with a status and a message safe to show.
// The message never echoes the request path back, so it cannot carry markup.
type RequestError struct {
	Status int
	Msg    string
}

// Error returns the message.
func (e *RequestError) Error() string { return e.Msg }

func badRequest(msg string) *RequestError {
	return &RequestError{Status: http.StatusBadRequest, Msg: msg}
}

// CanonicalPath decodes an escaped request path exactly once and returns its
// canonical form, or a *RequestError (400) for any ambiguous spelling.
//
// The canonical form is what the kill guard judges and, byte for byte, what
// is sent upstream (the server sets URL.Path to it and clears RawPath), so no
// later decoder can see a different path from the one that was judged. Rather
// than normalising tricks away (which is where proxies and Jetty disagree),
// every spelling with more than one reading is refused:
//
//   - percent-escapes that decode to '/', '\\', '%' (double encoding), NUL or
//     any control character, or that are malformed;
//   - '\\', ';' (path parameters, which Jetty strips), '?' and '#' anywhere
//     in the decoded path;
//   - empty segments ("//"), "." and ".." segments;
//   - paths that do not start with '/' (asterisk- and authority-form) and
//     paths that are not valid UTF-8 after decoding.
//
// Escapes of ordinary characters (for example "%6Bill") are decoded, so the
// guard sees "kill". A trailing slash is kept. Decoding happens once: the
// result contains no '%', so CanonicalPath is idempotent on its results.
func CanonicalPath(escapedPath string) (string, error) {
	if escapedPath == "" || escapedPath[0] != '/' {
		return "", badRequest("request path must start with /")
	}
	if len(escapedPath) > maxPathLen {
		return "", badRequest("request path too long")
	}
	if strings.IndexByte(escapedPath, '%') < 0 {
		// Nothing to decode: check in place and return the input itself.
		for i := 0; i < len(escapedPath); i++ {
			if err := checkPathByte(escapedPath[i]); err != nil {
				return "", err
			}
		}
		return checkSegments(escapedPath)
	}
	var b strings.Builder
	b.Grow(len(escapedPath))
	for i := 0; i < len(escapedPath); i++ {
		c := escapedPath[i]
		if c == '%' {
			if i+2 >= len(escapedPath) || !isHex(escapedPath[i+1]) || !isHex(escapedPath[i+2]) {
				return "", badRequest("malformed percent-escape in path")
			}
			c = unhex(escapedPath[i+1])<<4 | unhex(escapedPath[i+2])
			i += 2
			switch c {
			case '/', '\\':
				return "", badRequest("encoded slash or backslash in path")
			case '%':
				return "", badRequest("double percent-encoding in path")
			}
		}
		if err := checkPathByte(c); err != nil {
			return "", err
		}
		b.WriteByte(c)
	}
	return checkSegments(b.String())
}

// SentPath returns the path of u, a request's target, escaped as the client
// sent it, for CanonicalPath. url.URL keeps the sent spelling in RawPath
// whenever it differs from its own escaping of Path; EscapedPath returns it
// only if it is "valid" to net/url, and otherwise re-escapes the decoded
// Path, in which a sent "%2F" has become a '/': a target with a raw byte
// net/url would escape itself (non-ASCII, '|', '"', '{') then loses its
// encoded slashes before CanonicalPath could refuse them.
func SentPath(u *url.URL) string {
	if u.RawPath != "" {
		return u.RawPath
	}
	return u.EscapedPath()
}

// checkSegments refuses a decoded path that is not UTF-8 or has an empty,
// "." or ".." segment.
func checkSegments(p string) (string, error) {
	if !utf8.ValidString(p) {
		return "", badRequest("path is not valid UTF-8")
	}
	// p starts with '/'; walk its segments. The last segment may be empty
	// (trailing slash); no other may be.
	rest := p[1:]
	for {
		seg, tail, more := strings.Cut(rest, "/")
		if seg == "" && more {
			return "", badRequest("empty path segment")
		}
		if seg == "." || seg == ".." {
			return "", badRequest("dot segment in path")
		}
		if !more {
			break
		}
		rest = tail
	}
	return p, nil
}

// maxPathLen bounds the work per request; Spark paths are short.
const maxPathLen = 4096

func checkPathByte(c byte) *RequestError {
	switch {
	case c < 0x20 || c == 0x7f:
		return badRequest("control character in path")
	case c == '\\':
		return badRequest("backslash in path")
	case c == ';':
		return badRequest("path parameter in path")
	case c == '?' || c == '#':
		return badRequest("encoded query or fragment delimiter in path")
	}
	return nil
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}
