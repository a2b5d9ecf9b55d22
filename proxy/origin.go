package proxy

import (
	"net/http"
)

// Every app is served on the gateway's one origin, so whatever a driver
// sends runs with the viewer's rights on every other app and on the
// gateway's own pages. The rules in this file keep an upstream (a driver
// any user can start, a History Server) from acting on that origin: the
// response headers that would change the origin as a whole are dropped,
// service workers (which would outlive the page and see every later
// request) are never fetched from an upstream, and an upstream gets only
// the request headers Spark's UI and REST API use.

// originHeaders are response headers whose effect reaches beyond the one
// response: they would let an upstream change the gateway's origin as a
// whole, for every app and for the gateway's own pages. modifyResponse
// drops each of them from every upstream answer. Spark's UI sends none.
var originHeaders = [...]string{
	// Cookies: the gateway's session lives on this origin.
	"Set-Cookie",
	"Set-Cookie2",
	// A service worker with a scope wider than its script's directory.
	"Service-Worker-Allowed",
	// Would wipe the origin's cookies and storage (signing the user out)
	// or reload every open gateway tab.
	"Clear-Site-Data",
	// Would put gateway pages opened from this one into its browsing
	// context group: the kill confirmation relies on COOP severing a
	// script's window.open handle, which an upstream's own
	// "same-origin" would restore.
	"Cross-Origin-Opener-Policy",
	"Cross-Origin-Opener-Policy-Report-Only",
	// Origin-wide, remembered by the browser: HSTS (with includeSubDomains
	// it reaches sibling hosts), another server for this origin's
	// traffic, and network error reports sent to the upstream's choice of
	// endpoint.
	"Strict-Transport-Security",
	"Alt-Svc",
	"Nel",
	"Report-To",
	"Reporting-Endpoints",
	// CORS: would let another site read this app's pages with the
	// viewer's session.
	"Access-Control-Allow-Origin",
	"Access-Control-Allow-Credentials",
	"Access-Control-Allow-Headers",
	"Access-Control-Allow-Methods",
	"Access-Control-Expose-Headers",
	"Access-Control-Max-Age",
	"Access-Control-Allow-Private-Network",
	// A credentials prompt in the gateway's name, and credentials the
	// browser would then send to every app.
	"Www-Authenticate",
	"Proxy-Authenticate",
}

// dropOriginHeaders removes originHeaders from an upstream's answer.
func dropOriginHeaders(h http.Header) {
	for _, name := range originHeaders {
		delete(h, name)
	}
}

// isServiceWorkerFetch reports whether the browser is fetching a service
// worker's script (or an import of one). A service worker registered from
// an app's path would control that path for every later visit, answer in
// the driver's place after it has gone, and see every request made under
// its scope; the gateway serves none and lets no upstream serve one.
func isServiceWorkerFetch(r *http.Request) bool {
	return r.Header.Get("Service-Worker") != "" ||
		tokenIs(r.Header.Get("Sec-Fetch-Dest"), "serviceworker")
}

// allowedRequestHeader reports whether a client's request header may go
// to Spark: what Spark's UI pages, static files and REST API read (content
// negotiation, conditional and range requests of its static handler), and
// the gateway's own request id. Everything else, every identity,
// forwarding, cookie and method-override header among it, stays at the
// gateway. The gateway adds X-Forwarded-Context itself after this filter.
// Accept-Encoding is not forwarded either: the transport asks upstreams
// for identity encoding (see newTransport).
func allowedRequestHeader(canonicalKey string) bool {
	switch canonicalKey {
	case "Accept", "Accept-Language",
		"Cache-Control", "Pragma",
		"If-Modified-Since", "If-None-Match", "If-Range", "Range",
		"User-Agent",
		"X-Request-Id":
		return true
	}
	return false
}

// filterRequestHeaders deletes every header allowedRequestHeader refuses.
// Keys are compared as net/http stores them; a key that is not in
// canonical form (which net/http leaves so when it holds characters it
// cannot canonicalise) is dropped.
func filterRequestHeaders(h http.Header) {
	for k := range h {
		if !allowedRequestHeader(k) {
			delete(h, k)
		}
	}
}

// tokenIs reports whether a header value is the token want (lower-case
// ASCII) in any ASCII case; unlike strings.EqualFold, "ſ" (U+017F) and the
// Kelvin sign do not fold to ASCII letters, as they do not for a browser.
func tokenIs(v, want string) bool {
	if len(v) != len(want) {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != want[i] {
			return false
		}
	}
	return true
}

// PageHeaders wraps the handler of gateway pages that proxy does not
// render itself (sign-in, sign-out, local mode's token page) with the
// isolation headers of its own pages: no framing, a browsing context
// group of their own, no sniffing, no referrer to other sites. A default
// CSP that allows nothing is set first; a page that sets its own keeps
// that.
func PageHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		next.ServeHTTP(w, r)
	})
}
