package proxy

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// FuzzServerNeverForwardsKill sends arbitrary request lines (origin-form
// and absolute-form targets) through the whole Server: no request may
// reach the driver or the History Server with a segment that spells a
// kill word (spellsKillWord: any case, dots, spaces, zero-width and format
// characters, compatibility forms) or with a method other than GET or
// HEAD, and no answer may be a 2xx without the upstream having been asked.
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
		"http://gw.test/app/" + appLive + "/jobs/job/kill./?id=1",
	}
	for _, w := range killWords {
		for _, d := range killDisguises {
			seg := disguise(d.format, w)
			if seg == "" {
				continue
			}
			esc := url.PathEscape(seg)
			seeds = append(seeds,
				"/app/"+appLive+"/jobs/job/"+esc+"/?id=1",
				"/proxy/"+appYarn+"/"+esc,
				"/hs/main/history/"+appHistory+"/1/stages/stage/"+esc+"/",
				"/api/v1/applications/"+appLive+"/"+esc,
				"http://gw.test/app/"+appLive+"/jobs/job/"+esc+"/",
			)
		}
	}
	for _, s := range seeds {
		f.Add("GET", s)
		f.Add("POST", s)
	}
	f.Fuzz(func(t *testing.T, method, target string) {
		if method == "" || strings.ContainsAny(method, " \r\n\t/") || len(method) > 10 ||
			strings.ContainsAny(target, " \r\n") {
			return
		}
		// Read the request as the server reads it off the wire, so that
		// absolute-form targets are parsed as net/http parses them.
		r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(method + " " + target + " HTTP/1.1\r\nHost: gw.test\r\n\r\n")))
		if err != nil || r.URL.Host != "" && r.URL.Host != "gw.test" {
			return
		}
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
					if spellsKillWord(seg) {
						t.Fatalf("%s %q reached upstream as %s", method, target, got.Path)
					}
				}
			}
		}
		after := len(h.drv.requests()) + len(h.hs.requests())
		if p := r.URL.Path; w.Code >= 200 && w.Code < 300 && after == before && !strings.HasPrefix(p, "/_/") && p != "/" &&
			!strings.HasPrefix(p, "/api/v1/applications") {
			t.Fatalf("%s %q = %d without asking an upstream", method, target, w.Code)
		}
	})
}
