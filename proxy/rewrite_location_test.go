package proxy

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func mustWebURL(t testing.TB, s string) *webURL {
	t.Helper()
	u, ok := parseWebURL(s, nil)
	if !ok {
		t.Fatalf("parseWebURL(%q) failed", s)
	}
	return &u
}

func TestRewriteLocation(t *testing.T) {
	t.Parallel()
	req := mustWebURL(t, "http://10.0.0.5:4040/jobs/job/?id=1")
	reqSlash := mustWebURL(t, "http://10.0.0.5:4040/")
	hs := mustWebURL(t, "http://hs.internal:18080/history/app-1")
	hsDefault := mustWebURL(t, "http://hs.internal/x")
	tlsUp := mustWebURL(t, "https://h:443/x")
	yarn := mustWebURL(t, "http://rm.internal:8088/proxy/application_1_0001/jobs/")
	const pre = "/app/local-1700000000000"
	const refused = "REFUSED"
	tests := []struct {
		name   string
		loc    string
		req    *webURL
		prefix string
		want   string
	}{
		{"absolute upstream", "http://10.0.0.5:4040/jobs/", req, pre, pre + "/jobs/"},
		{"absolute upstream, root request", "http://10.0.0.5:4040/jobs/", reqSlash, pre, pre + "/jobs/"},
		{"upstream host any case and default-less", "HTTP://10.0.0.5:4040/stages/", req, pre, pre + "/stages/"},
		{"host-less", "/jobs/", req, pre, pre + "/jobs/"},
		{"query and fragment kept", "http://10.0.0.5:4040/jobs/job/?id=1&x=%2F#top", req, pre, pre + "/jobs/job/?id=1&x=%2F#top"},
		{"empty query kept", "/jobs/?", req, pre, pre + "/jobs/?"},
		{"root", "http://10.0.0.5:4040", req, pre, pre + "/"},
		{"escaped path kept", "/a%20b/c%2Fd", req, pre, pre + "/a%20b/c%2Fd"},
		{"proxyBase driver not doubled", "http://10.0.0.5:4040/proxy/app-1/jobs/", req, "/proxy/app-1", "/proxy/app-1/jobs/"},
		{"proxyBase prefix only", "/proxy/app-1", req, "/proxy/app-1", "/proxy/app-1"},
		{"prefix-like not doubled only on segment", "/proxy/app-10/jobs/", req, "/proxy/app-1", "/proxy/app-1/proxy/app-10/jobs/"},
		{"history server", "http://hs.internal:18080/history/app-1/1/", hs, "/hs/main", "/hs/main/history/app-1/1/"},
		{"history server relative", "app-1/1/jobs/", hs, "/hs/main", "/hs/main/history/app-1/1/jobs/"},
		{"YARN web proxy", "http://rm.internal:8088/proxy/application_1_0001/stages/", yarn, "/proxy/application_1_0001", "/proxy/application_1_0001/stages/"},
		{"prefix with trailing slash", "/jobs/", req, pre + "/", pre + "/jobs/"},
		{"default port explicit", "http://hs.internal:80/y", hsDefault, "/hs/a", "/hs/a/y"},
		{"https upstream default port", "https://h/y", tlsUp, "/hs/a", "/hs/a/y"},
		{"relative, resolved as the browser would", "../../stages/", req, pre, pre + "/stages/"},
		{"relative above the root stays in the prefix", "../../../../x", req, pre, pre + "/x"},
		{"query only", "?id=2", req, pre, pre + "/jobs/job/?id=2"},
		{"dot segments resolved", "/jobs/./x/../y", req, pre, pre + "/jobs/y"},
		{"backslash path", "/jobs\\x", req, pre, pre + "/jobs/x"},
		{"spaces and controls around", " \x01/jobs/\n", req, pre, pre + "/jobs/"},
		{"tab inside", "/jo\tbs/", req, pre, pre + "/jobs/"},
		{"double slash path under empty prefix", "http://10.0.0.5:4040//evil.example/x", req, "", "/evil.example/x"},
		{"upstream by another spelling of its address", "http://0x0a.0.0.5:4040/jobs/", req, pre, pre + "/jobs/"},
		// Refused: the browser would leave the gateway.
		{"Host rewritten by gateway", "http://gateway.example/jobs/", req, pre, refused},
		{"other host", "https://idp.example/login?x=1", req, pre, refused},
		{"other port", "http://10.0.0.5:4041/jobs/", req, pre, refused},
		{"other scheme, same host", "https://10.0.0.5:4040/jobs/", req, pre, refused},
		{"scheme-relative other host", "//evil.example/x", req, pre, refused},
		{"scheme-relative, space first", " //evil.example/", req, pre, refused},
		{"backslashes", "\\\\evil.example/", req, pre, refused},
		{"slash backslash", "/\\evil.example/x", req, pre, refused},
		{"https without slashes", "https:evil.example", req, pre, refused},
		{"http with backslashes", "http:\\\\evil.example", req, pre, refused},
		{"tab in the slashes", "/\t/evil.example", req, pre, refused},
		{"credentials", "http://10.0.0.5:4040@evil.example/", req, pre, refused},
		{"javascript", "javascript:alert(document.cookie)", req, pre, refused},
		{"javascript with tab", "java\tscript:alert(1)", req, pre, refused},
		{"data", "data:text/html,<script>alert(1)</script>", req, pre, refused},
		{"garbage", "http://[::1/x", req, pre, refused},
		{"space in host", "http://10.0.0.5 :4040/", req, pre, refused},
		{"another driver", "http://10.0.0.6:4040/jobs/", req, pre, refused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := rewriteLocation(tt.loc, tt.req, tt.prefix)
			if !ok {
				got = refused
			}
			if got != tt.want {
				t.Errorf("rewriteLocation(%q, %s, %q) = %q; want %q", tt.loc, tt.req.String(), tt.prefix, got, tt.want)
			}
		})
	}
}

