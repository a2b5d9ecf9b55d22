package proxy

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/sparkgate/sparkgate/proxy/discovery"
)

// countDials makes the gateway's transport count its new upstream
// connections.
func countDials(s *Server) *atomic.Int64 {
	var n atomic.Int64
	dial := s.upstreams.transport.DialContext
	s.upstreams.transport.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		n.Add(1)
		return dial(ctx, network, addr)
	}
	return &n
}

// barrierDriver is a driver that answers only once `want` requests are in
// flight at the same time, so that each round forces that many upstream
// connections at once.
type barrierDriver struct {
	*httptest.Server
	want    int
	mu      sync.Mutex
	arrived int
	release chan struct{}
}

func newBarrierDriver(t *testing.T, want int) *barrierDriver {
	d := &barrierDriver{want: want, release: make(chan struct{})}
	d.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		d.mu.Lock()
		d.arrived++
		rel := d.release
		if d.arrived == d.want {
			d.arrived = 0
			d.release = make(chan struct{})
			close(rel)
		}
		d.mu.Unlock()
		select {
		case <-rel:
		case <-time.After(10 * time.Second):
			t.Error("barrier driver: not all requests arrived")
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(d.Close)
	return d
}

// TestUpstreamNoRedial checks that 64 concurrent requests to one driver,
// repeated, reuse their upstream connections: the idle pool keeps all of
// them between rounds instead of closing some and dialing again.
func TestUpstreamNoRedial(t *testing.T) {
	const conc, rounds = 64, 3
	h := newHarness(t, nil)
	d := newBarrierDriver(t, conc)
	u, _ := url.Parse(d.URL)
	h.reg.Store(discovery.NewSnapshot([]*discovery.App{{ID: appLive, Name: "etl", User: "alice",
		State: discovery.Running, UIURL: u, Source: "static"}}))
	dials := countDials(h.srv)
	handler := Middleware(h.srv, zap.NewNop(), nil)
	for round := range rounds {
		var wg sync.WaitGroup
		codes := make([]int, conc)
		for i := range conc {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req := httptest.NewRequest("GET", "/api/v1/applications/"+appLive+"/jobs", nil)
				req.AddCookie(&http.Cookie{Name: sessionName, Value: "alice"})
				w := httptest.NewRecorder()
				handler.ServeHTTP(w, req)
				codes[i] = w.Code
			}()
		}
		wg.Wait()
		for i, c := range codes {
			if c != http.StatusOK {
				t.Fatalf("round %d request %d: status %d", round, i, c)
			}
		}
	}
	if got := dials.Load(); got > conc {
		t.Errorf("%d rounds of %d concurrent requests dialed %d connections; want at most %d (no redial)", rounds, conc, got, conc)
	}
}

func TestIsHTML(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ct   string
		want bool
	}{
		{"", false},
		{"text/html", true},
		{"text/html;charset=utf-8", true},
		{"TEXT/HTML; charset=UTF-8", true},
		{" text/html ", true},
		{"application/xhtml+xml", true},
		{"application/json", false},
		{"application/json;charset=utf-8", false},
		{"application/json; charset", false}, // a browser ignores a bad parameter
		{"text/plain", false},
		{"text/css", false},
		{"text/htmlx", false},
		{"text", true},          // unparseable: a browser may sniff
		{"text/", true},         // unparseable
		{"/html", true},         // unparseable
		{"text/ht ml", true},    // unparseable
		{"text/html\x00", true}, // unparseable
	}
	for _, tt := range tests {
		t.Run(tt.ct, func(t *testing.T) {
			if got := isHTML(tt.ct); got != tt.want {
				t.Errorf("isHTML(%q) = %v; want %v", tt.ct, got, tt.want)
			}
		})
	}
}

