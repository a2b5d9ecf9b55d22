//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestKill proves "no accidental kills, no dead bookmarks" per Spark
// version, with one History Server, one gateway and one driver whose long
// job keeps running:
//
//   - live/browser: Chromium sees no kill control on the Jobs and Stages
//     pages through the gateway, and sees them on the driver itself;
//   - live/battery: hundreds of kill spellings × methods × routes, written
//     raw to the gateway, all answered 400/403/405, and the driver's own
//     REST API still reports the job RUNNING and its stage ACTIVE;
//   - live/confirm: with proxy.kill modify-acl (a second gateway on the
//     same driver), the confirmation page and its CSRF token, and Chromium
//     killing the job through the Jobs page's link and the confirmation;
//   - fallback/...: the driver stops; the bookmark shows the waiting page,
//     then the History Server's view (fallback_test.go).
//
// The fallback checks ride in this test because they need the driver the
// kill checks kept alive; `-run 'TestKill|TestFallback'` runs both.
func TestKill(t *testing.T) {
	s := newSuite(t)
	s.requireGateway(t)
	homes := s.sparkHomes(t)
	var battery strings.Builder
	for _, home := range homes {
		t.Run(home.Version, func(t *testing.T) { s.runKill(t, home, &battery) })
	}
	if err := os.WriteFile(filepath.Join(s.outDir, "kill-battery.txt"), []byte(battery.String()), 0o644); err != nil {
		t.Error(err)
	}
}

// killEnv is one version's processes, shared by the live and fallback
// checks.
type killEnv struct {
	home     SparkHome
	dir      string
	staging  string // where the driver writes its event log
	events   string // what the History Server reads
	hs       *HistoryServer
	gw       *Gateway
	client   *http.Client // signed in to gw, no redirects followed
	d        *Driver
	jobID    int
	stageID  int
	localUsr string
}

