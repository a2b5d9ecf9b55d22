package proxy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/sparkgate/sparkgate/proxy/discovery"
)

// reqState is what one request carries through the gateway: the request id
// and access-log fields the middleware logs, and what the reverse proxy's
// hooks need. Middleware allocates it once; Server fills it in.
type reqState struct {
	requestID string
	appID     string
	user      string

	route Route
	// routed says Server parsed route (sign-in and health requests are
	// answered without).
	routed bool
	ident  Identity
	// json says the client wants JSON errors (REST paths, Accept header).
	json bool

	// Set by the server before handing the request to a reverse proxy.
	upstream *upstreamTarget
	prefix   string // public prefix for Location rewriting
	xfc      string // X-Forwarded-Context to send, "" for none
	// suspectID is the live app whose driver is called; "" for History
	// Servers. The error handler reports it to discovery.
	suspectID  string
	clientGone bool
	// killApp is the live app whose pages may carry kill confirmation
	// links (proxy.kill modify-acl); nil otherwise.
	killApp *discovery.App
	// onAppHost says the request came to an app's own host
	// (Config.AppDomain), not to the main origin.
	onAppHost bool
	// handoffBind is the hash of the browser's binder on the app's host
	// when the main origin is asked for a hand-off token (apphost.go);
	// handoffAgain marks the browser's second try.
	handoffBind  string
	handoffAgain bool
	// master is the standalone master whose page is proxied (its links
	// are rewritten, master.go); nil otherwise.
	master *masterTarget
}

type stateKey struct{}

func stateFrom(ctx context.Context) *reqState {
	st, _ := ctx.Value(stateKey{}).(*reqState)
	return st
}

// Middleware wraps the whole gateway (Server and the /oauth2/ handlers): it
// gives each request an id (X-Request-Id; a client's value is kept only if
// it is a short token of safe characters, so it cannot forge log lines),
// writes one access-log line per request and turns a panic into a 500
// instead of a dropped connection. m, when not nil, counts each request.
func Middleware(next http.Handler, logger *zap.Logger, m *Metrics) http.Handler {
	var seq atomic.Uint64
	// A random per-process prefix plus a counter is unique across replicas
	// and restarts without reading crypto/rand on every request.
	var b [6]byte
	_, _ = rand.Read(b[:])
	prefix := hex.EncodeToString(b[:]) + "-"
	// The access line comes from here every time: no caller on it, which
	// zap would find by walking the stack on every request.
	access := logger.WithOptions(zap.WithCaller(false))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		// One allocation carries the request's state and its response
		// writer wrapper.
		rc := &reqCarrier{}
		st, lw := &rc.st, &rc.lw
		id := r.Header.Get("X-Request-Id")
		if !validRequestID(id) {
			var buf [32]byte
			id = string(strconv.AppendUint(append(buf[:0], prefix...), seq.Add(1), 36))
			rc.idHeader[0] = id
			// Both headers share one value slice; nothing in the gateway
			// or net/http writes into a header's slice in place.
			r.Header["X-Request-Id"] = rc.idHeader[:]
		} else {
			rc.idHeader[0] = id
		}
		w.Header()["X-Request-Id"] = rc.idHeader[:]
		st.requestID = id
		lw.ResponseWriter = w
		// The front server has no WriteTimeout (answers stream as long as
		// they flow); a client that stops reading is dropped instead once
		// a write has waited writeStallTimeout. Armed now (HTTP/1), so
		// that the flush after a small answer is bounded too (pipelined
		// requests whose answers are never read).
		if d, ok := w.(writeDeadliner); ok {
			lw.dl, lw.perWrite = d, r.ProtoMajor >= 2
			if !lw.perWrite {
				lw.arm(start)
			}
		}
		defer func() {
			p := recover()
			if p != nil && p != http.ErrAbortHandler { //nolint:errorlint // sentinel compared as net/http does
				logger.Error("panic serving request", zap.String("request_id", id),
					zap.Any("panic", p), zap.Stack("stack"))
				if lw.status == 0 {
					lw.Header().Set("Content-Type", "text/plain; charset=utf-8")
					lw.WriteHeader(http.StatusInternalServerError)
					_, _ = lw.Write([]byte("internal error (request " + id + ")\n"))
				}
			}
			status := lw.status
			if status == 0 {
				status = http.StatusOK
			}
			if st.clientGone {
				status = statusClientClosed
			}
			m.observeRequest(routeLabel(st, r.URL.Path), status, time.Since(start))
			if ce := access.Check(zap.InfoLevel, "request"); ce != nil {
				ce.Write(
					zap.String("request_id", id),
					zap.String("method", r.Method),
					zap.String("path", r.URL.Path),
					zap.String("app_id", st.appID),
					zap.String("user", st.user),
					zap.Int("status", status),
					zap.Int64("bytes", lw.bytes),
					zap.Duration("duration", time.Since(start)),
				)
			}
			if p == http.ErrAbortHandler { //nolint:errorlint // see above
				// net/http aborts the connection quietly for this value;
				// the reverse proxy uses it when the upstream breaks off
				// mid-body.
				panic(p)
			}
		}()
		next.ServeHTTP(lw, r.WithContext(contextWithState(r.Context(), st)))
		// What the handler left buffered is sent under a deadline that
		// has not passed while it was quiet (a follow ending after a long
		// wait for its next line).
		lw.rearm()
		if lw.perWrite {
			// The stream then ends, and its timer with it.
			_ = http.NewResponseController(lw.ResponseWriter).Flush()
		}
	})
}

