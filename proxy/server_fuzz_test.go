package proxy

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// FuzzServerNeverForwardsKill sends arbitrary paths and methods through the
// whole Server: no request may reach the driver or the History Server with
// a kill segment (in any case) or with a method other than GET or HEAD, and
// no answer may be a 2xx without the upstream having been asked.
func FuzzServerNeverForwardsKill(f *testing.F) {
	h := newHarness(f, nil)
	seeds := []string{
		"/app/" + appLive + "/jobs/job/kill/?id=1",
		"/app/" + appLive + "/jobs/job/%6bill/",
		"/app/" + appLive + "/jobs/job/kill;x/",
		"/proxy/" + appYarn + "/stages/stage/KiLl",
		"/hs/main/history/" + appHistory + "/1/jobs/job/kill/",
		"/api/v1/applications/" + appLive + "/jobs/kill",
		"/app/" + appLive + "/jobs/",
		"/history/" + appHistory + "/jobs/job/kill/",
	}
	for _, s := range seeds {
		f.Add("GET", s)
		f.Add("POST", s)
	}
	f.Fuzz(func(t *testing.T, method, target string) {
		if method == "" || strings.ContainsAny(method, " \r\n\t/") || len(method) > 10 {
			return
		}
		u, err := url.Parse("http://gw.test" + target)
		if err != nil || u.Host != "gw.test" {
			return
		}
		r := &http.Request{Method: method, URL: u, Header: http.Header{}, Host: "gw.test", RequestURI: target}
		r.Header.Set("Cookie", sessionName+"=alice")
		w := httptest.NewRecorder()
		before := len(h.drv.requests()) + len(h.hs.requests())
		h.srv.ServeHTTP(w, r)
		for _, b := range []*backend{h.drv, h.hs} {
			for _, got := range b.requests() {
				if got.Method != "GET" && got.Method != "HEAD" {
					t.Fatalf("%s %q reached upstream as %s %s", method, target, got.Method, got.Path)
				}
				for _, seg := range strings.Split(got.Path, "/") {
					if strings.EqualFold(seg, "kill") {
						t.Fatalf("%s %q reached upstream as %s", method, target, got.Path)
					}
				}
			}
		}
		after := len(h.drv.requests()) + len(h.hs.requests())
		if w.Code >= 200 && w.Code < 300 && after == before && !strings.HasPrefix(u.Path, "/_/") && u.Path != "/" &&
			!strings.HasPrefix(u.Path, "/api/v1/applications") {
			t.Fatalf("%s %q = %d without asking an upstream", method, target, w.Code)
		}
	})
}
