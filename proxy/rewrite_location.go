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
//   - a Location to another host is returned unchanged: it is not the
//     upstream, so the gateway would not serve it anyway, and the browser's
//     cross-origin navigation carries no gateway credentials;
//   - a relative Location ("jobs/") is returned unchanged: the browser
//     resolves it against the public URL, which is already under prefix.
//
// The result never starts with "//" (which a browser would read as a host).
func RewriteLocation(loc string, upstream *url.URL, prefix string) string {
	u, err := url.Parse(loc)
	if err != nil {
		return loc
	}
	if u.Scheme != "" || u.Host != "" {
		if upstream == nil || !sameHost(u, upstream) {
			return loc
		}
	} else if !strings.HasPrefix(u.Path, "/") {
		return loc
	}
	prefix = strings.TrimSuffix(prefix, "/")
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	if !(prefix != "" && (path == prefix || strings.HasPrefix(path, prefix+"/"))) {
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