// reqCarrier is what Middleware allocates per request.
type reqCarrier struct {
	st       reqState
	lw       logWriter
	idHeader [1]string
}

// statusClientClosed is logged when the client went away before the answer
// (nginx's convention); it is not an error of the gateway or the driver.
const statusClientClosed = 499

func validRequestID(s string) bool {
	if len(s) < 8 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isAlnum(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

// logWriter records the status and size for the access log. It unwraps for
// http.ResponseController so that the reverse proxy can still flush.
type logWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
	// dl sets the connection's (HTTP/2: the stream's) write deadline;
	// nil when the writer has none. armed is when it was last set.
	dl    writeDeadliner
	armed time.Time
	// perWrite (HTTP/2) clears the deadline after each write: a stream's
	// deadline resets the stream when it passes even while nothing is
	// being written (a followed log waiting for its next line), where a
	// connection's only fails a write still waiting.
	perWrite bool
}

// writeDeadliner is net/http's response writer (HTTP/1 and HTTP/2).
type writeDeadliner interface{ SetWriteDeadline(time.Time) error }

// writeStallTimeout is how long one write to a client may wait for the
// client to read before the connection is dropped. It bounds no answer's
// length: the deadline moves on before every write, so a followed log or
// a long download streams for as long as the client reads it.
var writeStallTimeout = time.Minute

// rearm moves the write deadline on when it was set more than an eighth
// of writeStallTimeout ago (each write then has at least 7/8 of it), so
// that a page of many small writes does not reset a timer for each.
func (w *logWriter) rearm() {
	if w.dl == nil {
		return
	}
	if now := time.Now(); w.perWrite || now.Sub(w.armed) > writeStallTimeout/8 {
		w.arm(now)
	}
}

// disarm ends the deadline of a write that returned (HTTP/2 only).
func (w *logWriter) disarm() {
	if w.perWrite {
		_ = w.dl.SetWriteDeadline(time.Time{})
	}
}

func (w *logWriter) arm(now time.Time) {
	w.armed = now
	_ = w.dl.SetWriteDeadline(now.Add(writeStallTimeout))
}

func (w *logWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *logWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.rearm()
	defer w.disarm()
	n, err := w.ResponseWriter.Write(p) //nolint:gosec // G705: passes the handler's bytes through unchanged; pages escape their own content
	w.bytes += int64(n)
	return n, err
}

func (w *logWriter) Flush() {
	w.rearm()
	defer w.disarm()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *logWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// setPageHeaders sets the security headers of the gateway's own pages.
// Proxied Spark pages keep Spark's headers instead (Spark's CSP, framing
// and caching choices are its own).
func setPageHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	// A gateway page opened by a script of the shared origin (a driver's
	// page calling window.open) gets a browsing context group of its own:
	// the script's handle on it is severed, so it cannot read the kill
	// confirmation's token or the index. Upstreams' own COOP headers are
	// dropped (originHeaders), so no driver page can match this one.
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}

func contextWithState(ctx context.Context, st *reqState) context.Context {
	return context.WithValue(ctx, stateKey{}, st)
}
