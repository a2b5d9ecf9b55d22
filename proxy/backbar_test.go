package proxy

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"golang.org/x/net/html"
)

// barOf is what withBackBar(…, "/", "/app/", id) inserts.
func barOf(id string) string {
	s := barOpen + "/" + barHome
	if id != "" {
		s += barDiag + "/app/" + id + `/_/diagnosis">Diagnosis of this application</a>`
	}
	return s + barEnd
}

// readAllSmall reads r with a buffer of n bytes per Read.
func readAllSmall(t *testing.T, r io.Reader, n int) string {
	t.Helper()
	var out bytes.Buffer
	p := make([]byte, n)
	for i := 0; ; i++ {
		k, err := r.Read(p)
		out.Write(p[:k])
		if err == io.EOF {
			return out.String()
		}
		if err != nil {
			t.Fatal(err)
		}
		if i > 1<<20 {
			t.Fatal("reader makes no progress")
		}
	}
}

func TestBackBar(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		at       string // the bar goes right after this prefix of in; "" for none
	}{
		{"plain", `<html><head><title>x</title></head><body><nav>Spark</nav></body></html>`, `<html><head><title>x</title></head><body>`},
		{"attributes", `<!DOCTYPE html><html><body class="a>b" data-x='>' onload=f()><p>`, `<!DOCTYPE html><html><body class="a>b" data-x='>' onload=f()>`},
		{"upper case", `<HTML><BODY>text`, `<HTML><BODY>`},
		{"quote in an unquoted value", `<p a=x'y><body>x`, `<p a=x'y><body>`},
		{"quote in a name", `<p a'b c="d'e"><body>x`, `<p a'b c="d'e"><body>`},
		{"spaces around =", `<p a = "x>y" b= 'z>'><body>x`, `<p a = "x>y" b= 'z>'><body>`},
		{"in a comment", `<!-- <body> --><body>x`, `<!-- <body> --><body>`},
		{"comment with dashes", `<!-- a -- <body> ---><body>x`, `<!-- a -- <body> ---><body>`},
		{"in a script", `<script>var s = "<body>"; if (a<b) {}</script><body>x`, `<script>var s = "<body>"; if (a<b) {}</script><body>`},
		{"in a style", `<style>/* <body> */</style ><body>x`, `<style>/* <body> */</style ><body>`},
		{"end tag first", `</body><body>x`, `</body><body>`},
		{"longer names", `<bodyx><tbody><body>x`, `<bodyx><tbody><body>`},
		{"self-closing", `<body/>x`, `<body/>`},
		{"no body", `{"json": "<b>"}`, ""},
		{"unfinished", `<html><body class="x`, ""},
		{"empty", ``, ""},
	}
	for _, tt := range tests {
		for _, id := range []string{"app-20261201-0001", ""} {
			want := tt.in
			if tt.at != "" {
				if !strings.HasPrefix(tt.in, tt.at) {
					t.Fatalf("%s: bad test", tt.name)
				}
				want = tt.at + barOf(id) + tt.in[len(tt.at):]
			}
			for _, size := range []int{1, 7, len(barOf(id)) + 3, 32 << 10} {
				for _, oneByte := range []bool{false, true} {
					var src io.Reader = strings.NewReader(tt.in)
					if oneByte {
						src = iotest.OneByteReader(src)
					}
					got := readAllSmall(t, withBackBar(io.NopCloser(src), "/", "/app/", id), size)
					if got != want {
						t.Errorf("%s (id %q, reads of %d, one-byte source %v):\n got %q\nwant %q", tt.name, id, size, oneByte, got, want)
					}
				}
			}
		}
	}
}

// TestBackBarSparkPages checks every captured Spark page (3.5.9, 4.0.5,
// 4.3.0): the bar goes right after the <body> start tag an HTML parser
// finds, and nothing else changes.
func TestBackBarSparkPages(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/spark-*.html")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata pages: %v", err)
	}
	for _, f := range files {
		in, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		at := bodyEnd(in)
		if at < 0 {
			t.Fatalf("%s: no <body> for the tokenizer", f)
		}
		want := string(in[:at]) + barOf("app-1") + string(in[at:])
		got, err := io.ReadAll(withBackBar(io.NopCloser(bytes.NewReader(in)), "/", "/app/", "app-1"))
		if err != nil || string(got) != want {
			t.Errorf("%s: the bar is not right after <body> (err %v)", f, err)
		}
	}
}

// bodyEnd is the offset after the first <body> start tag, by the tokenizer.
func bodyEnd(in []byte) int {
	z := html.NewTokenizer(bytes.NewReader(in))
	off := 0
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			return -1
		}
		off += len(z.Raw())
		if tt == html.StartTagToken || tt == html.SelfClosingTagToken {
			if name, _ := z.TagName(); string(name) == "body" {
				return off
			}
		}
	}
}

