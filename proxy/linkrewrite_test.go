package proxy

import (
	"io"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// masterLinksOf runs page through the master's link rewriting as served
// from http://master.internal:8080/app/ under /master/m1, with one live
// driver (driver.internal:4040 → app-…-0001) and History Server "main".
func masterLinksOf(t testing.TB, page string) string {
	t.Helper()
	base, _ := parseWebURL("http://master.internal:8080/app/?appId=x", nil)
	apps := map[string]string{"driver.internal:4040": appLive}
	hs := map[string]string{"hs.internal:18080": "main"}
	r := newLinkRewriter(io.NopCloser(strings.NewReader(page)), func(v string) (string, bool) {
		return masterLink(v, &base, "/master/m1", apps, hs)
	})
	out, err := io.ReadAll(r)
	if err != nil && !strings.Contains(err.Error(), "too long") {
		t.Fatalf("rewriting: %v", err)
	}
	return string(out)
}

func TestMasterLink(t *testing.T) {
	tests := []struct{ in, want string }{
		{`<a href="app/?appId=a">`, `<a href="/master/m1/app/app/?appId=a">`},
		{`<a href="/">`, `<a href="/master/m1/">`},
		{`<a href="/master/m1/static/x.css">`, `<a href="/master/m1/static/x.css">`},
		{`<a href="http://driver.internal:4040">`, `<a href="/app/` + appLive + `/">`},
		{`<a href="http://driver.internal:4040/jobs/?x=1">`, `<a href="/app/` + appLive + `/jobs/?x=1">`},
		{`<a href="http://hs.internal:18080/history/a/1/jobs/">`, `<a href="/hs/main/history/a/1/jobs/">`},
		{`<a href="http://w.internal:8081/logPage/?appId=` + appLive + `&amp;executorId=3&amp;logType=stderr">`, `<a href="/app/` + appLive + `/_/logs/3/stderr">`},
		{`<a href="http://w.internal:8081/">`, `<a>`},
		{`<a href="//evil.example/">`, `<a>`},
		{`<a href="/\evil.example/">`, `<a>`},
		{`<a href=" javascript:alert(1)">`, `<a>`},
		{`<img src="http://other:1/x.png" alt="x">`, `<img alt="x">`},
		{`<a href="#top">`, `<a href="/master/m1/app/?appId=x#top">`},
		// Reverse-proxy mode: an app's page at its bookmark, a worker's nowhere.
		{`<a href="/proxy/` + appLive + `/jobs/?id=1#x">`, `<a href="/app/` + appLive + `/jobs/?id=1#x">`},
		{`<a href="http://master.internal:8080/proxy/` + appLive + `">`, `<a href="/app/` + appLive + `/">`},
		{`<a href="/master/m1/proxy/` + appLive + `/stages/">`, `<a href="/app/` + appLive + `/stages/">`},
		{`<a href="/proxy/worker-20261201120000-10.0.0.1-35000/">`, `<a>`},
		{`<a href="/proxy">`, `<a>`},
		{`<script>var a = "<a href='http://w.internal:8081/'>";</script>`, `<script>var a = "<a href='http://w.internal:8081/'>";</script>`},
	}
	for _, tc := range tests {
		if got := masterLinksOf(t, tc.in); got != tc.want {
			t.Errorf("masterLinks(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzMasterLinks checks that no link on a master's page, as a browser
// reads the rewritten page, leads off the gateway (to an upstream, another
// site, or a javascript: or other scheme).
func FuzzMasterLinks(f *testing.F) {
	for _, s := range []string{"app/?appId=a", "/", "http://driver.internal:4040/x", "//evil", "/\\evil", "http:evil", "javascript:x",
		"http://w.internal:8081/logPage/?appId=" + appLive + "&executorId=1&logType=stdout", "\t/\t/evil", "HTTP://MASTER.INTERNAL:8080/x"} {
		f.Add(s)
	}
	gw, _ := parseWebURL("http://gw.test/master/m1/app/?appId=x", nil)
	f.Fuzz(func(t *testing.T, v string) {
		page := `<a href="` + html.EscapeString(v) + `">x</a><form action="` + html.EscapeString(v) + `"></form><img src='` + html.EscapeString(v) + `'>`
		out := masterLinksOf(t, page)
		z := html.NewTokenizer(strings.NewReader(out))
		for {
			tt := z.Next()
			if tt == html.ErrorToken {
				return
			}
			if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
				continue
			}
			for {
				k, val, more := z.TagAttr()
				if linkAttrs[string(k)] {
					u, ok := parseWebURL(string(val), &gw)
					if ok && !u.sameOrigin(&gw) {
						t.Fatalf("link %q (from %q) leads to %s://%s:%s", val, v, u.Scheme, u.Host, u.Port)
					}
				}
				if !more {
					break
				}
			}
		}
	})
}
