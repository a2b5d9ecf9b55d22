//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDStream runs a light driver with a DStream StreamingContext
// (queueStream, a batch every 5 s) on the oldest and the newest installed
// Spark version, and crawls its Streaming tab through a gateway: no broken
// link, no leak, no kill control, the batch pages reached. The gateway
// finds the driver through a static source, serves HTTPS itself
// (tls.cert_file, a certificate made for the test) and logs JSON
// (log.format: json), every line of which must decode.
func TestDStream(t *testing.T) {
	s := newSuite(t)
	s.requireGateway(t)
	homes := s.sparkHomes(t)
	if len(homes) > 2 {
		homes = []SparkHome{homes[0], homes[len(homes)-1]}
	}
	for _, home := range homes {
		t.Run(home.Version, func(t *testing.T) {
			ctx := ctxFor(t, 5*time.Minute)
			t0 := time.Now()
			dir := s.freshDir(t, "dstream-"+home.Version)
			logs := filepath.Join(dir, "driver-logs")
			d, err := StartDriver(ctx, s.root, home, DriverOptions{
				Name:     "dstream-" + strings.ReplaceAll(home.Version, ".", "_"),
				EventDir: filepath.Join(dir, "events"), LogDir: logs, WorkDir: filepath.Join(dir, "driver"),
				Light: true, DStream: true,
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(d.Kill)
			if err := d.WaitReady(ctx); err != nil {
				t.Fatal(err)
			}
			// The gateway: a static source naming the real driver, HTTPS
			// of its own (tls.cert_file) and JSON logs.
			gdir := mustDir(t, filepath.Join(dir, "gateway"))
			gw, c := s.localGateway(ctx, t, gdir, GatewayOptions{
				Discovery: map[string]any{"interval": "1s", "static": []string{d.UIURL()}},
				TLS:       true,
				LogFormat: "json",
			})
			if !strings.HasPrefix(gw.URL, "https://") {
				t.Fatalf("gateway at %s; want HTTPS", gw.URL)
			}
			if _, _, err := gw.WaitListed(ctx, c, func(id string) bool { return id == d.AppID }); err != nil {
				t.Fatal(err)
			}
			prefix := "/app/" + d.AppID + "/"
			rep, err := Crawl(ctx, c, gw.URL+prefix+"streaming/", CrawlOptions{
				MaxPages: 600,
				Scope:    []string{prefix},
				Skip:     skipLogout,
				Needles:  d.HostPorts(),
			})
			if err != nil {
				t.Fatal(err)
			}
			logCrawl(t, "streaming crawl", rep)
			checkTabs(t, rep, []string{"streaming/", "streaming/batch/", "jobs/job/", "stages/stage/"}, prefix)
			requireCleanCrawl(t, rep, 10)
			checkJSONLog(t, filepath.Join(gdir, "sparkgate.log"), d.AppID)
			t.Logf("TestDStream %s took %v", home.Version, time.Since(t0).Round(time.Millisecond))
			_ = RecordFigure(s.outDir, "dstream_"+home.Version, fmt.Sprintf("%v pages=%d", time.Since(t0).Round(time.Millisecond), rep.Pages))
		})
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
// is for a person), and some request line names appID.
func checkJSONLog(t *testing.T, path, appID string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	entries, named := 0, 0
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
		if m["app_id"] == appID {
			named++
		}
	}
	t.Logf("gateway log: %d JSON entries, %d naming %s", entries, named, appID)
	if entries < 10 || named == 0 {
		t.Errorf("gateway log has %d JSON entries, %d naming %s; want 10 or more, and some", entries, named, appID)
	}
}
