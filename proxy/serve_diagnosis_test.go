package proxy

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sparkgate/sparkgate/proxy/diagnosis"
	"github.com/sparkgate/sparkgate/proxy/discovery"
)

// restFiles serves a captured app (proxy/diagnosis/testdata/<dir>) as a
// driver (attempt "") or a History Server (attempt "1") would, for any
// app id, and records the paths and queries it was asked.
type restFiles struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []string
}

var restPath = regexp.MustCompile(`^/api/v1/applications/[^/]+(?:/\d+)?/(jobs|stages|allexecutors|sql|stages/(\d+)/(\d+)/(taskSummary|taskList))$`)

func newRESTFiles(t testing.TB, dir string) *restFiles {
	t.Helper()
	f := &restFiles{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.reqs = append(f.reqs, r.URL.RequestURI())
		f.mu.Unlock()
		serveCaptured(w, r, dir)
	}))
	t.Cleanup(f.Close)
	return f
}

// serveCaptured answers a REST request of restPath from the captured app
// proxy/diagnosis/testdata/<dir>, 404 for anything else.
func serveCaptured(w http.ResponseWriter, r *http.Request, dir string) {
	m := restPath.FindStringSubmatch(r.URL.Path)
	if m == nil {
		http.NotFound(w, r)
		return
	}
	name := m[1] + ".json"
	if m[4] != "" {
		name = m[4] + "_" + m[2] + "_" + m[3] + ".json"
	}
	b, err := os.ReadFile(filepath.Join("diagnosis", "testdata", dir, name))
	if err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

func (f *restFiles) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reqs)
}

const (
	appSkew    = "local-1796118587136"
	appHealthy = "local-1796118781561"
	appSkewHS  = "local-1796118786582"
	appFail    = "local-1796118586299"
)

// diagHarness adds to the usual harness a live skewed app (owner alice),
// a live healthy app (owner alice) and a finished skewed app on a History
// Server "diag" (attempt 1, viewable by bob only there).
func diagHarness(t *testing.T) (*harness, map[string]*restFiles) {
	t.Helper()
	files := map[string]*restFiles{
		appSkew:    newRESTFiles(t, "3.5.9-skew"),
		appHealthy: newRESTFiles(t, "3.5.9-healthy"),
		appSkewHS:  newRESTFiles(t, "4.0.5-skew"),
		appFail:    newRESTFiles(t, "4.0.5-fail"),
	}
	u := func(f *restFiles) *url.URL { v, _ := url.Parse(f.URL); return v }
	h := newHarness(t, func(o *Options) {
		o.HistoryServers["diag"] = u(files[appSkewHS])
	})
	start := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	apps := h.reg.Load().Apps()
	apps = append(apps,
		&discovery.App{ID: appSkew, Name: "diag-skew", User: "alice", StartTime: start, State: discovery.Running, UIURL: u(files[appSkew]), Source: "static"},
		&discovery.App{ID: appHealthy, Name: "diag-healthy", User: "alice", StartTime: start, State: discovery.Running, UIURL: u(files[appHealthy]), Source: "static"},
		&discovery.App{ID: appFail, Name: "diag-fail", User: "alice", StartTime: start, State: discovery.Running, UIURL: u(files[appFail]), Source: "static"},
		&discovery.App{ID: appSkewHS, Name: "diag-skew", User: "carol", StartTime: start, EndTime: start.Add(time.Minute), State: discovery.Ended, Source: "history:diag",
			History: []discovery.HistoryRef{{Server: "diag", BaseURL: u(files[appSkewHS]), Attempts: []string{"1"}, Completed: true,
				ACLProps: map[string]string{"spark.ui.view.acls": "bob"}}}},
	)
	h.reg.Store(discovery.NewSnapshot(apps))
	return h, files
}

func kindsOf(fs []diagnosis.Finding) []diagnosis.Kind {
	var out []diagnosis.Kind
	for _, f := range fs {
		out = append(out, f.Kind)
	}
	return out
}

