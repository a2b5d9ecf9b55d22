package proxy

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"go.uber.org/zap"
)

// compressGW serves h's gateway through Compress, as cmd/sparkgate does.
type compressGW struct {
	h   *harness
	srv *httptest.Server
}

func newCompressGW(t *testing.T) *compressGW {
	t.Helper()
	h := newHarness(t, nil)
	c, err := Compress(h.srv)
	if err != nil {
		t.Fatal(err)
	}
	g := &compressGW{h: h, srv: httptest.NewServer(Middleware(c, zap.NewNop(), nil))}
	t.Cleanup(g.srv.Close)
	return g
}

// get sends GET path as alice with Accept-Encoding set by hand, so the
// client hands over the encoded bytes.
func (g *compressGW) get(t *testing.T, path, accept string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, g.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.AddCookie(&http.Cookie{Name: sessionName, Value: "alice"})
	req.Header.Set("Accept-Encoding", accept)
	resp, err := g.h.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// TestCompress: a client that accepts gzip or zstd gets the same stripped
// page, encoded; a client that accepts neither gets it plain; small
// answers go out plain.
func TestCompress(t *testing.T) {
	g := newCompressGW(t)
	page := "/app/" + appLive + "/big/"
	resp, plain := g.get(t, page, "identity")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Encoding") != "" {
		t.Fatalf("GET %s (identity) = %d %q; want 200 plain", page, resp.StatusCode, resp.Header.Get("Content-Encoding"))
	}
	if bytes.Contains(plain, []byte("kill")) || !bytes.Contains(plain, []byte("count at Main.scala:12")) {
		t.Fatalf("plain page = %.300q; want the jobs without kill links", plain)
	}
	decoders := map[string]func([]byte) ([]byte, error){
		"gzip": func(b []byte) ([]byte, error) {
			zr, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				return nil, err
			}
			return io.ReadAll(zr)
		},
		"zstd": func(b []byte) ([]byte, error) {
			zr, err := zstd.NewReader(bytes.NewReader(b))
			if err != nil {
				return nil, err
			}
			defer zr.Close()
			return io.ReadAll(zr)
		},
	}
	for enc, decode := range decoders {
		t.Run(enc, func(t *testing.T) {
			resp, body := g.get(t, page, enc)
			if got := resp.Header.Get("Content-Encoding"); got != enc {
				t.Fatalf("GET %s accepting %s: Content-Encoding %q; want %s", page, enc, got, enc)
			}
			if !strings.Contains(resp.Header.Get("Vary"), "Accept-Encoding") {
				t.Errorf("Vary = %q; want Accept-Encoding", resp.Header.Get("Vary"))
			}
			if len(body)*4 > len(plain) {
				t.Errorf("%s body is %d bytes for a %d-byte page; want under a quarter", enc, len(body), len(plain))
			}
			got, err := decode(body)
			if err != nil {
				t.Fatalf("decoding %s: %v", enc, err)
			}
			if !bytes.Equal(got, plain) {
				t.Errorf("decoded %s page differs from the plain one (%d vs %d bytes)", enc, len(got), len(plain))
			}
		})
	}
	// A browser accepts both and gets gzip, the cheaper of the two here.
	if resp, _ := g.get(t, page, "gzip, deflate, br, zstd"); resp.Header.Get("Content-Encoding") != "gzip" {
		t.Errorf("Content-Encoding for a browser = %q; want gzip", resp.Header.Get("Content-Encoding"))
	}
	// Small answers are not worth a frame.
	resp, body := g.get(t, "/app/"+appLive+"/small", "gzip")
	if resp.Header.Get("Content-Encoding") != "" || string(body) != "upstream /small" {
		t.Errorf("small answer = %q %q; want plain 'upstream /small'", resp.Header.Get("Content-Encoding"), body)
	}
}