// FuzzStripDoAsPrecheck checks that the pre-check of stripDoAs never skips
// a query the full check would change.
func FuzzStripDoAsPrecheck(f *testing.F) {
	for _, s := range []string{"x=1", "doAs=bob", "a=1&DOAS=x", "%64oAs=bob", "do%41s=x;y=1", "+doas+=1", "do\u017fs=x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		if q != "" && !mayHaveDoAs(q) {
			if got := stripDoAsAll(q); got != q {
				t.Fatalf("mayHaveDoAs(%q) = false but stripDoAs gives %q", q, got)
			}
		}
	})
}

// TestUpstreamUnaskedEncoding checks an upstream that compresses although
// the gateway asked for no encoding: gzip and deflate HTML are decoded and
// stripped; HTML in an encoding the gateway cannot read, or that does not
// decode, is refused (passing it would pass its kill links); anything else
// passes through unchanged with its encoding.
func TestUpstreamUnaskedEncoding(t *testing.T) {
	h := newHarness(t, nil)
	var gotAE atomic.Value
	page := `<p>job <a href="/jobs/job/kill/?id=3" class="kill-link">(kill)</a><a class="name-link" href="/jobs/job/?id=3">count</a></p>`
	d := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAE.Store(r.Header.Get("Accept-Encoding"))
		ct := "application/json"
		if r.URL.Path == "/jobs/" {
			ct = "text/html;charset=utf-8"
		}
		w.Header().Set("Content-Type", ct)
		enc := r.URL.Query().Get("enc")
		w.Header().Set("Content-Encoding", enc)
		switch enc {
		case "gzip":
			zw := gzip.NewWriter(w)
			_, _ = io.WriteString(zw, page)
			_ = zw.Close()
		case "deflate":
			zw := zlib.NewWriter(w)
			_, _ = io.WriteString(zw, page)
			_ = zw.Close()
		default:
			_, _ = w.Write([]byte("\x1f\x8b not really " + enc))
		}
	}))
	t.Cleanup(d.Close)
	u, _ := url.Parse(d.URL)
	h.reg.Store(discovery.NewSnapshot([]*discovery.App{{ID: appLive, Name: "etl", User: "alice",
		State: discovery.Running, UIURL: u, Source: "static"}}))
	gz := http.Header{"Accept-Encoding": {"gzip"}}

	for _, enc := range []string{"gzip", "deflate"} {
		resp, body := h.do(t, "GET", "/app/"+appLive+"/jobs/?enc="+enc, "alice", gz)
		if resp.StatusCode != http.StatusOK || strings.Contains(body, "kill") || !strings.Contains(body, `class="name-link"`) {
			t.Errorf("%s HTML = %d %q; want 200, decoded, kill link gone", enc, resp.StatusCode, body)
		}
		if ce := resp.Header.Get("Content-Encoding"); ce != "" {
			t.Errorf("%s HTML answered with Content-Encoding %q; want none (decoded)", enc, ce)
		}
	}
	if ae, _ := gotAE.Load().(string); ae != "" {
		t.Errorf("upstream Accept-Encoding = %q; want none", ae)
	}
	for _, enc := range []string{"br", "zstd"} {
		resp, body := h.do(t, "GET", "/app/"+appLive+"/jobs/?enc="+enc, "alice", gz)
		if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, "cannot check") {
			t.Errorf("%s HTML = %d %q; want 502 saying the page cannot be checked", enc, resp.StatusCode, body)
		}
	}
	// Claims gzip but is not: refused too.
	resp, body := h.do(t, "GET", "/app/"+appLive+"/jobs/?enc=x-gzip", "alice", gz)
	if resp.StatusCode != http.StatusBadGateway {
		t.Errorf("broken gzip HTML = %d %q; want 502", resp.StatusCode, body)
	}

	// The harness client does not decode: it did not ask for gzip itself.
	resp, body = h.do(t, "GET", "/api/v1/applications/"+appLive+"/jobs?enc=br", "alice", gz)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Encoding") != "br" || body != "\x1f\x8b not really br" {
		t.Errorf("br JSON = %d %q %q; want 200 passed through with Content-Encoding br",
			resp.StatusCode, resp.Header.Get("Content-Encoding"), body)
	}
}

