//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// suite holds what every version's tests share.
type suite struct {
	root   string
	outDir string // e2e/out: logs, event logs, figures (git-ignored)
	gwBin  string // the gateway binary, "" when SPARKGATE_E2E_NO_GATEWAY=1
}

// gatewayBuild builds the gateway once per test binary: every Test*
// function makes its own suite.
var gatewayBuild struct {
	once sync.Once
	bin  string
	err  error
}

func newSuite(t *testing.T) *suite {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(root, "e2e", "out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	s := &suite{root: root, outDir: out}
	if os.Getenv("SPARKGATE_E2E_NO_GATEWAY") == "" {
		gatewayBuild.once.Do(func() {
			gatewayBuild.bin, gatewayBuild.err = BuildGateway(context.Background(), root, filepath.Join(out, "sparkgate"))
		})
		if gatewayBuild.err != nil {
			t.Fatalf("building the gateway (set SPARKGATE_E2E_NO_GATEWAY=1 to test the harness against Spark alone): %v", gatewayBuild.err)
		}
		s.gwBin = gatewayBuild.bin
	}
	return s
}

// requireGateway skips a test that needs the gateway when the suite runs
// against Spark alone (SPARKGATE_E2E_NO_GATEWAY=1).
func (s *suite) requireGateway(t *testing.T) {
	t.Helper()
	if s.gwBin == "" {
		t.Skip("SPARKGATE_E2E_NO_GATEWAY is set")
	}
}

// sparkHomes returns the Spark installations the suite must run, failing t
// when one is missing: every version scripts/setup-spark.sh installs (or
// the ones SPARK_E2E_VERSIONS names), so a failed install cannot shrink
// the matrix unnoticed.
func (s *suite) sparkHomes(t *testing.T) []SparkHome {
	t.Helper()
	installed, err := FindSparkHomes(s.root)
	if err != nil {
		t.Fatal(err)
	}
	want, err := WantedSparkVersions(s.root)
	if err != nil {
		t.Fatal(err)
	}
	homes, missing := matchVersions(installed, want)
	if len(missing) > 0 {
		t.Fatalf("Spark %v not installed under .cache/spark (want %v; run scripts/setup.sh, or narrow the run with SPARK_E2E_VERSIONS)", missing, want)
	}
	return homes
}

// versionDir returns a fresh e2e/out/<version> with its sub-directories.
func (s *suite) versionDir(t *testing.T, version string) (dir, events, logs string) {
	t.Helper()
	dir = filepath.Join(s.outDir, version)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	events, logs = filepath.Join(dir, "events"), filepath.Join(dir, "driver-logs")
	for _, d := range []string{events, logs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir, events, logs
}

// freshDir returns an empty e2e/out/<name>.
// localGateway starts a gateway in local auth mode in dir, stopped when t
// ends, and returns it with a signed-in client that does not follow
// providerFor starts the OIDC provider (stopped when t ends) with client
// secret for a gateway yet to start: it picks the gateway's port, registers
// its callback and post-logout URLs, and returns the provider, the port and
// the gateway's URL.
func (s *suite) providerFor(ctx context.Context, t *testing.T, dir, secret string) (*OIDCProvider, int, string) {
	t.Helper()
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	gwURL := fmt.Sprintf("http://127.0.0.1:%d", port)
	op, err := StartOIDC(ctx, s.root, dir, secret, []string{gwURL + "/oauth2/callback"}, []string{gwURL + "/"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = op.Stop() })
	return op, port, gwURL
}

// redirects.
func (s *suite) localGateway(ctx context.Context, t *testing.T, dir string, opt GatewayOptions) (*Gateway, *http.Client) {
	t.Helper()
	gw, err := StartGateway(ctx, s.gwBin, dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gw.Stop)
	jar, err := gw.LocalSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := NoRedirectClient(jar)
	c.Transport = gw.roundTripper()
	return gw, c
}

func (s *suite) freshDir(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(s.outDir, name)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// ctxFor returns a context that ends shortly before the test's deadline.
func ctxFor(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// skipLogout keeps crawlers away from sign-out.
func skipLogout(u *url.URL) bool {
	return strings.HasPrefix(u.Path, "/oauth2/logout") || strings.HasPrefix(u.Path, "/oauth2/sign_out")
}

// sparkTabs are the pages every crawl of an app must reach (relative to the
// app's root): one per tab, plus a page per kind of detail link.
var sparkTabs = []string{"jobs/", "jobs/job/", "stages/", "stages/stage/", "storage/", "storage/rdd/",
	"environment/", "executors/", "SQL/", "SQL/execution/", "StreamingQuery/", "StreamingQuery/statistics/"}

// historyTabs are the tabs of a finished app. Storage has no RDD page in the
// History Server: the driver unpersists at stop and block updates are not
// in the event log by default (spark.eventLog.logBlockUpdates.enabled).
var historyTabs = []string{"jobs/", "jobs/job/", "stages/", "stages/stage/", "storage/",
	"environment/", "executors/", "SQL/", "SQL/execution/", "StreamingQuery/", "StreamingQuery/statistics/"}

// checkTabs fails t for every one of tabs that no visited URL reached; a
// visited path reaches a tab when it ends in one of bases + tab (the gateway
// may mount History Server pages under a prefix of its own).
func checkTabs(t *testing.T, rep *CrawlReport, tabs []string, bases ...string) {
	t.Helper()
	for _, tab := range tabs {
		found := false
		for _, v := range rep.Visited {
			u, err := url.Parse(v)
			for _, base := range bases {
				if err == nil && strings.HasSuffix(u.Path, base+tab) {
					found = true
				}
			}
		}
		if !found {
			t.Errorf("crawl never reached %v + %s", bases, tab)
		}
	}
}

// requireCleanCrawl fails t unless a crawl through the gateway saw at least
// minPages pages, ended before its page limit, and found no broken link, no
// link, redirect or body naming a driver or History Server address, no link
// leaving the gateway, and no kill control.
func requireCleanCrawl(t *testing.T, rep *CrawlReport, minPages int) {
	t.Helper()
	requireComplete(t, rep)
	if rep.Pages < minPages {
		t.Errorf("crawl saw only %d pages; want at least %d (first: %.5v)", rep.Pages, minPages, rep.Visited)
	}
	for _, l := range rep.Broken {
		t.Errorf("broken: %v", l)
	}
	for _, l := range rep.Leaks {
		t.Errorf("leak: %v", l)
	}
	for _, l := range rep.Offsite {
		t.Errorf("link leaves the gateway: %v", l)
	}
	for _, l := range rep.KillLinks {
		t.Errorf("kill control shown through the gateway: %v", l)
	}
}

// requireComplete fails t when a crawl stopped at its page limit: the pages
// it never fetched were never checked, so a clean report would prove nothing
// about them. Raise the limit (CrawlOptions.MaxPages) to cover the UI.
func requireComplete(t *testing.T, rep *CrawlReport) {
	t.Helper()
	if rep.Truncated {
		t.Errorf("crawl reached its limit of %d pages with links still unvisited; raise MaxPages to cover the UI", rep.Pages)
	}
}

func logCrawl(t *testing.T, name string, rep *CrawlReport) {
	t.Helper()
	t.Logf("%s: %d pages (%d gzip-encoded), truncated=%v, broken=%d, leaks=%d, kill links=%d, offsite=%d",
		name, rep.Pages, rep.Compressed, rep.Truncated, len(rep.Broken), len(rep.Leaks), len(rep.KillLinks), len(rep.Offsite))
	for _, l := range rep.Offsite {
		t.Logf("offsite: %v", l)
	}
}
