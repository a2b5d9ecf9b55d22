//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestTwoVersions runs the oldest and the newest installed Spark version
// side by side, each driver with a DStream StreamingContext (app.py
// --light --dstream: queueStream, a batch every 5 s): driver A (oldest)
// writes rolling event logs (spark.eventLog.rolling.enabled, a v2
// directory) read by History Server "a" of its version, driver B (newest)
// plain event logs read by History Server "b" of its. Both drivers ask for
// the same spark.ui.port, so B's UI lands on the next port by Spark's own
// retry. Three gateways: one reads the driver logs and both History
// Servers, one only probes the two ports, one has only a static source
// naming both drivers and serves HTTPS itself (tls.cert_file) with JSON
// logs (log.format: json). Subtests: `port retry` (B's log says the port
// was taken and names the next one; the log and probe gateways route each
// app to its own driver), `streaming` (the Streaming tab of each app and
// its batch pages, crawled through the static HTTPS gateway: no broken
// link, leak or kill control; every line of that gateway's log is JSON),
// `fallback` (after both stop, each bookmark leads to the History Server
// that has the app, /hs/a/ or /hs/b/, and a crawl of each is clean) and
// `rolling` (A's event log is a v2 directory of rolled files, served whole
// through /hs/a/).
func TestTwoVersions(t *testing.T) {
	s := newSuite(t)
	s.requireGateway(t)
	homes := s.sparkHomes(t)
	if len(homes) < 2 {
		t.Fatalf("needs two Spark versions, have %d (SPARK_E2E_VERSIONS)", len(homes))
	}
	ha, hb := homes[0], homes[len(homes)-1]
	ctx := ctxFor(t, 10*time.Minute)
	t0 := time.Now()
	dir := s.freshDir(t, "twoversions")
	evA, evB, logs := filepath.Join(dir, "events-a"), filepath.Join(dir, "events-b"), filepath.Join(dir, "driver-logs")
	for _, d := range []string{evA, evB, logs} {
		if err := mkdir(d); err != nil {
			t.Fatal(err)
		}
	}
	port, err := freePortPair()
	if err != nil {
		t.Fatal(err)
	}
	// The History Servers start while the drivers do.
	type started struct {
		hs  *HistoryServer
		err error
	}
	hsCh := make([]chan started, 2)
	for i, x := range []struct {
		home     SparkHome
		events   string
		workName string
	}{{ha, evA, "history-a"}, {hb, evB, "history-b"}} {
		hsCh[i] = make(chan started, 1)
		go func() {
			hs, err := StartHistoryServer(ctx, s.root, x.home, x.events, filepath.Join(dir, x.workName), nil)
			hsCh[i] <- started{hs, err}
		}()
	}
	var hss [2]*HistoryServer
	var collected [2]bool
	t.Cleanup(func() {
		for i, ch := range hsCh {
			if !collected[i] {
				// The test failed before collecting it: wait, to stop it.
				hss[i] = (<-ch).hs
			}
			if hss[i] != nil {
				_ = hss[i].Stop()
			}
		}
	})
	ui := strconv.Itoa(port)
	dA, err := StartDriver(ctx, s.root, ha, DriverOptions{
		Name: "two-a", EventDir: evA, LogDir: logs, WorkDir: filepath.Join(dir, "work"), Light: true, DStream: true,
		Confs: withPrometheus(map[string]string{
			"spark.ui.port":                  ui,
			"spark.eventLog.rolling.enabled": "true",
			// The smallest size Spark allows; the light job's log is smaller,
			// so rolling shows as the v2 directory, with one file.
			"spark.eventLog.rolling.maxFileSize": "10m",
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dA.Kill)
	// B starts once A holds the port.
	dB, err := StartDriver(ctx, s.root, hb, DriverOptions{
		Name: "two-b", EventDir: evB, LogDir: logs, WorkDir: filepath.Join(dir, "work"), Light: true, DStream: true,
		Confs: withPrometheus(map[string]string{"spark.ui.port": ui}),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dB.Kill)
	for _, d := range []*Driver{dA, dB} {
		if err := d.WaitReady(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for i, ch := range hsCh {
		r := <-ch
		hss[i], collected[i] = r.hs, true
		if r.err != nil {
			t.Fatal(r.err)
		}
	}
	hsA, hsB := hss[0], hss[1]
	hist := []any{
		map[string]any{"name": "a", "url": hsA.URL},
		map[string]any{"name": "b", "url": hsB.URL},
	}
	gwLogs, cLogs := s.localGateway(ctx, t, mustDir(t, filepath.Join(dir, "gateway-logs")), GatewayOptions{
		Discovery: map[string]any{
			"interval": "1s",
			"logs":     []any{map[string]any{"paths": []string{filepath.Join(logs, "*.log")}, "host": "127.0.0.1"}},
			"history":  hist,
		},
	})
	gwProbe, cProbe := s.localGateway(ctx, t, mustDir(t, filepath.Join(dir, "gateway-probe")), GatewayOptions{
		Discovery: map[string]any{
			"interval": "1s",
			"probe":    []any{map[string]any{"hosts": []string{"127.0.0.1"}, "ports": fmt.Sprintf("%d-%d", port, port+1)}},
		},
	})
	gsDir := mustDir(t, filepath.Join(dir, "gateway-static"))
	gwStatic, cStatic := s.localGateway(ctx, t, gsDir, GatewayOptions{
		Discovery: map[string]any{"interval": "1s", "static": []string{dA.UIURL(), dB.UIURL()}},
		TLS:       true,
		LogFormat: "json",
	})
	t.Logf("two History Servers, two drivers and three gateways up after %v", time.Since(t0).Round(time.Millisecond))

	t.Run("port retry", func(t *testing.T) {
		if dA.UIPort != port || dB.UIPort != port+1 {
			t.Fatalf("UI ports A=%d B=%d; want %d and %d", dA.UIPort, dB.UIPort, port, port+1)
		}
		log, err := os.ReadFile(filepath.Join(logs, "two-b.log"))
		if err != nil {
			t.Fatal(err)
		}
		retry := regexp.MustCompile(`Service 'SparkUI' could not bind on port ` + ui + `\. Attempting port ` + strconv.Itoa(port+1) + `\.`)
		if !retry.Match(log) {
			t.Errorf("B's log does not say it retried on port %d", port+1)
		}
		for name, g := range map[string]struct {
			gw *Gateway
			c  *http.Client
		}{"logs": {gwLogs, cLogs}, "probe": {gwProbe, cProbe}, "static": {gwStatic, cStatic}} {
			for _, d := range []*Driver{dA, dB} {
				if _, _, err := g.gw.WaitListed(ctx, g.c, func(id string) bool { return id == d.AppID }); err != nil {
					t.Fatalf("%s gateway: %v", name, err)
				}
				// A driver answers only for its own app: a 200 proves the
				// gateway routes the id to the right port.
				a, err := Get(ctx, g.c, g.gw.URL+"/api/v1/applications/"+d.AppID+"/environment", nil)
				if err != nil {
					t.Fatal(err)
				}
				if a.Status != http.StatusOK || !strings.Contains(string(a.Body), d.Opts.Name) {
					t.Errorf("%s gateway: environment of %s = %d %.200s; want its driver's", name, d.Opts.Name, a.Status, a.Body)
				}
			}
		}
	})

	t.Run("streaming", func(t *testing.T) {
		if !strings.HasPrefix(gwStatic.URL, "https://") {
			t.Fatalf("static gateway at %s; want HTTPS", gwStatic.URL)
		}
		for _, d := range []*Driver{dA, dB} {
			t0 := time.Now()
			prefix := "/app/" + d.AppID + "/"
			rep, err := Crawl(ctx, cStatic, gwStatic.URL+prefix+"streaming/", CrawlOptions{
				MaxPages: 600,
				Scope:    []string{prefix},
				Skip:     skipLogout,
				Needles:  d.HostPorts(),
			})
			if err != nil {
				t.Fatal(err)
			}
			logCrawl(t, "streaming crawl of "+d.Opts.Name, rep)
			checkTabs(t, rep, []string{"streaming/", "streaming/batch/", "jobs/job/", "stages/stage/"}, prefix)
			requireCleanCrawl(t, rep, 10)
			t.Logf("streaming crawl of %s took %v", d.Opts.Name, time.Since(t0).Round(time.Millisecond))
		}
		checkJSONLog(t, filepath.Join(gsDir, "sparkgate.log"), dA.AppID, dB.AppID)
	})

	// Spark's Prometheus endpoints of both versions, found through the
	// HTTPS gateway's service discovery (its targets name https).
	t.Run("prometheus", func(t *testing.T) {
		a, err := Get(ctx, cStatic, gwStatic.URL+"/_/prometheus/targets", nil)
		if err != nil {
			t.Fatal(err)
		}
		var groups []sdGroup
		if err := json.Unmarshal(a.Body, &groups); err != nil || a.Status != http.StatusOK {
			t.Fatalf("service discovery: %d %v %.200s", a.Status, err, a.Body)
		}
		for _, d := range []*Driver{dA, dB} {
			if n := scrapeSD(ctx, t, cStatic, groups, d.AppID, sparkMetricPatterns(d.AppID, d.Opts.Name)); n != 2 {
				t.Errorf("scraped %d endpoints of %s; want 2 (driver and executors)", n, d.Opts.Name)
			}
		}
	})

	for _, d := range []*Driver{dA, dB} {
		if err := d.Stop(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, x := range []struct {
		hs *HistoryServer
		d  *Driver
	}{{hsA, dA}, {hsB, dB}} {
		if err := x.hs.WaitApp(ctx, x.d.AppID, true); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("fallback", func(t *testing.T) {
		for _, x := range []struct {
			server string
			hs     *HistoryServer
			d      *Driver
		}{{"a", hsA, dA}, {"b", hsB, dB}} {
			if err := waitCompleted(ctx, gwLogs, cLogs, x.d.AppID); err != nil {
				t.Fatal(err)
			}
			a, err := Get(ctx, cLogs, gwLogs.URL+"/app/"+x.d.AppID+"/jobs/", nil)
			if err != nil {
				t.Fatal(err)
			}
			want := "/hs/" + x.server + "/history/" + x.d.AppID + "/jobs/"
			if a.Status != http.StatusFound || a.Location != want {
				t.Errorf("/app/%s/jobs/ = %d to %q; want 302 to %s", x.d.AppID, a.Status, a.Location, want)
			}
			hsURL, _ := url.Parse(x.hs.URL)
			other := hsA
			if x.hs == hsA {
				other = hsB
			}
			otherURL, _ := url.Parse(other.URL)
			rep, err := Crawl(ctx, cLogs, gwLogs.URL+"/app/"+x.d.AppID+"/", CrawlOptions{
				MaxPages: 600,
				Scope:    []string{"/app/" + x.d.AppID + "/", "/hs/" + x.server + "/history/" + x.d.AppID + "/"},
				Skip:     skipLogout,
				Needles:  append(x.d.HostPorts(), hsURL.Host, otherURL.Host),
			})
			if err != nil {
				t.Fatal(err)
			}
			logCrawl(t, "history "+x.server+" crawl", rep)
			checkTabs(t, rep, []string{"jobs/", "jobs/job/", "stages/", "stages/stage/", "environment/", "executors/"},
				"/hs/"+x.server+"/history/"+x.d.AppID+"/")
			requireCleanCrawl(t, rep, 8)
			// The other server does not have it.
			b, err := Get(ctx, cLogs, gwLogs.URL+"/hs/"+map[string]string{"a": "b", "b": "a"}[x.server]+"/history/"+x.d.AppID+"/jobs/", nil)
			if err != nil {
				t.Fatal(err)
			}
			if b.Status == http.StatusOK {
				t.Errorf("the other History Server serves %s too: the test would not tell them apart", x.d.AppID)
			}
		}
	})

	t.Run("rolling", func(t *testing.T) {
		v2 := filepath.Join(evA, "eventlog_v2_"+dA.AppID)
		files, err := filepath.Glob(filepath.Join(v2, "events_*"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no rolling event log files in %s (%v)", v2, err)
		}
		// The History Server's zip of the app's event log, through the
		// gateway: it holds the v2 directory's files.
		a, err := Get(ctx, cLogs, gwLogs.URL+"/api/v1/applications/"+dA.AppID+"/logs", nil)
		if err != nil {
			t.Fatal(err)
		}
		if a.Status != http.StatusOK || !strings.Contains(string(a.Body), "eventlog_v2_"+dA.AppID+"/"+filepath.Base(files[0])) {
			t.Errorf("event log zip of %s = %d (%d bytes); want one holding %s", dA.AppID, a.Status, len(a.Body), filepath.Base(files[0]))
		}
		t.Logf("rolling event log: %d file(s) in %s", len(files), filepath.Base(v2))
	})
	t.Logf("TestTwoVersions took %v", time.Since(t0).Round(time.Millisecond))
	_ = RecordFigure(s.outDir, "two_versions", time.Since(t0))
}

// freePortPair returns a port p such that p and p+1 are both free now.
func freePortPair() (int, error) {
	for range 50 {
		p, err := FreePort()
		if err != nil {
			return 0, err
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p+1)))
		if err != nil {
			continue
		}
		_ = l.Close()
		return p, nil
	}
	return 0, fmt.Errorf("no two free ports in a row after 50 tries")
}

// waitCompleted waits until the gateway lists appID as completed.
func waitCompleted(ctx context.Context, gw *Gateway, c *http.Client, appID string) error {
	for {
		apps, err := gw.Apps(ctx, c)
		for _, a := range apps {
			if a.ID == appID && len(a.Attempts) > 0 && a.Attempts[0].Completed {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("gateway never listed %s as completed (last error: %s): %w", appID, lastErr(err), ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// mustDir creates d or fails t.
func mustDir(t *testing.T, d string) string {
	t.Helper()
	if err := mkdir(d); err != nil {
		t.Fatal(err)
	}
	return d
}

// checkJSONLog fails t unless every line of the gateway's log at path is a
// JSON object with level and msg (but the local-mode sign-in banner, which
// is for a person), and request lines name each of appIDs.
func checkJSONLog(t *testing.T, path string, appIDs ...string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	entries, named := 0, map[string]int{}
	for _, line := range strings.Split(string(b), "\n") {
		l := strings.TrimSpace(line)
		if l == "" || strings.Contains(l, "sparkgate is running in local mode") || strings.Contains(l, "/oauth2/token?token=") {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil || m["level"] == nil || m["msg"] == nil {
			t.Errorf("log line is not a JSON entry with level and msg: %.300s", l)
			continue
		}
		entries++
		if id, ok := m["app_id"].(string); ok {
			named[id]++
		}
	}
	t.Logf("gateway log: %d JSON entries; by app: %v", entries, named)
	if entries < 10 {
		t.Errorf("gateway log has %d JSON entries; want 10 or more", entries)
	}
	for _, id := range appIDs {
		if named[id] == 0 {
			t.Errorf("no JSON log entry names %s", id)
		}
	}
}

// withPrometheus adds prometheusConfs to confs.
func withPrometheus(confs map[string]string) map[string]string {
	maps.Copy(confs, prometheusConfs)
	return confs
}