func TestParseRefresh(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in     string
		ok     bool
		delay  string
		url    string
		hasURL bool
	}{
		{"5", true, "5", "", false},
		{"5;url=/jobs/", true, "5", "/jobs/", true},
		{"0; URL = '/jobs/'x", true, "0", "/jobs/", true},
		{`1,url="//evil"`, true, "1", "//evil", true},
		{"1 //evil", true, "1", "//evil", true},
		{"1; ur//evil", true, "1", "ur//evil", true},
		{"1; url //evil", true, "1", "url //evil", true},
		{".5;url=/x", true, "", "/x", true},
		{"1.5.5 ;  url=/x", true, "1", "/x", true},
		{" \t3;url=/x", true, "3", "/x", true},
		{"x;url=/x", false, "", "", false},
		{"1x;url=/x", false, "", "", false},
		{"", false, "", "", false},
	}
	for _, tt := range tests {
		r, ok := parseRefresh(tt.in)
		if ok != tt.ok || (ok && (r.Delay != tt.delay || r.URL != tt.url || r.HasURL != tt.hasURL)) {
			t.Errorf("parseRefresh(%q) = %+v, %v; want {%q %q %v}, %v", tt.in, r, ok, tt.delay, tt.url, tt.hasURL, tt.ok)
		}
	}
}

// FuzzRewriteLocation: whatever an upstream sends, what reaches the
// browser is either refused or a gateway path under the prefix that a
// browser (parseWebURL, not url.Parse) reads as such, and reads the same
// when it parses it again.
func FuzzRewriteLocation(f *testing.F) {
	for _, s := range []string{
		"http://10.0.0.5:4040/jobs/", "/jobs/", "//x/y", "/\\x", "http://10.0.0.5:4040//x", "?a#b", "",
		"https:evil.example", "http:\\\\evil", " \x00//evil", "/\t/evil", "java\nscript:x", "..", "./../x",
		"http://0x0a.0.0.5:4040/", "http://u@10.0.0.5:4040/", "%2e%2e/x", "/a b\"<>`{}^",
	} {
		f.Add(s)
	}
	req, _ := parseWebURL("http://10.0.0.5:4040/jobs/job/?id=1", nil)
	gw, _ := parseWebURL("https://gw.example/app/local-1/jobs/job/?id=1", nil)
	const pre = "/app/local-1"
	f.Fuzz(func(t *testing.T, loc string) {
		got, ok := rewriteLocation(loc, &req, pre)
		if !ok {
			// Refusing an obviously local path would break Spark's own
			// redirects.
			if len(loc) > 1 && loc[0] == '/' && loc[1] != '/' && strings.Trim(loc, "abcdefghijklmnopqrstuvwxyz0123456789/._-") == "" {
				t.Fatalf("rewriteLocation(%q) refused a plain path", loc)
			}
			return
		}
		// Checks that need no parser: a path under the prefix, with
		// nothing a browser would trim, delete or read as a slash.
		if got != pre && !strings.HasPrefix(got, pre+"/") && !strings.HasPrefix(got, pre+"?") && !strings.HasPrefix(got, pre+"#") {
			t.Fatalf("rewriteLocation(%q) = %q; outside the prefix", loc, got)
		}
		pathEnd := strings.IndexAny(got, "?#")
		if pathEnd < 0 {
			pathEnd = len(got)
		}
		for i := 0; i < len(got); i++ {
			// Browsers keep '\\' in a query or fragment, as data.
			if c := got[i]; c <= ' ' || (c == '\\' && i < pathEnd) || c >= 0x7f {
				t.Fatalf("rewriteLocation(%q) = %q; byte %#x at %d", loc, got, c, i)
			}
		}
		// A browser on the gateway goes to the gateway, under the prefix.
		u, ok := parseWebURL(got, &gw)
		if !ok || !u.sameOrigin(&gw) {
			t.Fatalf("rewriteLocation(%q) = %q; a browser reads %q", loc, got, u.String())
		}
		if u.Path != pre && !strings.HasPrefix(u.Path, pre+"/") {
			t.Fatalf("rewriteLocation(%q) = %q; a browser goes to path %q", loc, got, u.Path)
		}
		// Already in the browser's own form: nothing left to reinterpret.
		if again, _ := rewriteLocation(got, &gw, pre); again != got {
			t.Fatalf("rewriteLocation(%q) = %q, which reads back as %q", loc, got, again)
		}
	})
}

