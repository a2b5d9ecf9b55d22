package proxy

import (
	"bufio"
	"compress/gzip"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"
)

// upstreamTarget is one driver or History Server base URL and the reverse
// proxy that serves it.
type upstreamTarget struct {
	base *url.URL
	// label names the upstream in error pages: "driver 10.0.0.5:4040" or
	// "History Server main".
	label string
	rp    *httputil.ReverseProxy
}

// upKey identifies an upstream without allocating a string per request;
// driver says whether requests to it are bounded (slotLimit).
type upKey struct {
	scheme, host, path string
	driver             bool
}

// maxUpstreams bounds the proxy cache. Drivers come and go with their
// random ports; when the cache is full, proxies for URLs the registry no
// longer lists are dropped (they hold no connections of their own: the
// transport is shared).
const maxUpstreams = 512

// upstreams holds one reverse proxy per upstream base URL, created on first
// use and reused.
type upstreams struct {
	s         *Server
	transport *http.Transport
	mu        sync.RWMutex
	m         map[upKey]*upstreamTarget
}

func newUpstreams(s *Server, t *http.Transport) *upstreams {
	return &upstreams{s: s, transport: t, m: make(map[upKey]*upstreamTarget)}
}

// newTransport clones the default transport (HTTP/1.1 keep-alives, no
// proxy from the environment) and sets the timeouts that keep a dead or hung
// upstream from holding a user's request.
func newTransport(cfg Config) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	// Drivers are dialled at the address discovery verified (Server's
	// DialContext); a proxy from the environment would dial in their place.
	t.Proxy = nil
	// Connecting is bounded so that a driver whose host is gone answers 502
	// (and falls back to history on the next request) within seconds.
	t.DialContext = (&net.Dialer{Timeout: cfg.DialTimeout, KeepAlive: cfg.IdleConnTimeout}).DialContext
	// Headers must come within this time; bodies may then stream as long
	// as they flow (the client's own deadline bounds those).
	t.ResponseHeaderTimeout = cfg.ResponseHeaderTimeout
	// Below Spark 4's 8 s server-side idle timeout, see Config.
	t.IdleConnTimeout = cfg.IdleConnTimeout
	// Jetty sends at most 8 KiB of response headers (HttpConfiguration's
	// responseHeaderSize); without this bound a driver could make the
	// gateway buffer 10 MiB of them for every request it answers.
	t.MaxResponseHeaderBytes = maxUpstreamHeaderBytes
	// A Spark UI page pulls dozens of assets and REST calls from the same
	// driver, and many users may watch one driver: keep enough idle
	// connections that 64 concurrent requests to one driver reuse theirs
	// instead of dialing anew after each answer (TestUpstreamNoRedial).
	// Only connections that were in use at once are ever kept, and each
	// is closed after IdleConnTimeout.
	t.MaxIdleConnsPerHost = maxIdlePerUpstream
	t.MaxIdleConns = 4 * maxIdlePerUpstream
	// Ask upstreams for identity encoding: Spark's Jetty gzips every page
	// for a client that accepts it (level 6), and that CPU is the driver's,
	// taken from the user's application. Measured with wrk on a 3.5.9
	// driver's 18 KB /jobs/ page: ~500-700 req/s plain against ~340-500
	// with gzip, and the gateway would then spend more CPU inflating it.
	// Between the gateway and drivers (one cluster network) the 18 KB
	// against 3 KB do not matter. HTML encoded anyway is decoded for the
	// stripper (gzip, deflate; decodeBody), or refused (errEncodedHTML).
	t.DisableCompression = true
	// Read a page Jetty sends whole (up to its 32 KiB output buffer) in
	// one read(2), not 4 KiB and then the rest: each read is also a pass
	// of the stripper and a write to the client.
	t.ReadBufferSize = upstreamReadBuffer
	// Spark's Jetty speaks HTTP/1.1 on its plain connector; HTTP/2 over TLS
	// would only add a second code path to test.
	t.ForceAttemptHTTP2 = false
	t.Protocols = new(http.Protocols)
	t.Protocols.SetHTTP1(true)
	return t
}

