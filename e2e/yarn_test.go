//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// yarnTabs are the pages a crawl of app.py --light --long-job must reach.
var yarnTabs = []string{"jobs/", "jobs/job/", "stages/", "stages/stage/", "storage/", "environment/", "executors/"}

// TestYARN runs a one-node YARN cluster (MiniYARNCluster) and, per Spark
// version, submits app.py to it in client mode, finds it through the
// gateway's YARN source (the ResourceManager's RUNNING apps and their web
// proxy), crawls it, reads an executor's logs from the NodeManager through
// the gateway (and is refused them as a user outside the app's view ACL),
// tries to kill it, stops it and checks the gateway no longer serves it as
// running.
func TestYARN(t *testing.T) {
	s := newSuite(t)
	s.requireGateway(t)
	homes := s.sparkHomes(t)
	if err := YARNInstalled(s.root); err != nil {
		t.Fatal(err)
	}
	ctx := ctxFor(t, 10*time.Minute)
	dir := s.freshDir(t, "yarn")
	t0 := time.Now()
	y, err := StartMiniYARN(ctx, s.root, filepath.Join(dir, "cluster"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(y.Stop)
	t.Logf("MiniYARNCluster up at %s in %v", y.WebURL, time.Since(t0).Round(time.Millisecond))

	gwDir := filepath.Join(dir, "gateway")
	if err := mkdir(gwDir); err != nil {
		t.Fatal(err)
	}
	gw, client := s.localGateway(ctx, t, gwDir, GatewayOptions{YARN: []string{y.WebURL}})
	// A second gateway on the same cluster for a user the apps' view ACLs
	// leave out (mallory), told to say 403.
	deniedDir := filepath.Join(dir, "gateway-mallory")
	if err := mkdir(deniedDir); err != nil {
		t.Fatal(err)
	}
	denied, deniedClient := s.localGateway(ctx, t, deniedDir, GatewayOptions{YARN: []string{y.WebURL},
		Auth:  map[string]any{"mode": "local", "local": map[string]any{"user": "mallory"}},
		Proxy: map[string]any{"kill": "deny", "reveal_denied": true}})
	for _, home := range homes {
		t.Run(home.Version, func(t *testing.T) { s.runYARN(t, home, y, gw, client, denied, deniedClient, dir) })
	}
}

func (s *suite) runYARN(t *testing.T, home SparkHome, y *MiniYARN, gw *Gateway, client *http.Client, denied *Gateway, deniedClient *http.Client, dir string) {
	ctx := ctxFor(t, 4*time.Minute)
	name := "yarn-" + strings.ReplaceAll(home.Version, ".", "_")
	work := filepath.Join(dir, name)
	if err := mkdir(work); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	d, err := StartYARNDriver(ctx, s.root, home, y, YARNDriverOptions{Name: name, WorkDir: work, LogPath: filepath.Join(work, "driver.log"),
		// The app's view ACL: its owner, and the user the ResourceManager's
		// web proxy forwards anonymous requests (the gateway's) as, Hadoop's
		// hadoop.http.staticuser.user; mallory is left out.
		Confs: map[string]string{"spark.acls.enable": "true", "spark.ui.view.acls": "dr.who"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Kill)
	if !strings.HasPrefix(d.AppID, "application_") {
		t.Fatalf("app id %q; want a YARN application id", d.AppID)
	}
	_, listedAt, err := gw.WaitListed(ctx, client, func(id string) bool { return id == d.AppID })
	if err != nil {
		t.Fatalf("%v\n%s", err, gw.Watch.Tail(30))
	}
	t.Logf("gateway listed %s %v after submit", d.AppID, listedAt.Sub(t0).Round(time.Millisecond))
	_ = RecordFigure(s.outDir, "yarn_submit_to_listed_"+home.Version, listedAt.Sub(t0))
	if err := d.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	rmApp, err := y.App(ctx, d.AppID)
	if err != nil {
		t.Fatal(err)
	}
	if rmApp.State != "RUNNING" || rmApp.TrackingUI != "ApplicationMaster" {
		t.Fatalf("ResourceManager has %s as %s with tracking UI %q; want RUNNING, ApplicationMaster", d.AppID, rmApp.State, rmApp.TrackingUI)
	}
	t.Logf("%s submitted; RUNNING in the ResourceManager (tracking URL %s) and ready after %v", d.AppID, rmApp.TrackingURL, time.Since(t0).Round(time.Millisecond))
	// The gateway's metrics report the ResourceManager source answering.
	if up, err := gw.Metric(ctx, "sparkgate_discovery_source_up", `source="yarn:`+y.WebURL); err != nil || up != 1 {
		t.Errorf("sparkgate_discovery_source_up{source=yarn:%s} = %v (%v); want 1", y.WebURL, up, err)
	}

	t.Run("listed", func(t *testing.T) { checkYARNListed(ctx, t, gw, client, d, rmApp) })
	t.Run("index", func(t *testing.T) { s.checkYARNIndex(ctx, t, gw, client, d, y, rmApp, home.Version) })
	t.Run("crawl", func(t *testing.T) { s.checkYARNCrawl(t, gw, client, d, y) })
	t.Run("executor logs", func(t *testing.T) { checkYARNExecutorLogs(ctx, t, gw, client, d, y, deniedClient, denied.URL) })
	t.Run("kill", func(t *testing.T) { checkYARNKill(ctx, t, gw, client, d) })
	t.Run("stopped", func(t *testing.T) { checkYARNStopped(ctx, t, gw, client, d, y) })
}

// checkYARNListed wants the app in the gateway's list, running, owned by
// the user the ResourceManager names, from the yarn source.
func checkYARNListed(ctx context.Context, t *testing.T, gw *Gateway, client *http.Client, d *Driver, rmApp YARNApp) {
	apps, err := gw.Apps(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	var found *GatewayApp
	for i := range apps {
		if apps[i].ID == d.AppID {
			found = &apps[i]
		}
	}
	if found == nil {
		t.Fatalf("gateway list %v has no %s", apps, d.AppID)
	}
	if found.Name != d.Opts.Name {
		t.Errorf("listed name = %q; want %q", found.Name, d.Opts.Name)
	}
	if len(found.Attempts) == 0 || found.Attempts[0].Completed {
		t.Errorf("listed attempts = %+v; want one running (not completed)", found.Attempts)
	} else {
		me, err := user.Current()
		if err != nil {
			t.Fatal(err)
		}
		if u := found.Attempts[0].SparkUser; u != rmApp.User || u != me.Username {
			t.Errorf("listed owner = %q; want %q (ResourceManager) = %q (this user)", u, rmApp.User, me.Username)
		}
	}
	re := regexp.MustCompile(`driver found.*` + regexp.QuoteMeta(d.AppID) + `.*yarn:`)
	if _, _, ok := gw.Watch.Find(re); !ok {
		t.Errorf("gateway log has no line finding %s from a yarn source:\n%s", d.AppID, gw.Watch.Tail(20))
	}
}

// checkYARNIndex wants the app's index row to show the ResourceManager's
// queue and to offer the by-name link of its YARN application name, which
// leads to the app. The RM's list is kept in e2e/out/ (the shape the unit
// tests of the YARN source read, proxy/discovery/testdata).
func (s *suite) checkYARNIndex(ctx context.Context, t *testing.T, gw *Gateway, c *http.Client, d *Driver, y *MiniYARN, rmApp YARNApp, version string) {
	if rmApp.Queue == "" || rmApp.Name != d.Opts.Name {
		t.Fatalf("ResourceManager has %s in queue %q named %q; want a queue, and the name %q", d.AppID, rmApp.Queue, rmApp.Name, d.Opts.Name)
	}
	if list, err := y.Running(ctx); err != nil {
		t.Error(err)
	} else if err := os.WriteFile(filepath.Join(s.outDir, "yarn-apps-running-"+version+".json"), list, 0o644); err != nil {
		t.Error(err)
	}
	a, err := Get(ctx, c, gw.URL+"/?q="+url.QueryEscape(d.AppID), nil)
	if err != nil {
		t.Fatal(err)
	}
	page := string(a.Body)
	i := strings.Index(page, `<tr data-search=`)
	if a.Status != http.StatusOK || i < 0 || !strings.Contains(page[i:], d.AppID) {
		t.Fatalf("index ?q=%s = %d, no row of the app:\n%.2000s", d.AppID, a.Status, page)
	}
	row, _, _ := strings.Cut(page[i:], "</tr>")
	queue := `YARN queue <span class="queue">` + rmApp.Queue + `</span>`
	byName := `href="/by-name/` + url.PathEscape(rmApp.Name) + `/"`
	if !strings.Contains(row, queue) || !strings.Contains(row, byName) {
		t.Errorf("index row of %s lacks %q or %s:\n%s", d.AppID, queue, byName, row)
	}
	// The search matches the queue too.
	if a, err := Get(ctx, c, gw.URL+"/?q="+url.QueryEscape(rmApp.Queue+" "+d.AppID), nil); err != nil || !strings.Contains(string(a.Body), `<tr data-search=`) {
		t.Errorf("index ?q=<queue> <id> lists no row (%v)", err)
	}
	a, err = Get(ctx, c, gw.URL+"/by-name/"+url.PathEscape(rmApp.Name)+"/jobs/", nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := "/app/" + d.AppID + "/jobs/"; a.Status != http.StatusFound || a.Location != want {
		t.Errorf("GET /by-name/%s/jobs/ = %d %q; want 302 %q", rmApp.Name, a.Status, a.Location, want)
	}
	t.Logf("index row of %s: queue %q, by-name %s", d.AppID, rmApp.Queue, byName)
}

// checkYARNCrawl crawls /app/<id>/ through the gateway, which serves a
// YARN app under /proxy/<id>/ (its links carry that prefix).
func (s *suite) checkYARNCrawl(t *testing.T, gw *Gateway, c *http.Client, d *Driver, y *MiniYARN) {
	ctx := ctxFor(t, 3*time.Minute)
	t0 := time.Now()
	rep, err := Crawl(ctx, c, gw.URL+"/app/"+d.AppID+"/", CrawlOptions{
		MaxPages: 600,
		Scope:    []string{"/app/" + d.AppID + "/", "/proxy/" + d.AppID + "/"},
		Skip:     skipLogout,
		Needles:  append(d.HostPorts(), y.HostPorts()...),
	})
	if err != nil {
		t.Fatal(err)
	}
	// The Environment tab lists Spark's configuration as text, and on YARN
	// that names both addresses: spark.driver.appUIAddress and the
	// AmIpFilter's PROXY_URI_BASES and RM_HA_URLS (Spark's values, shown as
	// Spark shows them; no link). Links and redirects to them would still
	// be leaks (and offsite links) on that page as on every other.
	var leaks []Link
	for _, l := range rep.Leaks {
		if strings.HasSuffix(l.URL, "/proxy/"+d.AppID+"/environment/") && strings.HasPrefix(l.Why, "body names ") {
			t.Logf("allowed: the Environment tab's configuration text: %s", l.Why)
			continue
		}
		leaks = append(leaks, l)
	}
	rep.Leaks = leaks
	logCrawl(t, "yarn gateway crawl", rep)
	t.Logf("yarn gateway crawl took %v", time.Since(t0).Round(time.Millisecond))
	_ = RecordFigure(s.outDir, "yarn_gateway_crawl_"+d.AppID, fmt.Sprintf("%v pages=%d", time.Since(t0).Round(time.Millisecond), rep.Pages))
	checkTabs(t, rep, yarnTabs, "/proxy/"+d.AppID+"/")
	requireCleanCrawl(t, rep, 15)
}

// checkYARNKill sends kill requests for the running job and stage through
// the gateway, under both of the app's prefixes: all refused, and the job
// still running in the driver afterwards.
func checkYARNKill(ctx context.Context, t *testing.T, gw *Gateway, c *http.Client, d *Driver) {
	jobID, stageID, err := LongJob(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []struct{ method, path string }{
		{http.MethodGet, fmt.Sprintf("/app/%s/jobs/job/kill/?id=%d", d.AppID, jobID)},
		{http.MethodGet, fmt.Sprintf("/proxy/%s/stages/stage/kill/?id=%d", d.AppID, stageID)},
		{http.MethodPost, fmt.Sprintf("/proxy/%s/jobs/job/kill/?id=%d", d.AppID, jobID)},
		{http.MethodGet, fmt.Sprintf("/proxy/%s/stages/stage/kill/?id=%d&terminate=true", d.AppID, stageID)},
	} {
		code, err := gatewayStatus(ctx, c, k.method, gw.URL+k.path)
		if err != nil {
			t.Errorf("%s %s: %v", k.method, k.path, err)
			continue
		}
		if code != http.StatusForbidden {
			t.Errorf("%s %s = %d; want 403", k.method, k.path, code)
		}
	}
	// Nothing reached the driver: the long job is still listed and RUNNING
	// and its stage ACTIVE, with no task killed. A job the driver no longer
	// lists (or a driver that is gone) is a failure, not a pass.
	jobs, stages, err := DriverJobs(ctx, d)
	if err != nil {
		t.Fatalf("asking the driver for its jobs after the refused kills: %v", err)
	}
	foundJob, foundStage := false, false
	for _, j := range jobs {
		if j.JobID == jobID {
			foundJob = true
			if j.Status != "RUNNING" || j.NumKilledTasks != 0 {
				t.Errorf("job %d is %s with %d killed tasks after refused kills; want RUNNING, 0", jobID, j.Status, j.NumKilledTasks)
			}
		}
	}
	for _, st := range stages {
		if st.StageID == stageID {
			foundStage = true
			if st.Status != "ACTIVE" || st.NumKilledTasks != 0 {
				t.Errorf("stage %d is %s (%q) with %d killed tasks after refused kills; want ACTIVE, 0", stageID, st.Status, st.FailureReason, st.NumKilledTasks)
			}
		}
	}
	if !foundJob || !foundStage {
		t.Errorf("driver no longer lists job %d (%v) or stage %d (%v) after refused kills; want both still running", jobID, foundJob, stageID, foundStage)
	}
}

// checkYARNStopped stops the app and waits until the ResourceManager has it
// FINISHED and the gateway no longer proxies it: with no History Server,
// /app/<id>/ then answers the "Application finished" page (503) and the list
// shows the attempt completed.
func checkYARNStopped(ctx context.Context, t *testing.T, gw *Gateway, c *http.Client, d *Driver, y *MiniYARN) {
	t0 := time.Now()
	if err := d.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	for {
		a, err := y.App(ctx, d.AppID)
		if err == nil && a.State == "FINISHED" {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("ResourceManager never had %s FINISHED (last %+v, %v)", d.AppID, a, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Until discovery has seen the app end, the gateway may still proxy it
	// to the RM's web proxy, which now redirects a finished app to the RM's
	// own pages: that redirect must not reach the browser.
	code, loc, err := firstAnswer(ctx, c, gw.URL+"/proxy/"+d.AppID+"/jobs/")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("right after FINISHED: GET /proxy/%s/jobs/ = %d Location %q", d.AppID, code, loc)
	if u, perr := url.Parse(loc); perr != nil || u.Host != "" {
		t.Errorf("right after FINISHED: GET /proxy/%s/jobs/ = %d Location %q; want no redirect out of the gateway", d.AppID, code, loc)
	}
	for {
		code, err = gatewayStatus(ctx, c, http.MethodGet, gw.URL+"/app/"+d.AppID+"/jobs/")
		if err == nil && code == http.StatusServiceUnavailable {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("GET /app/%s/jobs/ after the app finished = %d (%v); want 503\n%s", d.AppID, code, err, gw.Watch.Tail(30))
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("gateway answers 503 for %s %v after stop was asked", d.AppID, time.Since(t0).Round(time.Millisecond))
	code, err = gatewayStatus(ctx, c, http.MethodGet, gw.URL+"/proxy/"+d.AppID+"/jobs/")
	if err != nil || code != http.StatusServiceUnavailable {
		t.Errorf("GET /proxy/%s/jobs/ after the app finished = %d (%v); want 503", d.AppID, code, err)
	}
	apps, err := gw.Apps(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range apps {
		if a.ID == d.AppID && (len(a.Attempts) == 0 || !a.Attempts[0].Completed) {
			t.Errorf("gateway lists %s as %+v after it finished; want its attempt completed", d.AppID, a.Attempts)
		}
	}
}

// gatewayStatus sends one request without following redirects and returns
// the status code.
func gatewayStatus(ctx context.Context, c *http.Client, method, u string) (int, error) {
	code, _, err := gatewayDo(ctx, c, method, u)
	return code, err
}

// gatewayDo sends one request without following redirects and returns the
// status code and up to 4 MiB of the body.
func gatewayDo(ctx context.Context, c *http.Client, method, u string) (int, []byte, error) {
	rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, method, u, nil)
	if err != nil {
		return 0, nil, fmt.Errorf("building request: %w", err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: %w", method, u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return resp.StatusCode, nil, fmt.Errorf("reading %s: %w", u, err)
	}
	return resp.StatusCode, body, nil
}

// firstAnswer GETs u without following redirects and returns the status
// and Location.
func firstAnswer(ctx context.Context, c *http.Client, u string) (int, string, error) {
	rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, "", fmt.Errorf("building request: %w", err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", fmt.Errorf("GET %s: %w", u, err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Location"), nil
}

var (
	reContainerLogs = regexp.MustCompile(`https?://[^"/]+/node/containerlogs/`)
	reLogRange      = regexp.MustCompile(`bytes (\d+)–(\d+) of (\d+)`)
	reLogText       = regexp.MustCompile(`(?s)<pre class="log">(.*?)</pre>`)
)

// checkYARNExecutorLogs wants the executors list's log links (Spark's
// NodeManager containerlogs URLs) rewritten to the gateway's log paths,
// naming no NodeManager, and an executor's stderr and stdout read through
// them from the real NodeManager: the download is the container's log file
// in the NodeManager's log directory byte for byte, a page of the first or
// the last 100 bytes shows exactly those bytes of the file, an offset the
// NodeManager cannot serve is refused, and a user the app's view ACL leaves
// out (denied, through a second gateway) gets 403 for every log path.
func checkYARNExecutorLogs(ctx context.Context, t *testing.T, gw *Gateway, c *http.Client, d *Driver, y *MiniYARN, denied *http.Client, deniedURL string) {
	u := fmt.Sprintf("%s/proxy/%s/api/v1/applications/%s/executors", gw.URL, d.AppID, d.AppID)
	code, body, err := gatewayDo(ctx, c, http.MethodGet, u)
	if err != nil || code != http.StatusOK {
		t.Fatalf("GET %s = %d, %v; want 200", u, code, err)
	}
	if m := reContainerLogs.FindAllString(string(body), -1); len(m) > 0 {
		t.Errorf("the executors list still links NodeManagers: %q", m)
	}
	var execs []struct {
		ID   string            `json:"id"`
		Logs map[string]string `json:"executorLogs"`
	}
	if err := json.Unmarshal(body, &execs); err != nil {
		t.Fatal(err)
	}
	exec := ""
	for _, e := range execs {
		if e.ID == "driver" {
			continue
		}
		for _, typ := range []string{"stdout", "stderr"} {
			if want := "/app/" + d.AppID + "/_/logs/" + e.ID + "/" + typ; e.Logs[typ] != want {
				t.Errorf("executor %s %s link = %q; want %q", e.ID, typ, e.Logs[typ], want)
			}
		}
		exec = e.ID
	}
	if exec == "" {
		t.Fatalf("the executors list has no executor: %s", body)
	}

	// Spark's own link (from the driver, not through the gateway) names the
	// executor's container and NodeManager; the NodeManager answers it
	// with its own page (in this one-JVM cluster that needs MiniYarn.java's
	// pinWebApps).
	container := ""
	if err := getJSONDirect(ctx, d.UIURL()+"/api/v1/applications/"+d.AppID+"/executors", &execs); err != nil {
		t.Fatal(err)
	}
	for _, e := range execs {
		if e.ID != exec {
			continue
		}
		lu, err := url.Parse(e.Logs["stderr"])
		if err != nil || !strings.HasPrefix(e.Logs["stderr"], y.NMWebURL+"/node/containerlogs/") {
			t.Fatalf("Spark's stderr link of executor %s = %q; want one on the NodeManager %s", exec, e.Logs["stderr"], y.NMWebURL)
		}
		container = strings.Split(lu.Path, "/")[3]
		a, err := Get(ctx, http.DefaultClient, e.Logs["stderr"], nil)
		if err != nil || a.Status != http.StatusOK || !strings.Contains(string(a.Body), container) {
			t.Errorf("the NodeManager's own page at Spark's link %s = %d, %v; want 200 naming %s:\n%.600s", e.Logs["stderr"], a.Status, err, container, a.Body)
		}
	}
	t.Logf("executor %s runs in %s on %s", exec, container, y.NMWebURL)

	prefix := gw.URL + "/app/" + d.AppID + "/_/logs/" + exec + "/"
	for _, typ := range []string{"stderr", "stdout"} {
		file, err := y.ContainerLogFile(d.AppID, container, typ)
		if err != nil {
			t.Fatal(err)
		}
		before, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		a, err := Get(ctx, c, prefix+typ+"/raw", nil)
		if err != nil || a.Status != http.StatusOK {
			t.Fatalf("GET %s%s/raw = %d, %v: %.600s", prefix, typ, a.Status, err, a.Body)
		}
		after, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		// The file only grows: the download is at least what it held
		// before and a prefix of what it holds after.
		if len(a.Body) < len(before) || !bytes.HasPrefix(after, a.Body) {
			t.Errorf("%s download: %d bytes; want the container's %s (%d bytes before, %d after) byte for byte:\n%.600q",
				typ, len(a.Body), typ, len(before), len(after), a.Body)
		}
		t.Logf("%s: %d bytes downloaded through the gateway, the file has %d", typ, len(a.Body), len(after))
		if typ == "stdout" {
			continue
		}
		for _, line := range []string{"CoarseGrainedExecutorBackend", "Started daemon with process name"} {
			if !bytes.Contains(a.Body, []byte(line)) {
				t.Errorf("the executor's stderr lacks %q:\n%.1500s", line, a.Body)
			}
		}
		if len(after) <= 200 {
			t.Fatalf("the executor's stderr has %d bytes; the ranges below want more than 200", len(after))
		}
		// Pages: the default (the last 100 KiB or less), the first 100
		// bytes, the last 100 bytes; each shows exactly that range.
		for _, q := range []string{"", "?offset=0&byteLength=100", "?byteLength=100"} {
			p, err := Get(ctx, c, prefix+typ+q, nil)
			if err != nil || p.Status != http.StatusOK {
				t.Errorf("GET %s%s%s = %d, %v: %.600s", prefix, typ, q, p.Status, err, p.Body)
				continue
			}
			now, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			r, text := reLogRange.FindStringSubmatch(string(p.Body)), reLogText.FindStringSubmatch(string(p.Body))
			if r == nil || text == nil {
				t.Errorf("page %s%s has no range or no text:\n%.1500s", typ, q, p.Body)
				continue
			}
			start, end, total := atoi64(r[1]), atoi64(r[2]), atoi64(r[3])
			var want [2]int64
			switch q {
			case "":
				want = [2]int64{max(0, total-100<<10), total}
			case "?offset=0&byteLength=100":
				want = [2]int64{0, 100}
			default:
				want = [2]int64{total - 100, total}
			}
			if [2]int64{start, end} != want || total < int64(len(before)) || total > int64(len(now)) {
				t.Errorf("page %s%s shows bytes %d–%d of %d; want %d–%d of the file's %d–%d", typ, q, start, end, total, want[0], want[1], len(before), len(now))
				continue
			}
			if got := html.UnescapeString(text[1]); got != string(now[start:end]) {
				t.Errorf("page %s%s text %q; want the file's bytes %d–%d %q", typ, q, got, start, end, now[start:end])
			}
			t.Logf("page %s%s: bytes %d–%d of %d, as in the file", typ, q, start, end, total)
		}
		// A NodeManager serves a log's first or last bytes, not a middle.
		if p, err := Get(ctx, c, prefix+typ+"?offset=50&byteLength=100", nil); err != nil || p.Status != http.StatusBadRequest {
			t.Errorf("GET %s%s?offset=50 = %d, %v; want 400", prefix, typ, p.Status, err)
		}
	}

	// A user outside the app's view ACL: refused (403 with
	// proxy.reveal_denied) for the logs as for the app's pages, and no
	// log text in the answer. Wait for the second gateway to have read
	// the app's ACLs (503 until then).
	dprefix := deniedURL + "/app/" + d.AppID
	for {
		a, err := Get(ctx, denied, dprefix+"/jobs/", nil)
		if err == nil && a.Status == http.StatusForbidden {
			break
		}
		if err == nil && a.Status != http.StatusServiceUnavailable && a.Status != http.StatusNotFound || ctx.Err() != nil {
			t.Fatalf("denied user GET %s/jobs/ = %d, %v; want 403", dprefix, a.Status, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	for _, p := range []string{"stderr", "stderr/raw", "stdout", "stderr?offset=0&byteLength=100"} {
		a, err := Get(ctx, denied, dprefix+"/_/logs/"+exec+"/"+p, nil)
		if err != nil || a.Status != http.StatusForbidden || bytes.Contains(a.Body, []byte("CoarseGrainedExecutorBackend")) {
			t.Errorf("denied user GET /_/logs/%s/%s = %d, %v; want 403 without the log:\n%.600s", exec, p, a.Status, err, a.Body)
		}
	}
}

func atoi64(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}
