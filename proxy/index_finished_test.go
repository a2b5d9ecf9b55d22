package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/sparkgate/sparkgate/proxy/diagnosis"
	"github.com/sparkgate/sparkgate/proxy/discovery"
)

// fakeHistory is a History Server listing apps whose REST answers are
// captured apps (proxy/diagnosis/testdata/<dir>); it counts the requests
// of each app.
type fakeHistory struct {
	*httptest.Server
	mu   sync.Mutex
	reqs map[string][]string // by app id
}

type fakeHistoryApp struct {
	id, attempt, user, dir string
	completed              bool
}

func newFakeHistory(t *testing.T, apps []fakeHistoryApp) *fakeHistory {
	t.Helper()
	f := &fakeHistory{reqs: map[string][]string{}}
	byID := map[string]fakeHistoryApp{}
	var list []string
	for _, a := range apps {
		byID[a.id] = a
		att := ""
		if a.attempt != "" {
			att = `"attemptId":"` + a.attempt + `",`
		}
		list = append(list, fmt.Sprintf(`{"id":%q,"name":%q,"attempts":[{%s"startTimeEpoch":1764579600000,"endTimeEpoch":1764579660000,"lastUpdatedEpoch":1764579660000,"sparkUser":%q,"completed":%t,"appSparkVersion":"4.0.5"}]}`,
			a.id, "finished-"+a.dir, att, a.user, a.completed))
	}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/api/v1/applications" {
			fmt.Fprint(w, "["+strings.Join(list, ",")+"]")
			return
		}
		rest, ok := strings.CutPrefix(r.URL.Path, "/api/v1/applications/")
		id, _, _ := strings.Cut(rest, "/")
		a, known := byID[id]
		if !ok || !known {
			http.NotFound(w, r)
			return
		}
		f.mu.Lock()
		f.reqs[id] = append(f.reqs[id], r.URL.RequestURI())
		f.mu.Unlock()
		if strings.HasSuffix(r.URL.Path, "/environment") {
			fmt.Fprint(w, `{"sparkProperties":[["spark.acls.enable","true"],["spark.ui.view.acls","bob"]],"systemProperties":[]}`)
			return
		}
		serveCaptured(w, r, a.dir)
	}))
	t.Cleanup(f.Close)
	return f
}

// calls returns how many requests each app received.
func (f *fakeHistory) calls() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := make(map[string]int, len(f.reqs))
	for id, rs := range f.reqs {
		n[id] = len(rs)
	}
	return n
}

func (f *fakeHistory) requests(id string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.reqs[id]...)
}

const (
	finSkew    = "app-20261201090000-0001" // skewed, attempt 1
	finFail    = "app-20261201090000-0002" // a failed job
	finHealthy = "app-20261201090000-0003"
	finCarol   = "app-20261201090000-0004" // failed, owner carol (bob may view it)
	finRunning = "app-20261201090000-0005" // in progress on the History Server
)

// rowOf returns the index row of the app id in body ("" if none).
func rowOf(body, id string) string {
	i := strings.Index(body, `href="/app/`+id+`/"`)
	if i < 0 {
		return ""
	}
	row := body[i:]
	return row[:strings.Index(row, "</tr>")]
}

