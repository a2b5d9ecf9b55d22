package proxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// servePage answers every request with page as text/html, with its length
// announced (as Spark's Jetty sends a rendered page).
func servePage(page []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html;charset=utf-8")
		w.Header().Set("Content-Length", strconv.Itoa(len(page)))
		_, _ = w.Write(page)
	}
}

// stripped is what the stripper alone makes of page.
func stripped(t *testing.T, page []byte) string {
	t.Helper()
	out, err := io.ReadAll(NewStrippingReader(io.NopCloser(bytes.NewReader(page))))
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// TestWholePageAnnouncedLength: a real Spark page full of kill controls,
// sent with its length, leaves the gateway stripped, whole, and with its
// new length announced rather than chunked.
func TestWholePageAnnouncedLength(t *testing.T) {
	page, err := os.ReadFile("testdata/spark-3.5.9-jobs-kill20.html")
	if err != nil {
		t.Fatal(err)
	}
	h := htmlDriver(t, servePage(page))
	hdr, br, _ := rawGet(t, h, "/app/"+appLive+"/jobs/")
	if te := hdr.Get("Transfer-Encoding"); te != "" {
		t.Errorf("Transfer-Encoding %q; want none (the whole page's length)", te)
	}
	n, err := strconv.Atoi(hdr.Get("Content-Length"))
	if err != nil {
		t.Fatalf("Content-Length %q: %v", hdr.Get("Content-Length"), err)
	}
	body, err := io.ReadAll(br)
	if err != nil {
		t.Fatal(err)
	}
	if len(body) != n {
		t.Errorf("body of %d bytes; Content-Length said %d", len(body), n)
	}
	if got, want := withoutBar(string(body)), stripped(t, page); got != want {
		t.Errorf("body differs from the stripper's output (%d against %d bytes)", len(got), len(want))
	}
	if strings.Contains(string(body), "/kill/") || len(body) >= len(page) {
		t.Errorf("kill controls left in the page (%d bytes of %d)", len(body), len(page))
	}
}

// TestChunkedPageSentWhole: a page that comes chunked, without a length
// (as Spark's Jetty sends a page longer than its 32 KiB output buffer),
// but whole at once, leaves the gateway whole with its new length.
func TestChunkedPageSentWhole(t *testing.T) {
	page, err := os.ReadFile("testdata/spark-3.5.9-jobs-kill20.html")
	if err != nil {
		t.Fatal(err)
	}
	h := htmlDriver(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html;charset=utf-8")
		writeAsJetty(w, page)
	})
	hdr, br, _ := rawGet(t, h, "/app/"+appLive+"/jobs/")
	n, err := strconv.Atoi(hdr.Get("Content-Length"))
	if err != nil || hdr.Get("Transfer-Encoding") != "" {
		t.Fatalf("Content-Length %q, Transfer-Encoding %q; want the stripped length, none", hdr.Get("Content-Length"), hdr.Get("Transfer-Encoding"))
	}
	body, err := io.ReadAll(br)
	if err != nil {
		t.Fatal(err)
	}
	if len(body) != n || withoutBar(string(body)) != stripped(t, page) {
		t.Errorf("body of %d bytes (Content-Length %d) differs from the stripper's output", len(body), n)
	}
}

// TestLongStreamStreams: a page of unknown length longer than
// wholePageMax is read ahead that far, then passed on as it comes.
func TestLongStreamStreams(t *testing.T) {
	unit := strings.Repeat("<tr><td>a row of a long table</td></tr>\n", 64)
	var page strings.Builder
	h := htmlDriver(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html;charset=utf-8")
		for i := 0; i*len(unit) <= 2*wholePageMax; i++ {
			_, _ = io.WriteString(w, unit)
		}
	})
	for i := 0; i*len(unit) <= 2*wholePageMax; i++ {
		page.WriteString(unit)
	}
	hdr, br, _ := rawGet(t, h, "/app/"+appLive+"/jobs/")
	if hdr.Get("Transfer-Encoding") != "chunked" {
		t.Fatalf("Transfer-Encoding %q; want chunked", hdr.Get("Transfer-Encoding"))
	}
	got := strings.Join(readChunks(t, br), "")
	if withoutBar(got) != page.String() {
		t.Errorf("body of %d bytes; want the page's %d", len(got), page.Len())
	}
}

