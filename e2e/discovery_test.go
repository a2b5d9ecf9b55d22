//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestDiscovery proves discovery against real Spark: the time from the
// SparkUI log line to a routable app (per version), a standalone master as
// the only source, a port probe as the only source, and the no-config local
// default. It uses small drivers (e2e/spark/small.py), not app.py.
func TestDiscovery(t *testing.T) {
	s := newSuite(t)
	s.requireGateway(t)
	homes := s.sparkHomes(t)
	for _, home := range homes {
		t.Run("routable/"+home.Version, func(t *testing.T) { s.timeRoutable(t, home) })
	}
	home := homes[0] // the oldest: 3.5.9 unless narrowed
	t.Run("standalone/"+home.Version, func(t *testing.T) { s.checkStandalone(t, home) })
	t.Run("probe+noconfig/"+home.Version, func(t *testing.T) { s.checkProbeAndNoConfig(t, home) })
	t.Run("port-taken-over/"+home.Version, func(t *testing.T) { s.checkPortTakenOver(t, home) })
}

// checkPortTakenOver: driver A on port P, found through a static entry by
// a gateway whose discovery rounds (and so liveness checks) are an hour
// apart. A stops, and driver B, another app, takes P, as the next app on a
// host takes 4040. A's bookmark must never show B's pages: the gateway
// confirms the address before it uses a new connection to it, B answers
// with its own id, the request gets a page that reloads itself, and A ends
// (its bookmark then finds no running driver).
func (s *suite) checkPortTakenOver(t *testing.T, home SparkHome) {
	ctx := ctxFor(t, 4*time.Minute)
	dir := s.freshDir(t, "discovery-takeover-"+home.Version)
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	ids := &uniqueIDs{taken: map[string]bool{}}
	start := func(name string) *Driver {
		t.Helper()
		d, err := startUniqueDriver(ctx, ids, func() (*Driver, error) {
			return StartSmallDriver(ctx, s.root, home, SmallOptions{
				Name: name, LogPath: filepath.Join(dir, name+".log"), WorkDir: filepath.Join(dir, name),
				Confs: map[string]string{"spark.ui.port": strconv.Itoa(port), "spark.port.maxRetries": "0"},
			})
		})
		if err != nil {
			t.Fatalf("driver %s on port %d: %v", name, port, err)
		}
		t.Cleanup(d.Kill)
		return d
	}
	a := start("takeover-a")
	if err := mkdir(filepath.Join(dir, "gateway")); err != nil {
		t.Fatal(err)
	}
	gw, c := s.localGateway(ctx, t, filepath.Join(dir, "gateway"), GatewayOptions{Discovery: map[string]any{
		"interval": "1h",
		"static":   []string{fmt.Sprintf("http://127.0.0.1:%d", port)},
	}})
	if _, _, err := gw.WaitListed(ctx, c, func(id string) bool { return id == a.AppID }); err != nil {
		t.Fatalf("%v\n%s", err, gw.Watch.Tail(30))
	}
	page := gw.URL + "/app/" + a.AppID + "/jobs/"
	if body, err := getBody(ctx, c, page); err != nil || !strings.Contains(body, "takeover-a") {
		t.Fatalf("A's jobs page through the gateway: %v\n%.500s", err, body)
	}
	// No request to A's bookmark from here until B holds the port: a
	// refused one would have discovery check A at once, and the test would
	// not reach the new connection to B.
	if err := a.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	b := start("takeover-b")
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, page, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(body), b.AppID) || strings.Contains(string(body), "takeover-b") {
			t.Fatalf("A's bookmark served B's page (%d):\n%.1000s", resp.StatusCode, body)
		}
		if resp.StatusCode == http.StatusOK {
			t.Fatalf("A's bookmark = 200 with A stopped and B on its port:\n%.1000s", body)
		}
		t.Logf("A's bookmark with B on its port: %d %s", resp.StatusCode, resp.Header.Get("Retry-After"))
		apps, err := gw.Apps(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		ended := false
		for _, app := range apps {
			ended = ended || app.ID == a.AppID && len(app.Attempts) > 0 && app.Attempts[0].Completed
		}
		if ended {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("A never ended after B took its port\n%s", gw.Watch.Tail(30))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// timeRoutable measures, for a driver with spark.ui.port=0 found through
// its log: (a) when the SparkUI port line was written, (b) when the
// driver's own /api/v1/applications first answered JSON, (c) when the
// gateway first routed /app/<id>/jobs/ with 200. It records the three
// differences and asserts no bound on them.
func (s *suite) timeRoutable(t *testing.T, home SparkHome) {
	ctx := ctxFor(t, 3*time.Minute)
	dir := s.freshDir(t, "discovery-routable-"+home.Version)
	logs := filepath.Join(dir, "driver-logs")
	gdir := filepath.Join(dir, "gateway")
	for _, d := range []string{logs, gdir} {
		if err := mkdir(d); err != nil {
			t.Fatal(err)
		}
	}
	gw, gwClient := s.localGateway(ctx, t, gdir, GatewayOptions{LogGlobs: []string{filepath.Join(logs, "*.log")}})

	// (c) from before the driver starts: the gateway knows no other app.
	routedCh := make(chan stamp, 1)
	go func() { routedCh <- pollRoutable(ctx, gw, gwClient) }()

	// (b) from the port line on, polled concurrently (a slow answer
	// must not delay the next try).
	servingCh := make(chan stamp, 1)
	name := "routable-" + strings.ReplaceAll(home.Version, ".", "_")
	d, err := StartSmallDriver(ctx, s.root, home, SmallOptions{
		Name: name, LogPath: filepath.Join(logs, name+".log"), WorkDir: filepath.Join(dir, "driver"),
		OnUIPort: func(port int, _ time.Time) {
			go func() { servingCh <- pollDriverJSON(ctx, fmt.Sprintf("http://127.0.0.1:%d/api/v1/applications", port)) }()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Kill)
	defer func() { _ = d.Stop(ctx) }()

	serving, routed := <-servingCh, <-routedCh
	if serving.err != nil {
		t.Fatalf("driver REST API: %v", serving.err)
	}
	if routed.err != nil {
		t.Fatalf("gateway: %v\n%s", routed.err, gw.Watch.Tail(30))
	}
	if routed.id != d.AppID {
		t.Fatalf("gateway routed %q; want %q", routed.id, d.AppID)
	}
	a := d.UILineAt
	toRoutable, sparkDelay, overhead := routed.at.Sub(a), serving.at.Sub(a), routed.at.Sub(serving.at)
	t.Logf("Spark %s, app %s: routable %v after the SparkUI line; the driver's own API answered JSON after %v; gateway overhead %v (listed after %v)",
		home.Version, d.AppID, toRoutable.Round(time.Millisecond), sparkDelay.Round(time.Millisecond),
		overhead.Round(time.Millisecond), routed.listedAt.Sub(a).Round(time.Millisecond))
	v := home.Version
	_ = RecordFigure(s.outDir, "routable_after_ui_line_"+v, toRoutable)
	_ = RecordFigure(s.outDir, "spark_api_after_ui_line_"+v, sparkDelay)
	_ = RecordFigure(s.outDir, "gateway_overhead_"+v, overhead)
	if m, _, ok := gw.Watch.Find(reFoundAfter); ok {
		found, _ := time.Parse(time.RFC3339Nano, m[1])
		t.Logf("gateway log: driver found %v after the SparkUI line, %v after the driver's API answered; the last verification took %s in %s tries",
			found.Sub(a).Round(time.Millisecond), found.Sub(serving.at).Round(time.Millisecond), m[3], m[4])
		_ = RecordFigure(s.outDir, "gateway_found_after_driver_api_"+v, found.Sub(serving.at))
	}
	// Cross-check (c) with the gateway's own clock: when its access log
	// says the first /jobs/ 200 was sent (the poller may run late on a
	// loaded machine).
	reJobs := regexp.MustCompile(`^(\S+)\s.*"path":\s*"/app/` + regexp.QuoteMeta(d.AppID) + `/jobs/".*"status":\s*200.*"duration":\s*"([^"]+)"`)
	wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if m, _, err := gw.Watch.WaitFor(wctx, reJobs, nil); err == nil {
		if at, err := time.Parse(time.RFC3339Nano, m[1]); err == nil {
			t.Logf("gateway access log: first /jobs/ 200 sent %v after the SparkUI line (poller saw it after %v); that request took %s (mostly the driver rendering its first page)",
				at.Sub(a).Round(time.Millisecond), toRoutable.Round(time.Millisecond), m[2])
			_ = RecordFigure(s.outDir, "first_jobs_request_"+v, m[2])
			_ = RecordFigure(s.outDir, "routable_after_ui_line_gateway_clock_"+v, at.Sub(a))
		}
	} else {
		t.Logf("no access log line for the first /jobs/ 200: %v", err)
	}
}

var reFoundAfter = regexp.MustCompile(`^(\S+)\s.*driver found.*"since_log_line":\s*"?([0-9.]+[a-zµ]+)"?.*"verify_took":\s*"?([0-9.]+[a-zµ]+)"?.*"tries":\s*(\d+)`)

// stamp is when a poller first saw what it waited for.
type stamp struct {
	at, listedAt time.Time
	id           string
	err          error
}

// pollDriverJSON GETs url every 25 ms, each try in its own goroutine with a
// 3 s timeout, and returns when the first 200 JSON array arrived.
func pollDriverJSON(ctx context.Context, u string) stamp {
	c := &http.Client{Timeout: 3 * time.Second}
	got := make(chan time.Time, 1)
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	sem := make(chan struct{}, 8)
	for {
		select {
		case at := <-got:
			return stamp{at: at}
		case <-ctx.Done():
			return stamp{err: fmt.Errorf("%s never answered JSON: %w", u, ctx.Err())}
		case <-tick.C:
		}
		select {
		case sem <- struct{}{}:
		default:
			continue // enough tries in flight
		}
		go func() {
			defer func() { <-sem }()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
			if err != nil {
				return
			}
			resp, err := c.Do(req)
			if err != nil {
				return
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			if resp.StatusCode == http.StatusOK && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") &&
				strings.HasPrefix(strings.TrimSpace(string(body)), "[") {
				select {
				case got <- time.Now():
				default:
				}
			}
		}()
	}
}

// pollRoutable polls the gateway's app list every 25 ms; once an app is
// listed it GETs /app/<id>/jobs/ every 25 ms until that answers 200.
func pollRoutable(ctx context.Context, gw *Gateway, c *http.Client) stamp {
	var st stamp
	var last error
	for {
		if st.id == "" {
			apps, err := gw.Apps(ctx, c)
			last = err
			if err == nil && len(apps) > 0 {
				st.id, st.listedAt = apps[0].ID, time.Now()
			}
		}
		if st.id != "" {
			status, err := getStatus(ctx, c, http.MethodGet, gw.URL+"/app/"+st.id+"/jobs/", nil)
			last = err
			if err == nil && status == http.StatusOK {
				st.at = time.Now()
				return st
			}
			if err == nil {
				last = fmt.Errorf("/app/%s/jobs/ answered %d", st.id, status)
			}
		}
		select {
		case <-ctx.Done():
			st.err = fmt.Errorf("never routable (last error: %s): %w", lastErr(last), ctx.Err())
			return st
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// getStatus sends one request and returns the status, reading the body away.
func getStatus(ctx context.Context, c *http.Client, method, u string, form url.Values) (int, error) {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(rctx, method, u, body)
	if err != nil {
		return 0, fmt.Errorf("building request: %w", err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", method, u, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<20))
	resp.Body.Close()
	return resp.StatusCode, nil
}

// getBody GETs u and returns the body of a 200 answer.
func getBody(ctx context.Context, c *http.Client, u string) (string, error) {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, u, nil)
	if err != nil {
		return "", fmt.Errorf("building request: %w", err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", fmt.Errorf("GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return string(b), nil
}

// checkStandalone submits a small app to a real standalone master and
// worker; a gateway whose only source is the master must find it (app-…),
// route it, crawl it without a broken link, and refuse the master's kill
// endpoints under the app's prefix.
func (s *suite) checkStandalone(t *testing.T, home SparkHome) {
	ctx := ctxFor(t, 4*time.Minute)
	dir := s.freshDir(t, "discovery-standalone-"+home.Version)
	t0 := time.Now()
	sa, err := StartStandalone(ctx, s.root, home, filepath.Join(dir, "cluster"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sa.Stop)
	t.Logf("standalone master %s (web %s) and worker up in %v", sa.MasterURL, sa.WebURL, time.Since(t0).Round(time.Millisecond))

	gdir := filepath.Join(dir, "gateway")
	if err := mkdir(gdir); err != nil {
		t.Fatal(err)
	}
	gw, c := s.localGateway(ctx, t, gdir, GatewayOptions{Discovery: map[string]any{
		"interval":   "1s",
		"standalone": []any{map[string]any{"url": sa.WebURL}},
	}})

	name := "standalone-" + strings.ReplaceAll(home.Version, ".", "_")
	d, err := StartSmallDriver(ctx, s.root, home, SmallOptions{
		Name: name, LogPath: filepath.Join(dir, name+".log"), WorkDir: filepath.Join(dir, "driver"),
		Master: sa.MasterURL,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Kill)
	defer func() { _ = d.Stop(ctx) }()
	if !strings.HasPrefix(d.AppID, "app-") {
		t.Fatalf("app id %q; want a standalone app-… id", d.AppID)
	}
	id, at, err := gw.WaitListed(ctx, c, func(id string) bool { return id == d.AppID })
	if err != nil {
		t.Fatalf("%v\n%s", err, gw.Watch.Tail(30))
	}
	t.Logf("gateway (master source only) listed %s %v after the SparkUI line", id, at.Sub(d.UILineAt).Round(time.Millisecond))
	_ = RecordFigure(s.outDir, "standalone_listed_after_ui_line_"+home.Version, at.Sub(d.UILineAt))
	if _, _, err := d.Watch.WaitFor(ctx, reReady, d.Proc.Exited); err != nil {
		t.Fatal(err)
	}

	prefix := "/app/" + id + "/"
	if st, err := getStatus(ctx, c, http.MethodGet, gw.URL+prefix+"jobs/", nil); err != nil || st != http.StatusOK {
		t.Fatalf("GET %sjobs/ = %d, %v; want 200", prefix, st, err)
	}
	mu, _ := url.Parse(sa.WebURL)
	rep, err := Crawl(ctx, c, gw.URL+prefix+"jobs/", CrawlOptions{
		MaxPages: 600,
		Scope:    []string{prefix},
		Skip:     skipLogout,
		Needles:  append(d.HostPorts(), mu.Host),
	})
	if err != nil {
		t.Fatal(err)
	}
	logCrawl(t, "standalone gateway crawl", rep)
	requireCleanCrawl(t, rep, 10)

	// The master's kill endpoints (MasterWebUI /app/kill, /driver/kill,
	// /workers/kill) must not be reachable under the app's prefix, in any
	// method or spelling.
	form := url.Values{"id": {id}, "terminate": {"true"}}
	for _, p := range []string{"app/kill/", "app/kill", "driver/kill/", "workers/kill/", "app/KILL/", "app/kill/?id=" + id + "&terminate=true"} {
		for _, m := range []string{http.MethodGet, http.MethodPost} {
			var f url.Values
			if m == http.MethodPost {
				f = form
			}
			st, err := getStatus(ctx, c, m, gw.URL+prefix+p, f)
			if err != nil {
				t.Errorf("%s %s%s: %v", m, prefix, p, err)
				continue
			}
			if st != http.StatusForbidden && st != http.StatusMethodNotAllowed {
				t.Errorf("%s %s%s = %d; want 403 or 405", m, prefix, p, st)
			}
		}
	}
	// Nothing was killed: the master still has the app active.
	ms, err := sa.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	active := false
	for _, a := range ms.ActiveApps {
		active = active || a.ID == id
	}
	if !active {
		t.Errorf("master no longer lists %s as active after the refused kill requests", id)
	}
}

// checkProbeAndNoConfig runs two drivers: P on a free port in 4040-4056
// (its log elsewhere) and L on a random port logging into SPARK_LOG_DIR.
// A gateway with only a probe finds P and marks it finished after it
// stops; sparkgate with no config at all listens on loopback only, prints
// the login URL, refuses requests without it, and finds L through the log
// directory and P through its default probe.
func (s *suite) checkProbeAndNoConfig(t *testing.T, home SparkHome) {
	ctx := ctxFor(t, 4*time.Minute)
	dir := s.freshDir(t, "discovery-probe-"+home.Version)
	sparkLogs := filepath.Join(dir, "spark-logs")
	for _, d := range []string{sparkLogs, filepath.Join(dir, "probe-gateway"), filepath.Join(dir, "noconfig")} {
		if err := mkdir(d); err != nil {
			t.Fatal(err)
		}
	}
	// The probe's and the no-config gateway's default range is Spark's
	// default UI port and its retries: with every one of them taken, the
	// test cannot show a probe finding a driver, and skipping would let it
	// pass unchecked. Fail and name who holds them, so they can be stopped.
	port, err := freePortIn(4040, 4056)
	if err != nil {
		owners := portOwners(4040, 4056)
		var held []string
		for p := 4040; p <= 4056; p++ {
			if o, ok := owners[p]; ok {
				held = append(held, fmt.Sprintf("%d: %s", p, o))
			}
		}
		t.Fatalf("%v; stop what holds Spark's default UI ports:\n%s", err, strings.Join(held, "\n"))
	}

	pgw, pc := s.localGateway(ctx, t, filepath.Join(dir, "probe-gateway"), GatewayOptions{Discovery: map[string]any{
		"interval": "1s",
		"probe":    []any{map[string]any{"hosts": []string{"127.0.0.1"}, "ports": "4040-4056"}},
	}})

	ngw, err := startNoConfigGateway(ctx, s.gwBin, filepath.Join(dir, "noconfig"), sparkLogs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ngw.Stop)

	// Both drivers at once (two cores; they mostly wait on the JVM), with
	// distinct app ids.
	var wg sync.WaitGroup
	var dp, dl *Driver
	var errP, errL error
	ids := &uniqueIDs{taken: map[string]bool{}}
	small := func(opt SmallOptions) (*Driver, error) {
		return startUniqueDriver(ctx, ids, func() (*Driver, error) {
			_ = os.Remove(opt.LogPath) // a fresh log each try
			return StartSmallDriver(ctx, s.root, home, opt)
		})
	}
	wg.Add(2)
	go func() {
		defer wg.Done()
		dp, errP = small(SmallOptions{
			Name: "probed", LogPath: filepath.Join(dir, "probed.log"), WorkDir: filepath.Join(dir, "driver-p"),
			Confs: map[string]string{"spark.ui.port": strconv.Itoa(port)},
		})
	}()
	go func() {
		defer wg.Done()
		dl, errL = small(SmallOptions{
			Name: "logged", LogPath: filepath.Join(sparkLogs, "logged.log"), WorkDir: filepath.Join(dir, "driver-l"),
		})
	}()
	wg.Wait()
	for _, d := range []*Driver{dp, dl} {
		if d != nil {
			t.Cleanup(d.Kill)
		}
	}
	if errP != nil || errL != nil {
		t.Fatalf("drivers: %v; %v", errP, errL)
	}
	if dp.UIPort != port {
		t.Fatalf("probed driver's UI is on %d; want %d (port taken meanwhile?)", dp.UIPort, port)
	}

	t.Run("probe", func(t *testing.T) {
		id, at, err := pgw.WaitListed(ctx, pc, func(id string) bool { return id == dp.AppID })
		if err != nil {
			t.Fatalf("%v\n%s", err, pgw.Watch.Tail(30))
		}
		t.Logf("probe gateway listed %s (port %d) %v after the SparkUI line", id, port, at.Sub(dp.UILineAt).Round(time.Millisecond))
		if st, err := getStatus(ctx, pc, http.MethodGet, pgw.URL+"/app/"+id+"/jobs/", nil); err != nil || st != http.StatusOK {
			t.Errorf("GET /app/%s/jobs/ = %d, %v; want 200", id, st, err)
		}
		apps, err := pgw.Apps(ctx, pc)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range apps {
			if a.ID == dl.AppID {
				t.Errorf("probe-only gateway lists %s, whose UI port %d is outside the probe range", a.ID, dl.UIPort)
			}
		}
	})

	t.Run("noconfig", func(t *testing.T) {
		checkNoConfig(ctx, t, ngw, dp, dl, port)
		checkOutageLoggedOnce(t, ngw)
	})

	t.Run("probe/finished", func(t *testing.T) {
		if err := dp.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		stopped := time.Now()
		for {
			apps, err := pgw.Apps(ctx, pc)
			done := false
			for _, a := range apps {
				done = done || (a.ID == dp.AppID && len(a.Attempts) > 0 && a.Attempts[0].Completed)
			}
			if done {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("probe gateway never marked %s completed (last error %v)\n%s", dp.AppID, err, pgw.Watch.Tail(30))
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("probe gateway marked %s completed %v after the driver exited (interval 1s)", dp.AppID, time.Since(stopped).Round(time.Millisecond))
		_ = RecordFigure(s.outDir, "probe_completed_after_exit_"+home.Version, time.Since(stopped))
		// The index shows it finished too.
		body, err := getBody(ctx, pc, pgw.URL+"/?q="+url.QueryEscape(dp.AppID))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(body, dp.AppID) || !strings.Contains(body, `class="state finished"`) {
			t.Errorf("index for %s does not show it finished:\n%.2000s", dp.AppID, body)
		}
	})
}

// checkNoConfig checks the gateway started without a config file.
func checkNoConfig(ctx context.Context, t *testing.T, gw *Gateway, dp, dl *Driver, probePort int) {
	u, _ := url.Parse(gw.URL)
	_, gport, _ := net.SplitHostPort(u.Host)
	if m, _, err := gw.Watch.WaitFor(ctx, reStartedListen, gw.Proc.Exited); err != nil {
		t.Errorf("no start line: %v", err)
	} else if host, _, _ := net.SplitHostPort(m[1]); host != "127.0.0.1" {
		t.Errorf("listens on %q; want 127.0.0.1", m[1])
	}
	// Not reachable on any other address of this machine.
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok || ipn.IP.IsLoopback() || ipn.IP.IsLinkLocalUnicast() {
				continue
			}
			conn, err := net.DialTimeout("tcp", net.JoinHostPort(ipn.IP.String(), gport), time.Second)
			if err == nil {
				conn.Close()
				t.Errorf("gateway answers on %s:%s; want loopback only", ipn.IP, gport)
			}
		}
	}
	// Without the token: refused, not served.
	anon := NoRedirectClient(nil)
	for _, p := range []string{"/", "/api/v1/applications", "/app/" + dl.AppID + "/jobs/"} {
		st, err := getStatus(ctx, anon, http.MethodGet, gw.URL+p, nil)
		if err != nil || (st != http.StatusUnauthorized && st != http.StatusForbidden) {
			t.Errorf("GET %s without the login token = %d, %v; want 401 or 403", p, st, err)
		}
	}
	bad := strings.Replace(gw.LoginURL, "token=", "token=00", 1)
	if st, err := getStatus(ctx, anon, http.MethodGet, bad, nil); err != nil || st == http.StatusOK {
		t.Errorf("GET a wrong login token = %d, %v; want a refusal", st, err)
	}
	jar, err := gw.LocalSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := NoRedirectClient(jar)
	for _, d := range []*Driver{dl, dp} {
		id, at, err := gw.WaitListed(ctx, c, func(id string) bool { return id == d.AppID })
		if err != nil {
			t.Fatalf("%v\n%s", err, gw.Watch.Tail(30))
		}
		t.Logf("no-config gateway listed %s %v after its SparkUI line", id, at.Sub(d.UILineAt).Round(time.Millisecond))
		if st, err := getStatus(ctx, c, http.MethodGet, gw.URL+"/app/"+id+"/jobs/", nil); err != nil || st != http.StatusOK {
			t.Errorf("GET /app/%s/jobs/ = %d, %v; want 200", id, st, err)
		}
	}
	// Which source found which driver: the gateway logs it.
	for _, w := range []struct {
		d      *Driver
		source string
	}{{dl, `log:`}, {dp, `probe:127.0.0.1:` + strconv.Itoa(probePort)}} {
		re := regexp.MustCompile(`driver found.*"app_id":\s*"` + regexp.QuoteMeta(w.d.AppID) + `".*"source":\s*"` + regexp.QuoteMeta(w.source))
		if _, _, err := gw.Watch.WaitFor(ctx, re, gw.Proc.Exited); err != nil {
			t.Errorf("no-config gateway did not find %s through %s: %v\n%s", w.d.AppID, w.source, err, gw.Watch.Tail(40))
		}
	}
}

// checkOutageLoggedOnce: the no-config gateway names a History Server at
// 127.0.0.1:18080, which the suite does not run; over the minute of polls
// it has had by now, that is one warning, not one per interval.
func checkOutageLoggedOnce(t *testing.T, gw *Gateway) {
	t.Helper()
	b, err := os.ReadFile(gw.Proc.Log)
	if err != nil {
		t.Fatal(err)
	}
	var warns []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "WARN") && strings.Contains(l, "history server") {
			warns = append(warns, l)
		}
	}
	switch {
	case len(warns) > 1:
		t.Errorf("%d warnings about the unreachable History Server; want 1:\n%s", len(warns), strings.Join(warns, "\n"))
	case len(warns) == 0:
		t.Logf("no warning about 127.0.0.1:18080: something answers there on this machine")
	}
}

var reStartedListen = regexp.MustCompile(`sparkgate started.*"listen":\s*"([^"]+)"`)

// startNoConfigGateway runs bin with no config file, only -listen on a free
// loopback port, SPARK_LOG_DIR=logDir and a fresh HOME and cwd.
func startNoConfigGateway(ctx context.Context, bin, dir, logDir string) (*Gateway, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	cmd := exec.Command(bin, "-listen", fmt.Sprintf("127.0.0.1:%d", port))
	cmd.Dir = dir
	env := []string{"SPARK_LOG_DIR=" + logDir, "HOME=" + dir}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SPARKGATE_") && !strings.HasPrefix(kv, "SPARK_LOG_DIR=") && !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	logPath := filepath.Join(dir, "sparkgate.log")
	p, err := StartProc("sparkgate (no config)", cmd, logPath)
	if err != nil {
		return nil, err
	}
	g := &Gateway{Proc: p, Watch: WatchLog(logPath), URL: base}
	if err := waitHTTP(ctx, base+"/_/readyz", p.Exited); err != nil {
		g.Stop()
		return nil, fmt.Errorf("gateway: %w\n%s", err, g.Watch.Tail(40))
	}
	m, _, err := g.Watch.WaitFor(ctx, reLoginURL, p.Exited)
	if err != nil {
		g.Stop()
		return nil, fmt.Errorf("no-config gateway printed no login URL: %w\n%s", err, g.Watch.Tail(40))
	}
	g.LoginURL = m[1]
	return g, nil
}

// freePortIn returns the first port in [lo, hi] free on every address.
func freePortIn(lo, hi int) (int, error) {
	for p := lo; p <= hi; p++ {
		l, err := net.Listen("tcp", fmt.Sprintf(":%d", p))
		if err != nil {
			continue
		}
		l.Close()
		return p, nil
	}
	return 0, fmt.Errorf("no free port in %d-%d", lo, hi)
}
