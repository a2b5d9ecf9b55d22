//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestDiagnosis proves the diagnosis, the back bar and the by-name links
// against real Spark, per version, with one History Server, one gateway
// (defaults of the diagnosis: section) and four drivers running app.py's
// diagnosis workloads: a groupBy and a sort-merge join with one hot key;
// the same groupBy with keys spread evenly; a sort that spills under a
// small spark.memory.fraction, then a job whose task fails; collect_list
// aggregations that hold millions of strings in a 512 MiB heap with a
// small young generation (gcConfs).
//
//   - live: the skewed app's diagnosis shows task-duration and shuffle
//     skew of both reduce stages on the page (Chromium; screenshot in
//     e2e/out/) and in the JSON, whose stage link opens Spark's stage page;
//     the trouble app shows exactly job_failed (quoting the error) and
//     spill on its page, in the JSON and as index badges; the GC app shows
//     exactly gc_pressure on its page, in the JSON and as its badge; the
//     skewed app's row has both skew badges; the
//     healthy app shows no finding anywhere, and no badge;
//   - back bar: every tab of the healthy app in Chromium through the
//     gateway (backbar_test.go);
//   - by-name: /by-name/<name>/jobs/ leads to the running app of that
//     name, and to the new one after the app is restarted (new app id);
//     ?all lists both;
//   - history: once stopped, the index shows the finished apps' badges
//     (read by the gateway once per app as it reads the app's ACLs from
//     the History Server; screenshot in e2e/out/), and the same
//     diagnoses (and none for the healthy app's first run) are read from
//     the History Server.
func TestDiagnosis(t *testing.T) {
	s := newSuite(t)
	s.requireGateway(t)
	homes := s.sparkHomes(t)
	if len(homes) > 2 {
		// The oldest and the newest (one 3.5.x, one 4.x): the REST shapes
		// read here are the same in between, and CI time is not.
		homes = []SparkHome{homes[0], homes[len(homes)-1]}
	}
	for _, home := range homes {
		t.Run(home.Version, func(t *testing.T) { s.runDiagnosis(t, home) })
	}
}

// gcConfs make app.py's gc workload GC-bound (figures in e2e/README.md):
// a 512 MiB heap (about the least Spark starts with) holds the strings of
// the collect_list aggregations, and a young generation of 8 MiB is
// collected hundreds of times, each time copying the strings still held,
// which fill the old generation until full collections follow one
// another. The parallel collector with as many threads as local[2] has
// task slots: the JVM's default collector and thread count depend on the
// machine's cores and memory, and so would the GC share.
var gcConfs = map[string]string{
	"spark.driver.memory":           "512m",
	"spark.driver.extraJavaOptions": "-XX:+UseParallelGC -XX:ParallelGCThreads=2 -Xmn8m",
}

// diagJSON is the part of /api/v1/applications/<id>/diagnosis read here.
type diagJSON struct {
	AppID    string `json:"app_id"`
	Live     bool   `json:"live"`
	Source   string `json:"source"`
	Findings []struct {
		Kind     string   `json:"kind"`
		Severity string   `json:"severity"`
		Messages []string `json:"messages"`
		Level    string   `json:"level"`
		Link     string   `json:"link"`
		Seen     string   `json:"seen"`
		Stage    *struct {
			StageID int `json:"stage_id"`
		} `json:"stage"`
		Metrics map[string]float64 `json:"metrics"`
	} `json:"findings"`
	Read struct {
		Jobs             int `json:"jobs"`
		Stages           int `json:"stages"`
		StagesSummarized int `json:"stages_summarized"`
		Tasks            int `json:"tasks"`
	} `json:"read"`
}

// stagesOf returns the stage ids of the findings of kind k.
func (d diagJSON) stagesOf(k string) []int {
	var out []int
	for _, f := range d.Findings {
		if f.Kind == k && f.Stage != nil && !slices.Contains(out, f.Stage.StageID) {
			out = append(out, f.Stage.StageID)
		}
	}
	return out
}

func (d diagJSON) kinds() []string {
	var out []string
	for _, f := range d.Findings {
		out = append(out, f.Kind)
	}
	return out
}