func TestDiagnosisJSON(t *testing.T) {
	t.Parallel()
	h, files := diagHarness(t)
	resp, body := h.do(t, "GET", "/api/v1/applications/"+appSkew+"/diagnosis", "alice", nil)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("GET diagnosis = %d %s; want 200 JSON\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	var d diagnosisJSON
	decodeJSON(t, body, &d)
	want := []diagnosis.Kind{diagnosis.KindTaskDurationSkew, diagnosis.KindShuffleSkew}
	if got := kindsOf(d.Findings); !slices.Equal(got, want) {
		t.Fatalf("findings = %v; want %v", got, want)
	}
	if f := d.Findings[0]; f.Link != "/app/"+appSkew+"/stages/stage/?id=1&attempt=0" || f.Metrics["max_ms"] != 17653 {
		t.Errorf("finding link %q, metrics %v", f.Link, f.Metrics)
	}
	if !d.Live || d.AppID != appSkew || d.Page != "/app/"+appSkew+"/_/diagnosis" || d.Read.Stages != 2 || d.Thresholds["duration_skew_ratio"] != "5" {
		t.Errorf("diagnosis = %+v", d)
	}
	// Bounded: every task list asks for at most task_list_length tasks.
	for _, r := range files[appSkew].requests() {
		if strings.Contains(r, "/taskList") && !strings.Contains(r, "length=20") {
			t.Errorf("task list request %q has no length cap", r)
		}
		if !strings.HasPrefix(r, "/api/v1/applications/"+appSkew+"/") {
			t.Errorf("request %q outside the app's REST API", r)
		}
	}
}

func TestDiagnosisPage(t *testing.T) {
	t.Parallel()
	h, _ := diagHarness(t)
	resp, body := h.do(t, "GET", "/app/"+appSkew+"/_/diagnosis", "alice", nil)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET page = %d; want 200 HTML\n%s", resp.StatusCode, body)
	}
	for _, s := range []string{`data-kind="task_duration_skew"`, `data-kind="shuffle_skew"`,
		`href="/app/` + appSkew + `/stages/stage/?id=1&amp;attempt=0"`, "salting", "spark.sql.adaptive.skewJoin.enabled", "Tasks"} {
		if !strings.Contains(body, s) {
			t.Errorf("page lacks %q", s)
		}
	}
	resp, body = h.do(t, "GET", "/app/"+appHealthy+"/_/diagnosis", "alice", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `id="diag-none"`) || strings.Contains(body, "data-kind=") {
		t.Errorf("healthy app page = %d, want \"No finding\" and no finding:\n%s", resp.StatusCode, body)
	}
}

// TestDiagnosisACL: the diagnosis is judged like the app's REST API, and
// a refused user makes no upstream call.
func TestDiagnosisACL(t *testing.T) {
	t.Parallel()
	h, files := diagHarness(t)
	for _, p := range []string{"/api/v1/applications/" + appSkew + "/diagnosis", "/app/" + appSkew + "/_/diagnosis"} {
		resp, body := h.do(t, "GET", p, "carol", nil)
		if resp.StatusCode != http.StatusNotFound { // a denied app looks unknown
			t.Errorf("carol GET %s = %d; want 404\n%s", p, resp.StatusCode, body)
		}
		resp, _ = h.do(t, "GET", p, "", nil)
		if resp.StatusCode != http.StatusFound {
			t.Errorf("anonymous GET %s = %d; want 302 to sign-in", p, resp.StatusCode)
		}
	}
	if rs := files[appSkew].requests(); len(rs) != 0 {
		t.Errorf("denied requests reached the driver: %v", rs)
	}
	resp, _ := h.do(t, "POST", "/api/v1/applications/"+appSkew+"/diagnosis", "alice", nil)
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST = %d; want 405", resp.StatusCode)
	}
}

// TestDiagnosisHistory: a finished app is read from its History Server
// (with its attempt), judged by the History Server's ACLs.
func TestDiagnosisHistory(t *testing.T) {
	t.Parallel()
	h, files := diagHarness(t)
	if resp, _ := h.do(t, "GET", "/api/v1/applications/"+appSkewHS+"/diagnosis", "alice", nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("alice (not in the History Server's view ACL) = %d; want 404, as for an unknown app", resp.StatusCode)
	}
	resp, body := h.do(t, "GET", "/api/v1/applications/"+appSkewHS+"/diagnosis", "bob", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("bob = %d\n%s", resp.StatusCode, body)
	}
	var d diagnosisJSON
	decodeJSON(t, body, &d)
	if d.Live || d.Source != "History Server diag" || !slices.Contains(kindsOf(d.Findings), diagnosis.KindTaskDurationSkew) {
		t.Errorf("history diagnosis = %+v", d)
	}
	for _, r := range files[appSkewHS].requests() {
		if !strings.HasPrefix(r, "/api/v1/applications/"+appSkewHS+"/1/") {
			t.Errorf("history request %q does not name attempt 1", r)
		}
	}
}

