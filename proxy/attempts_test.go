package proxy

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sparkgate/sparkgate/proxy/discovery"
)

// TestAttemptACLs: a History Server app of two attempts whose newest event
// log opens it to dave and whose first opens it to bob only (a second
// attempt written by someone else, say). Each attempt is judged by its own
// ACLs, on every route that names one; a download of every attempt's event
// log needs them all.
func TestAttemptACLs(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	const id = "application_1700000000000_0042"
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	ref := discovery.HistoryRef{Server: "main", BaseURL: h.hs.url(), Attempts: []string{"2", "1"}, Completed: true,
		User: "alice", ACLProps: map[string]string{"spark.ui.view.acls": "dave"},
		Older: []discovery.HistoryAttempt{{ID: "1", User: "alice", Completed: true,
			ACLProps: map[string]string{"spark.ui.view.acls": "bob"}}}}
	// An app whose private attempt has no id, and a newer attempt 1 open
	// to dave (an event log written under the app's id): the History
	// Server serves the attempt without an id for a path that names none.
	const mixed = "application_1700000000000_0044"
	mixedRef := discovery.HistoryRef{Server: "main", BaseURL: h.hs.url(), Attempts: []string{"1", ""}, Completed: true,
		User: "mallory", ACLProps: map[string]string{"spark.ui.view.acls": "dave"},
		Older: []discovery.HistoryAttempt{{ID: "", User: "alice", Completed: true, ACLProps: map[string]string{}}}}
	// A YARN app whose second attempt runs, its first on the History Server.
	const rerun = "application_1700000000000_0043"
	first := discovery.HistoryRef{Server: "main", BaseURL: h.hs.url(), Attempts: []string{"1"}, Completed: true,
		User: "alice", ACLProps: map[string]string{}}
	h.reg.Store(discovery.NewSnapshot([]*discovery.App{{ID: id, Name: "twice", User: "alice", StartTime: start,
		EndTime: start.Add(time.Hour), State: discovery.Ended, Source: "history:main", History: []discovery.HistoryRef{ref}},
		{ID: mixed, Name: "mixed", User: "alice", StartTime: start, EndTime: start.Add(time.Hour), State: discovery.Ended,
			Source: "history:main", History: []discovery.HistoryRef{mixedRef}},
		{ID: rerun, Name: "again", User: "alice", AttemptID: "2", StartTime: start, State: discovery.Running, UIURL: h.drv.url(),
			Source: "yarn", ACLProps: map[string]string{}, History: []discovery.HistoryRef{first}}}))

	for _, c := range []struct {
		path, user string
		want       int
		upstream   string // the History Server path asked, "" for none
	}{
		{"/hs/main/history/" + id + "/2/jobs/", "dave", http.StatusOK, "/history/" + id + "/2/jobs/"},
		{"/hs/main/history/" + id + "/1/jobs/", "dave", http.StatusNotFound, ""},
		{"/hs/main/history/" + id + "/1/jobs/", "bob", http.StatusOK, "/history/" + id + "/1/jobs/"},
		{"/hs/main/history/" + id + "/2/jobs/", "bob", http.StatusNotFound, ""},
		{"/history/" + id + "/1/jobs/", "dave", http.StatusNotFound, ""},
		{"/history/" + id + "/1/jobs/", "bob", http.StatusFound, ""},
		{"/api/v1/applications/" + id + "/1/jobs", "dave", http.StatusNotFound, ""},
		{"/api/v1/applications/" + id + "/1/jobs", "bob", http.StatusOK, "/api/v1/applications/" + id + "/1/jobs"},
		{"/api/v1/applications/" + id + "/2/logs", "dave", http.StatusOK, "/api/v1/applications/" + id + "/2/logs"},
		// Every attempt's event log: dave may not view attempt 1.
		{"/api/v1/applications/" + id + "/logs", "dave", http.StatusNotFound, ""},
		{"/hs/main/api/v1/applications/" + id + "/logs/", "dave", http.StatusNotFound, ""},
		{"/api/v1/applications/" + id + "/logs", "alice", http.StatusOK, "/api/v1/applications/" + id + "/logs"},
		// No attempt named: the newest's ACLs (the gateway's links and
		// reads) and the attempt without an id's (the server's answer).
		{"/hs/main/history/" + mixed + "/jobs/", "dave", http.StatusNotFound, ""},
		{"/api/v1/applications/" + mixed + "/jobs", "dave", http.StatusNotFound, ""},
		{"/app/" + mixed + "/_/diagnosis", "dave", http.StatusNotFound, ""},
		{"/hs/main/history/" + mixed + "/jobs/", "alice", http.StatusOK, "/history/" + mixed + "/jobs/"},
		{"/hs/main/history/" + mixed + "/1/jobs/", "dave", http.StatusOK, "/history/" + mixed + "/1/jobs/"},
		// An attempt the History Server does not list.
		{"/hs/main/history/" + id + "/3/jobs/", "dave", http.StatusNotFound, ""},
		{"/hs/main/history/" + id + "/3/jobs/", "carol", http.StatusNotFound, ""},
	} {
		before := len(h.hs.requests())
		resp, body := h.do(t, http.MethodGet, c.path, c.user, nil)
		if resp.StatusCode != c.want {
			t.Errorf("%s as %s = %d; want %d\n%.300s", c.path, c.user, resp.StatusCode, c.want, body)
		}
		reqs := h.hs.requests()[before:]
		switch {
		case c.upstream == "" && len(reqs) > 0:
			t.Errorf("%s as %s reached the History Server: %s", c.path, c.user, reqs[0].Path)
		case c.upstream != "" && (len(reqs) != 1 || reqs[0].Path != c.upstream):
			t.Errorf("%s as %s: History Server asked %v; want %s", c.path, c.user, reqs, c.upstream)
		}
		if resp.StatusCode == http.StatusNotFound && c.user != "dave" && strings.Contains(body, "attempt") {
			t.Errorf("%s as %s: the 404 names the attempt to a user who may view no attempt of it:\n%.300s", c.path, c.user, body)
		}
	}
	// The running attempt, which the History Server does not list: its driver.
	before := len(h.drv.requests())
	if resp, body := h.do(t, http.MethodGet, "/api/v1/applications/"+rerun+"/2/jobs", "alice", nil); resp.StatusCode != http.StatusOK ||
		len(h.drv.requests()) != before+1 {
		t.Errorf("REST of the running attempt 2 = %d, driver asked %d times; want 200 from the driver\n%.300s",
			resp.StatusCode, len(h.drv.requests())-before, body)
	}
	if resp, _ := h.do(t, http.MethodGet, "/history/"+rerun+"/2/jobs/", "alice", nil); resp.Header.Get("Location") != "/app/"+rerun+"/jobs/" {
		t.Errorf("/history alias of the running attempt: %d, Location %q; want /app/%s/jobs/", resp.StatusCode, resp.Header.Get("Location"), rerun)
	}
	// dave may view the app, so learns that attempt 3 is not listed.
	if _, body := h.do(t, http.MethodGet, "/hs/main/history/"+id+"/3/jobs/", "dave", nil); !strings.Contains(body, "no attempt 3") {
		t.Errorf("unknown attempt as dave: %.300s; want it named", body)
	}
	if resp, _ := h.do(t, http.MethodGet, "/history/"+id+"/1/jobs/", "bob", nil); resp.Header.Get("Location") != "/hs/main/history/"+id+"/1/jobs/" {
		t.Errorf("/history alias of attempt 1 as bob: Location %q", resp.Header.Get("Location"))
	}
}