// maxUpstreamHeaderBytes is the transport's MaxResponseHeaderBytes.
const maxUpstreamHeaderBytes = 64 << 10

// maxIdlePerUpstream is the transport's MaxIdleConnsPerHost.
const maxIdlePerUpstream = 128

// upstreamReadBuffer is the transport's ReadBufferSize.
const upstreamReadBuffer = 32 << 10

// get returns the proxy for base, an upstream the configuration names (a
// History Server, a standalone master), creating it once.
func (u *upstreams) get(base *url.URL, label string) *upstreamTarget {
	return u.getLabeled(base, func() string { return label }, false)
}

// getLabeled is get with a label that is built only when the proxy is,
// for a driver (requests bounded by a slotLimit) or not.
func (u *upstreams) getLabeled(base *url.URL, label func() string, driver bool) *upstreamTarget {
	k := upKey{base.Scheme, base.Host, base.Path, driver}
	u.mu.RLock()
	t := u.m[k]
	u.mu.RUnlock()
	if t != nil {
		return t
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if t = u.m[k]; t != nil {
		return t
	}
	if len(u.m) >= maxUpstreams {
		u.sweepLocked()
	}
	t = &upstreamTarget{base: base, label: label()}
	t.rp = u.newReverseProxy(t, driver)
	u.m[k] = t
	return t
}

// sweepLocked drops proxies of upstreams the registry and the configuration
// no longer name; if that frees nothing, it drops all of them. Requests
// still waiting on a dropped driver's proxy keep their slots of it; the
// driver's next proxy counts afresh.
func (u *upstreams) sweepLocked() {
	keep := make(map[upKey]bool)
	for _, a := range u.s.reg.Load().Apps() {
		if a.UIURL != nil {
			keep[upKey{a.UIURL.Scheme, a.UIURL.Host, a.UIURL.Path, true}] = true
		}
	}
	for _, b := range u.s.hs {
		keep[upKey{b.Scheme, b.Host, b.Path, false}] = true
	}
	for k := range u.m {
		if !keep[k] {
			delete(u.m, k)
		}
	}
	if len(u.m) >= maxUpstreams {
		clear(u.m)
	}
}

// isHistoryServer reports whether base is a configured History Server's.
func (u *upstreams) isHistoryServer(base *url.URL) bool {
	for _, hb := range u.s.hs {
		if hb.Scheme == base.Scheme && hb.Host == base.Host && hb.Path == base.Path {
			return true
		}
	}
	return false
}

func (u *upstreams) newReverseProxy(t *upstreamTarget, driver bool) *httputil.ReverseProxy {
	s := u.s
	base := t.base
	var transport http.RoundTripper = u.transport
	if driver {
		// Only drivers are bounded: History Servers and masters are
		// named by the configuration and serve every team.
		transport = newSlotLimit(transport, s.cfg.MaxRequestsPerDriver, s.cfg.DialTimeout)
	}
	if u.isHistoryServer(base) {
		transport = loadRetry{transport}
	}
	transport = no1xx{transport}
	return &httputil.ReverseProxy{
		// Rewrite (not Director): forwarding headers the client sent are
		// already removed when it runs, and Out is a copy, so nothing here
		// touches the incoming request.
		Rewrite: func(pr *httputil.ProxyRequest) {
			st := stateFrom(pr.In.Context())
			// The canonical path the guard judged, byte for byte; set
			// before SetURL, which joins it onto the base path.
			pr.Out.URL.Path = st.route.Path
			pr.Out.URL.RawPath = ""
			pr.SetURL(base)
			pr.Out.URL.RawQuery = StripRequest(pr.Out.Header, pr.In.URL.RawQuery)
			// An allowlist on top of StripRequest's denylist: a header
			// nobody thought of does not reach Spark either. It also drops
			// Accept-Encoding: the client's encodings are not the
			// gateway's; the Transport asks for none (see newTransport),
			// so the HTML stripper reads plain HTML, and Compress encodes
			// the answer for the client.
			filterRequestHeaders(pr.Out.Header)
			// Only GET and HEAD get here (the guard refuses the rest), and
			// Spark reads no body of theirs: none is sent, so nothing the
			// client put there reaches a filter in front of Spark. (nil, not
			// http.NoBody: the transport copies even an empty body through
			// a LimitReader.)
			pr.Out.Body = nil
			pr.Out.ContentLength = 0
			pr.Out.TransferEncoding = nil
			if st.xfc != "" {
				pr.Out.Header.Set("X-Forwarded-Context", st.xfc)
			}
		},
		Transport: transport,
		// Reuse copy buffers: without a pool every response allocates 32 KiB.
		BufferPool:     bufferPool{},
		ModifyResponse: s.modifyResponse,
		ErrorHandler:   s.proxyError,
		ErrorLog:       zap.NewStdLog(s.log.Named("reverseproxy")),
	}
}

// no1xx hides the reverse proxy's trace from the transport, which then
// reads an upstream's informational (1xx) answers and drops them.
// ReverseProxy would pass each on to the client with its headers, past
// dropOriginHeaders (a 103 with Set-Cookie or Clear-Site-Data), and then
// clear the header map of the answer, the gateway's own headers in it.
// Spark sends none.
//
// It also drops every trailer of the answer: they would reach the client
// past every filter of the header (a Set-Cookie that an intermediary
// merges into the header, say), and Spark sends none.
type no1xx struct{ rt http.RoundTripper }

func (n no1xx) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := n.rt.RoundTrip(r.WithContext(untraced{r.Context()}))
	if err != nil {
		return nil, err
	}
	if resp.ContentLength < 0 { // only a chunked body has trailers
		// The transport fills in the Trailer of the answer it returned
		// when the body ends; ReverseProxy reads this copy's, which
		// stays nil.
		out := *resp
		out.Trailer = nil
		return &out, nil
	}
	return resp, nil
}

