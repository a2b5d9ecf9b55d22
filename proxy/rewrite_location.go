package proxy

import (
	"net/url"
	"strings"
)

// RewriteLocation rewrites a Location header from upstream (the driver's or
// History Server's base URL) so that it stays under prefix (the public
// prefix, e.g. "/app/<id>").
//
// Spark builds redirects as absolute URLs from the Host header it received,
// without uiRoot, so:
//   - "http://<upstream host:port>/jobs/" becomes "<prefix>/jobs/";
//   - a host-less "/jobs/" becomes "<prefix>/jobs/";
//   - a path that already starts with prefix (drivers launched with
//     spark.ui.proxyBase) is not prefixed again;
//   - query and fragment are kept;
//   - a Location to another host is returned unchanged (a scheme-relative
//     one gets the upstream's scheme): it is not the upstream, so rewriting
//     it under prefix would point at the wrong server; the browser's
//     cross-origin navigation carries no gateway credentials;
//   - an unparsable Location becomes "<prefix>/";
//   - a relative Location ("jobs/") is returned unchanged: the browser
//     resolves it against the public URL, which is already under prefix.
//
// The result never starts with "//" (which a browser would read as a host).
func RewriteLocation(loc string, upstream *url.URL, prefix string) string {
	prefix = strings.TrimSuffix(prefix, "/")
	u, err := url.Parse(loc)
	if err != nil {
		// Unparsable (control characters, broken hosts): the browser would
		// guess; send it to the top of the app instead.
		return prefix + "/"
	}
	switch {
	case u.Opaque != "":
		return loc
	case u.Host != "":
		if upstream == nil || !sameHost(u, upstream) {
			if u.Scheme == "" {
				// Scheme-relative to another host: spell the scheme out so
				// the result does not start with "//".
				scheme := "http"
				if upstream != nil && upstream.Scheme != "" {
					scheme = upstream.Scheme
				}
				return scheme + ":" + loc
			}
			return loc
		}
	case u.Scheme != "" && !strings.EqualFold(u.Scheme, "http") && !strings.EqualFold(u.Scheme, "https"):
		return loc
	case u.Scheme == "" && !strings.HasPrefix(u.Path, "/"):
		// Relative ("jobs/", "?x"): resolved by the browser against the
		// public URL, which is already under prefix. Browsers trim spaces
		// and read a backslash as '/', so " //evil" could leave it.
		if strings.HasPrefix(loc, "//") || strings.ContainsAny(loc, "\\ \t\r\n\f") {
			return prefix + "/"
		}
		return loc
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	if prefix == "" || (path != prefix && !strings.HasPrefix(path, prefix+"/")) {
		path = prefix + path
	}
	// Collapse leading slashes: "//evil.example/x" must not leave as a
	// scheme-relative URL.
	for strings.HasPrefix(path, "//") {
		path = path[1:]
	}
	out := path
	if u.RawQuery != "" || u.ForceQuery {
		out += "?" + u.RawQuery
	}
	if u.Fragment != "" {
		out += "#" + u.EscapedFragment()
	}
	return out
}

// sameHost reports whether u points at the upstream: same host and port
// (with default ports made explicit). A scheme-relative URL counts by host.
func sameHost(u, upstream *url.URL) bool {
	if !strings.EqualFold(u.Hostname(), upstream.Hostname()) {
		return false
	}
	return portOf(u, upstream.Scheme) == portOf(upstream, upstream.Scheme)
}

func portOf(u *url.URL, defScheme string) string {
	if p := u.Port(); p != "" {
		return p
	}
	s := u.Scheme
	if s == "" {
		s = defScheme
	}
	if strings.EqualFold(s, "https") {
		return "443"
	}
	return "80"
}
