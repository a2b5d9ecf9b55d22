//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// appDomain is the app domain of TestAppOrigins; Chromium maps every name
// under it to loopback (--host-resolver-rules), the Go client dials
// loopback for it, as wildcard DNS would.
const appDomain = "apps.test"

// TestAppOrigins runs a gateway with proxy.app_domain against two real
// drivers A and B (light, one Spark version) and a History Server, and
// proves per-app origins in Chromium: from the index's link the browser
// lands on A's own host through the one-time hand-off; a script served on
// A's host reads A's REST API but neither B's pages nor the gateway's
// index (by fetch or through a window it opens); every page and link of A
// on its host works (the crawler, no broken link, no redirect leaving it),
// its JS tables fill; once A has finished, its host leads to the History
// Server's view.
func TestAppOrigins(t *testing.T) {
	s := newSuite(t)
	s.requireGateway(t)
	home := s.sparkHomes(t)[0]
	ctx := ctxFor(t, 8*time.Minute)
	dir := s.freshDir(t, "app-origins")
	events, logs, work := filepath.Join(dir, "events"), filepath.Join(dir, "driver-logs"), filepath.Join(dir, "work")
	for _, d := range []string{events, logs, work, filepath.Join(dir, "gateway")} {
		if err := mkdir(d); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Now()
	var wg sync.WaitGroup
	drivers := make([]*Driver, 2)
	errs := make([]error, 2)
	ids := &uniqueIDs{taken: map[string]bool{}}
	for i, name := range []string{"origins-a", "origins-b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := startUniqueDriver(ctx, ids, func() (*Driver, error) {
				_ = os.Remove(filepath.Join(logs, name+".log"))
				return StartDriver(ctx, s.root, home, DriverOptions{Name: name, EventDir: events, LogDir: logs, WorkDir: work, Light: true})
			})
			if err == nil {
				drivers[i] = d
				err = d.WaitReady(ctx)
			}
			errs[i] = err
		}()
	}
	t.Cleanup(func() {
		for _, d := range drivers {
			if d != nil {
				d.Kill()
			}
		}
	})
	hs, err := StartHistoryServer(ctx, s.root, home, events, filepath.Join(dir, "history"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hs.Stop() })
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	a, b := drivers[0], drivers[1]
	gw, c := s.localGateway(ctx, t, filepath.Join(dir, "gateway"), GatewayOptions{
		LogGlobs: []string{filepath.Join(logs, "*.log")}, HistoryURL: hs.URL,
		Proxy: map[string]any{"kill": "deny", "app_domain": appDomain},
	})
	for _, d := range drivers {
		if _, _, err := gw.WaitListed(ctx, c, func(id string) bool { return id == d.AppID }); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("drivers %s (A) and %s (B), History Server and gateway up after %v", a.AppID, b.AppID, time.Since(t0).Round(time.Millisecond))
	gwURL, _ := url.Parse(gw.URL)
	hostOf := func(d *Driver) string { return d.AppID + "." + appDomain + ":" + gwURL.Port() }

	// A Go client that dials loopback for the app domain, with the main
	// origin's session in its jar.
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	jar.SetCookies(gwURL, c.Jar.Cookies(gwURL))
	appClient := NoRedirectClient(jar)
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if h, p, err := net.SplitHostPort(addr); err == nil && strings.HasSuffix(h, "."+appDomain) {
			addr = net.JoinHostPort("127.0.0.1", p)
		}
		return dialer.DialContext(ctx, network, addr)
	}
	appClient.Transport = tr

	t.Run("hand-off", func(t *testing.T) {
		// The main origin's bookmark hands over to A's host once.
		final, hops, err := follow(ctx, appClient, gw.URL+"/app/"+a.AppID+"/jobs/")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("main /app/%s/jobs/ → %s", a.AppID, strings.Join(hops, " → "))
		if want := "http://" + hostOf(a) + "/jobs/"; final != want {
			t.Fatalf("bookmark ended on %s; want %s", final, want)
		}
		hostURL, _ := url.Parse("http://" + hostOf(a) + "/")
		for _, ck := range jar.Cookies(hostURL) {
			if strings.HasSuffix(ck.Name, "_session") {
				t.Errorf("A's host receives the main origin's session cookie %s", ck.Name)
			}
		}
	})

	t.Run("crawl", func(t *testing.T) {
		rep, err := Crawl(ctx, appClient, "http://"+hostOf(a)+"/", CrawlOptions{Scope: []string{"/"}, Needles: a.HostPorts(),
			// The back bar leads to the index and the diagnosis on the main origin.
			Allow: []string{gw.URL}})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("crawl of A's host: %d pages, truncated=%v, broken=%d, leaks=%d, kill links=%d, offsite=%d",
			rep.Pages, rep.Truncated, len(rep.Broken), len(rep.Leaks), len(rep.KillLinks), len(rep.Offsite))
		requireComplete(t, rep)
		for _, l := range append(append(rep.Broken, rep.Leaks...), rep.KillLinks...) {
			t.Errorf("A's host: %s", l)
		}
		if rep.Pages < 30 {
			t.Errorf("crawl of A's host reached %d pages; want the whole UI", rep.Pages)
		}
	})

	br, err := NewBrowser(ctx, t.TempDir(), chromedp.Flag("host-resolver-rules", "MAP *."+appDomain+" 127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	defer br.Close()
	if err := br.SetCookies(gw.URL, c.Jar.Cookies(gwURL)); err != nil {
		t.Fatal(err)
	}

	t.Run("browser", func(t *testing.T) {
		// From the main origin's bookmark to A's host, where Spark's JS
		// fills the executors table from A's REST API; the same for B.
		for _, d := range drivers {
			n, loc, err := br.TableRows(gw.URL+"/app/"+d.AppID+"/executors/", "#active-executors-table tbody tr", 60*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("chromium: %s's executors table has %d rows at %s", d.AppID, n, loc)
			if want := "http://" + hostOf(d) + "/executors/"; loc != want {
				t.Errorf("executors page of %s at %s; want %s", d.AppID, loc, want)
			}
		}
	})

	t.Run("isolation", func(t *testing.T) {
		bctx, cancel := context.WithTimeout(br.ctx, 90*time.Second)
		defer cancel()
		if err := chromedp.Do(bctx, chromedp.Navigate(gw.URL+"/app/"+a.AppID+"/jobs/")); err != nil {
			t.Fatal(err)
		}
		if _, err := waitEval(bctx, `document.readyState === "complete" && location.host === `+strconv.Quote(hostOf(a))+` ? "yes" : ""`); err != nil {
			t.Fatal(err)
		}
		// What a script served by A can do: fetch its own REST API, and
		// try B's pages and the gateway's index, as the viewer.
		probe := func(u string) string {
			js := `fetch(` + strconv.Quote(u) + `, {credentials: "include"}).then(r => r.text().then(t => "read " + r.status + " " + t.slice(0, 80))).catch(e => "blocked " + e.name)`
			out, err := chromedp.Run(bctx, chromedp.Evaluate[string](js, chromedp.EvalAwaitPromise))
			if err != nil {
				t.Fatalf("fetch %s from A: %v", u, err)
			}
			return out
		}
		own := probe("/api/v1/applications/" + a.AppID + "/jobs")
		otherPage := probe("http://" + hostOf(b) + "/jobs/")
		otherREST := probe("http://" + hostOf(b) + "/api/v1/applications/" + b.AppID + "/jobs")
		index := probe(gw.URL + "/")
		mainREST := probe(gw.URL + "/api/v1/applications")
		t.Logf("script on A: own REST %q; B's page %q; B's REST %q; index %q; main REST %q", own, otherPage, otherREST, index, mainREST)
		if !strings.HasPrefix(own, "read 200 [") {
			t.Errorf("A's own REST API from A's page: %q; want 200 JSON", own)
		}
		for what, got := range map[string]string{"B's page": otherPage, "B's REST": otherREST, "the index": index, "the main REST list": mainREST} {
			if !strings.HasPrefix(got, "blocked") {
				t.Errorf("a script on A read %s: %q; want blocked", what, got)
			}
		}
		// Through a window it opens (with a click's user activation).
		gesture := func(p *runtime.EvaluateParams) { p.UserGesture = ptrTo(true) }
		for _, u := range []string{"http://" + hostOf(b) + "/jobs/", gw.URL + "/"} {
			if _, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`(() => { window.__e2eW = window.open(`+strconv.Quote(u)+`); return !!window.__e2eW; })()`, gesture)); err != nil {
				t.Fatal(err)
			}
			seen, err := waitEval(bctx, `(() => { const w = window.__e2eW;
				try { const t = w.document && w.document.body ? w.document.body.innerText : ""; if (t !== "") return "read: " + t.slice(0, 80); }
				catch (e) { return "throws: " + e.name; }
				return w.closed ? "closed" : ""; })()`)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("script on A opening %s: %q", u, seen)
			if strings.HasPrefix(seen, "read:") {
				t.Errorf("a script on A read %s through window.open: %q", u, seen)
			}
			_, _ = chromedp.Run(bctx, chromedp.Evaluate[bool](`(() => { try { window.__e2eW.close(); } catch (e) {} return true; })()`))
		}
		// B itself still works for the viewer, on its own host.
		if err := chromedp.Do(bctx, chromedp.Navigate(gw.URL+"/app/"+b.AppID+"/jobs/")); err != nil {
			t.Fatal(err)
		}
		text, err := waitEval(bctx, `document.readyState === "complete" && location.host === `+strconv.Quote(hostOf(b))+` && document.body.innerText.includes("Completed Jobs") ? document.body.innerText : ""`)
		if err != nil {
			t.Fatalf("B's jobs page on its host: %v", err)
		}
		t.Logf("chromium: B's jobs page on %s shows %q", hostOf(b), firstLine(text, "Completed Jobs"))
	})

	t.Run("history fallback", func(t *testing.T) {
		if err := a.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		if err := hs.WaitApp(ctx, a.AppID, true); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(60 * time.Second)
		for {
			final, hops, err := follow(ctx, appClient, "http://"+hostOf(a)+"/jobs/")
			if err == nil && strings.Contains(final, "/hs/local/history/"+a.AppID) {
				t.Logf("A's host after A finished: %s", strings.Join(hops, " → "))
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("A's host after A finished: %v, %v; want the History Server's view on the main origin", hops, err)
			}
			time.Sleep(time.Second)
		}
	})
}

// follow GETs u with c (which must not follow redirects), following up to
// 10 redirects itself; it returns the URL that answered 200 and the hops.
func follow(ctx context.Context, c *http.Client, u string) (string, []string, error) {
	hops := []string{u}
	for range 10 {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return "", hops, err
		}
		resp, err := c.Do(req)
		if err != nil {
			return "", hops, err
		}
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusOK:
			return u, hops, nil
		case resp.StatusCode >= 300 && resp.StatusCode < 400:
			next, err := resp.Request.URL.Parse(resp.Header.Get("Location"))
			if err != nil {
				return "", hops, err
			}
			u = next.String()
			hops = append(hops, u)
		default:
			return "", hops, fmt.Errorf("GET %s: %s", u, resp.Status)
		}
	}
	return "", hops, fmt.Errorf("more than 10 redirects")
}