// TestDiagnosisCached: within cache_ttl a second request reads nothing.
func TestDiagnosisCached(t *testing.T) {
	t.Parallel()
	h, files := diagHarness(t)
	h.do(t, "GET", "/api/v1/applications/"+appSkew+"/diagnosis", "alice", nil)
	n := len(files[appSkew].requests())
	if n == 0 || n > 4+30+6 {
		t.Fatalf("first diagnosis made %d upstream requests; want 1..40", n)
	}
	h.do(t, "GET", "/app/"+appSkew+"/_/diagnosis", "alice", nil)
	if m := len(files[appSkew].requests()); m != n {
		t.Errorf("second diagnosis made %d more upstream requests; want 0 (cached)", m-n)
	}
}

func TestIndexLinksDiagnosis(t *testing.T) {
	t.Parallel()
	h, _ := diagHarness(t)
	_, body := h.do(t, "GET", "/", "alice", nil)
	if !strings.Contains(body, `href="/app/`+appSkew+`/_/diagnosis"`) {
		t.Errorf("index has no diagnosis link for %s", appSkew)
	}
}

// TestIndexLiveStats: a live row shows what the app does and badges of
// the findings the lists and the task summaries of its longest stages
// reveal, read without any task list and with at most
// index_stage_summaries summaries; ?sort=findings puts the worst first.
func TestIndexLiveStats(t *testing.T) {
	t.Parallel()
	h, files := diagHarness(t)
	_, body := h.do(t, "GET", "/?sort=findings", "alice", nil)
	i := strings.Index(body, `href="/app/`+appFail+`/"`)
	if i < 0 {
		t.Fatalf("index lacks %s", appFail)
	}
	row := body[i:]
	row = row[:strings.Index(row, "</tr>")]
	for _, w := range []string{"0 active jobs · 0 tasks running · 1 executor", "1 failed task<", `class="sev critical" href="/app/` + appFail + `/_/diagnosis">job_failed</a>`} {
		if !strings.Contains(row, w) {
			t.Errorf("row of %s lacks %q:\n%s", appFail, w, row)
		}
	}
	j := strings.Index(body, `href="/app/`+appSkew+`/"`)
	if j < i {
		t.Fatalf("sort=findings: %s (skew: warnings) before %s (a failed job: critical)", appSkew, appFail)
	}
	skewRow := body[j:]
	skewRow = skewRow[:strings.Index(skewRow, "</tr>")]
	for _, k := range []string{"task_duration_skew", "shuffle_skew"} {
		if !strings.Contains(skewRow, `href="/app/`+appSkew+`/_/diagnosis">`+k+`</a>`) {
			t.Errorf("row of %s lacks the %s badge (from its stages' task summaries):\n%s", appSkew, k, skewRow)
		}
	}
	for id, f := range files {
		sums := 0
		for _, r := range f.requests() {
			if strings.Contains(r, "/taskList") {
				t.Errorf("index view of %s read a task list: %s", id, r)
			}
			if strings.Contains(r, "/taskSummary") {
				sums++
			}
		}
		if limit := diagnosis.DefaultConfig().IndexStageSummaries; sums > limit {
			t.Errorf("index view of %s read %d task summaries; want at most %d", id, sums, limit)
		}
	}
}

