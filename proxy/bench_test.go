package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
	"testing"

	"go.uber.org/zap"

	"github.com/sparkgate/sparkgate/proxy/discovery"
)

// BenchmarkServeApp measures the whole per-request path: middleware, route,
// authentication, guard, lookup, authorization, reverse proxy to a real
// backend and back (client and backend included).
func BenchmarkServeApp(b *testing.B) {
	h := newHarness(b, nil)
	req, err := http.NewRequest("GET", h.gw.URL+"/app/"+appLive+"/environment/?x=1", nil)
	if err != nil {
		b.Fatal(err)
	}
	req.AddCookie(&http.Cookie{Name: sessionName, Value: "alice"})
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		resp, err := h.client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}

// BenchmarkServeAppHandler is the gateway's own share: ServeHTTP with the
// backend call included but no client-side HTTP.
func BenchmarkServeAppHandler(b *testing.B) {
	h := newHarness(b, nil)
	handler := Middleware(h.srv, zapNop(), nil)
	req, _ := http.NewRequest("GET", "http://gw.test/app/"+appLive+"/environment/?x=1", nil)
	req.AddCookie(&http.Cookie{Name: sessionName, Value: "alice"})
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		w := &discardWriter{h: http.Header{}}
		handler.ServeHTTP(w, req)
		if w.code != http.StatusOK {
			b.Fatalf("status %d", w.code)
		}
	}
}

// BenchmarkServeAppParallel is the handler path under 64 concurrent
// requests to one driver; dials/op counts new upstream connections (it
// should be ~0: idle connections are reused).
func BenchmarkServeAppParallel(b *testing.B) {
	h := newHarness(b, nil)
	dials := countDials(h.srv)
	handler := Middleware(h.srv, zapNop(), nil)
	b.ReportAllocs()
	b.SetParallelism(32) // 64 goroutines on 2 cores
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		req, _ := http.NewRequest("GET", "http://gw.test/app/"+appLive+"/environment/?x=1", nil)
		req.AddCookie(&http.Cookie{Name: sessionName, Value: "alice"})
		for pb.Next() {
			w := &discardWriter{h: http.Header{}}
			handler.ServeHTTP(w, req)
			if w.code != http.StatusOK {
				b.Errorf("status %d", w.code)
				return
			}
		}
	})
	b.ReportMetric(float64(dials.Load())/float64(b.N), "dials/op")
}

type discardWriter struct {
	h    http.Header
	code int
}

func (w *discardWriter) Header() http.Header { return w.h }
func (w *discardWriter) WriteHeader(c int) {
	if w.code == 0 {
		w.code = c
	}
}
func (w *discardWriter) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return len(p), nil
}

func zapNop() *zap.Logger { return zap.NewNop() }

// BenchmarkServeAppHTML is the whole request path for a real Spark page
// (the 3.5.9 jobs page, kill links included): proxying plus stripping,
// then answering plain or compressed, as the client accepts (proxy.compress
// on, the default). cpu-ns/op is the process's CPU time per request
// (client, gateway and backend together): on a shared machine the wall
// clock also counts other processes' time. BenchmarkBareProxyHTML is the
// same request through a bare httputil.ReverseProxy, the baseline.
//
// kill20 is the same for a kill-heavy page (3.5.9's jobs page with 20
// jobs running, a kill control each), plain.
func BenchmarkServeAppHTML(b *testing.B) {
	page, drv := htmlBackend(b, "testdata/spark-3.5.9-jobs.html", false)
	kpage, kdrv := htmlBackend(b, "testdata/spark-3.5.9-jobs-kill20.html", false)
	h := newHarness(b, nil)
	u, _ := url.Parse(drv.URL)
	ku, _ := url.Parse(kdrv.URL)
	h.reg.Store(discovery.NewSnapshot([]*discovery.App{
		{ID: appLive, Name: "etl", User: "alice", State: discovery.Running, UIURL: u, Source: "static"},
		{ID: appKill20, Name: "etl", User: "alice", State: discovery.Running, UIURL: ku, Source: "static"},
	}))
	c, err := Compress(h.srv)
	if err != nil {
		b.Fatal(err)
	}
	gw := httptest.NewServer(Middleware(c, zap.NewNop(), nil))
	b.Cleanup(gw.Close)
	for _, enc := range []string{"identity", "gzip", "zstd"} {
		b.Run(enc, func(b *testing.B) {
			benchGet(b, h.client, gw.URL+"/app/"+appLive+"/jobs/", enc, len(page))
		})
	}
	b.Run("kill20", func(b *testing.B) {
		benchGet(b, h.client, gw.URL+"/app/"+appKill20+"/jobs/", "identity", len(kpage))
	})
	// As a real driver sends that page: longer than Jetty's 32 KiB
	// output buffer, it goes out chunked, without a length.
	_, cdrv := htmlBackend(b, "testdata/spark-3.5.9-jobs-kill20.html", true)
	cu, _ := url.Parse(cdrv.URL)
	h.reg.Store(discovery.NewSnapshot([]*discovery.App{
		{ID: appKill20, Name: "etl", User: "alice", State: discovery.Running, UIURL: cu, Source: "static"},
	}))
	b.Run("kill20-chunked", func(b *testing.B) {
		benchGet(b, h.client, gw.URL+"/app/"+appKill20+"/jobs/", "identity", len(kpage))
	})
}

