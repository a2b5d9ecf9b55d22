package discovery

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"slices"
	"strings"
	"testing"
)

// TestIDsStayOneSegment: app and attempt ids come from what sources say
// (an event log, which anyone may write, or a driver, anyone's process)
// and are put into REST paths as one segment each. An attempt id
// "../<other app>/1", or an app id "." before an attempt id naming another
// app, made the History Server (Jetty resolves dot segments) answer with
// that other app's environment, jobs and executors, which the gateway then
// read as this app's: its diagnosis, index badges and executor logs under
// the attacker's own ACLs.
func TestIDsStayOneSegment(t *testing.T) {
	h, err := newHistorySource(HistorySource{Name: "hs", URL: "http://127.0.0.1:1"}, newClient(nil), DefaultInterval)
	if err != nil {
		t.Fatal(err)
	}
	const victim = "app-20240101000000-0100"
	for _, tc := range []struct {
		entry    string
		ok       bool
		attempts []string
	}{
		{`{"id":"app-1","attempts":[{"attemptId":"../` + victim + `/1","sparkUser":"mallory"}]}`, false, nil},
		{`{"id":"app-1","attempts":[{"attemptId":"..;x","sparkUser":"mallory"}]}`, false, nil},
		{`{"id":".","attempts":[{"attemptId":"` + victim + `","sparkUser":"mallory"}]}`, false, nil},
		{`{"id":"..","attempts":[{"sparkUser":"mallory"}]}`, false, nil},
		// Another log of the same app id does not hide the real attempts.
		{`{"id":"` + victim + `","attempts":[{"attemptId":"2","startTimeEpoch":2,"sparkUser":"carol"},` +
			`{"attemptId":"../x","startTimeEpoch":3,"sparkUser":"mallory"},{"attemptId":"1","startTimeEpoch":1,"sparkUser":"carol"}]}`,
			true, []string{"2", "1"}},
		{`{"id":"app-1","attempts":[{"sparkUser":"carol"}]}`, true, []string{""}},
		{`{"id":"app-1","attempts":[{"attemptId":"a.1_b-2","sparkUser":"carol"}]}`, true, []string{"a.1_b-2"}},
	} {
		ha, ok := h.decode([]byte(tc.entry))
		if ok != tc.ok || (ok && !slices.Equal(ha.Ref.Attempts, tc.attempts)) {
			t.Errorf("decode(%s) = %v %q; want %v %q", tc.entry, ok, ha.Ref.Attempts, tc.ok, tc.attempts)
		}
		if ok && ha.User != "carol" {
			t.Errorf("decode(%s): user %q, want carol's newest valid attempt", tc.entry, ha.User)
		}
	}

	// A driver's answer: its attempt id is its ACLs' path too (a
	// ResourceManager's proxy fronts every YARN app).
	for attempt, want := range map[string]bool{"": true, "1": true, "../../application_1_0002": false, ".": false} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`[{"id":"app-1","name":"x","attempts":[{"attemptId":"` + attempt + `","sparkUser":"mallory"}]}]`))
		}))
		u, _ := url.Parse(srv.URL)
		_, err := newClient(nil).driverApp(context.Background(), u)
		srv.Close()
		if (err == nil) != want {
			t.Errorf("a driver answering attempt id %q: err = %v; want accepted %v", attempt, err, want)
		}
	}

	// The last check: a path with a dot segment is not asked for at all.
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, path.Clean(r.URL.Path))
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	for _, p := range []string{"api/v1/applications/a/../" + victim + "/1/environment", "api/v1/applications/./" + victim + "/environment", "api/v1/applications/a/..;x/b"} {
		if _, _, err := newClient(nil).getBody(context.Background(), u, p, 1<<10); err == nil || !strings.Contains(err.Error(), "dot segment") {
			t.Errorf("getBody(%q) = %v; want refused for its dot segment", p, err)
		}
	}
	if _, _, err := newClient(nil).getBody(context.Background(), u, "api/v1/applications/a...b/1/environment", 1<<10); err != nil {
		t.Errorf("getBody of a path with dots inside a segment: %v", err)
	}
	if len(asked) != 1 {
		t.Errorf("the server was asked for %q; want only the path without dot segments", asked)
	}
}