// TestReadAheadEndsWithClient: a client that gives up while its page is
// being read ahead ends the gateway's request to the driver too.
func TestReadAheadEndsWithClient(t *testing.T) {
	gone := make(chan struct{})
	h := htmlDriver(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html;charset=utf-8")
		_, _ = io.WriteString(w, "<html><body><p>a page that never ends")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			close(gone)
		case <-time.After(20 * time.Second):
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", h.gw.URL+"/app/"+appLive+"/jobs/", nil)
	req.AddCookie(&http.Cookie{Name: sessionName, Value: "alice"})
	resp, err := h.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	select {
	case <-gone:
	case <-time.After(15 * time.Second):
		t.Fatal("the driver's request outlived the client's")
	}
}

// TestLongPageStreams: a page longer than wholePageMax is not held whole;
// it is stripped as it flows, chunked.
func TestLongPageStreams(t *testing.T) {
	unit := `<tr><td><a href="/jobs/job/kill/?id=1" class="kill-link">(kill)</a> job</td></tr>` + "\n"
	var b strings.Builder
	b.WriteString("<html><body><table>\n")
	for b.Len() <= wholePageMax {
		b.WriteString(unit)
	}
	b.WriteString("</table></body></html>\n")
	page := []byte(b.String())
	h := htmlDriver(t, servePage(page))
	hdr, br, _ := rawGet(t, h, "/app/"+appLive+"/jobs/")
	if hdr.Get("Transfer-Encoding") != "chunked" || hdr.Get("Content-Length") != "" {
		t.Fatalf("Transfer-Encoding %q, Content-Length %q; want chunked, none", hdr.Get("Transfer-Encoding"), hdr.Get("Content-Length"))
	}
	got := strings.Join(readChunks(t, br), "")
	if want := stripped(t, page); withoutBar(got) != want {
		t.Errorf("body of %d bytes differs from the stripper's output (%d)", len(got), len(want))
	}
}

// TestWholePageCutShort: a driver that announces a page and sends only
// part of it gets the user the gateway's error page, not a page cut short
// that says 200.
func TestWholePageCutShort(t *testing.T) {
	h := htmlDriver(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html;charset=utf-8")
		w.Header().Set("Content-Length", "10000")
		_, _ = io.WriteString(w, "<html><body><p>the first part of a page")
		w.(http.Flusher).Flush()
		c, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			c.Close()
		}
	})
	resp, body := h.do(t, "GET", "/app/"+appLive+"/jobs/", "alice", nil)
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("status %d; want 502", resp.StatusCode)
	}
	if strings.Contains(body, "the first part") || !strings.Contains(body, "did not answer") {
		t.Errorf("body %q; want the gateway's error page only", body)
	}
}

// TestPageBodyReleasesOnce: closing a whole page twice returns its buffer
// to the pool once.
func TestPageBodyReleasesOnce(t *testing.T) {
	buf := new(bytes.Buffer)
	buf.WriteString("<p>x</p>")
	p := &pageBody{buf: buf}
	p.Reset(buf.Bytes())
	if err := p.Close(); err != nil || p.buf != nil {
		t.Fatalf("Close: %v, buf kept %v", err, p.buf != nil)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if n, err := p.Read(make([]byte, 8)); n != 0 || !errors.Is(err, io.EOF) {
		t.Errorf("Read after Close = %d, %v; want 0, EOF", n, err)
	}
}

// TestHeadOfPageAnnouncesNoLength: a HEAD of a page does not announce the
// upstream's length, which is not the length a GET gets once stripped.
func TestHeadOfPageAnnouncesNoLength(t *testing.T) {
	page, err := os.ReadFile("testdata/spark-3.5.9-jobs-kill20.html")
	if err != nil {
		t.Fatal(err)
	}
	h := htmlDriver(t, servePage(page))
	resp, _ := h.do(t, "HEAD", "/app/"+appLive+"/jobs/", "alice", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d; want 200", resp.StatusCode)
	}
	if cl := resp.Header.Get("Content-Length"); cl == strconv.Itoa(len(page)) {
		t.Errorf("HEAD announced the upstream's length %s", cl)
	}
}

// TestPageBudget: pages held whole give back what they reserved of
// pageBudget, however their request ends, and a page that finds the
// budget spent is stripped as it flows.
func TestPageBudget(t *testing.T) {
	page, err := os.ReadFile("testdata/spark-3.5.9-jobs-kill20.html")
	if err != nil {
		t.Fatal(err)
	}
	held := func() int64 {
		t.Helper()
		// A body is closed by the reverse proxy after its last byte went
		// out, a moment after the client has read it.
		deadline := time.Now().Add(5 * time.Second)
		for pagesHeld.Load() != 0 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		return pagesHeld.Load()
	}
	for name, fn := range map[string]http.HandlerFunc{
		"length": servePage(page),
		"chunked": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			writeAsJetty(w, page)
		},
		"cut short": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.Header().Set("Content-Length", "100000")
			_, _ = w.Write(page[:1000])
		},
		"stream": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			writeAsJetty(w, page[:1000])
			time.Sleep(2 * wholePageWait)
			_, _ = w.Write(page[1000:])
		},
	} {
		h := htmlDriver(t, fn)
		_, _ = h.do(t, "GET", "/app/"+appLive+"/jobs/", "alice", nil)
		if n := held(); n != 0 {
			t.Errorf("%s: %d bytes still held after the request", name, n)
		}
	}

	defer func(b int64) { pageBudget = b }(pageBudget)
	pageBudget = 0
	h := htmlDriver(t, servePage(page))
	hdr, br, _ := rawGet(t, h, "/app/"+appLive+"/jobs/")
	if hdr.Get("Transfer-Encoding") != "chunked" {
		t.Fatalf("budget spent: Transfer-Encoding %q; want chunked (streamed)", hdr.Get("Transfer-Encoding"))
	}
	got := strings.Join(readChunks(t, br), "")
	if withoutBar(got) != stripped(t, page) {
		t.Errorf("budget spent: body differs from the stripper's output")
	}
}
