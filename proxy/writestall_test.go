package proxy

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
)

// frontServer serves h behind Middleware with the front server's settings
// (cmd/sparkgate run: no WriteTimeout), the write stall bound set to stall.
func frontServer(t *testing.T, stall time.Duration, h http.Handler, closed chan<- struct{}) *httptest.Server {
	t.Helper()
	old := writeStallTimeout
	writeStallTimeout = stall
	t.Cleanup(func() { writeStallTimeout = old })
	ts := httptest.NewUnstartedServer(Middleware(h, zap.NewNop(), nil))
	ts.Config.ReadHeaderTimeout = 10 * time.Second
	ts.Config.ReadTimeout = 30 * time.Second
	ts.Config.IdleTimeout = 2 * time.Minute
	ts.Config.MaxHeaderBytes = 64 << 10
	if closed != nil {
		ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateClosed {
				select {
				case closed <- struct{}{}:
				default:
				}
			}
		}
	}
	ts.Start()
	t.Cleanup(ts.Close)
	return ts
}

// dialSmallWindow connects with a small receive buffer, so that an answer
// the client does not read soon fills what the kernels hold.
func dialSmallWindow(t *testing.T, addr string) *net.TCPConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	tc := c.(*net.TCPConn)
	_ = tc.SetReadBuffer(4 << 10)
	t.Cleanup(func() { _ = tc.Close() })
	return tc
}

// A client that asks for a long answer (a page, an event log, a followed
// log) and then reads nothing must not hold the handler, its buffers and
// its upstream connection for ever: with no WriteTimeout on the front
// server, only a bound on how long one write may stall frees them.
func TestStalledReaderDropped(t *testing.T) {
	writeErr := make(chan error, 1)
	chunk := bytes.Repeat([]byte("x"), 32<<10)
	ts := frontServer(t, 200*time.Millisecond, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		for range 2048 { // 64 MiB, far more than the sockets hold
			if _, err := w.Write(chunk); err != nil {
				writeErr <- err
				return
			}
		}
		writeErr <- nil
	}), nil)
	c := dialSmallWindow(t, ts.Listener.Addr().String())
	if _, err := c.Write([]byte("GET /download HTTP/1.1\r\nHost: gw\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-writeErr:
		if err == nil {
			t.Fatal("64 MiB written to a client that reads nothing")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the answer's writes still block 5 s after the client stopped reading (no write deadline)")
	}
}

// A client (signed in or not) that pipelines requests and never reads
// their answers blocks the connection's goroutine in the flush after a
// small answer; ReadTimeout and IdleTimeout do not apply there, so the
// connection, its buffers and its socket memory were held until the
// client closed it.
func TestPipelinedUnreadAnswersDropped(t *testing.T) {
	closed := make(chan struct{}, 1)
	body := strings.Repeat("y", 4<<10) // about a sign-in redirect's or error page's size
	ts := frontServer(t, 200*time.Millisecond, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(body))
	}), closed)
	c := dialSmallWindow(t, ts.Listener.Addr().String())
	reqs := []byte(strings.Repeat("GET /oauth2/login HTTP/1.1\r\nHost: gw\r\n\r\n", 4096)) // 16 MiB of answers
	go func() { _, _ = c.Write(reqs) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("connection still held 5 s after its client stopped reading the answers")
	}
}

// Over HTTP/2 a stream's write deadline resets the stream when it passes,
// writing or not: a followed log quiet for longer than the bound must
// still reach its client whole.
func TestQuietStreamKeptHTTP2(t *testing.T) {
	old := writeStallTimeout
	writeStallTimeout = 100 * time.Millisecond
	t.Cleanup(func() { writeStallTimeout = old })
	ts := httptest.NewUnstartedServer(Middleware(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(300 * time.Millisecond) // the upstream's headers take a while
		_, _ = w.Write([]byte("first\n"))
		http.NewResponseController(w).Flush()
		time.Sleep(300 * time.Millisecond) // no new line for a while
		_, _ = w.Write([]byte("second\n"))
	}), zap.NewNop(), nil))
	ts.EnableHTTP2 = true
	ts.StartTLS()
	t.Cleanup(ts.Close)
	resp, err := ts.Client().Get(ts.URL + "/follow")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.ProtoMajor != 2 {
		t.Fatalf("served over %s; want HTTP/2", resp.Proto)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil || string(b) != "first\nsecond\n" {
		t.Fatalf("body %q, %v; want both lines", b, err)
	}
}