// TestDiagnosisBoundedInMemory: a diagnosis reads a driver's REST answers,
// and a driver is anyone's. Bytes are not what they decode to: "{}" in a
// list is a whole struct, "1," in a list of ids eight bytes, so a 4 MiB
// answer cost one diagnosis 2 GiB. Each way of growing an answer is now
// refused (the diagnosis fails, saying why) within a bounded allocation:
// a list of too many elements, a list of too many ids, ids enough to
// pass the decoded bound, and an answer past the bytes bound.
// Not parallel: it counts the process's allocations.
func TestDiagnosisBoundedInMemory(t *testing.T) {
	repeat := func(head, elem, tail string, n int) string {
		var b strings.Builder
		b.WriteString(head)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(elem)
		}
		b.WriteString(tail)
		return b.String()
	}
	ids := repeat(`{"jobId":1,"status":"SUCCEEDED","stageIds":[`, "1", `]}`, diagnosis.MaxIDs)
	cases := []struct {
		name, list, body, want string
	}{
		{"elements", "stages", repeat("[", "{}", "]", 1_400_000), "over 20000 elements"},
		{"ids in a job", "jobs", repeat("[", repeat(`{"jobId":1,"stageIds":[`, "1", `]}`, 2_000_000), "]", 1), "a list of ids or values too long"},
		{"decoded", "jobs", repeat("[", ids, "]", 50), "MiB decoded"},
		{"bytes", "stages", `[{"name":"` + strings.Repeat("a", 40<<20) + `"}]`, "MiB sent"},
	}
	for i, c := range cases {
		answer := []byte(c.body)
		drv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/"+c.list) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write(answer)
				return
			}
			serveCaptured(w, r, "3.5.9-healthy")
		}))
		u, _ := url.Parse(drv.URL)
		h := newHarness(t, nil)
		id := fmt.Sprintf("app-20240101000000-%04d", 700+i)
		apps := append(h.reg.Load().Apps(), &discovery.App{ID: id, Name: "bait", User: "mallory",
			StartTime: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), State: discovery.Running, UIURL: u, Source: "probe:127.0.0.1:4050"})
		h.reg.Store(discovery.NewSnapshot(apps))

		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		resp, body := h.do(t, http.MethodGet, "/api/v1/applications/"+id+"/diagnosis", "mallory", nil)
		runtime.ReadMemStats(&after)
		drv.Close()
		allocated := after.TotalAlloc - before.TotalAlloc
		t.Logf("%s: a %.1f MiB /%s: %d, %d MiB allocated", c.name, float64(len(c.body))/(1<<20), c.list, resp.StatusCode, allocated>>20)
		if resp.StatusCode == http.StatusOK || !strings.Contains(body, c.want) {
			t.Errorf("%s: diagnosis = %d, %.200q; want it refused, saying %q", c.name, resp.StatusCode, body, c.want)
		}
		if allocated > 3*diagRawMax {
			t.Errorf("%s: refusing a %.1f MiB /%s allocated %d MiB; want no more than its bounds (%d MiB read, %d MiB decoded) and their buffers",
				c.name, float64(len(c.body))/(1<<20), c.list, allocated>>20, diagRawMax>>20, diagDecodedMax>>20)
		}
	}
}

// TestDiagnosesShareOneBound: the diagnoses computed at once hold no more
// than heldMax of answers and decoded data in all (each may hold its own
// bounds; a user can start many drivers, an index shows many apps). One
// that finds it spent fails at once, saying so, rather than wait behind a
// driver that answers slowly; what a diagnosis held is given back when it
// is done.
func TestDiagnosesShareOneBound(t *testing.T) {
	t.Parallel()
	const big = 400 << 10 // alone a diagnosis holds it twice (read, decoded): 800 KiB of 1 MiB
	release := make(chan struct{})
	reading := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/jobs") {
			serveCaptured(w, r, "3.5.9-healthy")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `[{"jobId":1,"status":"SUCCEEDED","name":"`+strings.Repeat("a", big))
		w.(http.Flusher).Flush()
		close(reading)
		<-release
		_, _ = io.WriteString(w, `"}]`)
	}))
	t.Cleanup(slow.Close)
	large := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/jobs") {
			serveCaptured(w, r, "3.5.9-healthy")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `[{"jobId":1,"status":"SUCCEEDED","name":"`+strings.Repeat("b", big)+`"}]`)
	}))
	t.Cleanup(large.Close)
	h := newHarness(t, nil)
	h.srv.diag.heldMax.Store(1 << 20)
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	su, _ := url.Parse(slow.URL)
	lu, _ := url.Parse(large.URL)
	const appSlow, appLarge = "app-20240101000000-0801", "app-20240101000000-0802"
	h.reg.Store(discovery.NewSnapshot(append(h.reg.Load().Apps(),
		&discovery.App{ID: appSlow, Name: "slow", User: "alice", StartTime: start, State: discovery.Running, UIURL: su, Source: "static"},
		&discovery.App{ID: appLarge, Name: "large", User: "alice", StartTime: start, State: discovery.Running, UIURL: lu, Source: "static"})))

	slowDone := make(chan int)
	go func() {
		resp, _ := h.do(t, http.MethodGet, "/api/v1/applications/"+appSlow+"/diagnosis", "alice", nil)
		slowDone <- resp.StatusCode
	}()
	<-reading
	for h.srv.diag.held.Load() < big {
		time.Sleep(time.Millisecond) // the gateway reading what was sent
	}
	resp, body := h.do(t, http.MethodGet, "/api/v1/applications/"+appLarge+"/diagnosis", "alice", nil)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "reading other apps") {
		t.Errorf("a diagnosis while another holds most of the bound = %d %.200q; want 503, busy", resp.StatusCode, body)
	}
	close(release)
	if code := <-slowDone; code != http.StatusOK {
		t.Errorf("the slow driver's diagnosis = %d; want 200", code)
	}
	if held := h.srv.diag.held.Load(); held != 0 {
		t.Errorf("after both diagnoses the gateway holds %d bytes of them; want 0", held)
	}
	if resp, body := h.do(t, http.MethodGet, "/api/v1/applications/"+appLarge+"/diagnosis", "alice", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("the large driver's diagnosis, the bound free again = %d %.200q; want 200", resp.StatusCode, body)
	}
}

