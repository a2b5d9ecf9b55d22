//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// barTabs are the tabs of Spark's navbar checked with the back bar, as
// paths under the app (the SQL tab is there once the app ran a query).
var barTabs = []string{"jobs", "stages", "storage", "environment", "executors", "SQL"}

// barSeen is what Chromium finds on a Spark page served through the gateway.
type barSeen struct {
	Bar       bool    `json:"bar"`       // the body's first element is the gateway's bar
	Home      string  `json:"home"`      // its link to the index
	Diag      string  `json:"diag"`      // its link to the app's diagnosis
	BarHeight float64 `json:"barH"`      // px
	BarBG     string  `json:"barBg"`     // computed background: proves bar.css applied
	NavTop    float64 `json:"navTop"`    // Spark's navbar, px from the top
	NavHeight float64 `json:"navH"`      // px
	Links     int     `json:"links"`     // the navbar's tab links
	Clickable int     `json:"clickable"` // of them, those that are the topmost element at their centre
	Active    string  `json:"active"`    // the navbar's active tab
}

const barProbe = `(() => {
	const bar = document.body.firstElementChild;
	const isBar = !!bar && bar.classList.contains("sparkgate-bar");
	const a = (sel) => { const e = isBar && bar.querySelector(sel); return e ? e.getAttribute("href") : ""; };
	const nav = document.querySelector("nav.navbar");
	const links = nav ? [...nav.querySelectorAll("a.nav-link")] : [];
	const clickable = links.filter(l => {
		const r = l.getBoundingClientRect();
		if (r.width === 0 || r.height === 0) return false;
		const e = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
		return e === l || l.contains(e);
	}).length;
	const act = nav && nav.querySelector(".nav-item.active a, a.nav-link.active");
	return JSON.stringify({
		bar: isBar, home: a("a.sg-home"), diag: a("a.sg-diag"),
		barH: isBar ? bar.getBoundingClientRect().height : 0,
		barBg: isBar ? getComputedStyle(bar).backgroundColor : "",
		navTop: nav ? nav.getBoundingClientRect().top : -1,
		navH: nav ? nav.getBoundingClientRect().height : 0,
		links: links.length, clickable: clickable, active: act ? act.textContent.trim() : "",
	});
})()`

// barBackground is .sparkgate-bar's background in bar.css (#1f2933).
const barBackground = "rgb(31, 41, 51)"

// openWatched opens pageURL in the browser, waits until it has loaded and
// its scripts had time to fill Spark's tables, and returns what barProbe
// sees, a screenshot of the window, and every script exception, console
// error and browser log error (failed loads, CSP refusals) while it loaded.
func (b *Browser) openWatched(pageURL string) (barSeen, []byte, []string, error) {
	var seen barSeen
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	var mu sync.Mutex
	var errs []string
	lctx, lcancel := context.WithCancel(ctx)
	defer lcancel()
	err := chromedp.Listen(lctx, func(ev any) {
		var msg string
		switch e := ev.(type) {
		case *runtime.EventExceptionThrown:
			msg = "exception: " + e.ExceptionDetails.Text
			if e.ExceptionDetails.Exception != nil {
				msg += " " + e.ExceptionDetails.Exception.Description
			}
		case *runtime.EventConsoleAPICalled:
			if e.Type != runtime.ConsoleAPICalledTypeError {
				return
			}
			msg = "console.error:"
			for _, a := range e.Args {
				msg += " " + string(a.Value) + a.Description
			}
		case *cdplog.EventEntryAdded:
			if e.Entry.Level != cdplog.EntryLevelError {
				return
			}
			msg = "log: " + e.Entry.Text + " " + e.Entry.URL
		default:
			return
		}
		mu.Lock()
		errs = append(errs, msg)
		mu.Unlock()
	})
	if err != nil {
		return seen, nil, nil, err
	}
	err = chromedp.Do(ctx, func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, t, cdplog.Enable, cdp.Empty{})
		return chromedp.Void{}, err
	}, chromedp.EmulateViewport(1280, 800), chromedp.Navigate(pageURL))
	if err != nil {
		return seen, nil, nil, fmt.Errorf("navigating to %s: %w", pageURL, err)
	}
	if _, err := waitEval(ctx, `document.readyState === "complete" ? "yes" : ""`); err != nil {
		return seen, nil, nil, fmt.Errorf("loading %s: %w", pageURL, err)
	}
	// Spark's executors and storage tables, the timeline and the DAG are
	// drawn by scripts after load, some from REST calls.
	if err := chromedp.Do(ctx, chromedp.Sleep(2*time.Second)); err != nil {
		return seen, nil, nil, err
	}
	js, err := chromedp.Run(ctx, chromedp.Evaluate[string](barProbe))
	if err != nil {
		return seen, nil, nil, fmt.Errorf("probing %s: %w", pageURL, err)
	}
	if err := json.Unmarshal([]byte(js), &seen); err != nil {
		return seen, nil, nil, err
	}
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		return seen, nil, nil, fmt.Errorf("screenshot of %s: %w", pageURL, err)
	}
	mu.Lock()
	defer mu.Unlock()
	return seen, png, append([]string(nil), errs...), nil
}