func TestForAttempt(t *testing.T) {
	t.Parallel()
	newest := map[string]string{"spark.ui.view.acls": "*"}
	older := map[string]string{"spark.ui.view.acls": "bob"}
	r := &discovery.HistoryRef{Server: "hs", Attempts: []string{"2", "1"}, User: "mallory", ACLProps: newest, Completed: false,
		Older: []discovery.HistoryAttempt{{ID: "1", User: "alice", Completed: true, ACLProps: older}}}
	for _, id := range []string{"", "2"} {
		if got, ok := r.ForAttempt(id); !ok || got != r {
			t.Errorf("ForAttempt(%q) = %p, %t; want the ref itself", id, got, ok)
		}
	}
	got, ok := r.ForAttempt("1")
	if !ok || got == r || got.User != "alice" || got.ACLProps["spark.ui.view.acls"] != "bob" || !got.Completed || got.Server != "hs" {
		t.Errorf("ForAttempt(1) = %+v, %t; want attempt 1's owner, ACLs and state on a copy", got, ok)
	}
	if r.User != "mallory" || r.ACLProps["spark.ui.view.acls"] != "*" {
		t.Errorf("ForAttempt changed the ref: %+v", r)
	}
	if got, ok := r.ForAttempt("3"); ok || got != nil {
		t.Errorf("ForAttempt(3) = %+v, %t; want none", got, ok)
	}
	// An attempt without an id beside ones with: "" names it.
	r.Attempts = append(r.Attempts, "")
	r.Older = append(r.Older, discovery.HistoryAttempt{ID: "", User: "erin", Completed: true, ACLProps: older})
	if got, ok := r.ForAttempt(""); !ok || got == r || got.User != "erin" {
		t.Errorf("ForAttempt(\"\") with an attempt without an id = %+v, %t; want erin's", got, ok)
	}
}

// TestNonNumericAttemptJudgesAll: a crafted event log names an attempt
// "a1", which a route takes for a page of the app rather than an attempt,
// while the History Server serves that attempt at /history/<id>/a1/. Every
// request for such an app needs view on every attempt: dave, whom only the
// newest lets in, reaches neither attempt a1's pages nor its REST, and the
// History Server is not asked; carol, whom both let in, is served.
func TestNonNumericAttemptJudgesAll(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	const id = "spark-0123456789abcdef0123456789abcdef"
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	ref := discovery.HistoryRef{Server: "main", BaseURL: h.hs.url(), Attempts: []string{"2", "a1"}, Completed: true,
		User: "mallory", ACLProps: map[string]string{"spark.ui.view.acls": "dave,carol"},
		Older: []discovery.HistoryAttempt{{ID: "a1", User: "alice", Completed: true, ACLProps: map[string]string{"spark.ui.view.acls": "carol"}}}}
	h.reg.Store(discovery.NewSnapshot([]*discovery.App{{ID: id, Name: "x", User: "mallory", StartTime: start,
		EndTime: start.Add(time.Hour), State: discovery.Ended, Source: "history:main", History: []discovery.HistoryRef{ref}}}))
	for _, p := range []string{"/hs/main/history/" + id + "/a1/environment/", "/api/v1/applications/" + id + "/a1/environment"} {
		before := len(h.hs.requests())
		if resp, _ := h.do(t, http.MethodGet, p, "dave", nil); resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s as dave = %d; want 404", p, resp.StatusCode)
		}
		if reqs := h.hs.requests()[before:]; len(reqs) != 0 {
			t.Errorf("%s as dave reached the History Server: %v", p, reqs)
		}
		if resp, _ := h.do(t, http.MethodGet, p, "carol", nil); resp.StatusCode != http.StatusOK {
			t.Errorf("%s as carol = %d; want 200", p, resp.StatusCode)
		}
	}
}