// TestUpstreamRedirectAway: a redirect or Refresh from a driver or a
// History Server that a browser would follow out of the gateway becomes
// the self-reloading 503; Spark's own are rewritten under the prefix.
func TestUpstreamRedirectAway(t *testing.T) {
	t.Parallel()
	h, d := newHostileHarness(t)
	up := d.Listener.Addr().String()
	type tc struct {
		path, to string
		status   int    // from the gateway
		location string // the gateway's Location, for a 3xx
	}
	var tests []tc
	for _, pp := range [][2]string{{"/app/" + appHostile, "/app/" + appHostile}, {"/hs/evil/static", "/hs/evil"}} {
		p, pre := pp[0], pp[1]
		tests = append(tests,
			tc{p + "/redirect/", "http://" + up + "/jobs/", http.StatusFound, pre + "/jobs/"},
			tc{p + "/redirect/", "/jobs/\t", http.StatusFound, pre + "/jobs/"},
			tc{p + "/redirect/", "../x?y#z", http.StatusFound, p + "/x?y#z"},
			tc{p + "/redirect/", "https:evil.example", http.StatusServiceUnavailable, ""},
			tc{p + "/redirect/", "http:\\\\evil.example", http.StatusServiceUnavailable, ""},
			tc{p + "/redirect/", "/\\evil.example", http.StatusServiceUnavailable, ""},
			tc{p + "/redirect/", " //evil.example", http.StatusServiceUnavailable, ""},
			tc{p + "/redirect/", "javascript:alert(1)", http.StatusServiceUnavailable, ""},
			tc{p + "/redirect/", "http://10.0.0.6:4040/jobs/", http.StatusServiceUnavailable, ""},
		)
	}
	for _, tt := range tests {
		resp, body := h.do(t, http.MethodGet, tt.path+"?to="+url.QueryEscape(tt.to), "alice", nil)
		if resp.StatusCode != tt.status {
			t.Errorf("%s redirecting to %q = %d; want %d", tt.path, tt.to, resp.StatusCode, tt.status)
			continue
		}
		if loc := resp.Header.Get("Location"); loc != tt.location {
			t.Errorf("%s redirecting to %q: Location %q; want %q", tt.path, tt.to, loc, tt.location)
		}
		if tt.status == http.StatusServiceUnavailable {
			if resp.Header.Get("Retry-After") == "" || !strings.Contains(body, `http-equiv="refresh"`) || strings.Contains(body, "evil.example") {
				t.Errorf("%s redirecting to %q: want the self-reloading page naming no target: %.300q", tt.path, tt.to, body)
			}
		}
	}
	// Refresh: rewritten, or the 503 when it would leave.
	for _, r := range []struct{ to, want string }{
		{"5", "5"},
		{"0; url='/jobs/'", "0;url=/app/" + appHostile + "/jobs/"},
		{"1;url=http://" + up + "/stages/", "1;url=/app/" + appHostile + "/stages/"},
		{"0;url=//evil.example", ""},
		{"0; URL = \"https:evil.example\"", ""},
		{"0 /\\evil.example", ""},
		{"junk", "-"},
	} {
		resp, _ := h.do(t, http.MethodGet, "/app/"+appHostile+"/refresh/?to="+url.QueryEscape(r.to), "alice", nil)
		got, has := resp.Header.Get("Refresh"), len(resp.Header.Values("Refresh")) > 0
		switch r.want {
		case "":
			if resp.StatusCode != http.StatusServiceUnavailable || has {
				t.Errorf("Refresh %q: %d, Refresh %q; want 503 without it", r.to, resp.StatusCode, got)
			}
		case "-":
			if resp.StatusCode != http.StatusOK || has {
				t.Errorf("Refresh %q: %d, Refresh %q; want 200 without it", r.to, resp.StatusCode, got)
			}
		default:
			if resp.StatusCode != http.StatusOK || got != r.want {
				t.Errorf("Refresh %q: %d, Refresh %q; want 200 with %q", r.to, resp.StatusCode, got, r.want)
			}
		}
	}
	// A Location on an answer that is no redirect is dropped if it leaves.
	resp, _ := h.do(t, http.MethodGet, "/app/"+appHostile+"/redirect/?status=201&to="+url.QueryEscape("//evil.example/"), "alice", nil)
	if resp.StatusCode != http.StatusCreated || resp.Header.Get("Location") != "" {
		t.Errorf("201 with a Location leaving: %d, Location %q; want 201 without it", resp.StatusCode, resp.Header.Get("Location"))
	}
}