// TestIndexFinishedBadges: discovery, reading a History Server's apps'
// ACLs, has the proxy read each completed attempt's summary once (the four
// lists and at most index_stage_summaries task summaries, no task list);
// the index then shows finished rows' badges as live rows' (a skewed app's
// skew, a failing app's failed job and tasks, none for a healthy app),
// sorted with them, to the users who may view the app, and an index view
// asks the History Server nothing.
func TestIndexFinishedBadges(t *testing.T) {
	t.Parallel()
	fh := newFakeHistory(t, []fakeHistoryApp{
		{id: finSkew, attempt: "1", user: "alice", dir: "4.0.5-skew", completed: true},
		{id: finFail, user: "alice", dir: "4.0.5-fail", completed: true},
		{id: finHealthy, user: "alice", dir: "3.5.9-healthy", completed: true},
		{id: finCarol, user: "carol", dir: "4.0.5-fail", completed: true},
		{id: finRunning, user: "alice", dir: "3.5.9-gc", completed: false},
	})
	hsURL, _ := url.Parse(fh.URL)
	reg := discovery.NewRegistry()
	h := newHarness(t, func(o *Options) {
		o.Registry = reg
		o.HistoryServers = map[string]*url.URL{"hs": hsURL}
	})
	d := discovery.New(discovery.Config{Interval: 100 * time.Millisecond, History: []discovery.HistorySource{{Name: "hs", URL: fh.URL, ACLsEnable: true}}},
		reg, zaptest.NewLogger(t))
	d.OnHistoryVisit(h.srv.VisitFinished)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	// The four completed attempts summarized; nothing is asserted about
	// time, the deadline bounds a failing test.
	deadline := time.Now().Add(15 * time.Second)
	for h.srv.finished.cache.Len() < 4 {
		if time.Now().After(deadline) {
			t.Fatalf("summaries kept: %v; want the 4 completed attempts", h.srv.finished.cache.Keys())
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Some polls more: nothing is read again.
	time.Sleep(300 * time.Millisecond)
	before := fh.calls()
	limit := diagnosis.DefaultConfig().IndexStageSummaries
	for _, id := range []string{finSkew, finFail, finHealthy, finCarol} {
		sums, env := 0, 0
		for _, r := range fh.requests(id) {
			switch {
			case strings.Contains(r, "/taskList"):
				t.Errorf("summary of %s read a task list: %s", id, r)
			case strings.Contains(r, "/taskSummary"):
				sums++
			case strings.HasSuffix(r, "/environment"):
				env++
			}
		}
		if sums > limit || env != 1 || before[id] != 5+sums {
			t.Errorf("History Server calls for %s: %v; want the environment once, the four lists and at most %d task summaries", id, fh.requests(id), limit)
		}
		t.Logf("%s: %d History Server calls (1 environment, 4 lists, %d task summaries)", id, before[id], sums)
	}
	if got := fh.requests(finRunning); len(got) != 1 || !strings.HasSuffix(got[0], "/environment") {
		t.Errorf("History Server calls for the app in progress %s: %v; want its environment only", finRunning, got)
	}
	if got := fh.requests(finSkew); len(got) < 2 || !strings.HasPrefix(got[1], "/api/v1/applications/"+finSkew+"/1/") {
		t.Errorf("the skewed app's attempt 1 was not read: %v", got)
	}

	_, body := h.do(t, "GET", "/?sort=findings", "alice", nil)
	_, _ = h.do(t, "GET", "/", "alice", nil)
	if after := fh.calls(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("index views called the History Server: calls per app %v, before %v", after, before)
	}
	badge := func(id, kind string) string { return `href="/app/` + id + `/_/diagnosis">` + kind + `</a>` }
	skewRow, failRow, healthyRow := rowOf(body, finSkew), rowOf(body, finFail), rowOf(body, finHealthy)
	for _, k := range []string{"task_duration_skew", "shuffle_skew"} {
		if !strings.Contains(skewRow, badge(finSkew, k)) {
			t.Errorf("finished skewed app's row lacks the %s badge:\n%s", k, skewRow)
		}
	}
	for _, w := range []string{`class="sev critical" ` + badge(finFail, "job_failed"), "1 failed task<"} {
		if !strings.Contains(failRow, w) {
			t.Errorf("finished failing app's row lacks %q:\n%s", w, failRow)
		}
	}
	if healthyRow == "" || strings.Contains(healthyRow, `class="sev`) || strings.Count(healthyRow, "/_/diagnosis") != 1 || !strings.Contains(healthyRow, "no finding") {
		t.Errorf("finished healthy app's row: want no badge, and \"no finding\":\n%s", healthyRow)
	}
	if strings.Contains(failRow, "active job") || strings.Contains(failRow, "no finding") {
		t.Errorf("finished app's row shows live activity:\n%s", failRow)
	}
	if i, j := strings.Index(body, failRow), strings.Index(body, skewRow); i < 0 || j < 0 || i > j || strings.Index(body, healthyRow) < j {
		t.Errorf("?sort=findings: want the failed job first, then skew, then the healthy app:\n%s", body)
	}
	// Only to those who may view the app: alice does not see carol's
	// app at all; bob (in its view ACL) sees its badge.
	if strings.Contains(body, finCarol) {
		t.Errorf("alice's index shows carol's app %s", finCarol)
	}
	_, body = h.do(t, "GET", "/", "bob", nil)
	if row := rowOf(body, finCarol); !strings.Contains(row, badge(finCarol, "job_failed")) {
		t.Errorf("bob's index: carol's finished app lacks its badge:\n%s", row)
	}
	// A visit of an attempt already kept asks nothing.
	if err := h.srv.VisitFinished(context.Background(), "hs", finSkew, "1"); err != nil {
		t.Fatal(err)
	}
	if after := fh.calls(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("a second visit called the History Server: %v, before %v", after, before)
	}
}

// TestVisitFinishedFails: a History Server that cannot answer leaves the
// row without badges and the visit reports the error (discovery retries).
func TestVisitFinishedFails(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil) // "main" answers the lists with text/plain
	if err := h.srv.VisitFinished(context.Background(), "main", appHistory, "1"); err == nil {
		t.Error("VisitFinished on an answer that is no JSON = nil; want an error")
	}
	if err := h.srv.VisitFinished(context.Background(), "unknown", appHistory, "1"); err != nil {
		t.Errorf("VisitFinished for a server not proxied to = %v; want nil (nothing asked)", err)
	}
	_, body := h.do(t, "GET", "/", "alice", nil)
	if row := rowOf(body, appHistory); row == "" || strings.Contains(row, `class="sev`) || strings.Contains(row, "no finding") {
		t.Errorf("row of %s after a failed visit:\n%s", appHistory, row)
	}
}

// TestVisitFinishedBusyIsSoon: a finished attempt's summary that found the
// diagnoses' bound held by others tells discovery to visit again soon
// (discovery.ErrVisitSoon), not after the History Server's retry of ten
// minutes; with the bound free the summary is read.
func TestVisitFinishedBusyIsSoon(t *testing.T) {
	t.Parallel()
	fh := newFakeHistory(t, []fakeHistoryApp{{id: finFail, user: "alice", dir: "4.0.5-fail", completed: true}})
	hsURL, _ := url.Parse(fh.URL)
	h := newHarness(t, func(o *Options) { o.HistoryServers = map[string]*url.URL{"hs": hsURL} })
	h.srv.diag.heldMax.Store(0)
	if err := h.srv.VisitFinished(context.Background(), "hs", finFail, ""); !errors.Is(err, discovery.ErrVisitSoon) {
		t.Errorf("a visit while other diagnoses hold the bound: %v; want ErrVisitSoon", err)
	}
	h.srv.diag.heldMax.Store(diagHeldMax)
	if err := h.srv.VisitFinished(context.Background(), "hs", finFail, ""); err != nil || h.srv.finished.cache.Len() != 1 {
		t.Errorf("the visit again, the bound free: %v, %d summaries; want one", err, h.srv.finished.cache.Len())
	}
}
