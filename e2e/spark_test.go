//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSpark runs, for each Spark version under .cache/spark (sequentially:
// two cores), one History Server, one gateway and one long-lived driver, and
// checks Spark directly (the harness's own proof), then through the gateway.
func TestSpark(t *testing.T) {
	s := newSuite(t)
	homes := s.sparkHomes(t)
	for _, home := range homes {
		t.Run(home.Version, func(t *testing.T) { s.runVersion(t, home) })
	}
}

func (s *suite) runVersion(t *testing.T, home SparkHome) {
	ctx := ctxFor(t, 15*time.Minute)
	dir, events, logs := s.versionDir(t, home.Version)

	t0 := time.Now()
	hs, err := StartHistoryServer(ctx, s.root, home, events, filepath.Join(dir, "history"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hs.Stop() })
	t.Logf("history server %s up in %v at %s", home.Version, time.Since(t0).Round(time.Millisecond), hs.URL)
	_ = RecordFigure(s.outDir, "history_server_start_"+home.Version, time.Since(t0))

	var gw *Gateway
	var gwClient *http.Client
	if s.gwBin != "" {
		gdir := filepath.Join(dir, "gateway")
		if err := mkdir(gdir); err != nil {
			t.Fatal(err)
		}
		gw, gwClient = s.localGateway(ctx, t, gdir, GatewayOptions{
			LogGlobs:   []string{filepath.Join(logs, "*.log")},
			HistoryURL: hs.URL,
		})
	}

	// Time discovery from the SparkUI log line to the gateway's app list:
	// poll from before the driver starts (the gateway knows no other app).
	type listed struct {
		id  string
		at  time.Time
		err error
	}
	listedCh := make(chan listed, 1)
	if gw != nil {
		go func() {
			id, at, err := gw.WaitListed(ctx, gwClient, func(string) bool { return true })
			listedCh <- listed{id, at, err}
		}()
	}

	t1 := time.Now()
	d, err := StartDriver(ctx, s.root, home, DriverOptions{
		Name:     "e2e-" + strings.ReplaceAll(home.Version, ".", "_"),
		EventDir: events, LogDir: logs, WorkDir: filepath.Join(dir, "driver"),
		LongJob: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Kill)
	uiLine := d.UILineAt.Sub(t1)

	if err := d.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("driver %s (%s): SparkUI line after %v, jobs done after %v; UI %s (host %s)",
		d.AppID, home.Version, uiLine.Round(time.Millisecond), d.ReadyAt.Sub(t1).Round(time.Millisecond), d.UIURL(), d.UIHost)
	if at, ok := d.ServingAt(); ok {
		t.Logf("driver REST API answered %v after the SparkUI line (Spark's own start-up share of discovery lag)", at.Sub(d.UILineAt).Round(time.Millisecond))
		_ = RecordFigure(s.outDir, "driver_rest_after_ui_line_"+home.Version, at.Sub(d.UILineAt))
	}
	_ = RecordFigure(s.outDir, "driver_ui_line_after_start_"+home.Version, uiLine)
	_ = RecordFigure(s.outDir, "driver_ready_after_start_"+home.Version, d.ReadyAt.Sub(t1))

	t.Run("direct", func(t *testing.T) { s.checkDirect(t, d, home) })

	if gw != nil {
		t.Run("gateway/discovery", func(t *testing.T) {
			l := <-listedCh
			if l.err != nil {
				t.Fatal(l.err)
			}
			if l.id != d.AppID {
				t.Fatalf("gateway listed %q; want %q", l.id, d.AppID)
			}
			lag := l.at.Sub(d.UILineAt)
			t.Logf("discovery: app %s listed %v after the SparkUI line appeared in its log", d.AppID, lag.Round(time.Millisecond))
			_ = RecordFigure(s.outDir, "discovery_lag_"+home.Version, lag)
		})
		t.Run("gateway/crawl", func(t *testing.T) { s.checkGatewayCrawl(t, gw, gwClient, d) })
		t.Run("gateway/browser", func(t *testing.T) { s.checkGatewayBrowser(t, gw, gwClient, d) })
		t.Run("gateway/viz", func(t *testing.T) { s.checkGatewayViz(t, gw, gwClient, d) })
	}

	t2 := time.Now()
	if err := d.Stop(ctx); err != nil {
		t.Errorf("stopping driver: %v", err)
	}
	t.Logf("driver stopped in %v", time.Since(t2).Round(time.Millisecond))
	t3 := time.Now()
	hctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := hs.WaitApp(hctx, d.AppID, true); err != nil {
		t.Fatal(err)
	}
	t.Logf("history server lists %s as completed %v after the driver stopped", d.AppID, time.Since(t3).Round(time.Millisecond))
	_ = RecordFigure(s.outDir, "history_listed_after_stop_"+home.Version, time.Since(t3))
	t.Run("history/direct", func(t *testing.T) { s.checkHistoryDirect(t, hs, d) })
	if gw != nil {
		t.Run("gateway/history", func(t *testing.T) { s.checkGatewayHistory(t, gw, gwClient, hs, d) })
	}
}

// checkDirect proves the harness on Spark itself: the crawler finds no broken
// link from /jobs/, and Chromium fills the executors and task tables.
func (s *suite) checkDirect(t *testing.T, d *Driver, home SparkHome) {
	ctx := ctxFor(t, 5*time.Minute)
	c := NoRedirectClient(nil)
	t0 := time.Now()
	rep, err := Crawl(ctx, c, d.UIURL()+"/jobs/", CrawlOptions{
		MaxPages: 600,
	})
	if err != nil {
		t.Fatal(err)
	}
	logCrawl(t, "direct crawl", rep)
	requireComplete(t, rep)
	t.Logf("direct crawl took %v", time.Since(t0).Round(time.Millisecond))
	_ = RecordFigure(s.outDir, "direct_crawl_"+home.Version, fmt.Sprintf("%v pages=%d", time.Since(t0).Round(time.Millisecond), rep.Pages))
	for _, l := range rep.Broken {
		t.Errorf("broken: %v", l)
	}
	checkTabs(t, rep, sparkTabs, "/")
	// Directly, Spark redirects with absolute Host-based URLs: those are not
	// leaks here, and body mentions of the driver's own address are expected.
	if len(rep.KillLinks) == 0 {
		t.Errorf("direct crawl found no kill link; the long-running job should show one")
	}

	stageID, err := activeStage(ctx, d.UIURL(), d.AppID)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewBrowser(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, p := range []struct{ path, sel string }{
		{"/executors/", "#active-executors-table tbody tr"},
		{fmt.Sprintf("/stages/stage/?id=%d&attempt=0", stageID), "#active-tasks-table tbody tr"},
	} {
		t0 := time.Now()
		n, loc, err := b.TableRows(d.UIURL()+p.path, p.sel, 60*time.Second)
		if err != nil {
			t.Errorf("chromium %s: %v", p.path, err)
			continue
		}
		t.Logf("chromium: %s has %d rows at %s after %v", p.sel, n, loc, time.Since(t0).Round(time.Millisecond))
	}
}

// activeStage returns the id of an active stage with a running task (the
// long-running job's, so its task table has a row), asking the driver's REST
// API.
func activeStage(ctx context.Context, base, appID string) (int, error) {
	c := &http.Client{Timeout: 10 * time.Second}
	for {
		var stages []struct {
			StageID        int `json:"stageId"`
			NumActiveTasks int `json:"numActiveTasks"`
		}
		resp, err := c.Get(base + "/api/v1/applications/" + appID + "/stages?status=active")
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&stages)
			resp.Body.Close()
		}
		if err == nil {
			for _, st := range stages {
				if st.NumActiveTasks > 0 {
					return st.StageID, nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("no active stage with a running task in %s: %w", appID, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// checkHistoryDirect crawls the finished app on the History Server itself.
func (s *suite) checkHistoryDirect(t *testing.T, hs *HistoryServer, d *Driver) {
	ctx := ctxFor(t, 5*time.Minute)
	t0 := time.Now()
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	refused, err := hs.WaitUI(wctx, d.AppID)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	if len(refused) > 0 {
		t.Logf("History Server answered %v for the jobs page before rendering it, for %v", refused, time.Since(t0).Round(time.Millisecond))
	}
	t0 = time.Now()
	rep, err := Crawl(ctx, NoRedirectClient(nil), hs.URL+"/history/"+d.AppID+"/jobs/", CrawlOptions{
		MaxPages: 600,
		Scope:    []string{"/history/" + d.AppID + "/"},
	})
	if err != nil {
		t.Fatal(err)
	}
	logCrawl(t, "history crawl", rep)
	requireComplete(t, rep)
	t.Logf("history crawl took %v", time.Since(t0).Round(time.Millisecond))
	for _, l := range rep.Broken {
		t.Errorf("broken: %v", l)
	}
	checkTabs(t, rep, historyTabs, "/history/"+d.AppID+"/")
	if len(rep.KillLinks) != 0 {
		t.Errorf("History Server shows kill links: %v", rep.KillLinks)
	}
}