// checkBackBar opens every tab of a live app through the gateway in
// Chromium: each has the bar first in <body>, styled by bar.css and
// linking the index and the app's diagnosis; Spark's navbar sits below it
// with every tab link visible and on top; no script error, console error
// or failed load; a screenshot per tab in e2e/out/. The executors table
// still fills (Spark's scripts and REST calls work), a click on the
// navbar's Stages tab opens it, and a click on the bar opens the index.
// directURL is the driver's own UI, whose console errors are logged for
// comparison when the gateway's page has any.
func (s *suite) checkBackBar(t *testing.T, gwURL string, jar []*http.Cookie, appID, directURL, version string) {
	b, err := NewBrowser(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.SetCookies(gwURL, jar); err != nil {
		t.Fatal(err)
	}
	for _, tab := range barTabs {
		page := gwURL + "/app/" + appID + "/" + tab + "/"
		seen, png, errs, err := b.openWatched(page)
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(s.outDir, fmt.Sprintf("backbar-%s-%s.png", version, strings.ToLower(tab)))
		if err := os.WriteFile(file, png, 0o644); err != nil {
			t.Error(err)
		}
		t.Logf("%s: %+v", tab, seen)
		if !seen.Bar || seen.Home != "/" || seen.Diag != "/app/"+appID+"/_/diagnosis" || seen.BarBG != barBackground ||
			seen.BarHeight < 12 || seen.BarHeight > 40 {
			t.Errorf("%s tab: bar %+v; want it first in <body>, styled by bar.css, linking / and the diagnosis", tab, seen)
		}
		if seen.NavHeight == 0 || seen.NavTop < seen.BarHeight-1 || seen.Links < 5 || seen.Clickable != seen.Links {
			t.Errorf("%s tab: Spark's navbar %+v; want it below the bar with all %d tab links on top", tab, seen, seen.Links)
		}
		if len(errs) > 0 {
			_, _, direct, _ := b.openWatched(directURL + "/" + tab + "/")
			t.Errorf("%s tab through the gateway: %d errors %q (the driver's own page: %q)", tab, len(errs), errs, direct)
		}
	}
	ctx, cancel := context.WithTimeout(b.ctx, 90*time.Second)
	defer cancel()
	// Spark's scripts still fill the executors table through the gateway.
	if n, _, err := b.TableRows(gwURL+"/app/"+appID+"/executors/", "#active-executors-table tbody tr", 30*time.Second); err != nil || n == 0 {
		t.Errorf("executors table through the gateway with the bar: %d rows, %v", n, err)
	}
	click := func(from, sel, wantSuffix string) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Navigate(from), chromedp.WaitVisible(sel), chromedp.Click(sel)); err != nil {
			t.Errorf("clicking %s on %s: %v", sel, from, err)
			return
		}
		loc, err := waitEval(ctx, `document.readyState === "complete" && location.href !== `+jsString(from)+` ? location.href : ""`)
		if err != nil || !strings.HasSuffix(loc, wantSuffix) {
			t.Errorf("clicking %s on %s led to %q (%v); want …%s", sel, from, loc, err, wantSuffix)
		}
	}
	jobs := gwURL + "/app/" + appID + "/jobs/"
	click(jobs, `nav.navbar a.nav-link[href$="/stages/"]`, "/app/"+appID+"/stages/")
	click(jobs, `.sparkgate-bar a.sg-home`, gwURL+"/")
	click(jobs, `.sparkgate-bar a.sg-diag`, "/app/"+appID+"/_/diagnosis")
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
