//go:build e2e

package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestExecutorLogs (and, on the same cluster, the master's UI under
// /master/main/: checkMasterUI) runs a real standalone master and worker, the real OIDC
// provider and a gateway whose sources are the master, with one small app
// on the cluster (view ACL: alice); on the oldest and the newest installed
// Spark. Chromium, signed in as alice, opens the Executors tab through the
// gateway, finds the executor's stdout and stderr links, which lead to the
// gateway and never name the worker, clicks stderr and lands on the
// executor's log (the worker's "Spark Executor Command" header) through the
// gateway; the executors REST answer carries the same links; bob, who may
// not view the app, gets the same refusal for its logs as for its pages,
// and the worker is never asked for him.
func TestExecutorLogs(t *testing.T) {
	s := newSuite(t)
	s.requireGateway(t)
	homes := s.sparkHomes(t)
	for _, home := range []SparkHome{homes[0], homes[len(homes)-1]} {
		t.Run(home.Version, func(t *testing.T) { s.runExecutorLogs(t, home) })
		if len(homes) == 1 {
			break
		}
	}
}

func (s *suite) runExecutorLogs(t *testing.T, home SparkHome) {
	ctx := ctxFor(t, 6*time.Minute)
	dir := s.freshDir(t, "execlogs-"+home.Version)
	sa, err := StartStandalone(ctx, s.root, home, filepath.Join(dir, "cluster"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sa.Stop)
	op, gwPort, gwURL := s.providerFor(ctx, t, dir, aclSecret)
	gw, err := StartGateway(ctx, s.gwBin, dir, GatewayOptions{
		Port: gwPort,
		Auth: map[string]any{
			"mode":    "oidc",
			"oidc":    map[string]any{"issuer": op.Issuer, "client_id": "sparkgate", "audiences": []string{"sparkgate"}},
			"session": map[string]any{"keys": []string{base64.StdEncoding.EncodeToString([]byte("execlogs-e2e-session-key-0123456789ab"))}},
		},
		Env:     []string{"SPARKGATE_OIDC_CLIENT_SECRET=" + aclSecret},
		Policy:  map[string]any{"admins": []string{"ops"}},
		Masters: []any{map[string]any{"name": "main", "url": sa.WebURL}},
		Discovery: map[string]any{
			"interval":   "1s",
			"standalone": []any{map[string]any{"url": sa.WebURL}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gw.Stop)

	name := "execlogs-" + strings.ReplaceAll(home.Version, ".", "_")
	d, err := StartSmallDriver(ctx, s.root, home, SmallOptions{
		Name: name, LogPath: filepath.Join(dir, name+".log"), WorkDir: filepath.Join(dir, "driver"),
		Master: sa.MasterURL,
		Confs:  map[string]string{"spark.acls.enable": "true", "spark.ui.view.acls": "alice"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Kill)
	defer func() { _ = d.Stop(ctx) }()
	if _, _, err := d.Watch.WaitFor(ctx, reReady, d.Proc.Exited); err != nil {
		t.Fatal(err)
	}
	alice, err := SignIn(ctx, gwURL, "alice")
	if err != nil {
		t.Fatal(err)
	}
	bob, err := SignIn(ctx, gwURL, "bob")
	if err != nil {
		t.Fatal(err)
	}
	prefix := gwURL + "/app/" + d.AppID
	// Routable, and its ACLs read (before that alice gets 503 "not yet").
	for {
		a, err := Get(ctx, alice, prefix+"/jobs/", nil)
		if err == nil && a.Status == http.StatusOK {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("alice never got the app's jobs page (last: %d, %v)\n%s", a.Status, err, gw.Watch.Tail(30))
		}
		time.Sleep(500 * time.Millisecond)
	}
	wu, _ := url.Parse(sa.WorkerWebURL)
	workerHost := wu.Host
	t.Logf("app %s, worker web UI %s", d.AppID, workerHost)

	t.Run("REST", func(t *testing.T) {
		a, err := Get(ctx, alice, prefix+"/api/v1/applications/"+d.AppID+"/allexecutors", nil)
		if err != nil || a.Status != http.StatusOK {
			t.Fatalf("allexecutors = %d, %v", a.Status, err)
		}
		var execs []struct {
			ID   string            `json:"id"`
			Logs map[string]string `json:"executorLogs"`
		}
		if err := json.Unmarshal(a.Body, &execs); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, e := range execs {
			if e.ID == "driver" {
				continue
			}
			found = true
			for _, typ := range []string{"stdout", "stderr"} {
				if want := "/app/" + d.AppID + "/_/logs/" + e.ID + "/" + typ; e.Logs[typ] != want {
					t.Errorf("executor %s %s link = %q; want %q", e.ID, typ, e.Logs[typ], want)
				}
			}
		}
		if !found {
			t.Errorf("allexecutors lists no executor: %s", a.Body)
		}
		if strings.Contains(string(a.Body), workerHost) {
			t.Errorf("allexecutors names the worker %s: %s", workerHost, a.Body)
		}
	})

	t.Run("Chromium", func(t *testing.T) {
		b, err := NewBrowser(ctx, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		if _, err := b.Login(gwURL+"/", op.Issuer, "alice", 60*time.Second); err != nil {
			t.Fatal(err)
		}
		rows, loc, err := b.TableRows(prefix+"/executors/", "#active-executors-table tbody tr", 60*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("Executors tab at %s: %d rows", loc, rows)
		bctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
		defer cancel()
		hrefs, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#active-executors-table a"))
			.filter(a => a.textContent.trim() === "stdout" || a.textContent.trim() === "stderr").map(a => a.href)`))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("log links: %v", hrefs)
		if len(hrefs) < 2 {
			t.Fatalf("the Executors tab has %d log links; want stdout and stderr of the executor", len(hrefs))
		}
		for _, h := range hrefs {
			if !strings.HasPrefix(h, prefix+"/_/logs/") || strings.Contains(h, workerHost) {
				t.Errorf("log link %q: want one under %s/_/logs/, naming no worker", h, prefix)
			}
		}
		// Click stderr, as a user does.
		if _, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`(() => { const a = Array.from(document.querySelectorAll("#active-executors-table a"))
			.find(a => a.textContent.trim() === "stderr"); a.click(); return true; })()`)); err != nil {
			t.Fatal(err)
		}
		// Evaluations fail while the page navigates: retry them.
		var text string
		for {
			text, err = chromedp.Run(bctx, chromedp.Evaluate[string](`location.pathname.endsWith("/stderr") && document.readyState === "complete" ? document.body.innerText : ""`))
			if err == nil && text != "" {
				break
			}
			if bctx.Err() != nil {
				t.Fatalf("the stderr link led nowhere: %v", lastErr(err))
			}
			time.Sleep(200 * time.Millisecond)
		}
		at, _ := chromedp.Run(bctx, chromedp.Location())
		t.Logf("stderr page %s: %.300q", at, text)
		if !strings.HasPrefix(at, prefix+"/_/logs/") {
			t.Errorf("the stderr link ended at %s; want the gateway's log page", at)
		}
		if !strings.Contains(text, "Spark Executor Command") || !strings.Contains(text, "CoarseGrainedExecutorBackend") {
			t.Errorf("the stderr page does not show the executor's log:\n%.1000s", text)
		}
		if strings.Contains(text, workerHost) || strings.Contains(text, filepath.Join(dir, "cluster", "work")+"/"+d.AppID+"/0/stderr") {
			t.Errorf("the stderr page names the worker or its log path")
		}
	})

	t.Run("download", func(t *testing.T) {
		a, err := Get(ctx, alice, prefix+"/_/logs/0/stderr/raw", nil)
		if err != nil || a.Status != http.StatusOK || !strings.HasPrefix(string(a.Body), "Spark Executor Command") {
			t.Fatalf("download = %d, %v: %.200q; want the whole stderr from its first byte", a.Status, err, a.Body)
		}
		page, err := Get(ctx, alice, prefix+"/_/logs/0/stderr?offset=0&byteLength=100", nil)
		if err != nil || page.Status != http.StatusOK || !strings.Contains(string(page.Body), "bytes 0–100 of ") {
			t.Errorf("page of bytes 0-100 = %d, %v: %.2000s", page.Status, err, page.Body)
		}
		t.Logf("stderr: %d bytes downloaded", len(a.Body))
	})

	t.Run("master", func(t *testing.T) { s.checkMasterUI(ctx, t, gwURL, sa, d, bob) })

	t.Run("no view ACL", func(t *testing.T) {
		app, err := Get(ctx, bob, prefix+"/jobs/", nil)
		if err != nil {
			t.Fatal(err)
		}
		if app.Status == http.StatusOK {
			t.Fatalf("bob GET jobs/ = 200; the app's ACLs should refuse him")
		}
		for _, p := range []string{"/_/logs/0/stderr", "/_/logs/0/stdout", "/_/logs/0/stderr/raw"} {
			a, err := Get(ctx, bob, prefix+p, nil)
			if err != nil {
				t.Fatal(err)
			}
			if a.Status != app.Status || strings.Contains(string(a.Body), "Spark Executor Command") {
				t.Errorf("bob GET %s = %d; want %d, as for the app's pages", p, a.Status, app.Status)
			}
		}
	})
}

// checkMasterUI crawls the master's UI through the gateway as a gateway
// admin (ops): no broken link, no link or body naming the master's,
// worker's or driver's address, no kill control; the master's page links
// the app to its bookmark /app/<id>/ and its executor's logs to the
// gateway; the master's kill endpoints are refused in every method and
// spelling with the app still running; bob, no admin, is refused.
func (s *suite) checkMasterUI(ctx context.Context, t *testing.T, gwURL string, sa *Standalone, d *Driver, bob *http.Client) {
	ops, err := SignIn(ctx, gwURL, "ops")
	if err != nil {
		t.Fatal(err)
	}
	base := gwURL + "/master/main/"
	mu, _ := url.Parse(sa.WebURL)
	wu, _ := url.Parse(sa.WorkerWebURL)
	rep, err := Crawl(ctx, ops, base, CrawlOptions{
		MaxPages: 200,
		Scope:    []string{"/master/main/"},
		Skip:     skipLogout,
		Needles:  append(d.HostPorts(), mu.Host, wu.Host, "localhost:"+mu.Port(), "localhost:"+wu.Port()),
	})
	if err != nil {
		t.Fatal(err)
	}
	logCrawl(t, "master crawl", rep)
	t.Logf("visited: %v", rep.Visited)
	requireCleanCrawl(t, rep, 3)
	// The kill forms are there on the master itself, and gone through the
	// gateway.
	direct, err := Get(ctx, http.DefaultClient, sa.WebURL+"/", nil)
	if err != nil || !strings.Contains(string(direct.Body), `action="app/kill/"`) {
		t.Errorf("the master's own page has no app kill form (%v): the stripping is not exercised", err)
	}
	through, err := Get(ctx, ops, base, nil)
	if err != nil || through.Status != http.StatusOK || strings.Contains(string(through.Body), "kill") || !strings.Contains(string(through.Body), `href="/app/`+d.AppID+`/"`) {
		t.Errorf("the master's page through the gateway = %d, %v: want it without kill controls, linking /app/%s/", through.Status, err, d.AppID)
	}
	appLink, logLink := "/app/"+d.AppID+"/", "/app/"+d.AppID+"/_/logs/0/stderr"
	var sawApp, sawLog bool
	for _, v := range rep.Visited {
		sawApp = sawApp || strings.HasSuffix(v, appLink)
		sawLog = sawLog || strings.HasSuffix(v, logLink)
	}
	if !sawApp || !sawLog {
		t.Errorf("the crawl of the master reached app bookmark %v, executor log %v; want both (visited %v)", sawApp, sawLog, rep.Visited)
	}
	for _, p := range []string{"app/kill/?id=" + d.AppID + "&terminate=true", "app/kill/", "driver/kill/", "workers/kill/?host=127.0.0.1",
		"app/KILL/", "app/%6bill/", "app/kill%2e/", "app/k%C4%B1ll/"} {
		for _, m := range []string{http.MethodGet, http.MethodPost} {
			var f url.Values
			if m == http.MethodPost {
				f = url.Values{"id": {d.AppID}, "terminate": {"true"}}
			}
			st, err := getStatus(ctx, ops, m, base+p, f)
			if err != nil || st < 400 {
				t.Errorf("%s %s%s = %d, %v; want refused", m, base, p, st, err)
			}
		}
	}
	if st, err := sa.State(ctx); err != nil || len(st.ActiveApps) != 1 || st.ActiveApps[0].ID != d.AppID {
		t.Errorf("after the kill battery the master lists %+v, %v; want %s still active", st.ActiveApps, err, d.AppID)
	}
	if a, err := Get(ctx, bob, base, nil); err != nil || a.Status != http.StatusForbidden {
		t.Errorf("bob GET %s = %d, %v; want 403 (admins only)", base, a.Status, err)
	}
}