// TestBackBarError checks that a read error after the tag is returned once
// the bar is out.
func TestBackBarError(t *testing.T) {
	t.Parallel()
	src := io.MultiReader(strings.NewReader("<body>"), iotest.ErrReader(io.ErrUnexpectedEOF))
	r := withBackBar(io.NopCloser(iotest.OneByteReader(src)), "/", "/app/", "")
	got, err := io.ReadAll(r)
	if !errors.Is(err, io.ErrUnexpectedEOF) || string(got) != "<body>"+barOf("") {
		t.Errorf("ReadAll = %q, %v; want the bar, then %v", got, err, io.ErrUnexpectedEOF)
	}
}

func FuzzBackBar(f *testing.F) {
	f.Add([]byte(`<!--x--><script>"<body>"</script><body a='>'>y`), 5)
	f.Fuzz(func(t *testing.T, in []byte, size int) {
		size = 1 + (size&0xffff)%4096
		one, err := io.ReadAll(withBackBar(io.NopCloser(bytes.NewReader(in)), "/", "/app/", "a"))
		if err != nil {
			t.Fatal(err)
		}
		small := readAllSmall(t, withBackBar(io.NopCloser(iotest.HalfReader(bytes.NewReader(in))), "/", "/app/", "a"), size)
		if string(one) != small {
			t.Fatalf("reads of %d differ from one read", size)
		}
		if len(one) != len(in) && len(one) != len(in)+len(barOf("a")) {
			t.Fatalf("output %d bytes for %d in", len(one), len(in))
		}
		if i := strings.Index(string(one), barOf("a")); i >= 0 && string(one[:i])+string(one[i+len(barOf("a")):]) != string(in) && len(one) != len(in) {
			t.Fatal("more than the bar changed")
		}
	})
}

// BenchmarkBackBar is the bar's cost on the captured Spark pages: copying
// them through it against copying them plain, with the reverse proxy's
// 32 KiB buffer.
func BenchmarkBackBar(b *testing.B) {
	files, err := filepath.Glob("testdata/spark-*.html")
	if err != nil || len(files) == 0 {
		b.Fatalf("no testdata pages: %v", err)
	}
	var pages [][]byte
	n := 0
	for _, f := range files {
		in, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		pages = append(pages, in)
		n += len(in)
	}
	buf := make([]byte, 32<<10)
	for _, bar := range []bool{false, true} {
		name := "plain"
		if bar {
			name = "bar"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(n))
			b.ReportAllocs()
			var src bytes.Reader
			sink := new(sinkWriter)
			// CPU time rather than the wall clock, which on a shared
			// machine also counts other processes' turns.
			cpu0 := processCPU()
			defer func() {
				if cpu := processCPU() - cpu0; cpu > 0 {
					b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/float64(len(pages)), "cpu-ns/page")
				}
			}()
			for b.Loop() {
				for _, p := range pages {
					src.Reset(p)
					var r io.ReadCloser = nopCloser{&src}
					if bar {
						r = withBackBar(r, "/", "/app/", "app-20261201120000-0001")
					}
					if _, err := io.CopyBuffer(sink, struct{ io.Reader }{r}, buf); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// TestBackBarServed checks the bar on a page served through the gateway:
// right after <body>, with the links to the index and the app's diagnosis,
// the kill link still gone, also when the driver gzips; and its style file.
func TestBackBarServed(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	for _, q := range []string{"", "?gz=1"} {
		resp, body := h.do(t, "GET", "/app/"+appLive+"/jobs/"+q, "alice", nil)
		want := "<body>" + barOf(appLive) + "\n<table>"
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, want) || strings.Contains(body, "(kill)") {
			t.Errorf("GET jobs%s = %d:\n%s\nwant the bar right after <body> and no kill link", q, resp.StatusCode, body)
		}
	}
	resp, body := h.do(t, "GET", "/_/static/bar.css", "", nil)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/css") || !strings.Contains(body, ".sparkgate-bar") {
		t.Errorf("GET /_/static/bar.css = %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	// On an app's own host the links lead to the main origin.
	s := &Server{publicURL: &url.URL{Scheme: "https", Host: "gw.test"}}
	st := &reqState{onAppHost: true, route: Route{AppID: appLive}}
	got, _ := io.ReadAll(s.backBar(io.NopCloser(strings.NewReader("<body>x")), st))
	if !strings.Contains(string(got), `href="https://gw.test/"`) || !strings.Contains(string(got), `href="https://gw.test/app/`+appLive+`/_/diagnosis"`) {
		t.Errorf("bar on an app host = %s; want links to the main origin", got)
	}
}