// untraced is a context without httptrace hooks.
type untraced struct{ context.Context }

func (c untraced) Value(k any) any {
	v := c.Context.Value(k)
	if _, ok := v.(*httptrace.ClientTrace); ok {
		return nil
	}
	return v
}

// loadRetry asks a History Server again, after loadRetryDelays, while it
// answers a GET or HEAD for an app it is still loading. A History Server
// loads an app's UI on the first requests for it (again when the app has
// changed since it was loaded, as when one that was running completes),
// and meanwhile it answers:
//   - 500, when a request meets the app's handlers half attached (a
//     NullPointerException in Jetty's FilterHolder.doFilter, seen with
//     4.0.5 and 4.3.0 in TestACL/finished, for over 100 ms on a busy
//     machine);
//   - a redirect to the very same URL, its way of saying "reload", given
//     as fast as it is followed (over 20 times in 40 ms, more than a
//     browser follows before it shows "too many redirects").
//
// Asked again a moment later, the server answers as it should. Only
// requests without a body get here (the guard refuses the rest), so each
// ask is the same request; a page that always fails costs its user the
// delays' 1.5 s, then gets the server's answer.
type loadRetry struct{ rt http.RoundTripper }

var loadRetryDelays = []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond}

func (l loadRetry) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := l.rt.RoundTrip(r)
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return resp, err
	}
	for _, d := range loadRetryDelays {
		if err != nil || !stillLoading(r, resp) {
			break
		}
		select {
		case <-r.Context().Done():
			return resp, nil
		case <-time.After(d):
		}
		again, err := l.rt.RoundTrip(r)
		if err != nil {
			return resp, nil //nolint:nilerr // the last answer stands
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		resp = again
	}
	return resp, err
}

// stillLoading reports whether resp is a History Server's answer while it
// loads the app r asks for: a 500, or a redirect to r's own URL.
func stillLoading(r *http.Request, resp *http.Response) bool {
	switch resp.StatusCode {
	case http.StatusInternalServerError:
		return true
	case http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect:
		loc, err := r.URL.Parse(resp.Header.Get("Location"))
		return err == nil && loc.Host == r.URL.Host && loc.Path == r.URL.Path && loc.RawQuery == r.URL.RawQuery
	}
	return false
}

