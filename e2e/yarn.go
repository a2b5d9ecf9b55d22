//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
	stdin   io.WriteCloser
}

var reMiniYARNReady = regexp.MustCompile(`MINIYARN READY rm_web=(\S+)`)

// YARNInstalled reports whether scripts/setup-yarn.sh has run: the
// harness's class and its class path are under .cache/yarn.
func YARNInstalled(root string) error {
	for _, p := range []string{
		filepath.Join(root, ".cache", "yarn", "classes", "MiniYarn.class"),
		filepath.Join(root, ".cache", "yarn", "lib"),
	} {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("YARN parts missing (run scripts/setup.sh): %w", err)
		}
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
	y := &MiniYARN{Proc: p, Watch: WatchLog(logPath), ConfDir: conf, stdin: stdin}
	m, _, err := y.Watch.WaitFor(ctx, reMiniYARNReady, p.Exited)
	if err != nil {
		y.Stop()
		return nil, fmt.Errorf("miniyarn: %w\n%s", err, y.Watch.Tail(40))
	}
	y.WebURL = m[1]
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
}

// StartYARNDriver runs spark-submit --master yarn --deploy-mode client with
// the cluster's configuration and waits for app.py's app id line (the app
// is then ACCEPTED or RUNNING in the ResourceManager). Spark's own jars are
// used in place (spark.yarn.jars=local:...), nothing is uploaded but the
// conf archive.
func StartYARNDriver(ctx context.Context, root string, home SparkHome, y *MiniYARN, opt YARNDriverOptions) (*Driver, error) {
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
		"--conf", "spark.ui.port=0",
		filepath.Join(root, "e2e", "spark", "app.py"),
		"--master", "yarn", "--light", "--long-job",
		"--name", opt.Name, "--event-dir", events, "--stop-file", stop}
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
