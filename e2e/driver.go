//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DriverOptions configures one PySpark driver running e2e/spark/app.py.
type DriverOptions struct {
	Name     string            // spark.app.name; also the log file's base name
	EventDir string            // spark.eventLog.dir
	LogDir   string            // the driver's stderr goes to <LogDir>/<Name>.log
	WorkDir  string            // cwd (spark-warehouse, derby files) and the stop file
	Confs    map[string]string // extra Spark confs
	LongJob  bool              // keep an active job running (kill links visible)
	// Light runs local[1] with a small heap and one small job (no cache,
	// SQL or stream): for tests that need many drivers at once.
	Light bool
	// DStream also runs a DStream StreamingContext (the Streaming tab).
	DStream bool
	// Workload runs only one of app.py's diagnosis workloads ("skew",
	// "healthy", "fail") instead of the batch jobs and the stream.
	Workload string
}

// Driver is a running PySpark driver.
type Driver struct {
	Opts     DriverOptions
	Proc     *Proc
	Watch    *LogWatch
	Started  time.Time
	StopFile string

	AppID  string
	UIPort int
	// UIHost is the host in sc.uiWebUrl (spark.driver.host, which need not be
	// a loopback address); the UI itself binds 0.0.0.0.
	UIHost string
	// UILineAt is when "Successfully started service 'SparkUI'" was first
	// seen in the log file.
	UILineAt time.Time
	ReadyAt  time.Time
	// servingAt receives when the driver's /api/v1/applications first
	// answered JSON (Spark serves a "starting up" page before that).
	servingAt chan time.Time
}

var (
	reUIPort = regexp.MustCompile(`Successfully started service 'SparkUI' on port (\d+)\.`)
	reE2EApp = regexp.MustCompile(`E2E app_id=(\S+) ui=(\S+)`)
	reReady  = regexp.MustCompile(`E2E ready app_id=`)
	reStoped = regexp.MustCompile(`E2E stopped`)
)

// StartDriver starts app.py with home's python and waits until the SparkUI
// port line and the app id are in its log (not until the jobs ran; see
// WaitReady).
func StartDriver(ctx context.Context, root string, home SparkHome, opt DriverOptions) (*Driver, error) {
	for _, d := range []string{opt.EventDir, opt.LogDir, opt.WorkDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("creating %s: %w", d, err)
		}
	}
	stop := filepath.Join(opt.WorkDir, opt.Name+".stop")
	args := []string{filepath.Join(root, "e2e", "spark", "app.py"),
		"--name", opt.Name, "--event-dir", opt.EventDir, "--stop-file", stop}
	if opt.LongJob {
		args = append(args, "--long-job")
	}
	if opt.Light {
		args = append(args, "--light")
	}
	if opt.DStream {
		args = append(args, "--dstream")
	}
	if opt.Workload != "" {
		args = append(args, "--workload", opt.Workload)
	}
	keys := make([]string, 0, len(opt.Confs))
	for k := range opt.Confs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "--conf", k+"="+opt.Confs[k])
	}
	cmd := exec.Command(home.Python, args...)
	cmd.Dir = opt.WorkDir
	cmd.Env = append(os.Environ(),
		"PYSPARK_PYTHON="+home.Python,
		"PYSPARK_DRIVER_PYTHON="+home.Python,
		"SPARK_HOME="+home.Home,
		"SPARK_CONF_DIR="+filepath.Join(root, "e2e", "spark", "conf"),
		"PATH="+filepath.Join(home.Venv, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"),
	)
	logPath := filepath.Join(opt.LogDir, opt.Name+".log")
	d := &Driver{Opts: opt, StopFile: stop, Started: time.Now()}
	if err := d.launch("driver", cmd, logPath); err != nil {
		return nil, err
	}
	m, at, err := d.waitLine(ctx, reUIPort)
	if err != nil {
		return nil, err
	}
	d.UIPort, _ = strconv.Atoi(m[1])
	d.UILineAt = at
	d.servingAt = make(chan time.Time, 1)
	go func() {
		if err := waitJSON(ctx, d.UIURL()+"/api/v1/applications"); err == nil {
			d.servingAt <- time.Now()
		}
		close(d.servingAt)
	}()
	if _, err := d.waitAppLine(ctx); err != nil {
		return nil, err
	}
	return d, nil
}

// waitAppLine waits for app.py's "E2E app_id=… ui=…" line and takes the
// app id, the UI's host and, when the SparkUI line gave none, its port.
func (d *Driver) waitAppLine(ctx context.Context) (time.Time, error) {
	m, at, err := d.waitLine(ctx, reE2EApp)
	if err != nil {
		return at, err
	}
	u, err := url.Parse(m[2])
	if err != nil {
		d.Kill()
		return at, fmt.Errorf("driver %s: UI URL %q: %w", d.Opts.Name, m[2], err)
	}
	d.AppID, d.UIHost = m[1], u.Hostname()
	if d.UIPort == 0 {
		d.UIPort, _ = strconv.Atoi(u.Port())
	}
	return at, nil
}