// decodeBody undoes the content encodings Spark's Jetty can apply (gzip,
// deflate), for an upstream that encodes although the gateway asked for
// none (a compressing proxy between the gateway and a driver, say), so the
// stripper still reads the page. Other encodings are an error.
func decodeBody(encoding string, body io.ReadCloser) (io.ReadCloser, error) {
	var r io.ReadCloser
	switch strings.ToLower(strings.TrimSpace(encoding)) {
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(body)
		if err != nil {
			return nil, err
		}
		r = zr
	case "deflate":
		// HTTP's "deflate" is zlib-wrapped (RFC 9110 8.4.1.2).
		zr, err := zlib.NewReader(body)
		if err != nil {
			return nil, err
		}
		r = zr
	default:
		return nil, errors.New("unsupported content encoding")
	}
	return decodedBody{Reader: r, dec: r, body: body}, nil
}

// decodedBody reads through a decoder and closes both it and the body.
type decodedBody struct {
	io.Reader
	dec  io.Closer
	body io.Closer
}

func (d decodedBody) Close() error {
	_ = d.dec.Close() // a decoder's Close only releases its state
	return d.body.Close()
}

// errEncodedHTML is returned for HTML the stripper cannot read: refusing
// it is safer than passing kill links through.
var errEncodedHTML = errors.New("upstream sent HTML with a content encoding the gateway did not ask for")

// errRedirectAway is returned for an upstream's redirect (or Refresh)
// that a browser would follow out of the gateway: to another server, to
// the upstream's own address under another scheme, to javascript:.
// Spark's own redirects stay on the driver; what sends a browser
// elsewhere is something in front of it, such as a YARN ResourceManager's
// web proxy once the app has finished (to its app page, or the History
// Server it knows), or a hostile upstream. Passing that on would send
// users past the gateway to an internal host, or to any site with the
// gateway's page as its referrer.
var errRedirectAway = errors.New("upstream redirected outside itself")

// errUnaskedUpgrade is modifyResponse's error for a 101 answer.
var errUnaskedUpgrade = errors.New("upstream switched protocols unasked")

// restCSP is the policy of every REST answer an upstream gives under
// /api/v1/applications/<id>/: shown, if a browser navigates to it, in a
// sandbox of its own origin that runs no script and loads nothing.
const restCSP = "sandbox; default-src 'none'; frame-ancestors 'none'"

func isRedirect(status int) bool {
	return status >= 300 && status < 400 && status != http.StatusNotModified
}

