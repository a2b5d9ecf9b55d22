//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MiniYARN is a running one-node YARN cluster: e2e/yarn/MiniYarn.java on
// the jars scripts/setup-yarn.sh put into .cache/yarn.
type MiniYARN struct {
	Proc    *Proc
	Watch   *LogWatch
	ConfDir string // HADOOP_CONF_DIR: the cluster's yarn-site.xml and core-site.xml
	WebURL  string // the ResourceManager's web UI, REST API and web proxy
	WebPort int
	// NMWebURL is the NodeManager's own web server (its container log
	// pages and REST API), as the ResourceManager lists it.
	NMWebURL string
	workDir  string
	stdin    io.WriteCloser
}

var reMiniYARNReady = regexp.MustCompile(`MINIYARN READY rm_web=(\S+) rm=\S+ nm_web=(\S+)`)

// YARNInstalled reports whether scripts/setup-yarn.sh has run for this
// checkout: the harness's class and its class path are under .cache/yarn,
// built from the current e2e/yarn/pom.xml and MiniYarn.java (the script's
// stamp is their SHA-256).
func YARNInstalled(root string) error {
	for _, p := range []string{
		filepath.Join(root, ".cache", "yarn", "classes", "MiniYarn.class"),
		filepath.Join(root, ".cache", "yarn", "lib"),
	} {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("YARN parts missing (run scripts/setup.sh): %w", err)
		}
	}
	h := sha256.New()
	for _, f := range []string{"pom.xml", "MiniYarn.java"} {
		b, err := os.ReadFile(filepath.Join(root, "e2e", "yarn", f))
		if err != nil {
			return fmt.Errorf("reading the YARN harness: %w", err)
		}
		h.Write(b)
	}
	stamp, err := os.ReadFile(filepath.Join(root, ".cache", "yarn", ".inputs.sha256"))
	if err != nil {
		return fmt.Errorf("YARN parts missing (run scripts/setup.sh): %w", err)
	}
	if strings.TrimSpace(string(stamp)) != hex.EncodeToString(h.Sum(nil)) {
		return errors.New("the YARN harness in .cache/yarn is built from another e2e/yarn/pom.xml or MiniYarn.java (run scripts/setup.sh)")
	}
	return nil
}

// StartMiniYARN starts the cluster with its work files and log in dir and
// waits until the NodeManager has registered and the configuration is
// written. The cluster stops with Stop, or when this process exits (its
// stdin closes).
func StartMiniYARN(ctx context.Context, root, dir string) (*MiniYARN, error) {
	if err := YARNInstalled(root); err != nil {
		return nil, err
	}
	conf, work := filepath.Join(dir, "conf"), filepath.Join(dir, "work")
	for _, d := range []string{conf, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("creating %s: %w", d, err)
		}
	}
	ports := make([]string, 5) // the RM's client, scheduler, tracker, admin and web ports
	for i := range ports {
		p, err := FreePort()
		if err != nil {
			return nil, err
		}
		ports[i] = strconv.Itoa(p)
	}
	cache := filepath.Join(root, ".cache", "yarn")
	cp := filepath.Join(cache, "lib", "*") + string(os.PathListSeparator) + filepath.Join(cache, "classes")
	cmd := exec.Command("java", "-Xmx768m", "-XX:+UseSerialGC",
		"--add-opens", "java.base/java.lang=ALL-UNNAMED",
		"-Dlog4j.configuration=file:"+filepath.Join(root, "e2e", "yarn", "log4j.properties"),
		"-cp", cp, "MiniYarn", conf, work, strings.Join(ports, ","))
	cmd.Dir = work
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("miniyarn stdin: %w", err)
	}
	logPath := filepath.Join(dir, "miniyarn.log")
	p, err := StartProc("miniyarn", cmd, logPath)
	if err != nil {
		return nil, err
	}
	y := &MiniYARN{Proc: p, Watch: WatchLog(logPath), ConfDir: conf, workDir: work, stdin: stdin}
	m, _, err := y.Watch.WaitFor(ctx, reMiniYARNReady, p.Exited)
	if err != nil {
		y.Stop()
		return nil, fmt.Errorf("miniyarn: %w\n%s", err, y.Watch.Tail(40))
	}
	y.WebURL, y.NMWebURL = m[1], m[2]
	u, err := url.Parse(y.WebURL)
	if err != nil {
		y.Stop()
		return nil, fmt.Errorf("miniyarn web URL %q: %w", y.WebURL, err)
	}
	y.WebPort, _ = strconv.Atoi(u.Port())
	return y, nil
}