func (s *suite) runKill(t *testing.T, home SparkHome, battery *strings.Builder) {
	ctx := ctxFor(t, 10*time.Minute)
	dir := s.freshDir(t, "kill-"+home.Version)
	e := &killEnv{home: home, dir: dir, staging: filepath.Join(dir, "events-staging"), events: filepath.Join(dir, "events")}
	for _, d := range []string{e.staging, e.events, filepath.Join(dir, "driver-logs"), filepath.Join(dir, "gateway")} {
		if err := mkdir(d); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Now()
	hs, err := StartHistoryServer(ctx, s.root, home, e.events, filepath.Join(dir, "history"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hs.Stop() })
	e.hs = hs
	t.Logf("history server up in %v", time.Since(t0).Round(time.Millisecond))

	logGlob := filepath.Join(dir, "driver-logs", "*.log")
	e.gw, e.client = s.localGateway(ctx, t, filepath.Join(dir, "gateway"), GatewayOptions{
		LogGlobs: []string{logGlob}, HistoryURL: hs.URL, HistoryACLs: true,
	})

	// The driver writes its event log where the History Server does not
	// look; fallback moves it over after the driver has stopped, as an
	// object store makes a log visible only once it is closed. So the
	// History Server cannot list the app while it runs, and the waiting
	// page has a window of known length.
	t1 := time.Now()
	d, err := StartDriver(ctx, s.root, home, DriverOptions{
		Name:     "kill-" + strings.ReplaceAll(home.Version, ".", "_"),
		EventDir: e.staging, LogDir: filepath.Join(dir, "driver-logs"), WorkDir: filepath.Join(dir, "driver"),
		LongJob: true,
		// Only the owner (and alice) may view it in the History Server.
		Confs: map[string]string{"spark.ui.view.acls": "alice"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Kill)
	e.d = d
	if err := d.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	e.jobID, e.stageID, err = LongJob(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("driver %s ready after %v; long job %d, stage %d", d.AppID, time.Since(t1).Round(time.Millisecond), e.jobID, e.stageID)
	if _, _, err := e.gw.WaitListed(ctx, e.client, func(id string) bool { return id == d.AppID }); err != nil {
		t.Fatal(err)
	}

	t.Run("live/browser", func(t *testing.T) { e.checkNoKillControls(t) })
	t.Run("live/battery", func(t *testing.T) { e.runBattery(t, battery) })
	t.Run("live/unharmed", func(t *testing.T) { e.checkUnharmed(t) })
	if os.Getenv("SPARKGATE_E2E_NO_CONFIRM") == "" {
		t.Run("live/confirm", func(t *testing.T) { s.checkConfirm(t, e) })
	}
	t.Run("fallback", func(t *testing.T) { s.checkFallback(t, e) })
}

// checkNoKillControls opens the Jobs and Stages pages in Chromium through
// the gateway (no kill control) and on the driver itself (kill controls:
// the check can fail).
func (e *killEnv) checkNoKillControls(t *testing.T) {
	b, err := NewBrowser(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	base, _ := url.Parse(e.gw.URL)
	if err := b.SetCookies(e.gw.URL, e.client.Jar.Cookies(base)); err != nil {
		t.Fatal(err)
	}
	for _, page := range []string{"/jobs/", "/stages/"} {
		direct, err := b.KillControls(e.d.UIURL() + page)
		if err != nil {
			t.Fatal(err)
		}
		via, err := b.KillControls(e.gw.URL + "/app/" + e.d.AppID + page)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s direct: kill-link=%d kill forms=%d \"(kill)\"=%v; via gateway (%s): kill-link=%d kill forms=%d \"(kill)\"=%v",
			page, direct.KillLinks, direct.KillForms, direct.KillText, via.Location, via.KillLinks, via.KillForms, via.KillText)
		if !direct.Any() || direct.KillLinks == 0 {
			t.Errorf("driver's own %s shows no kill control; the long job should have one", page)
		}
		if via.Any() {
			t.Errorf("gateway's %s shows kill controls: %+v", page, via)
		}
		// The page through the gateway is the real one, with the long job.
		if !strings.Contains(via.Text, "long-running: sleeps") && !strings.Contains(via.Text, "Active Stages") {
			t.Errorf("gateway's %s is not Spark's page with the active job: %.300q", page, via.Text)
		}
		if !strings.HasPrefix(via.Location, e.gw.URL+"/app/"+e.d.AppID+"/") {
			t.Errorf("gateway's %s ended at %s", page, via.Location)
		}
	}
}

// killCase is one request of the battery.
type killCase struct {
	route  string // "/app", "/proxy", "api", "absolute"
	label  string // the spelling, as in the table
	target string
	host   string
	direct string // the same spelling on the driver (bogus id), "" for none
}

var batteryMethods = []string{"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "SPARKKILL"}

// killSpellings are kill endpoint spellings relative to an app's root,
// with J and S for the job and stage id. Jetty (3.5) routes several of
// them to the kill handler: see the direct column of the table.
var killSpellings = []string{
	"/jobs/job/kill/?id=J",
	"/jobs/job/kill?id=J",
	"/stages/stage/kill/?id=S",
	"/stages/stage/kill?id=S",
	"/jobs/job/%6Bill/?id=J",
	"/jobs/job/%6B%69%6C%6C?id=J",
	"/jobs/job/%4Bill/?id=J",
	"/jobs/job/KILL/?id=J",
	"/jobs/job/Kill?id=J",
	"/stages/stage/%6bill/?id=S",
	"/stages/stage/KILL/?id=S",
	"/jobs%2Fjob%2Fkill/?id=J",
	"/jobs/job%2Fkill/?id=J",
	"/jobs/job/kill%2F?id=J",
	"/stages%2Fstage%2Fkill?id=S",
	"/jobs%252Fjob%252Fkill/?id=J",
	"/jobs/job/kill%252F?id=J",
	"/jobs%5Cjob%5Ckill%5C?id=J",
	"/jobs\\job\\kill\\?id=J",
	"/jobs/job\\kill?id=J",
	"//jobs/job/kill/?id=J",
	"/jobs//job/kill/?id=J",
	"/jobs/job//kill?id=J",
	"/jobs/./job/kill/?id=J",
	"/jobs/job/./kill?id=J",
	"/jobs/x/../job/kill/?id=J",
	"/jobs/job/%2e%2e/job/kill/?id=J",
	"/stages/x/../stage/kill/?id=S",
	"/jobs/job/kill;x/?id=J",
	"/jobs/job;a=b/kill/?id=J",
	"/jobs/job/kill;jsessionid=1?id=J",
	"/stages/stage/kill;x?id=S",
	"/jobs/job/kill%3B/?id=J",
	"/jobs/job/kill%00/?id=J",
	"/jobs/job/kill%00?id=J",
	"/jobs/job/kill%20/?id=J",
	"/jobs/job/kill%20?id=J",
	"/stages/stage/kill%20?id=S",
	"/jobs/job/kill%09/?id=J",
	"/jobs/job/kill\t/?id=J",
	"/jobs/job/kill%u002F?id=J",
	"/jobs/job/kill/%20?id=J",
	// Disguises: dots, spaces and zero-width or format characters around
	// or inside the word, Unicode case and compatibility forms.
	"/jobs/job/kill./?id=J",
	"/jobs/job/kill.?id=J",
	"/jobs/job/kill../?id=J",
	"/jobs/job/kill%2E/?id=J",
	"/stages/stage/kill./?id=S",
	"/jobs/job/kill%20./?id=J",
	"/jobs/job/kill%E2%80%8B/?id=J",
	"/jobs/job/%E2%80%8Bkill?id=J",
	"/jobs/job/ki%E2%80%8Cll/?id=J",
	"/jobs/job/kill%C2%AD/?id=J",
	"/jobs/job/kill%EF%BB%BF/?id=J",
	"/jobs/job/k%C4%B1ll/?id=J",
	"/jobs/job/K%C4%B0LL/?id=J",
	"/jobs/job/%EF%BD%8B%EF%BD%89%EF%BD%8C%EF%BD%8C/?id=J",
	"/stages/stage/%EF%BC%AB%EF%BC%A9%EF%BC%AC%EF%BC%AC?id=S",
	"/jobs/job/%E2%84%AAill/?id=J",
	"/jobs/job/kill%E3%80%82/?id=J",
	"/jobs/hold./",
	"/jobs/resume%E2%80%8B/",
	"/jobs/%EF%BD%88old/",
	"/jobs/job/killall./?id=J",
	"/executors/decommiss%C4%B1on/",
}

func (e *killEnv) ids(s string) string {
	return strings.NewReplacer("id=J", fmt.Sprintf("id=%d", e.jobID), "id=S", fmt.Sprintf("id=%d", e.stageID)).Replace(s)
}

func (e *killEnv) cases() []killCase {
	gwHost := strings.TrimPrefix(e.gw.URL, "http://")
	drvHost := fmt.Sprintf("127.0.0.1:%d", e.d.UIPort)
	var out []killCase
	for _, route := range []string{"/app", "/proxy"} {
		prefix := route + "/" + e.d.AppID
		for _, sp := range killSpellings {
			c := killCase{route: route, label: sp, target: e.ids(prefix + sp), host: gwHost}
			if route == "/app" {
				c.direct = strings.NewReplacer("id=J", "id=99999", "id=S", "id=99999").Replace(sp)
			}
			out = append(out, c)
		}
	}
	api := "/api/v1/applications/" + e.d.AppID
	for _, sp := range []string{"/jobs/job/kill/?id=J", "/stages/stage/kill/?id=S", "/jobs/J/kill", "/stages/S/kill", "/jobs/%6Bill?id=J",
		"/jobs/J/kill.", "/stages/S/k%C4%B1ll", "/jobs/job/%EF%BD%8B%EF%BD%89%EF%BD%8C%EF%BD%8C/?id=J"} {
		t := strings.NewReplacer("/J/", fmt.Sprintf("/%d/", e.jobID), "/S/", fmt.Sprintf("/%d/", e.stageID)).Replace(sp)
		out = append(out, killCase{route: "api", label: sp, target: e.ids(api + t), host: gwHost})
	}
	for _, a := range []struct{ label, target, host string }{
		{"http://<gw>/app/<id>/jobs/job/kill/?id=J", "http://" + gwHost + "/app/" + e.d.AppID + "/jobs/job/kill/?id=J", gwHost},
		{"http://<driver>/app/<id>/jobs/job/kill/?id=J", "http://" + drvHost + "/app/" + e.d.AppID + "/jobs/job/kill/?id=J", gwHost},
		{"http://<driver>/app/<id>/stages/stage/kill/?id=S (Host: driver)", "http://" + drvHost + "/app/" + e.d.AppID + "/stages/stage/kill/?id=S", drvHost},
		{"http://<driver>/proxy/<id>/jobs/job/%6Bill?id=J", "http://" + drvHost + "/proxy/" + e.d.AppID + "/jobs/job/%6Bill?id=J", gwHost},
		{"http://<gw>/app/<id>/jobs/job/kill./?id=J", "http://" + gwHost + "/app/" + e.d.AppID + "/jobs/job/kill./?id=J", gwHost},
		{"http://<gw>/proxy/<id>/jobs/job/kill%E2%80%8B/?id=J", "http://" + gwHost + "/proxy/" + e.d.AppID + "/jobs/job/kill%E2%80%8B/?id=J", gwHost},
		{"http://<gw>/app/<id>/stages/stage/K%C4%B0LL/?id=S", "http://" + gwHost + "/app/" + e.d.AppID + "/stages/stage/K%C4%B0LL/?id=S", gwHost},
	} {
		out = append(out, killCase{route: "absolute", label: a.label, target: e.ids(a.target), host: a.host})
	}
	return out
}

// runBattery sends every case with every method, raw, to the gateway; each
// must be refused with 400, 403 or 405.
func (e *killEnv) runBattery(t *testing.T, out *strings.Builder) {
	ctx := ctxFor(t, 4*time.Minute)
	gwAddr := strings.TrimPrefix(e.gw.URL, "http://")
	drvAddr := fmt.Sprintf("127.0.0.1:%d", e.d.UIPort)
	u, _ := url.Parse(e.gw.URL)
	var cookies []string
	for _, c := range e.client.Jar.Cookies(u) {
		cookies = append(cookies, c.Name+"="+c.Value)
	}
	cookie := strings.Join(cookies, "; ")
	token, err := DriverCSRFToken(ctx, e.d)
	if err != nil {
		t.Fatal(err)
	}
	bodies := map[string]string{"POST": fmt.Sprintf("id=%d&terminate=true", e.jobID)}
	refusedBefore, err := e.gw.Metric(ctx, "sparkgate_killguard_refused_total")
	if err != nil {
		t.Fatal(err)
	}

	var b strings.Builder
	fmt.Fprintf(&b, "Spark %s, app %s, job %d, stage %d; gateway %s, driver %s (direct: GET with id=99999, answered by Spark itself)\n",
		e.home.Version, e.d.AppID, e.jobID, e.stageID, e.gw.URL, e.d.UIURL())
	fmt.Fprintf(&b, "%-9s %-64s %-7s", "route", "spelling", "direct")
	for _, m := range batteryMethods {
		fmt.Fprintf(&b, " %-5s", shortMethod(m))
	}
	b.WriteString("\n")
	total, bad := 0, 0
	counts := map[int]int{}
	for _, c := range e.cases() {
		direct := "-"
		if c.direct != "" {
			code, loc, err := SendRaw(ctx, drvAddr, RawRequest{Method: "GET", Target: c.direct, Host: drvAddr})
			direct = fmt.Sprint(code)
			if err != nil {
				direct = "err"
			} else if code == http.StatusFound && (strings.HasSuffix(loc, "/jobs/") || strings.HasSuffix(loc, "/stages/")) {
				direct += "*" // Spark's kill handler answered (it redirects after killing)
			}
		}
		fmt.Fprintf(&b, "%-9s %-64s %-7s", c.route, strings.ReplaceAll(c.label, "\t", "<TAB>"), direct)
		for _, m := range batteryMethods {
			req := RawRequest{Method: m, Target: c.target, Host: c.host, Cookie: cookie, Body: bodies[m]}
			code, _, err := SendRaw(ctx, gwAddr, req)
			total++
			counts[code]++
			cell := fmt.Sprint(code)
			if err != nil {
				cell = "err"
			}
			if code != 400 && code != 403 && code != 405 {
				bad++
				cell += "!"
				t.Errorf("%s %q answered %d (err %v); want 400, 403 or 405", m, c.target, code, err)
			}
			fmt.Fprintf(&b, " %-5s", cell)
		}
		b.WriteString("\n")
	}
	// Spark 4's own kill form: POST with the driver's real CSRF token.
	if token != "" {
		for _, route := range []string{"/app", "/proxy"} {
			for _, p := range []string{"/jobs/job/kill/", "/stages/stage/kill/"} {
				id := e.jobID
				if strings.HasPrefix(p, "/stages") {
					id = e.stageID
				}
				target := route + "/" + e.d.AppID + p
				req := RawRequest{Method: "POST", Target: target, Host: gwAddr, Cookie: cookie,
					Body: fmt.Sprintf("id=%d&csrfToken=%s", id, token)}
				code, _, err := SendRaw(ctx, gwAddr, req)
				total++
				counts[code]++
				mark := ""
				if code != 400 && code != 403 && code != 405 {
					bad++
					mark = "!"
					t.Errorf("POST %s with Spark's csrfToken answered %d (err %v); want 400, 403 or 405", target, code, err)
				}
				fmt.Fprintf(&b, "%-9s %-64s %-7s POST id=%d&csrfToken=<driver's token>: %d%s\n", route, p, "-", id, code, mark)
			}
		}
	}
	var keys []int
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	fmt.Fprintf(&b, "%d requests, %d not refused; statuses:", total, bad)
	for _, k := range keys {
		fmt.Fprintf(&b, " %d×%d", k, counts[k])
	}
	b.WriteString("\n(* = 302 to /jobs/ or /stages/, as the kill handler answers; Spark 4 kills only with its CSRF token)\n\n")
	t.Log("\n" + b.String())
	out.WriteString(b.String())
	if total < 300 {
		t.Errorf("battery sent only %d requests", total)
	}
	// The gateway's metrics count what it refused: every 403 and 405 is
	// the kill guard's (the 400s are paths refused before it judges).
	refused, err := e.gw.Metric(ctx, "sparkgate_killguard_refused_total")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sparkgate_killguard_refused_total: %v before the battery, %v after", refusedBefore, refused)
	if got, want := int(refused-refusedBefore), counts[403]+counts[405]; got != want {
		t.Errorf("sparkgate_killguard_refused_total grew by %d during the battery; want %d (its 403s and 405s)", got, want)
	}
	running, err := e.gw.Metric(ctx, "sparkgate_apps", `source="log"`, `state="running"`)
	if err != nil || running < 1 {
		t.Errorf("sparkgate_apps{source=log,state=running} = %v (%v); want at least 1", running, err)
	}
}

func shortMethod(m string) string {
	if len(m) > 5 {
		return m[:5]
	}
	return m
}

// checkUnharmed asks the driver itself (not the gateway) whether the long
// job and its stage still run and nothing was killed.
func (e *killEnv) checkUnharmed(t *testing.T) {
	ctx := ctxFor(t, time.Minute)
	// A kill takes effect within ~100 ms in Spark; give it a moment to
	// show in the status store.
	time.Sleep(time.Second)
	jobs, stages, err := DriverJobs(ctx, e.d)
	if err != nil {
		t.Fatal(err)
	}
	foundJob, foundStage := false, false
	for _, j := range jobs {
		if j.JobID == e.jobID {
			foundJob = true
			if j.Status != "RUNNING" || j.NumKilledTasks != 0 {
				t.Errorf("driver reports long job %d as %s with %d killed tasks; want RUNNING, 0", j.JobID, j.Status, j.NumKilledTasks)
			}
		}
		if j.NumKilledTasks != 0 {
			t.Errorf("driver reports job %d (%s) with %d killed tasks", j.JobID, j.Status, j.NumKilledTasks)
		}
	}
	for _, s := range stages {
		if s.StageID == e.stageID {
			foundStage = true
			if s.Status != "ACTIVE" {
				t.Errorf("driver reports stage %d as %s (%q); want ACTIVE", s.StageID, s.Status, s.FailureReason)
			}
		}
		if s.Status == "KILLED" || strings.Contains(strings.ToLower(s.FailureReason), "killed") || s.NumKilledTasks != 0 {
			t.Errorf("driver reports stage %d %s, failure %q, %d killed tasks", s.StageID, s.Status, s.FailureReason, s.NumKilledTasks)
		}
	}
	if !foundJob || !foundStage {
		t.Errorf("driver no longer lists job %d (%v) or stage %d (%v)", e.jobID, foundJob, e.stageID, foundStage)
	}
	t.Logf("after the battery the driver reports job %d RUNNING and stage %d ACTIVE (%d jobs, %d stages, none killed)", e.jobID, e.stageID, len(jobs), len(stages))
}

var reConfirmToken = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// checkConfirm runs a second gateway with proxy.kill modify-acl on the same
// driver: the Jobs page shows the long job's kill control as a plain link
// to the gateway's confirmation page; that page's form without or with a
// forged token is refused and kills nothing; Chromium clicks the link and
// confirms, and the driver's own REST API shows the job killed.
func (s *suite) checkConfirm(t *testing.T, e *killEnv) {
	ctx := ctxFor(t, 2*time.Minute)
	gdir := filepath.Join(e.dir, "gateway-modify-acl")
	if err := mkdir(gdir); err != nil {
		t.Fatal(err)
	}
	gw, c := s.localGateway(ctx, t, gdir, GatewayOptions{
		LogGlobs: []string{filepath.Join(e.dir, "driver-logs", "*.log")}, HistoryURL: e.hs.URL, HistoryACLs: true,
		Proxy: map[string]any{"kill": "modify-acl"},
	})
	if _, _, err := gw.WaitListed(ctx, c, func(id string) bool { return id == e.d.AppID }); err != nil {
		t.Fatal(err)
	}
	prefix := gw.URL + "/app/" + e.d.AppID
	jobs, err := getNoFollow(ctx, c, prefix+"/jobs/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(jobs.Body)
	jobs.Body.Close()
	// This session may modify the app: its kill control is a plain link
	// to the confirmation page, without Spark's script or form.
	wantLink := fmt.Sprintf(`<a href="/app/%s/jobs/job/kill/?id=%d" class="kill-link">(kill)</a>`, e.d.AppID, e.jobID)
	t.Logf("modify-acl: the Jobs page through the gateway has %d kill-link elements", strings.Count(string(page), "kill-link"))
	if !strings.Contains(string(page), wantLink) || strings.Contains(string(page), "window.confirm") || strings.Contains(string(page), "csrfToken") {
		t.Errorf("modify-acl Jobs page lacks %s or keeps Spark's kill script or form", wantLink)
	}

	killURL := fmt.Sprintf("%s/jobs/job/kill/?id=%d", prefix, e.jobID)
	resp, err := getNoFollow(ctx, c, killURL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := reConfirmToken.FindSubmatch(body)
	if resp.StatusCode != http.StatusOK || m == nil || !strings.Contains(string(body), fmt.Sprintf("Kill job %d?", e.jobID)) {
		t.Fatalf("GET %s: %s; want the confirmation page with a token: %.400q", killURL, resp.Status, body)
	}
	token := html.UnescapeString(string(m[1]))
	post := func(form url.Values) (int, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, killURL, strings.NewReader(form.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", gw.URL)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Location")
	}
	for _, f := range []struct {
		name string
		form url.Values
	}{
		{"no token", url.Values{}},
		{"forged token", url.Values{"csrf": {"1700000000.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}}},
		{"token with its last character changed", url.Values{"csrf": {token[:len(token)-1] + flipChar(token[len(token)-1])}}},
	} {
		if code, _ := post(f.form); code != http.StatusForbidden {
			t.Errorf("POST %s with %s = %d; want 403", killURL, f.name, code)
		}
	}
	if j := driverJob(ctx, t, e.d, e.jobID); j.Status != "RUNNING" {
		t.Fatalf("job %d is %s after refused confirmations; want RUNNING", e.jobID, j.Status)
	}
	// A person in Chromium: the Jobs page shows the long job's "(kill)" as a
	// plain link to the confirmation page; clicking it, then Kill, ends on
	// the Jobs page.
	b, err := NewBrowser(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	gwURL, _ := url.Parse(gw.URL)
	if err := b.SetCookies(gw.URL, c.Jar.Cookies(gwURL)); err != nil {
		t.Fatal(err)
	}
	// A script on the gateway's origin (a hostile "driver" page) can
	// neither read the confirmation page nor submit its form.
	status, after, err := b.ScriptKill(prefix+"/jobs/", killURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("modify-acl: a script's fetch() of the confirmation page got %d; its form.submit() led to %q", status, firstLine(after, "Open the kill link yourself"))
	if status != http.StatusForbidden || !strings.Contains(after, "Open the kill link yourself") {
		t.Errorf("script on the confirmation page: fetch() = %d, submit led to %.200q; want 403 and the refusal page", status, after)
	}
	if j := driverJob(ctx, t, e.d, e.jobID); j.Status != "RUNNING" {
		t.Fatalf("job %d is %s after a script's confirmation; want RUNNING", e.jobID, j.Status)
	}
	// A script on a Spark page opens the confirmation page with
	// window.open (a navigation, which fetch metadata lets through): the
	// page's Cross-Origin-Opener-Policy gives it a browsing context group
	// of its own, so the script's handle is severed and cannot read the
	// token, while the popup itself shows the working page.
	seen, popupText, openerKept, err := b.ScriptOpen(prefix+"/jobs/", killURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("modify-acl: a script's window.open of the confirmation page saw %q; the popup shows %q, opener kept: %v", seen, firstLine(popupText, fmt.Sprintf("Kill job %d?", e.jobID)), openerKept)
	if strings.HasPrefix(seen, "read:") || !strings.Contains(popupText, fmt.Sprintf("Kill job %d?", e.jobID)) || openerKept {
		t.Errorf("window.open of the confirmation page: the opener saw %.200q, the popup shows %.200q, opener kept %v; want a severed handle, the page in the popup, no opener", seen, popupText, openerKept)
	}
	k, err := b.ConfirmKill(prefix+"/jobs/", e.jobID)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("modify-acl: Chromium clicked %s, confirmed on %s (%q), ended on %s", k.Link, k.Confirm, firstLine(k.Text, fmt.Sprintf("Kill job %d?", e.jobID)), k.Final)
	if k.Link != killURL || k.Confirm != killURL || !strings.Contains(k.Text, fmt.Sprintf("Kill job %d?", e.jobID)) || k.Final != prefix+"/jobs/" {
		t.Fatalf("browser kill: link %s, confirmation %s, ended on %s; want %s, %s with \"Kill job %d?\", then %s/jobs/",
			k.Link, k.Confirm, k.Final, killURL, killURL, e.jobID, prefix)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		j := driverJob(ctx, t, e.d, e.jobID)
		if j.Status != "RUNNING" {
			t.Logf("modify-acl: after the confirmed kill the driver reports job %d %s (%d killed tasks)", e.jobID, j.Status, j.NumKilledTasks)
			if j.Status != "FAILED" {
				t.Errorf("job %d is %s; want FAILED (killed)", e.jobID, j.Status)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %d still RUNNING 20 s after the confirmed kill", e.jobID)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// firstLine returns the line of text that contains sub, or "".
func firstLine(text, sub string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

func flipChar(c byte) string {
	if c == 'A' {
		return "B"
	}
	return "A"
}

func driverJob(ctx context.Context, t *testing.T, d *Driver, id int) SparkJob {
	t.Helper()
	var j SparkJob
	if err := getJSONDirect(ctx, fmt.Sprintf("%s/api/v1/applications/%s/jobs/%d", d.UIURL(), d.AppID, id), &j); err != nil {
		t.Fatal(err)
	}
	return j
}