func (s *Server) modifyResponse(resp *http.Response) error {
	st := stateFrom(resp.Request.Context())
	if resp.StatusCode == http.StatusSwitchingProtocols {
		// The gateway asks for no upgrade (StripRequest drops Upgrade and
		// Connection), so a 101 is a driver's own idea: refused here, its
		// connection closed, rather than handed to ReverseProxy's upgrade
		// path.
		return errUnaskedUpgrade
	}
	h := resp.Header
	// Every app shares the gateway's origin: a driver (any user can start
	// one) must not set or overwrite cookies there, the gateway's session
	// among them, nor change the origin as a whole. Spark's UI sends none
	// of these headers.
	dropOriginHeaders(h)
	if st.route.Kind == KindAPIApp {
		// The REST API is data, and stays on the main origin with per-app
		// origins too: whatever a driver answers there (an HTML or SVG
		// page; any user can start a driver) runs no script on it.
		h.Set("Content-Security-Policy", restCSP)
		h.Set("X-Content-Type-Options", "nosniff")
	}
	// Redirects and refreshes are judged as a browser reads them; one
	// that would leave the gateway, for another server or a driver's own
	// address, never reaches the browser.
	if err := rewriteLocations(resp, st.prefix); err != nil {
		return err
	}
	if resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusNotModified {
		return nil
	}
	if ct, ok := h["Content-Type"]; (!ok || slices.ContainsFunc(ct, browserSniffs)) && resp.Request.Method != http.MethodHead {
		sniffContentType(resp)
	}
	html := slices.ContainsFunc(h.Values("Content-Type"), isHTML)
	if id, attempt, ok := executorsListApp(st.route.Path); ok && !html {
		if st.route.AppID != "" {
			// A driver's list is of its own app, whatever id the path
			// asked for: the links, and the pods they name, are the
			// routed app's, never another's the user may not see.
			id = st.route.AppID
		}
		// Executor log links lead through the gateway (execlogs.go).
		links := execLogLinks{appID: id, attempt: attempt, onAppHost: st.onAppHost}
		return rewriteExecutorLogs(resp, links, s.appPodLinks(id, st.onAppHost))
	}
	if id, attempt, ok := taskLogsApp(st.route.Path); ok && !html {
		if st.route.AppID != "" {
			id = st.route.AppID
		}
		// Tasks and other processes carry log links too, which the stage
		// page's task table and the Executors tab render as HTML.
		return rewriteTaskLogs(resp, execLogLinks{appID: id, attempt: attempt, onAppHost: st.onAppHost})
	}
	if !html {
		// No value is HTML (browsers read the last, net/http the first).
		return nil
	}
	if resp.Request.Method == http.MethodHead {
		// The upstream's length is not the stripped page's, which only
		// a GET reads.
		h.Del("Content-Length")
		return nil
	}
	// Every value: "identity" then "gzip" is gzip to a browser.
	if ce := strings.Join(h.Values("Content-Encoding"), ","); ce != "" && !strings.EqualFold(ce, "identity") {
		body, err := decodeBody(ce, resp.Body)
		if err != nil {
			return fmt.Errorf("%w: %q: %w", errEncodedHTML, ce, err)
		}
		resp.Body = body
		h.Del("Content-Encoding")
		// The announced length was the encoded one: the page's own is
		// unknown, and a page read whole is held only up to wholePageMax.
		resp.ContentLength = -1
	}
	// The stripper reads the page's bytes as UTF-8 (ASCII) HTML, so the
	// browser must too: the answer says text/html and utf-8, and UTF-16
	// byte order marks at the start of what is sent, which a browser
	// obeys before any header, are dropped (below). A page in UTF-16 then
	// shows as the stripper read it, with no tag in it. XHTML goes out as
	// HTML too: a browser would parse it as XML, where <xmp> and
	// <plaintext> hold elements.
	h.Set("Content-Type", "text/html; charset=utf-8")
	if st.killApp != nil && s.mayKill(st) {
		resp.Body = NewConfirmLinkReader(resp.Body, st.prefix)
	} else {
		resp.Body = NewStrippingReader(resp.Body)
	}
	if st.master != nil {
		resp.Body = s.masterLinkReader(resp, st.master)
	}
	resp.Body = s.backBar(resp.Body, st)
	resp.Body = dropUTF16BOMs(resp.Body)
	// A page that arrives whole (as Spark sends its pages) goes out whole,
	// with its new length (wholepage.go).
	if whole, err := sendWhole(resp); whole || err != nil {
		return err
	}
	// A longer page, or one the budget cannot hold now: the length
	// changes, so it is not announced;
	// resp.ContentLength keeps the upstream's, the length read. -1 would
	// make ReverseProxy treat the page as a stream and flush after every
	// Read of the stripper (a write(2) each, a timer per response, and a
	// chunk boundary each), where the server's own buffering would send
	// it in fewer writes.
	h.Del("Content-Length")
	return nil
}

// mayKill asks the Authorizer, once per HTML page of a live driver in
// modify-acl mode, whether the user may kill the app's jobs and stages,
// that is whether the page gets confirmation links instead of no kill
// controls. The decision is audited at debug level, as listing filters are:
// the kill itself is authorized again, and audited, when it is confirmed.
func (s *Server) mayKill(st *reqState) bool {
	v := s.authz.Authorize(st.ident, st.killApp, nil, Modify)
	s.auditDecision(st, st.killApp, nil, Modify, v, "kill links")
	return v.Allow
}

// sniffContentType names the type of resp's body, which its upstream did
// not: as net/http's server would (http.DetectContentType over its first
// 512 bytes), which it would then send, so that a page it would call HTML
// is stripped as HTML.
func sniffContentType(resp *http.Response) {
	br := bufio.NewReaderSize(resp.Body, 512)
	head, _ := br.Peek(512) // a read error shows again at the next read
	resp.Header.Set("Content-Type", http.DetectContentType(head))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{br, resp.Body}
}