// launch starts cmd as the driver's process (label names it in errors),
// its output going to logPath, and watches that log.
func (d *Driver) launch(label string, cmd *exec.Cmd, logPath string) error {
	p, err := StartProc(label+" "+d.Opts.Name, cmd, logPath)
	if err != nil {
		return err
	}
	d.Proc, d.Watch = p, WatchLog(logPath)
	return nil
}

// waitLine waits for the first log line matching re and returns its
// submatches and when it was seen; if the line never comes (or the driver
// exits first) it kills the driver and says why, with the log's tail.
func (d *Driver) waitLine(ctx context.Context, re *regexp.Regexp) ([]string, time.Time, error) {
	m, at, err := d.Watch.WaitFor(ctx, re, d.Proc.Exited)
	if err != nil {
		d.Kill()
		return nil, at, fmt.Errorf("driver %s: %w\n%s", d.Opts.Name, err, d.Watch.Tail(30))
	}
	return m, at, nil
}

// WaitReady waits until app.py has run its jobs and the stream has batches.
func (d *Driver) WaitReady(ctx context.Context) error {
	_, at, err := d.Watch.WaitFor(ctx, reReady, d.Proc.Exited)
	if err != nil {
		return fmt.Errorf("driver %s: %w\n%s", d.Opts.Name, err, d.Watch.Tail(30))
	}
	d.ReadyAt = at
	return nil
}

// ServingAt returns when the driver's REST API first answered JSON.
func (d *Driver) ServingAt() (time.Time, bool) {
	at, ok := <-d.servingAt
	return at, ok
}

// waitJSON polls url every 20 ms until it answers 200 with a JSON body.
func waitJSON(ctx context.Context, url string) error {
	c := &http.Client{Timeout: 500 * time.Millisecond}
	for {
		resp, err := c.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", url, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// UIURL is the driver UI on loopback.
func (d *Driver) UIURL() string { return fmt.Sprintf("http://127.0.0.1:%d", d.UIPort) }

// HostPorts lists the host:port spellings of the driver UI that must never
// appear in a page served by the gateway.
func (d *Driver) HostPorts() []string {
	out := []string{fmt.Sprintf("127.0.0.1:%d", d.UIPort), fmt.Sprintf("localhost:%d", d.UIPort)}
	if d.UIHost != "" && d.UIHost != "127.0.0.1" {
		out = append(out, fmt.Sprintf("%s:%d", d.UIHost, d.UIPort))
	}
	return out
}

// Stop asks app.py to stop (stop file), so that it calls spark.stop() and the
// event log is complete; after 90 s it is terminated.
func (d *Driver) Stop(ctx context.Context) error {
	defer d.Watch.Close()
	if d.Proc.Exited() {
		return nil
	}
	if err := os.WriteFile(d.StopFile, nil, 0o644); err != nil {
		return fmt.Errorf("writing stop file: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	if err := d.Proc.Wait(wctx); err != nil && wctx.Err() != nil {
		return d.Proc.Stop(15 * time.Second)
	}
	return nil
}

// Kill ends the driver at once (for cleanup after a failure).
func (d *Driver) Kill() {
	_ = d.Proc.Stop(10 * time.Second)
}

// uniqueIDs are the app ids of drivers started at once.
type uniqueIDs struct {
	mu    sync.Mutex
	taken map[string]bool
}

// claim records id and reports whether no other driver had it.
func (u *uniqueIDs) claim(id string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.taken[id] {
		return false
	}
	u.taken[id] = true
	return true
}

// startUniqueDriver starts a driver with start, again if its app id is one
// another driver of ids already has. A local-mode app id is "local-" and
// the millisecond its SparkContext started, so drivers started together
// can draw the same one; the second then fails to create its event log
// ("... already exists") or, without event logs, would run under the
// first one's id.
func startUniqueDriver(ctx context.Context, ids *uniqueIDs, start func() (*Driver, error)) (*Driver, error) {
	var err error
	for range 3 {
		var d *Driver
		d, err = start()
		if err != nil {
			if !strings.Contains(err.Error(), "already exists") {
				return nil, err
			}
			continue // the same millisecond as another driver
		}
		if ids.claim(d.AppID) {
			return d, nil
		}
		d.Kill()
		err = fmt.Errorf("driver %s drew app id %s, which another driver has", d.Opts.Name, d.AppID)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, err
}
