package proxy

import (
	"strings"
	"testing"
)

func TestGuardCheck(t *testing.T) {
	t.Parallel()
	def := Guard{}
	permissive := Guard{AllowHeapHistogram: true, AllowThreadDump: true}
	tests := []struct {
		g       Guard
		method  string
		path    string
		blocked bool
		reason  string
	}{
		{def, "GET", "/jobs/", false, ""},
		{def, "HEAD", "/jobs/job/", false, ""},
		{def, "GET", "/", false, ""},
		{def, "GET", "/api/v1/applications/app-1/holdstatus", false, ""},
		{def, "GET", "/jobs/killer/", false, ""},
		{def, "GET", "/static/kill.png", false, ""},
		{def, "GET", "/api/v1/applications/x/stages", false, ""},
		// driver kill handlers, every method, both slash forms, any case
		{def, "GET", "/jobs/job/kill", true, ReasonStateChanging},
		{def, "GET", "/jobs/job/kill/", true, ReasonStateChanging},
		{def, "POST", "/jobs/job/kill/", true, ReasonStateChanging},
		{def, "HEAD", "/stages/stage/kill", true, ReasonStateChanging},
		{def, "GET", "/stages/stage/kill/", true, ReasonStateChanging},
		{def, "GET", "/jobs/job/KILL/", true, ReasonStateChanging},
		{def, "GET", "/jobs/job/Kill", true, ReasonStateChanging},
		{def, "GET", "/jobs/job/\u212Aill", true, ReasonStateChanging}, // Kelvin sign folds to k
		{def, "GET", "/history/app-1/jobs/job/kill/", true, ReasonStateChanging},
		// white space around the word (a real 3.5.9 driver serves the job
		// page for "kill%20/"; a trimming server would kill)
		{def, "GET", "/jobs/job/kill /", true, ReasonStateChanging},
		{def, "GET", "/jobs/job/kill ", true, ReasonStateChanging},
		{def, "GET", "/stages/stage/ Kill", true, ReasonStateChanging},
		{def, "GET", "/jobs/job/kill\u00a0/", true, ReasonStateChanging},
		{def, "GET", "/executors/heapHistogram /", true, ReasonHeapHistogram},
		{def, "GET", "/jobs/job/kill x/", false, ""},
		// master and post-4.0 handlers
		{def, "POST", "/app/kill/", true, ReasonStateChanging},
		{def, "POST", "/driver/kill/", true, ReasonStateChanging},
		{def, "POST", "/workers/kill/", true, ReasonStateChanging},
		{def, "POST", "/jobs/hold/", true, ReasonStateChanging},
		{def, "POST", "/jobs/resume", true, ReasonStateChanging},
		{def, "POST", "/app/hold", true, ReasonStateChanging},
		{def, "POST", "/app/resume/", true, ReasonStateChanging},
		{def, "POST", "/v1/submissions/killall/", true, ReasonStateChanging},
		{def, "GET", "/x/decommission", true, ReasonStateChanging},
		// side effects on GET
		{def, "GET", "/executors/heapHistogram/", true, ReasonHeapHistogram},
		{def, "GET", "/executors/heaphistogram", true, ReasonHeapHistogram},
		{permissive, "GET", "/executors/heapHistogram/", false, ""},
		{def, "GET", "/executors/threadDump/", true, ReasonThreadDump},
		{def, "GET", "/stages/taskThreadDump", true, ReasonThreadDump},
		{def, "GET", "/api/v1/applications/x/executors/1/threads", true, ReasonThreadDump},
		{def, "GET", "/api/v1/applications/x/threads", true, ReasonThreadDump},
		{def, "GET", "/threads/", false, ""}, // only inside the REST API
		{permissive, "GET", "/executors/threadDump/", false, ""},
		{permissive, "GET", "/api/v1/applications/x/executors/1/threads", false, ""},
		{permissive, "GET", "/jobs/job/kill/", true, ReasonStateChanging},
		// methods
		{def, "POST", "/jobs/", true, ReasonMethod},
		{def, "PUT", "/jobs/", true, ReasonMethod},
		{def, "DELETE", "/api/v1/applications/x", true, ReasonMethod},
		{def, "TRACE", "/", true, ReasonMethod},
		{def, "OPTIONS", "/", true, ReasonMethod},
		{def, "get", "/jobs/", true, ReasonMethod}, // methods are case-sensitive
		{def, "", "/jobs/", true, ReasonMethod},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			blocked, reason := tt.g.Check(tt.method, tt.path)
			if blocked != tt.blocked || reason != tt.reason {
				t.Errorf("%+v.Check(%q, %q) = %v, %q; want %v, %q", tt.g, tt.method, tt.path, blocked, reason, tt.blocked, tt.reason)
			}
		})
	}
}

