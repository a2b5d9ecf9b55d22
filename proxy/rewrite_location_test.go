package proxy

import (
	"net/url"
	"strings"
	"testing"
)

func TestRewriteLocation(t *testing.T) {
	t.Parallel()
	up, _ := url.Parse("http://10.0.0.5:4040")
	upSlash, _ := url.Parse("http://10.0.0.5:4040/")
	hs, _ := url.Parse("http://hs.internal:18080")
	const pre = "/app/local-1700000000000"
	tests := []struct {
		name     string
		loc      string
		upstream *url.URL
		prefix   string
		want     string
	}{
		{"absolute upstream", "http://10.0.0.5:4040/jobs/", up, pre, pre + "/jobs/"},
		{"absolute upstream, trailing-slash base", "http://10.0.0.5:4040/jobs/", upSlash, pre, pre + "/jobs/"},
		{"Host header form", "http://10.0.0.5:4040/stages/", up, pre, pre + "/stages/"},
		{"upstream host any case", "http://10.0.0.5:4040/jobs/", up, pre, pre + "/jobs/"},
		{"host-less", "/jobs/", up, pre, pre + "/jobs/"},
		{"query and fragment kept", "http://10.0.0.5:4040/jobs/job/?id=1&x=%2F#top", up, pre, pre + "/jobs/job/?id=1&x=%2F#top"},
		{"empty query kept", "/jobs/?", up, pre, pre + "/jobs/?"},
		{"root", "http://10.0.0.5:4040", up, pre, pre + "/"},
		{"escaped path kept", "/a%20b/c%2Fd", up, pre, pre + "/a%20b/c%2Fd"},
		{"proxyBase driver not doubled", "http://10.0.0.5:4040/proxy/app-1/jobs/", up, "/proxy/app-1", "/proxy/app-1/jobs/"},
		{"proxyBase prefix only", "/proxy/app-1", up, "/proxy/app-1", "/proxy/app-1"},
		{"prefix-like not doubled only on segment", "/proxy/app-10/jobs/", up, "/proxy/app-1", "/proxy/app-1/proxy/app-10/jobs/"},
		{"history server loader", "http://hs.internal:18080/history/app-1/1/", hs, "/hs/main", "/hs/main/history/app-1/1/"},
		{"prefix with trailing slash", "/jobs/", up, pre + "/", pre + "/jobs/"},
		{"Host rewritten by gateway", "http://gateway.example/jobs/", up, pre, "http://gateway.example/jobs/"},
		{"other host unchanged", "https://idp.example/login?x=1", up, pre, "https://idp.example/login?x=1"},
		{"other port unchanged", "http://10.0.0.5:4041/jobs/", up, pre, "http://10.0.0.5:4041/jobs/"},
		{"default port explicit", "http://hs.internal:80/x", &url.URL{Scheme: "http", Host: "hs.internal"}, "/hs/a", "/hs/a/x"},
		{"https upstream default port", "https://h/x", &url.URL{Scheme: "https", Host: "h:443"}, "/hs/a", "/hs/a/x"},
		{"relative kept", "jobs/", up, pre, "jobs/"},
		{"bare double slash", "//", up, pre, pre + "/"},
		{"space double slash", " //evil.example/", up, pre, pre + "/"},
		{"backslashes", "\\\\evil.example/", up, pre, pre + "/"},
		{"scheme-relative upstream", "//10.0.0.5:4040/jobs/", up, pre, pre + "/jobs/"},
		{"scheme-relative other host", "//evil.example/x", up, pre, "http://evil.example/x"},
		{"double slash path under empty prefix", "http://10.0.0.5:4040//evil.example/x", up, "", "/evil.example/x"},
		{"backslash path", "/\\evil.example/x", up, "", "/%5Cevil.example/x"},
		{"garbage", "http://[::1/x", up, pre, pre + "/"},
		{"control char", "/jobs/\n", up, pre, pre + "/"},
		{"nil upstream", "http://10.0.0.5:4040/jobs/", nil, pre, "http://10.0.0.5:4040/jobs/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RewriteLocation(tt.loc, tt.upstream, tt.prefix); got != tt.want {
				t.Errorf("RewriteLocation(%q, %v, %q) = %q; want %q", tt.loc, tt.upstream, tt.prefix, got, tt.want)
			}
		})
	}
}

func FuzzRewriteLocation(f *testing.F) {
	for _, s := range []string{"http://10.0.0.5:4040/jobs/", "/jobs/", "//x/y", "/\\x", "http://10.0.0.5:4040//x", "?a#b", ""} {
		f.Add(s)
	}
	up, _ := url.Parse("http://10.0.0.5:4040")
	const pre = "/app/local-1"
	f.Fuzz(func(t *testing.T, loc string) {
		got := RewriteLocation(loc, up, pre)
		// Browsers trim leading spaces and controls and read '\\' as '/'.
		lead := strings.ReplaceAll(strings.TrimLeft(got, " \t\r\n\f\x00"), "\\", "/")
		if strings.HasPrefix(lead, "//") {
			t.Fatalf("RewriteLocation(%q) = %q; scheme-relative", loc, got)
		}
		u, err := url.Parse(got)
		if err != nil {
			return // an unparsable foreign Location is passed on as is
		}
		// A result pointing at the upstream is a bug: the browser cannot
		// reach it, and it would leak the driver's address.
		if u.Host != "" && sameHost(u, up) {
			t.Fatalf("RewriteLocation(%q) = %q still points at the upstream", loc, got)
		}
		if u.Host == "" && strings.HasPrefix(got, "/") && !strings.HasPrefix(got, pre+"/") && got != pre {
			t.Fatalf("RewriteLocation(%q) = %q; outside the prefix", loc, got)
		}
	})
}
