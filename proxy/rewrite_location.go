package proxy

import (
	"net/http"
	"net/url"
	"strings"
)

// rewriteLocation maps a URL an upstream sent (Location, Content-Location,
// the URL of Refresh) to the gateway path a browser must go to instead.
// It reads the URL as a browser does (parseWebURL, not url.Parse), against
// reqURL, the URL the upstream was asked for: Spark builds redirects as
// absolute URLs from the Host header it received, without uiRoot, and a
// relative one resolves against the request.
//
//   - A URL on the upstream's own origin becomes prefix + its path ("/jobs/"
//     becomes "/app/<id>/jobs/"); a path already under prefix (drivers
//     launched with spark.ui.proxyBase, YARN's web proxy) is not prefixed
//     again. Query and fragment are kept.
//   - Anything else is refused (ok false): another host or port, another
//     scheme (https: for an http upstream, javascript:, data:), and what a
//     browser could not parse. The caller answers the self-reloading 503
//     (a redirect) or drops the header.
//
// The result is always serialised here, never the upstream's string: a
// path that starts with prefix (which starts with "/" and a name), with no
// '\', control character or space left in it, so no browser reads a host
// into it.
func rewriteLocation(loc string, reqURL *webURL, prefix string) (string, bool) {
	u, ok := parseWebURL(loc, reqURL)
	if !ok || !u.sameOrigin(reqURL) {
		return "", false
	}
	prefix = strings.TrimSuffix(prefix, "/")
	path := u.Path
	if prefix == "" || (path != prefix && !strings.HasPrefix(path, prefix+"/")) {
		path = prefix + path
	}
	// With an empty prefix (not used by the gateway, but cheap to keep
	// safe) "//evil.example/x" must not leave as a scheme-relative URL.
	for strings.HasPrefix(path, "//") {
		path = path[1:]
	}
	var b strings.Builder
	b.Grow(len(path) + len(u.Query) + len(u.Fragment) + 2)
	b.WriteString(path)
	if u.HasQuery {
		b.WriteByte('?')
		b.WriteString(u.Query)
	}
	if u.HasFragment {
		b.WriteByte('#')
		b.WriteString(u.Fragment)
	}
	return b.String(), true
}

// requestWebURL is the upstream URL of a proxied request as parseWebURL
// reads it; ok is false if it cannot be read (then no upstream URL can be
// judged, and all are refused).
func requestWebURL(u *url.URL) (webURL, bool) {
	return parseWebURL(u.String(), nil)
}

// refresh is a Refresh header (or <meta http-equiv=refresh> content) as
// the HTML Standard's "shared declarative refresh steps" read it.
type refresh struct {
	Delay  string // the digits of the delay as sent, "" for ".5"
	URL    string // the URL to go to; "" with HasURL false for a reload
	HasURL bool
}

// parseRefresh reads a Refresh value as browsers do; ok is false where
// they ignore it.
func parseRefresh(v string) (r refresh, ok bool) {
	i := 0
	skipWS := func() {
		for i < len(v) && isHTMLSpace(v[i]) {
			i++
		}
	}
	skipWS()
	start := i
	for i < len(v) && '0' <= v[i] && v[i] <= '9' {
		i++
	}
	r.Delay = v[start:i]
	if r.Delay == "" && (i >= len(v) || v[i] != '.') {
		return r, false
	}
	for i < len(v) && ('0' <= v[i] && v[i] <= '9' || v[i] == '.') {
		i++
	}
	if i < len(v) {
		if c := v[i]; c != ';' && c != ',' && !isHTMLSpace(c) {
			return r, false
		}
		skipWS()
		if i < len(v) && (v[i] == ';' || v[i] == ',') {
			i++
		}
		skipWS()
	}
	if i >= len(v) {
		return r, true
	}
	r.URL, r.HasURL = refreshURL(v[i:]), true
	return r, true
}

// refreshURL reads the URL part of a Refresh value, rest starting where
// the delay and its separator end: an optional "url" "=" (spaces around
// '='), then an optional quote that ends the URL at its twin. A prefix of
// "url=" that breaks off leaves rest as it is.
func refreshURL(rest string) string {
	j := 0
	if j < len(rest) && rest[j]|0x20 == 'u' {
		j++
		if j >= len(rest) || rest[j]|0x20 != 'r' {
			return rest
		}
		j++
		if j >= len(rest) || rest[j]|0x20 != 'l' {
			return rest
		}
		j++
		for j < len(rest) && isHTMLSpace(rest[j]) {
			j++
		}
		if j >= len(rest) || rest[j] != '=' {
			return rest
		}
		j++
		for j < len(rest) && isHTMLSpace(rest[j]) {
			j++
		}
	}
	// "skip quotes"
	if j < len(rest) && (rest[j] == '"' || rest[j] == '\'') {
		q := rest[j]
		u := rest[j+1:]
		if k := strings.IndexByte(u, q); k >= 0 {
			u = u[:k]
		}
		return u
	}
	return rest[j:]
}

// delay is the delay to send on: what was sent, "0" for ".5".
func (r refresh) delay() string {
	if r.Delay == "" {
		return "0"
	}
	return r.Delay
}

// isHTMLSpace is the HTML Standard's ASCII whitespace.
func isHTMLSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r'
}

// rewriteLocations applies rewriteLocation to an upstream answer's
// Location, Content-Location and Refresh headers. A redirect or a refresh
// that would leave the gateway is errRedirectAway (the self-reloading 503);
// a Content-Location, or a Location on an answer that is no redirect, that
// would leave is dropped, as is a Refresh browsers would ignore.
func rewriteLocations(resp *http.Response, prefix string) error {
	h := resp.Header
	loc, hasLoc := h["Location"]
	cloc, hasCloc := h["Content-Location"]
	ref, hasRef := h["Refresh"]
	if !hasLoc && !hasCloc && !hasRef {
		return nil
	}
	base, baseOK := requestWebURL(resp.Request.URL)
	rewrite := func(v string) (string, bool) {
		if !baseOK {
			return "", false
		}
		return rewriteLocation(v, &base, prefix)
	}
	if hasLoc {
		out, ok := "", len(loc) == 1
		if ok {
			out, ok = rewrite(loc[0])
		}
		switch {
		case ok:
			h.Set("Location", out)
		case isRedirect(resp.StatusCode):
			return errRedirectAway
		default:
			delete(h, "Location")
		}
	}
	if hasCloc {
		if out, ok := rewrite(strings.Join(cloc, ",")); ok && len(cloc) == 1 {
			h.Set("Content-Location", out)
		} else {
			delete(h, "Content-Location")
		}
	}
	if hasRef {
		r, ok := parseRefresh(strings.Join(ref, ","))
		switch {
		case !ok:
			delete(h, "Refresh")
		case !r.HasURL:
			h.Set("Refresh", r.delay())
		default:
			out, ok := rewrite(r.URL)
			if !ok {
				return errRedirectAway
			}
			h.Set("Refresh", r.delay()+";url="+out)
		}
	}
	return nil
}