// TestHistoryServerLoading500AskedAgain: a History Server's 500 to a GET,
// or its redirect to the same URL (while it loads a just-listed app), is
// asked again, and the first good answer is the user's; a persistent 500 still reaches the user
// after every ask, and a driver's 500 is passed on as it is.
func TestHistoryServerLoading500AskedAgain(t *testing.T) {
	h := newHarness(t, nil)
	for _, tc := range []struct {
		name, path string
		b          *backend
		upstream   string
		status     int
		asks       int
	}{
		{"History Server, loading", "/hs/main/history/" + appHistory + "/loading500/", h.hs, "/history/" + appHistory + "/loading500/", http.StatusOK, 2},
		{"History Server, broken", "/hs/main/history/" + appHistory + "/always500/", h.hs, "/history/" + appHistory + "/always500/", http.StatusInternalServerError, 1 + len(loadRetryDelays)},
		{"History Server, reloading", "/hs/main/history/" + appHistory + "/reloading/", h.hs, "/history/" + appHistory + "/reloading/", http.StatusOK, 3},
		{"driver", "/app/" + appLive + "/loading500/", h.drv, "/loading500/", http.StatusInternalServerError, 1},
	} {
		resp, body := h.do(t, "GET", tc.path, "alice", nil)
		if resp.StatusCode != tc.status {
			t.Errorf("%s: GET %s = %d %q; want %d", tc.name, tc.path, resp.StatusCode, body, tc.status)
		}
		if n := tc.b.count(tc.upstream); n != tc.asks {
			t.Errorf("%s: upstream asked %d times; want %d", tc.name, n, tc.asks)
		}
	}
}

// TestEncodedPageNotHeldWhole: a compressed page is judged by its decoded
// size. Its announced length is the encoded one, and a page announced as
// fitting is read whole: 64 KiB of gzip that inflate to 8 MiB would be held
// at once (a bomb of 512 KiB, at 1000:1, about half a gigabyte). It streams
// instead, stripped, and is not sent with a length.
func TestEncodedPageNotHeldWhole(t *testing.T) {
	h := newHarness(t, nil)
	row := `<tr><td><a href="/jobs/job/kill/?id=3" class="kill-link">(kill)</a></td></tr>` + "\n"
	page := "<table>" + strings.Repeat(row, (8<<20)/len(row)) + "</table>"
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = io.WriteString(zw, page)
	_ = zw.Close()
	d := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html;charset=utf-8")
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Length", strconv.Itoa(gz.Len()))
		_, _ = w.Write(gz.Bytes())
	}))
	t.Cleanup(d.Close)
	if gz.Len() > wholePageMax {
		t.Fatalf("the gzip page is %d bytes; it must announce a length that fits (%d)", gz.Len(), wholePageMax)
	}
	u, _ := url.Parse(d.URL)
	h.reg.Store(discovery.NewSnapshot([]*discovery.App{{ID: appLive, Name: "etl", User: "alice",
		State: discovery.Running, UIURL: u, Source: "static"}}))

	resp, body := h.do(t, "GET", "/app/"+appLive+"/jobs/", "alice", nil)
	if resp.StatusCode != http.StatusOK || strings.Contains(body, "kill") {
		t.Fatalf("gzip page = %d, %d bytes, kill links kept: %v; want 200 stripped", resp.StatusCode, len(body), strings.Contains(body, "kill"))
	}
	if resp.ContentLength != -1 {
		t.Errorf("8 MiB decoded page sent with Content-Length %d; want streamed (its size was not known in time)", resp.ContentLength)
	}
	if want := strings.Count(page, "<tr>"); strings.Count(body, "<tr>") != want {
		t.Errorf("rows = %d; want %d", strings.Count(body, "<tr>"), want)
	}
}