func getDiagnosis(ctx context.Context, c *http.Client, gwURL, appID string) (diagJSON, error) {
	var d diagJSON
	a, err := Get(ctx, c, gwURL+"/api/v1/applications/"+appID+"/diagnosis", nil)
	if err != nil {
		return d, err
	}
	if a.Status != http.StatusOK {
		return d, fmt.Errorf("diagnosis of %s: %d %.300s", appID, a.Status, a.Body)
	}
	return d, json.Unmarshal(a.Body, &d)
}

func (s *suite) runDiagnosis(t *testing.T, home SparkHome) {
	ctx := ctxFor(t, 12*time.Minute)
	ver := strings.ReplaceAll(home.Version, ".", "_")
	dir := s.freshDir(t, "diagnosis-"+home.Version)
	events, logs := filepath.Join(dir, "events"), filepath.Join(dir, "driver-logs")
	for _, d := range []string{events, logs, filepath.Join(dir, "gateway")} {
		if err := mkdir(d); err != nil {
			t.Fatal(err)
		}
	}
	hs, err := StartHistoryServer(ctx, s.root, home, events, filepath.Join(dir, "history"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hs.Stop() })
	gw, client := s.localGateway(ctx, t, filepath.Join(dir, "gateway"), GatewayOptions{
		LogGlobs: []string{filepath.Join(logs, "*.log"), filepath.Join(logs, "restart", "*.log")}, HistoryURL: hs.URL,
	})

	ids := &uniqueIDs{taken: map[string]bool{}}
	// A restarted app logs to a directory of its own: the harness reads a
	// driver's app id from <LogDir>/<Name>.log, which must be new.
	restartLogs := filepath.Join(logs, "restart")
	if err := mkdir(restartLogs); err != nil {
		t.Fatal(err)
	}
	start := func(t *testing.T, name, workload, logDir string, confs map[string]string) *Driver {
		t.Helper()
		d, err := startUniqueDriver(ctx, ids, func() (*Driver, error) {
			return StartDriver(ctx, s.root, home, DriverOptions{
				Name: name, EventDir: events, LogDir: logDir, WorkDir: filepath.Join(dir, "work-"+filepath.Base(logDir), name),
				Workload: workload, Confs: confs,
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(d.Kill)
		return d
	}
	t0 := time.Now()
	skewName, healthyName := "diag-skew-"+ver, "diag-healthy-"+ver
	skew := start(t, skewName, "skew,skewjoin", logs, nil)
	healthy := start(t, healthyName, "healthy", logs, nil)
	// Little execution memory: its sort spills; then a task fails.
	failing := start(t, "diag-trouble-"+ver, "spill,fail", logs, map[string]string{"spark.memory.fraction": "0.05"})
	ready := func(ds ...*Driver) {
		t.Helper()
		for _, d := range ds {
			if err := d.WaitReady(ctx); err != nil {
				t.Fatal(err)
			}
			if _, _, err := gw.WaitListed(ctx, client, func(id string) bool { return id == d.AppID }); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The GC app once the healthy one has done its work: no more than
	// three drivers busy at once.
	ready(healthy)
	gc := start(t, "diag-gc-"+ver, "gc", logs, gcConfs)
	ready(skew, failing, gc)
	t.Logf("drivers %s (skew), %s (healthy) and %s (gc) ready after %v", skew.AppID, healthy.AppID, gc.AppID, time.Since(t0).Round(time.Millisecond))

	t.Run("live/json", func(t *testing.T) {
		t1 := time.Now()
		d, err := getDiagnosis(ctx, client, gw.URL, skew.AppID)
		if err != nil {
			t.Fatal(err)
		}
		took := time.Since(t1)
		t.Logf("skewed app: %v in %v (read %+v)", d.kinds(), took.Round(time.Millisecond), d.Read)
		_ = RecordFigure(s.outDir, "diagnosis_live_uncached_"+home.Version, took)
		// Both the groupBy's and the join's reduce stage, each its own finding.
		for _, k := range []string{"task_duration_skew", "shuffle_skew"} {
			if stages := d.stagesOf(k); len(stages) < 2 {
				t.Errorf("skewed app's %s findings are of stages %v; want the groupBy's and the join's (all: %v)", k, stages, d.kinds())
			}
		}
		if !d.Live || d.Read.StagesSummarized == 0 || d.Read.Tasks == 0 || d.Read.Tasks > 6*20 {
			t.Errorf("skewed app: live %v, read %+v; want live, summaries, 1..120 tasks", d.Live, d.Read)
		}
		for _, f := range d.Findings {
			if f.Kind != "task_duration_skew" {
				continue
			}
			t.Logf("finding: %s", f.Seen)
			if f.Metrics["max_ms"] < 10000 || f.Metrics["max_ms"] < 5*f.Metrics["median_ms"] {
				t.Errorf("duration skew metrics %v", f.Metrics)
			}
			// The link opens Spark's page of that stage through the gateway.
			follow := &http.Client{Jar: client.Jar, Timeout: 30 * time.Second}
			resp, err := follow.Get(gw.URL + f.Link)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			want := fmt.Sprintf("Details for Stage %d", f.Stage.StageID)
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
				t.Errorf("GET %s = %d, want Spark's stage page (%q)", f.Link, resp.StatusCode, want)
			}
		}
		h, err := getDiagnosis(ctx, client, gw.URL, healthy.AppID)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("healthy app: %v (read %+v)", h.kinds(), h.Read)
		if len(h.Findings) != 0 {
			t.Errorf("healthy app has findings %v; want none\n%+v", h.kinds(), h.Findings)
		}
		if h.Read.Stages < 2 || h.Read.StagesSummarized == 0 {
			t.Errorf("healthy app: read %+v; want its stages read and summarized", h.Read)
		}
		fl, err := getDiagnosis(ctx, client, gw.URL, failing.AppID)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("spilling and failing app: %v", fl.kinds())
		if !slices.Equal(fl.kinds(), []string{"job_failed", "spill"}) || len(fl.Findings[0].Messages) == 0 ||
			!strings.Contains(fl.Findings[0].Messages[0], "ValueError: e2e: task 3 fails on purpose") || fl.Findings[0].Severity != "critical" {
			t.Errorf("spilling and failing app's findings = %+v; want a critical job_failed quoting the ValueError, then spill", fl.Findings)
		}
		for _, f := range fl.Findings {
			if f.Kind == "spill" {
				t.Logf("finding: %s", f.Seen)
			}
		}
		g, err := getDiagnosis(ctx, client, gw.URL, gc.AppID)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(g.kinds(), []string{"gc_pressure"}) || g.Findings[0].Metrics["gc_share"] < 0.10 || g.Findings[0].Link != "/app/"+gc.AppID+"/executors/" {
			t.Errorf("GC app's findings = %v %+v; want exactly gc_pressure, linking the executors page", g.kinds(), g.Findings)
		} else {
			t.Logf("finding: %s", g.Findings[0].Seen)
			_ = RecordFigure(s.outDir, "diagnosis_gc_share_percent_"+home.Version, fmt.Sprintf("%.1f", 100*g.Findings[0].Metrics["gc_share"]))
		}
	})

	t.Run("live/page", func(t *testing.T) {
		b, err := NewBrowser(context.Background(), t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		base, _ := url.Parse(gw.URL)
		if err := b.SetCookies(gw.URL, client.Jar.Cookies(base)); err != nil {
			t.Fatal(err)
		}
		shot := func(path, file string) string {
			t.Helper()
			text, png, err := b.Shot(gw.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(s.outDir, file), png, 0o644); err != nil {
				t.Error(err)
			}
			return text
		}
		// Lower case: the page's style shows kinds in capitals.
		text := strings.ToLower(shot("/app/"+skew.AppID+"/_/diagnosis", "diagnosis-skew-"+home.Version+".png"))
		for _, w := range []string{"task_duration_skew", "shuffle_skew", "longer than the median", "salting", "spark.sql.adaptive.skewjoin.enabled"} {
			if !strings.Contains(text, w) {
				t.Errorf("diagnosis page of the skewed app lacks %q:\n%.1500s", w, text)
			}
		}
		text = shot("/app/"+healthy.AppID+"/_/diagnosis", "diagnosis-healthy-"+home.Version+".png")
		if !strings.Contains(text, "No finding") || strings.Contains(text, "skew") && !strings.Contains(text, "no skew") {
			t.Errorf("diagnosis page of the healthy app:\n%.1500s", text)
		}
		text = strings.ToLower(shot("/app/"+failing.AppID+"/_/diagnosis", "diagnosis-trouble-"+home.Version+".png"))
		for _, w := range []string{"job_failed", "spill", "e2e: task 3 fails on purpose", "spark.memory.fraction"} {
			if !strings.Contains(text, w) {
				t.Errorf("diagnosis page of the spilling and failing app lacks %q:\n%.1500s", w, text)
			}
		}
		text = strings.ToLower(shot("/app/"+gc.AppID+"/_/diagnosis", "diagnosis-gc-"+home.Version+".png"))
		for _, w := range []string{"gc_pressure", "in garbage collection out of", "fewer objects", "spark.executor.memory"} {
			if !strings.Contains(text, w) {
				t.Errorf("diagnosis page of the GC app lacks %q:\n%.1500s", w, text)
			}
		}
		text = shot("/", "index-diagnosis-"+home.Version+".png")
		if strings.Count(text, "diagnosis") < 3 || !strings.Contains(text, "by name") || !strings.Contains(text, "1 executor") {
			t.Errorf("index offers no diagnosis or by-name links, or no live stats:\n%.1500s", text)
		}
		// The failing app's row carries its badge; sorted by findings it
		// comes first.
		a, err := Get(ctx, client, gw.URL+"/?sort=findings", nil)
		if err != nil {
			t.Fatal(err)
		}
		page := string(a.Body)
		badge := `href="/app/` + failing.AppID + `/_/diagnosis">job_failed</a>`
		if !strings.Contains(page, `href="/app/`+failing.AppID+`/_/diagnosis">spill</a>`) {
			t.Errorf("index: no spill badge for %s", failing.AppID)
		}
		if !strings.Contains(page, `href="/app/`+gc.AppID+`/_/diagnosis">gc_pressure</a>`) {
			t.Errorf("index: no gc_pressure badge for %s", gc.AppID)
		}
		// Skew from the task summaries of the skewed app's longest stages:
		// both reduce stages, so "×2".
		for _, k := range []string{"task_duration_skew", "shuffle_skew"} {
			if !strings.Contains(page, `href="/app/`+skew.AppID+`/_/diagnosis">`+k+` ×2</a>`) {
				t.Errorf("index: no %s ×2 badge for the skewed app %s", k, skew.AppID)
			}
		}
		// The healthy app's row has its diagnosis link and no badge.
		if n := strings.Count(page, `href="/app/`+healthy.AppID+`/_/diagnosis"`); n != 1 {
			t.Errorf("index: the healthy app's row links its diagnosis %d times; want once (no badge)", n)
		}
		first := strings.Index(page, `<tr data-search=`)
		if !strings.Contains(page, badge) || first < 0 || !strings.Contains(page[first:], failing.AppID) ||
			strings.Index(page, failing.AppID) > strings.Index(page, skew.AppID) {
			t.Errorf("index ?sort=findings: want the failing app first with a job_failed badge:\n%.3000s", page)
		}
	})

	t.Run("back bar", func(t *testing.T) {
		base, _ := url.Parse(gw.URL)
		s.checkBackBar(t, gw.URL, client.Jar.Cookies(base), healthy.AppID, healthy.UIURL(), home.Version)
	})

	t.Run("by-name", func(t *testing.T) {
		loc := func(path string) string {
			t.Helper()
			a, err := Get(ctx, client, gw.URL+path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if a.Status != http.StatusFound {
				t.Fatalf("GET %s = %d; want 302", path, a.Status)
			}
			return a.Location
		}
		path := "/by-name/" + url.PathEscape(healthyName) + "/jobs/?x=1"
		if got, want := loc(path), "/app/"+healthy.AppID+"/jobs/?x=1"; got != want {
			t.Errorf("GET %s → %s; want %s", path, got, want)
		}
		// Restart the app: same name, new app id.
		if err := healthy.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		again := start(t, healthyName, "healthy", restartLogs, nil)
		if err := again.WaitReady(ctx); err != nil {
			t.Fatal(err)
		}
		if _, _, err := gw.WaitListed(ctx, client, func(id string) bool { return id == again.AppID }); err != nil {
			t.Fatal(err)
		}
		if got, want := loc(path), "/app/"+again.AppID+"/jobs/?x=1"; got != want {
			t.Errorf("after the restart GET %s → %s; want %s (the new run)", path, got, want)
		}
		follow := &http.Client{Jar: client.Jar, Timeout: 30 * time.Second}
		resp, err := follow.Get(gw.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Request.URL.Path, "/app/"+again.AppID+"/jobs/") {
			t.Errorf("following %s ended %d at %s", path, resp.StatusCode, resp.Request.URL)
		}
		a, err := Get(ctx, client, gw.URL+"/by-name/"+url.PathEscape(healthyName)+"/?all", http.Header{"Accept": {"application/json"}})
		if err != nil {
			t.Fatal(err)
		}
		var rows []struct {
			ID   string `json:"id"`
			Live bool   `json:"live"`
		}
		_ = json.Unmarshal(a.Body, &rows)
		if len(rows) != 2 || rows[0].ID != again.AppID || !rows[0].Live || rows[1].ID != healthy.AppID || rows[1].Live {
			t.Errorf("?all = %d %s; want the new run (live), then the old one", a.Status, a.Body)
		}
		t.Logf("by-name ?all: %s", strings.Join(strings.Fields(string(a.Body)), " "))
	})

	t.Run("history", func(t *testing.T) {
		// The first run of the healthy app stopped in by-name.
		stopping := time.Now()
		for _, d := range []*Driver{skew, failing, gc} {
			if err := d.Stop(ctx); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("three drivers stopped in %v", time.Since(stopping).Round(100*time.Millisecond))
		s.checkFinishedBadges(ctx, t, gw.URL, client, stopping, home.Version, skew.AppID, failing.AppID, gc.AppID, healthy.AppID)
		finished := func(id string) diagJSON {
			t.Helper()
			if err := hs.WaitApp(ctx, id, true); err != nil {
				t.Fatal(err)
			}
			for {
				d, err := getDiagnosis(ctx, client, gw.URL, id)
				if err == nil && !d.Live {
					t.Logf("finished app %s from %s: %v", id, d.Source, d.kinds())
					if !strings.HasPrefix(d.Source, "History Server") {
						t.Errorf("diagnosis of finished %s from %q; want a History Server", id, d.Source)
					}
					return d
				}
				if ctx.Err() != nil {
					t.Fatalf("diagnosis of %s never came from the History Server: %v (live %v)", id, err, d.Live)
				}
				time.Sleep(time.Second)
			}
		}
		d := finished(skew.AppID)
		for _, k := range []string{"task_duration_skew", "shuffle_skew"} {
			if stages := d.stagesOf(k); len(stages) < 2 {
				t.Errorf("history diagnosis of the skewed app: %s of stages %v; want the groupBy's and the join's (all: %v)", k, stages, d.kinds())
			}
		}
		if d := finished(failing.AppID); !slices.Equal(d.kinds(), []string{"job_failed", "spill"}) {
			t.Errorf("history diagnosis of the spilling and failing app: %v; want [job_failed spill]", d.kinds())
		}
		// The app's GC share is its tasks' (the stages' sums), which the
		// History Server reports as the driver did; its executors' totals
		// differ there (see appGC in proxy/diagnosis).
		if d := finished(gc.AppID); !slices.Equal(d.kinds(), []string{"gc_pressure"}) {
			t.Errorf("history diagnosis of the GC app: %v; want [gc_pressure]\n%+v", d.kinds(), d.Findings)
		}
		if d := finished(healthy.AppID); len(d.Findings) != 0 {
			t.Errorf("history diagnosis of the healthy app: %v; want none\n%+v", d.kinds(), d.Findings)
		}
	})
}

// checkFinishedBadges waits until the index shows the four finished apps'
// rows with what their History Server summaries found (read by the
// gateway once per app, as discovery reads its ACLs), and asserts the
// badges: the skewed app's two skews of both reduce stages, the failing
// app's failed job and tasks and spill, the GC app's gc_pressure, and
// "no finding" for the healthy app.
func (s *suite) checkFinishedBadges(ctx context.Context, t *testing.T, gwURL string, client *http.Client, stopping time.Time, version, skew, failing, gc, healthy string) {
	t.Helper()
	var page string
	ready := func(row string) bool {
		return strings.Contains(row, `class="state finished"`) && (strings.Contains(row, `class="sev`) || strings.Contains(row, "no finding"))
	}
	for {
		a, err := Get(ctx, client, gwURL+"/?sort=findings", nil)
		if err != nil {
			t.Fatal(err)
		}
		page = string(a.Body)
		if ready(indexRowOf(page, skew)) && ready(indexRowOf(page, failing)) && ready(indexRowOf(page, gc)) && ready(indexRowOf(page, healthy)) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the finished apps' rows never showed their summaries:\n%.4000s", page)
		}
		time.Sleep(500 * time.Millisecond)
	}
	took := time.Since(stopping)
	t.Logf("finished apps' index badges shown %v after the first driver was asked to stop", took.Round(100*time.Millisecond))
	_ = RecordFigure(s.outDir, "index_finished_badges_after_stop_"+version, took)
	badge := func(id, kind string) string { return `href="/app/` + id + `/_/diagnosis">` + kind + `</a>` }
	row := indexRowOf(page, skew)
	for _, k := range []string{"task_duration_skew", "shuffle_skew"} {
		if !strings.Contains(row, badge(skew, k+" ×2")) {
			t.Errorf("index: the finished skewed app's row lacks %s ×2:\n%s", k, row)
		}
	}
	row = indexRowOf(page, failing)
	for _, w := range []string{`class="sev critical" ` + badge(failing, "job_failed"), badge(failing, "spill"), " failed task"} {
		if !strings.Contains(row, w) {
			t.Errorf("index: the finished failing app's row lacks %q:\n%s", w, row)
		}
	}
	if row = indexRowOf(page, gc); !strings.Contains(row, badge(gc, "gc_pressure")) {
		t.Errorf("index: the finished GC app's row lacks gc_pressure:\n%s", row)
	}
	if row = indexRowOf(page, healthy); strings.Contains(row, `class="sev`) || !strings.Contains(row, "no finding") {
		t.Errorf("index: the finished healthy app's row: want no badge, \"no finding\":\n%s", row)
	}
	// Sorted by findings: the failed job (critical) before the rest.
	if i := strings.Index(page, `href="/app/`+failing+`/"`); i < 0 || i > strings.Index(page, `href="/app/`+skew+`/"`) || i > strings.Index(page, `href="/app/`+healthy+`/"`) {
		t.Errorf("index ?sort=findings: want the finished failing app before the skewed and the healthy ones")
	}
	b, err := NewBrowser(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	base, _ := url.Parse(gwURL)
	if err := b.SetCookies(gwURL, client.Jar.Cookies(base)); err != nil {
		t.Fatal(err)
	}
	text, png, err := b.Shot(gwURL + "/?sort=findings")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.outDir, "index-finished-"+version+".png"), png, 0o644); err != nil {
		t.Error(err)
	}
	if !strings.Contains(text, "gc_pressure") || !strings.Contains(text, "no finding") {
		t.Errorf("index in Chromium lacks the finished apps' badges:\n%.2000s", text)
	}
}

// indexRowOf returns the index page's row of the app id, "" if none.
func indexRowOf(page, id string) string {
	i := strings.Index(page, `href="/app/`+id+`/"`)
	if i < 0 {
		return ""
	}
	row := page[i:]
	if j := strings.Index(row, "</tr>"); j >= 0 {
		row = row[:j]
	}
	return row
}

// Shot opens pageURL and returns, once it has loaded, its visible text and
// a PNG screenshot of the whole page.
func (b *Browser) Shot(pageURL string) (string, []byte, error) {
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	// A desktop's width, as users see the gateway's pages.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800), chromedp.Navigate(pageURL)); err != nil {
		return "", nil, fmt.Errorf("navigating to %s: %w", pageURL, err)
	}
	text, err := waitEval(ctx, `document.readyState === "complete" && document.querySelector("main") ? document.body.innerText : ""`)
	if err != nil {
		return "", nil, fmt.Errorf("loading %s: %w", pageURL, err)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		return "", nil, fmt.Errorf("screenshot of %s: %w", pageURL, err)
	}
	return text, png, nil
}