// HostPorts lists the spellings of the ResourceManager's web address that
// must never appear in a page served by the gateway.
func (y *MiniYARN) HostPorts() []string {
	return []string{fmt.Sprintf("127.0.0.1:%d", y.WebPort), fmt.Sprintf("localhost:%d", y.WebPort)}
}

// ContainerLogFile is the path of a container's log file (stdout,
// stderr) in the NodeManager's log directory, which MiniYARNCluster keeps
// under target/ of its working directory, in a directory named
// <cluster>-logDir-nm-<n>_<dir>, as <app>/<container>/<type>.
func (y *MiniYARN) ContainerLogFile(appID, container, typ string) (string, error) {
	var found []string
	err := filepath.WalkDir(filepath.Join(y.workDir, "target"), func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil //nolint:nilerr // a directory removed meanwhile (a finished app's) is no failure
		}
		if e.IsDir() && strings.Contains(e.Name(), "-logDir-nm-") {
			if _, err := os.Stat(filepath.Join(p, appID, container, typ)); err == nil {
				found = append(found, filepath.Join(p, appID, container, typ))
			}
			return fs.SkipDir
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("finding the log of %s: %w", container, err)
	}
	if len(found) != 1 {
		return "", fmt.Errorf("%d files for the %s of %s in the NodeManager's log dirs: %v", len(found), typ, container, found)
	}
	return found[0], nil
}

// YARNApp is the part of the ResourceManager's app report the tests read.
type YARNApp struct {
	ID          string `json:"id"`
	User        string `json:"user"`
	Name        string `json:"name"`
	Queue       string `json:"queue"`
	State       string `json:"state"`
	FinalStatus string `json:"finalStatus"`
	TrackingUI  string `json:"trackingUI"`
	TrackingURL string `json:"trackingUrl"`
}

// App reads /ws/v1/cluster/apps/<id>.
func (y *MiniYARN) App(ctx context.Context, id string) (YARNApp, error) {
	var resp struct {
		App YARNApp `json:"app"`
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, y.WebURL+"/ws/v1/cluster/apps/"+id, nil)
	if err != nil {
		return resp.App, fmt.Errorf("building request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		return resp.App, fmt.Errorf("reading app %s: %w", id, err)
	}
	defer r.Body.Close()
	if r.StatusCode != http.StatusOK {
		return resp.App, fmt.Errorf("app %s: %s", id, r.Status)
	}
	if err := json.NewDecoder(r.Body).Decode(&resp); err != nil {
		return resp.App, fmt.Errorf("decoding app %s: %w", id, err)
	}
	return resp.App, nil
}

// Running returns the ResourceManager's answer to
// /ws/v1/cluster/apps?states=RUNNING, the list the gateway's YARN source
// reads.
func (y *MiniYARN) Running(ctx context.Context) ([]byte, error) {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, y.WebURL+"/ws/v1/cluster/apps?states=RUNNING", nil)
	if err != nil {
		return nil, fmt.Errorf("building request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reading running apps: %w", err)
	}
	defer r.Body.Close()
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, fmt.Errorf("reading running apps: %w", err)
	}
	if r.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("running apps: %s", r.Status)
	}
	return body, nil
}

// Stop closes the cluster's stdin and ends it (SIGTERM, which its shutdown
// hook turns into an orderly stop of the NodeManager's containers).
func (y *MiniYARN) Stop() {
	_ = y.stdin.Close()
	_ = y.Proc.Stop(30 * time.Second)
	y.Watch.Close()
}