// TestUpstreamContentTypeJudgedWhole: a page is stripped whenever a browser
// may render it as HTML: with no Content-Type (net/http would sniff one
// and send text/html), or with two of which one is HTML (browsers read the
// last); two Content-Encodings are read together, and "identity, gzip" is
// refused as gzip the gateway did not ask for.
func TestUpstreamContentTypeJudgedWhole(t *testing.T) {
	h := newHarness(t, nil)
	page := `<html><body><p>job <a href="/jobs/job/kill/?id=3" class="kill-link">(kill)</a></p></body></html>`
	d := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/none/":
			w.Header()["Content-Type"] = nil // no Content-Type, and no sniffing here
		case "/two/":
			w.Header()["Content-Type"] = []string{"text/plain", "text/html"}
		case "/two-encodings/":
			w.Header().Set("Content-Type", "text/html")
			w.Header()["Content-Encoding"] = []string{"identity", "gzip"}
			zw := gzip.NewWriter(w)
			_, _ = io.WriteString(zw, page)
			_ = zw.Close()
			return
		}
		_, _ = io.WriteString(w, page)
	}))
	t.Cleanup(d.Close)
	u, _ := url.Parse(d.URL)
	h.reg.Store(discovery.NewSnapshot([]*discovery.App{{ID: appLive, Name: "etl", User: "alice",
		State: discovery.Running, UIURL: u, Source: "static"}}))

	for _, p := range []string{"/none/", "/two/"} {
		resp, body := h.do(t, "GET", "/app/"+appLive+p, "alice", nil)
		if resp.StatusCode != http.StatusOK || strings.Contains(body, "kill") || !strings.Contains(body, "<p>job") {
			t.Errorf("GET %s = %d %q; want 200 with the kill link gone", p, resp.StatusCode, body)
		}
	}
	resp, _ := h.do(t, "GET", "/app/"+appLive+"/none/", "alice", nil)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Errorf("sniffed page's Content-Type = %q; want text/html, as sniffed", ct)
	}
	if resp, body := h.do(t, "GET", "/app/"+appLive+"/two-encodings/", "alice", nil); resp.StatusCode != http.StatusBadGateway {
		t.Errorf("HTML in identity, gzip = %d %q; want 502", resp.StatusCode, body)
	}
}

// TestUpstreamInformationalDropped: an upstream's 103 (Spark sends no 1xx)
// does not reach the client, with its Set-Cookie and Clear-Site-Data, and
// the final answer keeps the gateway's own headers.
func TestUpstreamInformationalDropped(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				tp := textproto.NewReader(bufio.NewReader(c))
				_, _ = tp.ReadLine()
				_, _ = tp.ReadMIMEHeader()
				_, _ = io.WriteString(c, "HTTP/1.1 103 Early Hints\r\nSet-Cookie: "+CookiePrefix+"_session=planted; Path=/\r\n"+
					"Clear-Site-Data: \"*\"\r\nLink: </x>; rel=preload\r\n\r\n"+
					"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok")
			}()
		}
	}()
	h := newHarness(t, nil)
	u, _ := url.Parse("http://" + ln.Addr().String())
	h.reg.Store(discovery.NewSnapshot([]*discovery.App{{ID: appLive, Name: "etl", User: "alice",
		State: discovery.Running, UIURL: u, Source: "static"}}))
	req, err := http.NewRequest(http.MethodGet, h.gw.URL+"/app/"+appLive+"/x", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.AddCookie(&http.Cookie{Name: sessionName, Value: "alice"})
	var got []int
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		Got1xxResponse: func(code int, _ textproto.MIMEHeader) error { got = append(got, code); return nil },
	}))
	resp, err := h.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if len(got) != 0 {
		t.Errorf("the client got informational answers %v; want none", got)
	}
	if resp.StatusCode != http.StatusOK || string(body) != "ok" || resp.Header.Get("Set-Cookie") != "" ||
		resp.Header.Get("Clear-Site-Data") != "" || resp.Header.Get("X-Request-Id") == "" {
		t.Errorf("answer = %d %q, headers %v; want 200 ok with X-Request-Id and no Set-Cookie or Clear-Site-Data", resp.StatusCode, body, resp.Header)
	}
}