// TestGuardSpellings sends every spelling trick for the kill endpoints
// through ParseRoute and the guard: each is refused by one or the other.
func TestGuardSpellings(t *testing.T) {
	t.Parallel()
	g := Guard{AllowThreadDump: true}
	for _, p := range []string{
		"/jobs/job/kill/", "/jobs/job/kill", "/stages/stage/kill/",
		"/jobs/job/%6Bill/", "/jobs/job/%6B%69%6C%6C", "/jobs/job/KiLl/",
		"/jobs/job/kill%2F", "/jobs/job%2Fkill/", "/jobs/job/kill;jsessionid=1/",
		"/jobs/job/kill%3B/", "/jobs//job/kill/", "/jobs/job/./kill/", "/jobs/x/../job/kill/",
		"/jobs/job/%2e%2e/job/kill/", "/jobs/job/kill%00/", "/jobs/job/kill%252F",
		"/jobs\\job\\kill\\", "/jobs/job/kill%5C", "/jobs/job/kill\t/",
		"/jobs/job/kill%20/", "/jobs/job/kill%20", "/jobs/job/%20kill/", "/stages/stage/kill%C2%A0",
	} {
		for _, prefix := range []string{"/app/local-1700000000000", "/proxy/application_1_1", "/hs/main/history/app-1"} {
			in := prefix + p
			r, err := ParseRoute(in)
			if err != nil {
				continue // refused as ambiguous
			}
			if blocked, _ := g.Check("GET", r.Path); !blocked {
				t.Errorf("ParseRoute(%q).Path = %q passes the guard", in, r.Path)
			}
		}
	}
}

// TestGuardSpellingsJettyKills holds the spellings that a real Spark 3.5.9
// driver (Jetty 9.4) answered with the kill handler's 302 to /jobs/ when
// sent as GET /jobs/job/<spelling>?id=99 (checked with curl --path-as-is):
// Jetty decodes %XX and %uXXXX, treats %2F as a separator, strips ";..."
// path parameters and resolves dot segments. Spark 4.0.5 answered 405 for
// the same list (its kill handlers take POST only). Each must be refused.
func TestGuardSpellingsJettyKills(t *testing.T) {
	t.Parallel()
	g := Guard{AllowHeapHistogram: true, AllowThreadDump: true}
	for _, p := range []string{
		"/jobs/job/kill/",
		"/jobs/job/%6Bill/",
		"/jobs/job/kill;x/",
		"/jobs/x/../job/kill/",
		"/jobs/job/%2e%2e/job/kill/",
		"/jobs%2Fjob%2Fkill/",
		"/jobs/job/kill%2F",
		"/jobs/job/kill%u002F",
	} {
		for _, method := range []string{"GET", "POST"} {
			in := "/app/local-1700000000000" + p
			r, err := ParseRoute(in)
			if err != nil {
				continue
			}
			if blocked, _ := g.Check(method, r.Path); !blocked {
				t.Errorf("%s %q reaches Spark's kill handler: ParseRoute.Path = %q passes the guard", method, in, r.Path)
			}
		}
	}
}

func TestKillTarget(t *testing.T) {
	t.Parallel()
	tests := []struct {
		path string
		kind string
		ok   bool
	}{
		{"/jobs/job/kill", "job", true},
		{"/jobs/job/kill/", "job", true},
		{"/stages/stage/kill", "stage", true},
		{"/stages/stage/kill/", "stage", true},
		{"/jobs/job/KILL/", "", false},
		{"/jobs/job/kill//", "", false},
		{"/app/kill/", "", false},
		{"/jobs/job/", "", false},
		{"/x/jobs/job/kill/", "", false},
	}
	for _, tt := range tests {
		kind, ok := KillTarget(tt.path)
		if kind != tt.kind || ok != tt.ok {
			t.Errorf("KillTarget(%q) = %q, %v; want %q, %v", tt.path, kind, ok, tt.kind, tt.ok)
		}
		if ok {
			if blocked, _ := (Guard{}).Check("GET", tt.path); !blocked {
				t.Errorf("KillTarget(%q) ok but Guard lets it through", tt.path)
			}
		}
	}
}

func FuzzGuardCheck(f *testing.F) {
	f.Add("GET", "/jobs/job/kill/")
	f.Add("POST", "/jobs/")
	for _, w := range killWords {
		for _, d := range killDisguises {
			if seg := disguise(d.format, w); seg != "" {
				f.Add("GET", "/jobs/job/"+seg+"/")
			}
		}
	}
	f.Fuzz(func(t *testing.T, method, path string) {
		blocked, reason := Guard{}.Check(method, path)
		if blocked == (reason == "") {
			t.Fatalf("Check(%q, %q) = %v, %q; blocked and reason disagree", method, path, blocked, reason)
		}
		if method != "GET" && method != "HEAD" && !blocked {
			t.Fatalf("Check(%q, %q) lets a %s through", method, path, method)
		}
		for _, seg := range strings.Split(path, "/") {
			if spellsKillWord(seg) && !blocked {
				t.Fatalf("Check(%q, %q) lets a %q segment through", method, path, seg)
			}
		}
	})
}
