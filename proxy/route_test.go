package proxy

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseRoute(t *testing.T) {
	t.Parallel()
	const id = "local-1700000000000"
	tests := []struct {
		in   string
		want Route
	}{
		{"/", Route{Kind: KindIndex, Path: "/"}},
		{"/_/healthz", Route{Kind: KindGateway, Path: "/_/healthz"}},
		{"/_", Route{Kind: KindGateway, Path: "/_"}},
		{"/favicon.ico", Route{Kind: KindGateway, Path: "/favicon.ico"}},
		{"/oauth2/callback", Route{Kind: KindAuth, Path: "/oauth2/callback"}},
		{"/app/" + id + "/jobs/job/", Route{Kind: KindApp, AppID: id, Prefix: "/app/" + id, Path: "/jobs/job/"}},
		{"/app/" + id + "/", Route{Kind: KindApp, AppID: id, Prefix: "/app/" + id, Path: "/"}},
		{"/app/" + id, Route{Kind: KindApp, AppID: id, Prefix: "/app/" + id, Path: "/"}},
		{"/app/app-20240101120000-0001/stages/stage/%6Bill/", Route{Kind: KindApp, AppID: "app-20240101120000-0001", Prefix: "/app/app-20240101120000-0001", Path: "/stages/stage/kill/"}},
		{"/app/", Route{Kind: KindNotFound, Path: "/app/"}},
		{"/app", Route{Kind: KindNotFound, Path: "/app"}},
		{"/proxy/application_1700000000000_0001/jobs/", Route{Kind: KindProxy, AppID: "application_1700000000000_0001", Prefix: "/proxy/application_1700000000000_0001", Path: "/jobs/"}},
		{"/hs/main/", Route{Kind: KindHistory, Server: "main", Prefix: "/hs/main", Path: "/"}},
		{"/hs/main", Route{Kind: KindHistory, Server: "main", Prefix: "/hs/main", Path: "/"}},
		{"/hs/main/static/webui.js", Route{Kind: KindHistory, Server: "main", Prefix: "/hs/main", Path: "/static/webui.js"}},
		{"/hs/main/api/v1/version", Route{Kind: KindHistory, Server: "main", Prefix: "/hs/main", Path: "/api/v1/version"}},
		{"/hs/main/api/v1/applications", Route{Kind: KindHistory, Server: "main", Prefix: "/hs/main", Path: "/api/v1/applications"}},
		{"/hs/main/history/" + id + "/jobs/", Route{Kind: KindHistory, AppID: id, Server: "main", Prefix: "/hs/main", Path: "/history/" + id + "/jobs/"}},
		{"/hs/h-2/history/application_1_2/1/jobs/", Route{Kind: KindHistory, AppID: "application_1_2", Attempt: "1", Server: "h-2", Prefix: "/hs/h-2", Path: "/history/application_1_2/1/jobs/"}},
		{"/hs/main/history/" + id, Route{Kind: KindHistory, AppID: id, Server: "main", Prefix: "/hs/main", Path: "/history/" + id}},
		{"/hs/main/api/v1/applications/" + id + "/jobs", Route{Kind: KindHistory, AppID: id, Server: "main", Prefix: "/hs/main", Path: "/api/v1/applications/" + id + "/jobs"}},
		{"/hs/main/api/v1/applications/" + id + "/2/logs", Route{Kind: KindHistory, AppID: id, Attempt: "2", Server: "main", Prefix: "/hs/main", Path: "/api/v1/applications/" + id + "/2/logs"}},
		{"/hs/main/logPage/", Route{Kind: KindNotFound, Path: "/hs/main/logPage/"}},
		{"/hs/main/environment/", Route{Kind: KindNotFound, Path: "/hs/main/environment/"}},
		{"/hs/main/history/", Route{Kind: KindNotFound, Path: "/hs/main/history/"}},
		{"/hs/", Route{Kind: KindNotFound, Path: "/hs/"}},
		{"/history/" + id + "/jobs/", Route{Kind: KindHistoryAlias, AppID: id, Path: "/history/" + id + "/jobs/"}},
		{"/history/" + id + "/3/jobs/", Route{Kind: KindHistoryAlias, AppID: id, Attempt: "3", Path: "/history/" + id + "/3/jobs/"}},
		{"/api/v1/applications", Route{Kind: KindAPIList, Path: "/api/v1/applications"}},
		{"/api/v1/applications/", Route{Kind: KindAPIList, Path: "/api/v1/applications/"}},
		{"/api/v1/applications/" + id, Route{Kind: KindAPIApp, AppID: id, Path: "/api/v1/applications/" + id}},
		{"/by-name/nightly%20etl/stages/", Route{Kind: KindByName, Name: "nightly etl", Path: "/stages/"}},
		{"/by-name/etl", Route{Kind: KindByName, Name: "etl", Path: "/"}},
		{"/by-name/", Route{Kind: KindNotFound, Path: "/by-name/"}},
		{"/api/v1/applications/" + id + "/1/jobs", Route{Kind: KindAPIApp, AppID: id, Attempt: "1", Path: "/api/v1/applications/" + id + "/1/jobs"}},
		{"/api/v1/applications/" + id + "/executors/1/threads", Route{Kind: KindAPIApp, AppID: id, Path: "/api/v1/applications/" + id + "/executors/1/threads"}},
		{"/api/v1/version", Route{Kind: KindNotFound, Path: "/api/v1/version"}},
		{"/static/webui.js", Route{Kind: KindNotFound, Path: "/static/webui.js"}},
		{"/favicon.ico/x", Route{Kind: KindNotFound, Path: "/favicon.ico/x"}},
		{"/App/x/", Route{Kind: KindNotFound, Path: "/App/x/"}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseRoute(tt.in)
			if err != nil {
				t.Fatalf("ParseRoute(%q) error %v", tt.in, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseRoute(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestParseRouteRejects(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"/app/../jobs/",
		"/app/proxy/jobs/",
		"/app/History/jobs/",
		"/app/a..b/",
		"/app/-x/",
		"/app/a%2Fb/",
		"/app/a%20b/",
		"/app/x//jobs/",
		"/proxy/%2e/",
		"/hs/Main/",
		"/hs/proxy/history/app-1/jobs/",
		"/hs/history/",
		"/hs/-main/",
		"/hs/main_1/",
		"/hs/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/", // 32 chars
		"/hs/main/history/x%7By/",
		"/hs/main/api/v1/applications/%3Cscript%3E",
		"/history/..;/jobs/",
		"/history/proxy/",
		"/api/v1/applications/a$b",
		"/api/v1/applications//jobs",
		"/app/" + string(make([]byte, 129)),
	} {
		t.Run(in, func(t *testing.T) {
			got, err := ParseRoute(in)
			var re *RequestError
			if !errors.As(err, &re) || re.Status != http.StatusBadRequest {
				t.Fatalf("ParseRoute(%q) = %+v, %v; want a 400 RequestError", in, got, err)
			}
		})
	}
}

func TestValidAppID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want bool
	}{
		{"local-1700000000000", true},
		{"app-20240101120000-0001", true},
		{"app-20240101120000-12345", true},
		{"application_1700000000000_0001", true},
		{"spark-0123456789abcdef0123456789abcdef", true},
		{"spark-application-1700000000000", true},
		{"a", true},
		{"A.b_c-d", true},
		{"", false},
		{".", false},
		{"..", false},
		{"a..b", false},
		{"proxy", false},
		{"PROXY", false},
		{"history", false},
		{"-a", false},
		{"_a", false},
		{"a/b", false},
		{"a b", false},
		{"a%2F", false},
		{"é", false},
		{string(make([]byte, 129)), false},
	}
	for _, tt := range tests {
		if got := ValidAppID(tt.in); got != tt.want {
			t.Errorf("ValidAppID(%q) = %v; want %v", tt.in, got, tt.want)
		}
	}
	long := "a"
	for len(long) < 128 {
		long += "b"
	}
	if !ValidAppID(long) || ValidAppID(long+"c") {
		t.Errorf("ValidAppID length limit is not 128")
	}
}

func TestValidAttemptID(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]bool{"1": true, "42": true, "123456789": true, "": false, "1234567890": false, "a": false, "1a": false, "-1": false, "jobs": false} {
		if got := ValidAttemptID(in); got != want {
			t.Errorf("ValidAttemptID(%q) = %v; want %v", in, got, want)
		}
	}
}

func FuzzParseRoute(f *testing.F) {
	for _, s := range []string{"/", "/app/local-1/jobs/", "/proxy/x/", "/hs/main/history/a/1/jobs/", "/history/a/jobs", "/api/v1/applications/a/1/jobs", "/_/x", "/app/%2e%2e/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		r, err := ParseRoute(in)
		if err != nil {
			return
		}
		c, cerr := CanonicalPath(in)
		if cerr != nil {
			t.Fatalf("ParseRoute(%q) accepted a path CanonicalPath refuses: %v", in, cerr)
		}
		if r.Path == "" || r.Path[0] != '/' {
			t.Fatalf("ParseRoute(%q).Path = %q; want a leading /", in, r.Path)
		}
		switch r.Kind {
		case KindApp, KindProxy, KindHistory:
			// Prefix + Path is the public path (a bare prefix maps to "/").
			if r.Prefix+r.Path != c && r.Prefix != c {
				t.Fatalf("ParseRoute(%q): Prefix %q + Path %q != canonical %q", in, r.Prefix, r.Path, c)
			}
		default:
			if r.Prefix != "" || r.Path != c {
				t.Fatalf("ParseRoute(%q) = %+v; want Path = canonical %q and no prefix", in, r, c)
			}
		}
		if (r.Kind == KindApp || r.Kind == KindProxy || r.Kind == KindAPIApp || r.Kind == KindHistoryAlias) && !ValidAppID(r.AppID) {
			t.Fatalf("ParseRoute(%q) has invalid AppID %q", in, r.AppID)
		}
		if r.AppID != "" && !ValidAppID(r.AppID) {
			t.Fatalf("ParseRoute(%q) has invalid AppID %q", in, r.AppID)
		}
		if r.Attempt != "" && !ValidAttemptID(r.Attempt) {
			t.Fatalf("ParseRoute(%q) has invalid Attempt %q", in, r.Attempt)
		}
		if r.Kind == KindHistory && !ValidServerName(r.Server) {
			t.Fatalf("ParseRoute(%q) has invalid Server %q", in, r.Server)
		}
	})
}

func BenchmarkParseRouteGuard(b *testing.B) {
	g := Guard{AllowThreadDump: true}
	paths := []string{
		"/app/local-1700000000000/jobs/job/",
		"/app/app-20240101120000-0001/stages/stage/%6Bill/",
		"/hs/main/history/application_1700000000000_0001/1/static/webui.js",
		"/api/v1/applications/local-1700000000000/executors/1/threads",
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		r, err := ParseRoute(paths[i%len(paths)])
		if err != nil {
			b.Fatal(err)
		}
		g.Check("GET", r.Path)
	}
}

// TestAPIAppPathChecks holds isDiagnosisAPI and allEventLogs, which cut the
// path rather than build /api/v1/applications/<id> on every request, to
// the comparisons they replaced, over paths that almost match.
func TestAPIAppPathChecks(t *testing.T) {
	ids := []string{"app-1", "app-12", "", "1"}
	attempts := []string{"", "1", "2", "/1"}
	tails := []string{"/diagnosis", "/diagnosis/", "/1/diagnosis", "/2/diagnosis", "//diagnosis",
		"/logs", "/logs/", "/1/logs", "/logsx", "/diagnosisx", "", "/", "2/diagnosis", "/1/diagnosis/x"}
	for _, id := range ids {
		for _, other := range ids {
			for _, tail := range tails {
				for _, attempt := range attempts {
					rt := Route{Kind: KindAPIApp, AppID: id, Attempt: attempt, Path: "/api/v1/applications/" + other + tail}
					base := "/api/v1/applications/" + rt.AppID
					wantDiag := (rt.Attempt != "" && rt.Path == base+"/"+rt.Attempt+"/diagnosis") || rt.Path == base+"/diagnosis"
					wantLogs := rt.Attempt == "" && rt.AppID != "" && strings.TrimSuffix(rt.Path, "/") == base+"/logs"
					if got := isDiagnosisAPI(rt); got != wantDiag {
						t.Errorf("isDiagnosisAPI(%+v) = %v; want %v", rt, got, wantDiag)
					}
					if got := allEventLogs(rt); got != wantLogs {
						t.Errorf("allEventLogs(%+v) = %v; want %v", rt, got, wantLogs)
					}
				}
			}
		}
	}
	rt := Route{Kind: KindAPIApp, AppID: "app-1", Attempt: "1", Path: "/api/v1/applications/app-1/1/jobs"}
	var hits int
	if n := testing.AllocsPerRun(100, func() {
		if isDiagnosisAPI(rt) || allEventLogs(rt) {
			hits++
		}
	}); n != 0 || hits != 0 {
		t.Errorf("isDiagnosisAPI and allEventLogs allocate %v times per call (%d matches of a jobs path); want 0 (0)", n, hits)
	}
}