// browserSniffs reports whether a browser sniffs an answer of this
// Content-Type to learn its type (an empty one, or the MIME Sniffing
// Standard's "unknown" types), as it does one without a type.
func browserSniffs(ct string) bool {
	essence, _, _ := strings.Cut(ct, ";")
	essence = strings.Trim(essence, " \t\r\n")
	return essence == "" || strings.EqualFold(essence, "unknown/unknown") || strings.EqualFold(essence, "application/unknown") || essence == "*/*"
}

// dropUTF16BOMs drops UTF-16 byte order marks (FE FF or FF FE) from the
// start of body, as many as there are: the first two bytes of the output
// are never one.
func dropUTF16BOMs(body io.ReadCloser) io.ReadCloser { return &bomDropper{ReadCloser: body} }

type bomDropper struct {
	io.ReadCloser
	started bool
}

func (b *bomDropper) Read(p []byte) (int, error) {
	if b.started {
		return b.ReadCloser.Read(p)
	}
	b.started = true
	if len(p) < 2 { // not a reader of pages: they take KiBs
		return b.ReadCloser.Read(p)
	}
	n := 0
	var err error
	for {
		for n < 2 && err == nil {
			var k int
			k, err = b.ReadCloser.Read(p[n:])
			n += k
		}
		if n < 2 || !(p[0] == 0xFE && p[1] == 0xFF || p[0] == 0xFF && p[1] == 0xFE) {
			return n, err
		}
		n = copy(p, p[2:n])
	}
}

// isHTML reports whether a browser may render a response of this
// Content-Type as HTML. It reads the type and subtype as a browser does
// (parameters do not change them) without allocating; an unparseable type
// counts as HTML, since a browser may sniff it.
func isHTML(ct string) bool {
	if ct == "" {
		return false
	}
	essence, _, _ := strings.Cut(ct, ";")
	typ, sub, ok := strings.Cut(strings.Trim(essence, " \t\r\n"), "/")
	if !ok || !isToken(typ) || !isToken(sub) {
		return true
	}
	return strings.EqualFold(typ, "text") && strings.EqualFold(sub, "html") ||
		strings.EqualFold(typ, "application") && strings.EqualFold(sub, "xhtml+xml")
}

// isToken reports whether s is a non-empty HTTP token (RFC 9110).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isAlnum(c) && !strings.ContainsRune("!#$%&'*+-.^_`|~", rune(c)) {
			return false
		}
	}
	return true
}

// chunkPool holds the reverse proxy's 64 KiB copy buffers: a whole page
// (wholepage.go) of up to 64 KiB is handed to the server in one write.
var chunkPool = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// bufferPool lends the reverse proxy its copy buffers from chunkPool.
type bufferPool struct{}

func (bufferPool) Get() []byte  { return *chunkPool.Get().(*[]byte) }
func (bufferPool) Put(b []byte) { chunkPool.Put(&b) }