// appKill20 is the app of BenchmarkServeAppHTML's kill-heavy page.
const appKill20 = "app-20240101000000-0020"

// BenchmarkBareProxyHTML is BenchmarkServeAppHTML/identity (and kill20)
// through a bare httputil.ReverseProxy (no authentication, no stripping;
// as bench/cmd/bareproxy): what proxying alone costs in the same process.
func BenchmarkBareProxyHTML(b *testing.B) {
	for _, c := range []struct {
		name, file string
		chunked    bool
	}{
		{"jobs", "testdata/spark-3.5.9-jobs.html", false},
		{"kill20", "testdata/spark-3.5.9-jobs-kill20.html", false},
		{"kill20-chunked", "testdata/spark-3.5.9-jobs-kill20.html", true},
	} {
		b.Run(c.name, func(b *testing.B) {
			page, drv := htmlBackend(b, c.file, c.chunked)
			u, _ := url.Parse(drv.URL)
			rp := httputil.NewSingleHostReverseProxy(u)
			tr := http.DefaultTransport.(*http.Transport).Clone()
			tr.MaxIdleConnsPerHost = maxIdlePerUpstream
			rp.Transport = tr
			gw := httptest.NewServer(rp)
			b.Cleanup(gw.Close)
			benchGet(b, &http.Client{}, gw.URL+"/jobs/", "identity", len(page))
		})
	}
}

// writeAsJetty sends page as Spark's Jetty sends a page longer than its
// 32 KiB output buffer: chunked, a buffer at a time.
func writeAsJetty(w http.ResponseWriter, page []byte) {
	for p := page; len(p) > 0; {
		n := min(len(p), 32<<10)
		_, _ = w.Write(p[:n])
		w.(http.Flusher).Flush()
		p = p[n:]
	}
}

// htmlBackend serves a real Spark page (file) as Spark's Jetty does: with
// its length, as a page that fits Jetty's output buffer, or chunked
// (writeAsJetty), as one longer than that buffer.
func htmlBackend(b *testing.B, file string, chunked bool) ([]byte, *httptest.Server) {
	page, err := os.ReadFile(file)
	if err != nil {
		b.Fatal(err)
	}
	drv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html;charset=utf-8")
		if chunked {
			writeAsJetty(w, page)
			return
		}
		// Set, or a page over 2 KB would go chunked (as bench/cmd/sparkstatic
		// does not), and the reverse proxy would flush after every read.
		w.Header().Set("Content-Length", strconv.Itoa(len(page)))
		_, _ = w.Write(page)
	}))
	b.Cleanup(drv.Close)
	return page, drv
}

// benchGet GETs url with the test session until b is done, and reports the
// bytes sent and the CPU time per request.
func benchGet(b *testing.B, client *http.Client, url, enc string, size int) {
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		b.Fatal(err)
	}
	req.AddCookie(&http.Cookie{Name: sessionName, Value: "alice"})
	req.Header.Set("Accept-Encoding", enc)
	var sent int64
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	for b.Loop() {
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
		sent = n
	}
	if cpu := processCPU() - cpu0; cpu > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
	b.ReportMetric(float64(sent), "sent-B/op")
}
