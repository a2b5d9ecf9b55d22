//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// checkFallback stops e's driver and follows one bookmark, /app/<id>/jobs/,
// through the gateway: the waiting page while no History Server lists the
// app, then the History Server's view of the same page.
func (s *suite) checkFallback(t *testing.T, e *killEnv) {
	ctx := ctxFor(t, 5*time.Minute)
	bookmark := e.gw.URL + "/app/" + e.d.AppID + "/jobs/"

	// Poll the bookmark from the moment the stop is asked for, recording
	// every status change, until the waiting page answers.
	type seen struct {
		status int
		at     time.Duration
	}
	var trace []seen
	tStop := time.Now()
	stopErr := make(chan error, 1)
	go func() { stopErr <- e.d.Stop(ctx) }()
	var waiting []byte
	var waitingHdr http.Header
	var tWaiting time.Duration
	bad502 := 0
	for {
		resp, err := getNoFollow(ctx, e.client, bookmark)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		at := time.Since(tStop)
		if len(trace) == 0 || trace[len(trace)-1].status != resp.StatusCode {
			trace = append(trace, seen{resp.StatusCode, at})
		}
		if resp.StatusCode == http.StatusBadGateway {
			// Jetty closes the port a moment before the driver logs that
			// its UI stopped: that race may answer 502, but only with a
			// page that reloads itself into the waiting page.
			if resp.Header.Get("Retry-After") == "" || !bytes.Contains(body, []byte(`http-equiv="refresh"`)) {
				t.Errorf("502 at %v after the stop does not reload itself: %.400q", at.Round(time.Millisecond), pageText(body))
			}
			bad502++
		}
		if resp.StatusCode == http.StatusServiceUnavailable {
			waiting, waitingHdr, tWaiting = body, resp.Header, at
			break
		}
		if ctx.Err() != nil || at > 2*time.Minute {
			t.Fatalf("no waiting page within %v; statuses %v", at, trace)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := <-stopErr; err != nil {
		t.Errorf("stopping driver: %v", err)
	}
	tExited := time.Since(tStop)
	var steps []string
	for _, x := range trace {
		steps = append(steps, fmt.Sprintf("%d@%v", x.status, x.at.Round(time.Millisecond)))
	}
	t.Logf("bookmark %s after the stop was asked for: %s; driver exited after %v", bookmark, strings.Join(steps, " → "), tExited.Round(time.Millisecond))
	for _, x := range trace {
		if x.status != http.StatusOK && x.status != http.StatusBadGateway && x.status != http.StatusServiceUnavailable {
			t.Errorf("bookmark answered %d at %v after the stop (statuses %s); want the driver's page, then the waiting page", x.status, x.at.Round(time.Millisecond), strings.Join(steps, " → "))
		}
	}
	if bad502 > 0 {
		t.Logf("%d self-reloading 502 answers in the window between the driver closing its port and discovery seeing it stop", bad502)
	}
	if !bytes.Contains(waiting, []byte("waiting for the History Server")) {
		t.Errorf("503 page is not the waiting page: %.400q", waiting)
	}
	if !bytes.Contains(waiting, []byte(`http-equiv="refresh"`)) || waitingHdr.Get("Retry-After") == "" {
		t.Errorf("waiting page does not refresh itself (Retry-After %q): %.400q", waitingHdr.Get("Retry-After"), waiting)
	}
	// Still waiting a little later: nothing lists the app yet.
	time.Sleep(2 * time.Second)
	if resp, err := getNoFollow(ctx, e.client, bookmark); err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("bookmark before the History Server has the log: %v, %v; want 503", statusOf(resp), err)
	} else {
		resp.Body.Close()
	}

	// Publish the event log to the History Server's directory.
	tPublish := time.Now()
	entries, err := os.ReadDir(e.staging)
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range entries {
		if err := os.Rename(filepath.Join(e.staging, en.Name()), filepath.Join(e.events, en.Name())); err != nil {
			t.Fatal(err)
		}
	}
	if len(entries) == 0 {
		t.Fatalf("driver wrote no event log to %s", e.staging)
	}
	// The same bookmark, followed now, must land on the history view.
	follow := &http.Client{Jar: e.client.Jar, Timeout: 90 * time.Second}
	var final *url.URL
	var page []byte
	for {
		resp, err := follow.Get(bookmark)
		if err == nil {
			page, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				final = resp.Request.URL
				break
			}
			if resp.StatusCode != http.StatusServiceUnavailable {
				t.Errorf("bookmark while the History Server loads: %s", resp.Status)
			}
		}
		if time.Since(tPublish) > 2*time.Minute {
			t.Fatalf("bookmark never served the history view (last %v)", err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	tHistory := time.Since(tPublish)
	t.Logf("timings: stop asked → waiting page %v (driver exited %v); event log published → history view %v at %s",
		tWaiting.Round(time.Millisecond), tExited.Round(time.Millisecond), tHistory.Round(time.Millisecond), final.Path)
	_ = RecordFigure(s.outDir, "fallback_waiting_after_stop_"+e.home.Version, tWaiting)
	_ = RecordFigure(s.outDir, "fallback_history_after_publish_"+e.home.Version, tHistory)
	histPrefix := "/hs/local/history/" + e.d.AppID + "/"
	if !strings.HasPrefix(final.Path, histPrefix) || !strings.HasSuffix(final.Path, "/jobs/") {
		t.Errorf("bookmark ended at %s; want %s…/jobs/", final, histPrefix)
	}
	if !bytes.Contains(page, []byte("Completed Jobs")) || !bytes.Contains(page, []byte("History Server")) && !bytes.Contains(page, []byte(e.d.Opts.Name)) {
		t.Errorf("history jobs page does not look like Spark's history view: %.400q", page)
	}

	t.Run("stage", func(t *testing.T) {
		u := fmt.Sprintf("%s/app/%s/stages/stage/?id=%d&attempt=0", e.gw.URL, e.d.AppID, e.stageID)
		resp, err := follow.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := fmt.Sprintf("Details for Stage %d", e.stageID)
		if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(want)) || !strings.HasPrefix(resp.Request.URL.Path, histPrefix) {
			t.Errorf("GET %s ended %s at %s; want 200 at %s… with %q: %.300q", u, resp.Status, resp.Request.URL, histPrefix, want, body)
		}
		if bytes.Contains(body, []byte("kill-link")) {
			t.Errorf("history stage page has a kill link")
		}
	})
	t.Run("crawl", func(t *testing.T) {
		hsURL, _ := url.Parse(e.hs.URL)
		rep, err := Crawl(ctx, e.client, bookmark, CrawlOptions{
			MaxPages: 600,
			Scope:    []string{"/app/" + e.d.AppID + "/", "/history/" + e.d.AppID + "/"},
			Skip:     skipLogout,
			Needles:  append(e.d.HostPorts(), hsURL.Host),
		})
		if err != nil {
			t.Fatal(err)
		}
		logCrawl(t, "history view crawl", rep)
		requireCleanCrawl(t, rep, 20)
	})
	t.Run("executors", func(t *testing.T) {
		b, err := NewBrowser(context.Background(), t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		base, _ := url.Parse(e.gw.URL)
		if err := b.SetCookies(e.gw.URL, e.client.Jar.Cookies(base)); err != nil {
			t.Fatal(err)
		}
		n, loc, err := b.TableRows(e.gw.URL+"/app/"+e.d.AppID+"/executors/", "#active-executors-table tbody tr", 45*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("chromium: history executors table has %d rows at %s", n, loc)
		if !strings.Contains(loc, histPrefix) {
			t.Errorf("executors page ended at %s; want the history view", loc)
		}
	})
	t.Run("eventlog", func(t *testing.T) {
		for _, p := range []string{"/api/v1/applications/" + e.d.AppID + "/logs"} {
			resp, err := follow.Get(e.gw.URL + p)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !bytes.HasPrefix(body, []byte("PK\x03\x04")) {
				t.Errorf("GET %s: %s, %d bytes starting %.20q; want 200 and a zip", p, resp.Status, len(body), body)
			} else {
				t.Logf("GET %s: %s, zip of %d bytes (%s)", p, resp.Status, len(body), resp.Header.Get("Content-Type"))
			}
		}
		// A user the app's ACLs (spark.ui.view.acls=alice, owner) leave out.
		mdir := filepath.Join(e.dir, "gateway-mallory")
		if err := mkdir(mdir); err != nil {
			t.Fatal(err)
		}
		gw2, c2 := s.localGateway(ctx, t, mdir, GatewayOptions{
			LogGlobs: []string{filepath.Join(e.dir, "driver-logs", "*.log")}, HistoryURL: e.hs.URL, HistoryACLs: true,
			Auth: map[string]any{"mode": "local", "local": map[string]any{"user": "mallory"}},
		})
		// A denied user gets what an unknown app gets (404), so wait for
		// the gateway's first discovery round (History Server included)
		// before asking; 503 while the app's ACLs are being read.
		deadline := time.Now().Add(30 * time.Second)
		for {
			resp, err := getNoFollow(ctx, c2, gw2.URL+"/_/readyz")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("mallory's gateway not ready: %s", resp.Status)
			}
			time.Sleep(250 * time.Millisecond)
		}
		for {
			resp, err := getNoFollow(ctx, c2, gw2.URL+"/api/v1/applications/"+e.d.AppID+"/logs")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
			resp.Body.Close()
			if resp.StatusCode == http.StatusNotFound && bytes.Contains(body, []byte("knows no application")) {
				t.Logf("mallory: logs answered 404, as for an unknown app: %.200s", body)
				break
			}
			if resp.StatusCode != http.StatusServiceUnavailable || time.Now().After(deadline) {
				t.Fatalf("mallory: logs answered %s: %.300q; want 404 as for an unknown app", resp.Status, body)
			}
			time.Sleep(250 * time.Millisecond)
		}
	})
	t.Run("listed", func(t *testing.T) {
		apps, err := e.gw.Apps(ctx, e.client)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, a := range apps {
			if a.ID == e.d.AppID {
				found = true
				if len(a.Attempts) == 0 || !a.Attempts[0].Completed {
					b, _ := json.Marshal(a)
					t.Errorf("/api/v1/applications lists %s as not completed: %s", a.ID, b)
				}
			}
		}
		if !found {
			t.Errorf("/api/v1/applications does not list %s", e.d.AppID)
		}
		resp, err := getNoFollow(ctx, e.client, e.gw.URL+"/")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		i := bytes.Index(body, []byte("<code>"+e.d.AppID+"</code>"))
		if resp.StatusCode != http.StatusOK || i < 0 {
			t.Fatalf("index: %s, app %s not shown", resp.Status, e.d.AppID)
		}
		row := body[i:]
		if j := bytes.Index(row, []byte("</tr>")); j >= 0 {
			row = row[:j]
		}
		if !bytes.Contains(row, []byte(`class="state finished"`)) {
			t.Errorf("index row of %s is not marked finished: %s", e.d.AppID, row)
		}
	})
	t.Run("listed-by-part", func(t *testing.T) { checkListedByPart(ctx, t, e) })
	t.Run("takeover", func(t *testing.T) { s.checkTakeover(t, e) })
}

// checkListedByPart publishes a copy of the finished app's event log as
// another app that ended a second later, and checks that the gateway
// lists it from a part of the History Server's list (minEndDate, asked of
// the real server), not a whole one. A whole read falls due every few
// minutes: if one came in the window, the check is made again with
// another copy.
func checkListedByPart(ctx context.Context, t *testing.T, e *killEnv) {
	lines, err := ReadEventLog(e.events, e.d.AppID)
	if err != nil {
		t.Fatal(err)
	}
	user := ""
	for _, l := range lines {
		var ev struct{ Event, User string }
		if json.Unmarshal(l, &ev) == nil && ev.Event == "SparkListenerApplicationStart" {
			user = ev.User // the copy keeps the owner, whom the client may view
		}
	}
	read := func(kind string) float64 {
		n, err := e.gw.Metric(ctx, "sparkgate_history_lists_total", `read="`+kind+`"`)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for try := range 3 {
		whole0, parts0 := read("whole"), read("part")
		id := fmt.Sprintf("%s%d", e.d.AppID, try)
		if err := WriteAttemptLog(e.events, e.d.AppID, lines, AttemptLog{AppID: id, User: user, ShiftMS: 1000 * int64(try+1)}); err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		_, _, err := e.gw.WaitListed(wctx, e.client, func(got string) bool { return got == id })
		cancel()
		if err != nil {
			t.Fatalf("copy %s of the finished app: %v", id, err)
		}
		whole1, parts1 := read("whole"), read("part")
		if whole1 == whole0 {
			if parts1 == parts0 {
				t.Errorf("%s listed with no list read at all (whole %v, parts %v)", id, whole1, parts1)
			}
			t.Logf("%s listed from parts of the list (%v part reads, no whole one)", id, parts1-parts0)
			return
		}
		t.Logf("a whole list was read while %s was published (%v → %v); again with another copy", id, whole0, whole1)
	}
	t.Error("every copy was listed in a window with a whole read: the part reads are not shown to list new apps")
}

func getNoFollow(ctx context.Context, c *http.Client, u string) (*http.Response, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("building request: %w", err)
	}
	resp, err := c.Do(req)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	resp.Body = cancelOnClose{resp.Body, cancel}
	return resp, nil
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

func statusOf(resp *http.Response) string {
	if resp == nil {
		return "no response"
	}
	return resp.Status
}

// pageText is the text of an HTML page without its head and tags, spaces
// collapsed: what a failure message should quote of an error page.
func pageText(page []byte) string {
	if i := bytes.Index(page, []byte("<body")); i >= 0 {
		page = page[i:]
	}
	text := regexp.MustCompile(`<[^>]*>`).ReplaceAll(page, []byte(" "))
	return strings.Join(strings.Fields(string(text)), " ")
}