// TestIndexStatsAfterBusy: a summary the gateway was too busy to compute
// (diagHeldMax spent) is asked for again at the next view, not cached as
// the driver's failure for diagnosis.cache_ttl.
func TestIndexStatsAfterBusy(t *testing.T) {
	t.Parallel()
	h, _ := diagHarness(t)
	row := func() string {
		_, body := h.do(t, "GET", "/", "alice", nil)
		i := strings.Index(body, `href="/app/`+appFail+`/"`)
		if i < 0 {
			t.Fatalf("index lacks %s", appFail)
		}
		return body[i : i+strings.Index(body[i:], "</tr>")]
	}
	const stats = "0 active jobs · 0 tasks running · 1 executor"
	h.srv.diag.heldMax.Store(0)
	if r := row(); strings.Contains(r, stats) {
		t.Fatalf("row of %s with the gateway busy: %s; want no stats", appFail, r)
	}
	h.srv.diag.heldMax.Store(diagHeldMax)
	if r := row(); !strings.Contains(r, stats) {
		t.Errorf("row of %s at the next view: %s; want its stats (%q)", appFail, r, stats)
	}
}

// TestDiagnosisOfAppWithSQLPlans: a diagnosis's bounds hold a real app of
// Spark's default retention (1000 jobs, stages and SQL executions), each
// with a 5 KB statement (a Thrift Server's or a notebook's) and 24 KB
// plans: /sql?details=false sends each execution's planDescription unless
// asked planDescription=false (Spark 3.1 on), which the diagnosis asks, as
// its rules read no plan. With the plans, the answers are 41 MiB.
func TestDiagnosisOfAppWithSQLPlans(t *testing.T) {
	t.Parallel()
	const n = 1000 // Spark's default retention of jobs, stages and SQL executions
	read := func(name string) []map[string]any {
		b, err := os.ReadFile(filepath.Join("diagnosis", "testdata", "3.5.9-healthy", name))
		if err != nil {
			t.Fatal(err)
		}
		var v []map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	job, stage, sql := read("jobs.json")[0], read("stages.json")[0], read("sql.json")[0]
	plan := sql["planDescription"].(string)
	for len(plan) < 24_000 {
		plan += "\n(" + fmt.Sprint(len(plan)) + ") BroadcastHashJoin [codegen id : 7]\nLeft keys [1]: [customer_id#1234L]\nRight keys [1]: [customer_id#5678L]\n" +
			"Output [24]: [" + strings.TrimSuffix(strings.Repeat("col_abcdefgh#12345L, ", 24), ", ") + "]\n"
	}
	// The statement each job, stage and execution was run for (a Thrift
	// Server's or a notebook's: spark.job.description), 5 KB of SQL.
	stmt := "SELECT " + strings.TrimSuffix(strings.Repeat("o.col_abcdefgh, ", 300), ", ") + " FROM orders o JOIN customers c ON o.customer_id = c.id"
	var jobs, stages, sqls []map[string]any
	for i := range n {
		j := map[string]any{}
		for k, v := range job {
			j[k] = v
		}
		j["jobId"], j["stageIds"], j["status"], j["description"] = i, []int{i}, "SUCCEEDED", stmt
		jobs = append(jobs, j)
		s := map[string]any{}
		for k, v := range stage {
			s[k] = v
		}
		s["stageId"], s["status"], s["description"] = i, "COMPLETE", stmt
		stages = append(stages, s)
		q := map[string]any{}
		for k, v := range sql {
			q[k] = v
		}
		q["id"], q["planDescription"], q["successJobIds"], q["description"] = i, plan, []int{i}, stmt
		delete(q, "nodes")
		delete(q, "edges")
		sqls = append(sqls, q)
	}
	enc := func(v any) []byte { b, _ := json.Marshal(v); return b }
	lists := map[string][]byte{"jobs": enc(jobs), "stages": enc(stages), "sql": enc(sqls)}
	for _, q := range sqls {
		delete(q, "planDescription")
	}
	noPlans := enc(sqls)
	total := 0
	for name, b := range lists {
		total += len(b)
		if len(b) >= diagRawMax {
			t.Fatalf("/%s alone is %d bytes; the test wants each answer under the bound", name, len(b))
		}
	}
	drv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m := restPath.FindStringSubmatch(r.URL.Path)
		if m != nil && m[4] == "" {
			if b, ok := lists[m[1]]; ok {
				if m[1] == "sql" && r.URL.Query().Get("planDescription") == "false" {
					b = noPlans
				}
				// As a network delivers it: in pieces, not all at once.
				w.Header().Set("Content-Type", "application/json")
				for len(b) > 0 {
					k := min(len(b), 16<<10)
					if _, err := w.Write(b[:k]); err != nil {
						return
					}
					w.(http.Flusher).Flush()
					b = b[k:]
					time.Sleep(20 * time.Microsecond)
				}
				return
			}
		}
		serveCaptured(w, r, "3.5.9-healthy")
	}))
	t.Cleanup(drv.Close)
	h := newHarness(t, func(o *Options) { o.Diagnosis.FetchTimeout = 20 * time.Second })
	u, _ := url.Parse(drv.URL)
	const id = "app-20240101000000-0777"
	h.reg.Store(discovery.NewSnapshot(append(h.reg.Load().Apps(),
		&discovery.App{ID: id, Name: "thriftserver", User: "alice", StartTime: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC),
			State: discovery.Running, UIURL: u, Source: "static"})))
	resp, body := h.do(t, http.MethodGet, "/api/v1/applications/"+id+"/diagnosis", "alice", nil)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("diagnosis of an app of %d jobs, stages and SQL executions (24 KB plans; %.1f MiB in all with the plans) = %d %.300q; want 200",
			n, float64(total)/(1<<20), resp.StatusCode, body)
	}
}

