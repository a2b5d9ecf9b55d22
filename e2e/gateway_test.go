//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"testing"
	"time"
)

func mkdir(d string) error { return os.MkdirAll(d, 0o755) }

// checkGatewayCrawl crawls /app/<id>/ through the gateway: no broken link,
// no link or redirect that leaves the gateway or names the driver, no kill
// link.
func (s *suite) checkGatewayCrawl(t *testing.T, gw *Gateway, c *http.Client, d *Driver) {
	ctx := ctxFor(t, 5*time.Minute)
	t0 := time.Now()
	prefix := "/app/" + d.AppID + "/"
	rep, err := Crawl(ctx, c, gw.URL+prefix, CrawlOptions{
		MaxPages: 600,
		Scope:    []string{prefix},
		Skip:     skipLogout,
		Needles:  d.HostPorts(),
	})
	if err != nil {
		t.Fatal(err)
	}
	logCrawl(t, "gateway crawl", rep)
	t.Logf("gateway crawl took %v", time.Since(t0).Round(time.Millisecond))
	_ = RecordFigure(s.outDir, "gateway_crawl_"+d.AppID, fmt.Sprintf("%v pages=%d", time.Since(t0).Round(time.Millisecond), rep.Pages))
	checkTabs(t, rep, sparkTabs, prefix)
	requireCleanCrawl(t, rep, 20)
	// Pages and REST answers come compressed, as from Spark itself (the
	// crawler decodes them before checking links).
	if rep.Compressed*2 < rep.Pages {
		t.Errorf("only %d of %d answers came gzip-encoded; want most", rep.Compressed, rep.Pages)
	}
}

// checkGatewayBrowser opens the JS-built tables through the gateway in
// Chromium, with the gateway session copied into the browser.
func (s *suite) checkGatewayBrowser(t *testing.T, gw *Gateway, c *http.Client, d *Driver) {
	ctx := ctxFor(t, 5*time.Minute)
	stageID, err := activeStage(ctx, d.UIURL(), d.AppID)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewBrowser(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	base, _ := url.Parse(gw.URL)
	if err := b.SetCookies(gw.URL, c.Jar.Cookies(base)); err != nil {
		t.Fatal(err)
	}
	prefix := gw.URL + "/app/" + d.AppID
	for _, p := range []struct{ path, sel string }{
		{"/executors/", "#active-executors-table tbody tr"},
		{fmt.Sprintf("/stages/stage/?id=%d&attempt=0", stageID), "#active-tasks-table tbody tr"},
	} {
		t0 := time.Now()
		n, loc, err := b.TableRows(prefix+p.path, p.sel, 60*time.Second)
		if err != nil {
			t.Errorf("chromium via gateway %s: %v", p.path, err)
			continue
		}
		t.Logf("chromium via gateway: %s has %d rows at %s after %v", p.sel, n, loc, time.Since(t0).Round(time.Millisecond))
	}
}

// checkGatewayHistory waits until the gateway lists the stopped app as
// completed, then crawls the same bookmark /app/<id>/ again: it must now be
// served from the History Server with no broken link and no leak of either
// the driver's or the History Server's address.
func (s *suite) checkGatewayHistory(t *testing.T, gw *Gateway, c *http.Client, hs *HistoryServer, d *Driver) {
	ctx := ctxFor(t, 5*time.Minute)
	t0 := time.Now()
	for {
		apps, err := gw.Apps(ctx, c)
		done := false
		for _, a := range apps {
			if a.ID == d.AppID && len(a.Attempts) > 0 && a.Attempts[0].Completed {
				done = true
			}
		}
		if done {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("gateway never listed %s as completed (last error %v)", d.AppID, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("gateway lists %s as completed %v after the History Server did", d.AppID, time.Since(t0).Round(time.Millisecond))
	_ = RecordFigure(s.outDir, "gateway_completed_after_history_"+d.AppID, time.Since(t0))
	hsURL, _ := url.Parse(hs.URL)
	rep, err := Crawl(ctx, c, gw.URL+"/app/"+d.AppID+"/", CrawlOptions{
		MaxPages: 600,
		Scope:    []string{"/app/" + d.AppID + "/", "/history/" + d.AppID + "/"},
		Skip:     skipLogout,
		Needles:  append(d.HostPorts(), hsURL.Host),
	})
	if err != nil {
		t.Fatal(err)
	}
	logCrawl(t, "gateway history crawl", rep)
	checkTabs(t, rep, historyTabs, "/app/"+d.AppID+"/", "/history/"+d.AppID+"/")
	requireCleanCrawl(t, rep, 20)
}
