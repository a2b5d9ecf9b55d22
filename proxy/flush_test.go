package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sparkgate/sparkgate/proxy/discovery"
)

// htmlDriver points appLive of a new harness at a driver served by fn.
func htmlDriver(t *testing.T, fn http.HandlerFunc) *harness {
	t.Helper()
	drv := httptest.NewServer(fn)
	t.Cleanup(drv.Close)
	h := newHarness(t, nil)
	u, _ := url.Parse(drv.URL)
	h.reg.Store(discovery.NewSnapshot([]*discovery.App{{ID: appLive, Name: "etl", User: "alice",
		State: discovery.Running, UIURL: u, Source: "static"}}))
	return h
}

// rawGet sends GET path to the gateway as alice on a raw connection and
// returns the response header and a reader of the raw (still chunked)
// body.
func rawGet(t *testing.T, h *harness, path string) (http.Header, *bufio.Reader, net.Conn) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(h.gw.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: gw.test\r\nCookie: "+sessionName+"=alice\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	status, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(status, "HTTP/1.1 200 ") {
		t.Fatalf("status line %q, %v; want 200", status, err)
	}
	hdr := http.Header{}
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			return hdr, br, c
		}
		k, v, _ := strings.Cut(line, ":")
		hdr.Add(k, strings.TrimSpace(v))
	}
}

// readChunks reads a chunked body to its last chunk, chunk by chunk.
func readChunks(t *testing.T, br *bufio.Reader) []string {
	t.Helper()
	var out []string
	for c := readChunk(t, br); c != ""; c = readChunk(t, br) {
		out = append(out, c)
	}
	return out
}

// readChunk reads one chunk of a chunked body; "" at the last chunk.
func readChunk(t *testing.T, br *bufio.Reader) string {
	t.Helper()
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatalf("chunk size: %v", err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(line), 16, 64)
	if err != nil {
		t.Fatalf("chunk size %q: %v", line, err)
	}
	b := make([]byte, n+2) // with its CRLF
	if _, err := io.ReadFull(br, b); err != nil {
		t.Fatalf("chunk of %d bytes: %v", n, err)
	}
	return string(b[:n])
}

// TestStrippedPageNotFlushedPerRead is the regression test of a stripped
// page of known length leaving the gateway one piece per read of the
// driver's answer: the reverse proxy flushed after every write (a
// write(2) and a chunk each) because the stripped body's length was
// reset to unknown. The page now goes out as the server buffers it.
func TestStrippedPageNotFlushedPerRead(t *testing.T) {
	parts := []string{"<html><body><p>first part</p>\n", `<a href="/jobs/job/kill/?id=1">(kill)</a><p>second part</p>` + "\n", "<p>third part</p></body></html>\n"}
	size := 0
	for _, p := range parts {
		size += len(p)
	}
	h := htmlDriver(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html;charset=utf-8")
		w.Header().Set("Content-Length", strconv.Itoa(size))
		for i, p := range parts {
			if i > 0 {
				// Separate reads at the gateway.
				time.Sleep(20 * time.Millisecond)
			}
			_, _ = io.WriteString(w, p)
			w.(http.Flusher).Flush()
		}
	})
	hdr, br, _ := rawGet(t, h, "/app/"+appLive+"/jobs/")
	want := parts[0] + "<p>second part</p>\n" + parts[2]
	var pieces []string
	if hdr.Get("Transfer-Encoding") == "chunked" {
		pieces = readChunks(t, br)
	} else {
		// Small enough for net/http to send with a length of its own.
		b, err := io.ReadAll(br)
		if err != nil {
			t.Fatal(err)
		}
		pieces = []string{string(b)}
	}
	if got := withoutBar(strings.Join(pieces, "")); got != want {
		t.Fatalf("body = %q; want %q (kill link stripped)", got, want)
	}
	if len(pieces) != 1 {
		t.Errorf("body came in %d chunks %q; want one (no flush per read)", len(pieces), pieces)
	}
}

// TestStrippedStreamFlushedAsItComes checks that a page the driver streams
// without a length reaches the browser as it comes: its first part
// arrives while the driver still holds the rest.
func TestStrippedStreamFlushedAsItComes(t *testing.T) {
	release := make(chan struct{})
	h := htmlDriver(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html;charset=utf-8")
		_, _ = io.WriteString(w, "<html><body><p>first part</p>\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-time.After(10 * time.Second):
		}
		_, _ = io.WriteString(w, "<p>rest</p></body></html>\n")
	})
	hdr, br, c := rawGet(t, h, "/app/"+appLive+"/jobs/")
	if hdr.Get("Transfer-Encoding") != "chunked" {
		t.Fatalf("Transfer-Encoding %q; want chunked", hdr.Get("Transfer-Encoding"))
	}
	// Well before the driver gives up waiting.
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	got := ""
	for !strings.Contains(got, "first part</p>") {
		got += readChunk(t, br)
	}
	close(release)
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	for ch := readChunk(t, br); ch != ""; ch = readChunk(t, br) {
		got += ch
	}
	if want := "<html><body><p>first part</p>\n<p>rest</p></body></html>\n"; withoutBar(got) != want {
		t.Errorf("body = %q; want %q", got, want)
	}
}

// withoutBar removes the back bar (backbar.go) from a page, which these
// tests do not judge.
func withoutBar(page string) string {
	return barRE.ReplaceAllString(page, "")
}

var barRE = regexp.MustCompile(`<div class="sparkgate-bar"[^>]*>.*?</div>`)