// TestDiagnosisErrorNamesNoDriverAddress: error pages say "the driver",
// never where it listens (a viewer could reach it past the gateway). A
// diagnosis past its bounds says which bound, in words alone: the errors
// joined to it (another call that failed in the network at the same time,
// net/http's, naming the URL) are for the log. Found by a review.
func TestDiagnosisErrorNamesNoDriverAddress(t *testing.T) {
	t.Parallel()
	drv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/stages"):
			// More elements than a list holds: "larger than a diagnosis reads".
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, "["+strings.Repeat("{},", diagListMax)+"{}]")
		case strings.HasSuffix(r.URL.Path, "/allexecutors"):
			time.Sleep(time.Second) // past the transport's response header timeout
			serveCaptured(w, r, "3.5.9-healthy")
		default:
			serveCaptured(w, r, "3.5.9-healthy")
		}
	}))
	t.Cleanup(drv.Close)
	u, _ := url.Parse(drv.URL)
	h := newHarness(t, nil) // response header timeout 500 ms
	const id = "app-20240101000000-0778"
	h.reg.Store(discovery.NewSnapshot(append(h.reg.Load().Apps(),
		&discovery.App{ID: id, Name: "big", User: "alice", StartTime: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC),
			State: discovery.Running, UIURL: u, Source: "probe:" + u.Host, ACLProps: map[string]string{"spark.ui.view.acls": "bob"}})))
	for _, path := range []string{"/api/v1/applications/" + id + "/diagnosis", "/app/" + id + "/_/diagnosis"} {
		h.srv.diag.cache.Purge()
		resp, body := h.do(t, http.MethodGet, path, "bob", nil)
		if strings.Contains(body, u.Host) || !strings.Contains(body, "over 20000 elements in a list") {
			t.Errorf("GET %s as bob (a viewer) = %d, names the driver's address %s: %.400q", path, resp.StatusCode, u.Host, body)
		}
	}
}
