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
	"os/user"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// yarnTabs are the pages a crawl of app.py --light --long-job must reach.
var yarnTabs = []string{"jobs/", "jobs/job/", "stages/", "stages/stage/", "storage/", "environment/", "executors/"}

// TestYARN runs a one-node YARN cluster (MiniYARNCluster) and, per Spark
// version, submits app.py to it in client mode, finds it through the
// gateway's YARN source (the ResourceManager's RUNNING apps and their web
// proxy), crawls it, tries to kill it, stops it and checks the gateway no
// longer serves it as running.
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
	for _, home := range homes {
		t.Run(home.Version, func(t *testing.T) { s.runYARN(t, home, y, gw, client, dir) })
	}
}

func (s *suite) runYARN(t *testing.T, home SparkHome, y *MiniYARN, gw *Gateway, client *http.Client, dir string) {
	ctx := ctxFor(t, 4*time.Minute)
	name := "yarn-" + strings.ReplaceAll(home.Version, ".", "_")
	work := filepath.Join(dir, name)
	if err := mkdir(work); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	d, err := StartYARNDriver(ctx, s.root, home, y, YARNDriverOptions{Name: name, WorkDir: work, LogPath: filepath.Join(work, "driver.log")})
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
	t.Run("executor logs", func(t *testing.T) { checkYARNExecutorLogs(ctx, t, gw, client, d) })
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

var reContainerLogs = regexp.MustCompile(`https?://[^"/]+/node/containerlogs/`)

// checkYARNExecutorLogs wants the executors list's log links (Spark's
// NodeManager containerlogs URLs) rewritten to the gateway's log paths,
// naming no NodeManager, and the gateway to accept Spark's link of an
// executor as a container of the app on a NodeManager that the
// ResourceManager lists.
func checkYARNExecutorLogs(ctx context.Context, t *testing.T, gw *Gateway, c *http.Client, d *Driver) {
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
		if want := "/app/" + d.AppID + "/_/logs/" + e.ID + "/stderr"; e.Logs["stderr"] != want {
			t.Errorf("executor %s stderr link = %q; want %q", e.ID, e.Logs["stderr"], want)
		}
		exec = e.ID
	}
	if exec == "" {
		t.Fatalf("the executors list has no executor: %s", body)
	}
	// The log path accepts Spark's link as a container of this app on a
	// NodeManager the ResourceManager lists (a refused claim is 404 "not
	// served"). Reading the log itself is not proven here: MiniYarn.java
	// points the JVM-wide Guice filter at the ResourceManager's web app,
	// so this one-JVM cluster's NodeManager answers its REST API with the
	// RM's 404 (unit tests read a NodeManager's answer:
	// TestContainerLogPage).
	page := gw.URL + "/app/" + d.AppID + "/_/logs/" + exec + "/stderr"
	code, pbody, err := gatewayDo(ctx, c, http.MethodGet, page)
	if err != nil || code == http.StatusNotFound {
		t.Errorf("GET %s = %d, %v; want the claim accepted (not 404)\n%.1500s", page, code, err, pbody)
	}
	if reContainerLogs.Match(pbody) {
		t.Errorf("the log page names the NodeManager")
	}
	t.Logf("executor %s stderr through the gateway: status %d (%d bytes)", exec, code, len(pbody))
}