// YARNDriverOptions configures app.py submitted to a MiniYARN in client
// mode: --light --long-job, one executor, small memory.
type YARNDriverOptions struct {
	Name    string // spark.app.name; also the log file's base name
	WorkDir string // cwd, staging dir, event logs and the stop file
	LogPath string // spark-submit's stdout and stderr
	Confs   map[string]string
}

// StartYARNDriver runs spark-submit --master yarn --deploy-mode client with
// the cluster's configuration and waits for app.py's app id line (the app
// is then ACCEPTED or RUNNING in the ResourceManager). Spark's own jars are
// used in place (spark.yarn.jars=local:...), nothing is uploaded but the
// conf archive.
//
// A driver that dies of Spark's own start-up race on YARN (SparkUI's
// handlers attached while the YARN backend adds its AmIpFilter to them:
// a ConcurrentModificationException in SparkUI.attachAllHandlers, seen
// once in many CI runs with 4.0.5) is submitted once more; its log is kept
// beside the new one (.1).
func StartYARNDriver(ctx context.Context, root string, home SparkHome, y *MiniYARN, opt YARNDriverOptions) (*Driver, error) {
	d, err := startYARNDriver(ctx, root, home, y, opt)
	if err == nil || !sparkUIRace(opt.LogPath) {
		return d, err
	}
	if rerr := os.Rename(opt.LogPath, opt.LogPath+".1"); rerr != nil {
		return nil, errors.Join(err, rerr)
	}
	return startYARNDriver(ctx, root, home, y, opt)
}

// sparkUIRace reports whether a driver's log shows Spark's start-up race
// (see StartYARNDriver).
func sparkUIRace(logPath string) bool {
	b, err := os.ReadFile(logPath) //nolint:gosec // G304: the test's own driver log
	if err != nil {
		return false
	}
	i := bytes.Index(b, []byte("java.util.ConcurrentModificationException"))
	return i >= 0 && bytes.Contains(b[i:], []byte("SparkUI.attachAllHandlers"))
}

func startYARNDriver(ctx context.Context, root string, home SparkHome, y *MiniYARN, opt YARNDriverOptions) (*Driver, error) {
	events := filepath.Join(opt.WorkDir, "events")
	if err := os.MkdirAll(events, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", events, err)
	}
	stop := filepath.Join(opt.WorkDir, opt.Name+".stop")
	args := []string{filepath.Join(home.Home, "bin", "spark-submit"),
		"--master", "yarn", "--deploy-mode", "client",
		"--driver-memory", "512m", "--executor-memory", "512m",
		"--num-executors", "1", "--executor-cores", "1",
		"--conf", "spark.yarn.am.memory=384m",
		"--conf", "spark.yarn.jars=local:" + filepath.Join(home.Home, "jars", "*"),
		"--conf", "spark.yarn.stagingDir=file:" + filepath.Join(opt.WorkDir, "staging"),
		"--conf", "spark.driver.host=127.0.0.1",
		"--conf", "spark.ui.port=0"}
	for _, k := range slices.Sorted(maps.Keys(opt.Confs)) {
		args = append(args, "--conf", k+"="+opt.Confs[k])
	}
	args = append(args, filepath.Join(root, "e2e", "spark", "app.py"),
		"--master", "yarn", "--light", "--long-job",
		"--name", opt.Name, "--event-dir", events, "--stop-file", stop)
	cmd := exec.Command("bash", args...)
	cmd.Dir = opt.WorkDir
	// pip's pyspark has no python/lib/pyspark.zip for the containers; the
	// venv's python (same path on this one node) imports pyspark itself.
	cmd.Env = append(sparkEnv(root, home),
		"HADOOP_CONF_DIR="+y.ConfDir,
		"PYSPARK_ARCHIVES_PATH=local:"+filepath.Dir(home.Home))
	d := &Driver{Opts: DriverOptions{Name: opt.Name, WorkDir: opt.WorkDir, EventDir: events}, StopFile: stop, Started: time.Now()}
	if err := d.launch("yarn driver", cmd, opt.LogPath); err != nil {
		return nil, err
	}
	at, err := d.waitAppLine(ctx)
	if err != nil {
		return nil, err
	}
	d.UILineAt = at
	return d, nil
}