// proxyError answers when the upstream could not be reached or its answer
// could not be passed on. It never leaves a request hanging or an empty 200.
func (s *Server) proxyError(w http.ResponseWriter, r *http.Request, err error) {
	st := stateFrom(r.Context())
	if r.Context().Err() != nil && errors.Is(err, context.Canceled) {
		// The client went away: nothing to answer, nothing went wrong.
		st.clientGone = true
		w.WriteHeader(statusClientClosed)
		return
	}
	kind := upstreamErrorKind(err)
	s.metrics.observeUpstreamError(kind)
	he := &httpError{Status: http.StatusBadGateway, AppID: st.route.AppID, Title: "Upstream did not answer", Cause: err}
	switch kind {
	case upstreamRedirectAway:
		// Usually the app has just finished: reload until discovery has
		// seen it end and the bookmark leads to the History Server.
		he.Status = http.StatusServiceUnavailable
		he.Title = "Application may have finished"
		if st.suspectID != "" {
			he.Msg = fmt.Sprintf("%s of %s sent the browser to a server outside the gateway, as a YARN ResourceManager does once an application has finished; this page reloads itself", st.upstream.label, appLabel(st))
		} else {
			he.Title = "Redirect refused"
			he.Msg = fmt.Sprintf("%s sent the browser to a server outside the gateway; this page reloads itself", st.upstream.label)
		}
		he.RetryAfter = 5
	case upstreamNotConfirmed:
		// Usually the app has just finished and another took its port:
		// discovery has been asked to check (Confirm), and the reload
		// finds the app ended, or confirmed.
		he.Status = http.StatusServiceUnavailable
		he.Title = "Application may have finished"
		he.Msg = fmt.Sprintf("%s of %s could not be confirmed to still serve the app (another application may have taken its port); this page reloads itself", st.upstream.label, appLabel(st))
		he.RetryAfter = 5
		s.writeError(w, r, st, he)
		return
	case upstreamEncodedHTML:
		he.Title = "Unsafe upstream answer"
		he.Msg = fmt.Sprintf("%s sent a page sparkgate cannot check for kill controls", st.upstream.label)
	case upstreamTimeout:
		he.Msg = fmt.Sprintf("%s of %s did not answer in time", st.upstream.label, appLabel(st))
	case upstreamBusy:
		// Not the driver's failure as such: no suspect call, and the
		// page says to try again rather than that the app has ended.
		he.Status = http.StatusServiceUnavailable
		he.Title = "Upstream busy"
		he.Msg = fmt.Sprintf("%s of %s has as many requests waiting for an answer as the gateway lets one driver have, and none was answered in time; try again later", st.upstream.label, appLabel(st))
		he.RetryAfter = 10
		s.writeError(w, r, st, he)
		return
	default:
		he.Msg = fmt.Sprintf("%s of %s did not answer", st.upstream.label, appLabel(st))
		if st.suspectID != "" && (kind == upstreamRefused || kind == upstreamClosed) {
			// A driver that has just stopped refuses connections before
			// discovery has seen it end, and one that is stopping may
			// accept a connection and close it unanswered: reload, so the
			// bookmark turns into the waiting page or the History
			// Server's view.
			he.Msg += "; it may have just finished, this page reloads itself"
			he.RetryAfter = 5
		}
	}
	if st.suspectID != "" && s.suspect != nil {
		s.suspect(st.suspectID)
	}
	s.writeError(w, r, st, he)
}

// Kinds of upstream failure: they choose the error page and label the
// sparkgate_upstream_errors_total metric.
const (
	upstreamRedirectAway = "redirect_away"
	upstreamEncodedHTML  = "encoded_html"
	upstreamNotConfirmed = "not_confirmed" // another app may answer at the address (confirm.go)
	upstreamRefused      = "refused"
	upstreamClosed       = "closed" // the connection ended before an answer
	upstreamTimeout      = "timeout"
	upstreamBusy         = "busy" // every slot taken (slotLimit)
	upstreamOther        = "other"
)

func upstreamErrorKind(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, errRedirectAway):
		return upstreamRedirectAway
	case errors.Is(err, errEncodedHTML):
		return upstreamEncodedHTML
	case errors.Is(err, errNotConfirmed):
		return upstreamNotConfirmed
	case errors.Is(err, errUpstreamBusy):
		return upstreamBusy
	case errors.Is(err, syscall.ECONNREFUSED):
		return upstreamRefused
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET):
		return upstreamClosed
	case errors.As(err, &ne) && ne.Timeout():
		return upstreamTimeout
	}
	return upstreamOther
}

func appLabel(st *reqState) string {
	if st.route.AppID != "" {
		return st.route.AppID
	}
	return "the request"
}

// proxy hands the request to the reverse proxy of base. The state must
// hold route, prefix and xfc already.
func (s *Server) proxy(w http.ResponseWriter, r *http.Request, st *reqState, base *url.URL, label string) {
	st.upstream = s.upstreams.get(base, label)
	st.upstream.rp.ServeHTTP(w, r)
}

// proxyDriver is proxy to a driver, naming it in error pages by its
// address (built once per driver, not per request).
func (s *Server) proxyDriver(w http.ResponseWriter, r *http.Request, st *reqState, base *url.URL) {
	st.upstream = s.upstreams.getLabeled(base, func() string { return driverLabel(base) }, true)
	st.upstream.rp.ServeHTTP(w, r)
}
