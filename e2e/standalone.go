//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"time"
)

// SmallOptions configures one driver running e2e/spark/small.py: one job,
// then idle until its stop file exists.
type SmallOptions struct {
	Name    string            // spark.app.name; also the log file's base name
	LogPath string            // the driver's stdout and stderr
	WorkDir string            // cwd and the stop file
	Master  string            // "" runs local[1] with python; else spark-submit --master
	Confs   map[string]string // extra Spark confs (spark.ui.port defaults to 0)
	// OnUIPort, when set, is called as soon as the SparkUI port line is
	// seen (before the app id line), with the port and when it was seen.
	OnUIPort func(port int, at time.Time)
}

// StartSmallDriver starts small.py and waits for the SparkUI port line and
// the app id, as StartDriver does for app.py.
func StartSmallDriver(ctx context.Context, root string, home SparkHome, opt SmallOptions) (*Driver, error) {
	if err := os.MkdirAll(opt.WorkDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", opt.WorkDir, err)
	}
	stop := filepath.Join(opt.WorkDir, opt.Name+".stop")
	script := filepath.Join(root, "e2e", "spark", "small.py")
	var cmd *exec.Cmd
	args := []string{"--name", opt.Name, "--stop-file", stop}
	for k, v := range opt.Confs {
		args = append(args, "--conf", k+"="+v)
	}
	if opt.Master == "" {
		cmd = exec.Command(home.Python, append([]string{script, "--master", "local[1]"}, args...)...)
	} else {
		sub := []string{filepath.Join(home.Home, "bin", "spark-submit"), "--master", opt.Master,
			"--driver-memory", "512m", "--executor-memory", "512m",
			"--conf", "spark.cores.max=1", "--conf", "spark.executor.cores=1", script}
		cmd = exec.Command("bash", append(sub, args...)...)
	}
	cmd.Dir = opt.WorkDir
	cmd.Env = sparkEnv(root, home)
	d := &Driver{Opts: DriverOptions{Name: opt.Name, WorkDir: opt.WorkDir}, StopFile: stop, Started: time.Now()}
	if err := d.launch("driver", cmd, opt.LogPath); err != nil {
		return nil, err
	}
	m, at, err := d.waitLine(ctx, reUIPort)
	if err != nil {
		return nil, err
	}
	d.UIPort, _ = strconv.Atoi(m[1])
	d.UILineAt = at
	if opt.OnUIPort != nil {
		opt.OnUIPort(d.UIPort, at)
	}
	if _, err := d.waitAppLine(ctx); err != nil {
		return nil, err
	}
	return d, nil
}

// sparkEnv is the environment of every Spark process the tests start: the
// suite's log4j2.properties and loopback addresses only.
func sparkEnv(root string, home SparkHome) []string {
	return append(os.Environ(),
		"PYSPARK_PYTHON="+home.Python,
		"PYSPARK_DRIVER_PYTHON="+home.Python,
		"SPARK_HOME="+home.Home,
		"SPARK_CONF_DIR="+filepath.Join(root, "e2e", "spark", "conf"),
		"SPARK_LOCAL_IP=127.0.0.1",
		"SPARK_DAEMON_MEMORY=256m",
		"PATH="+filepath.Join(home.Venv, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"),
	)
}

// Standalone is a running standalone master with one worker.
type Standalone struct {
	Master    *Proc
	Worker    *Proc
	MasterURL string // spark://127.0.0.1:<port>
	WebURL    string // the master's web UI, http://127.0.0.1:<port>
	// WorkerWebURL is the worker's web UI, http://127.0.0.1:<port>.
	WorkerWebURL string
}

var reMasterPort = regexp.MustCompile(`Successfully started service 'sparkMaster' on port (\d+)\.`)

// StartStandalone starts a master (RPC port chosen by Spark, web UI on a
// free port) and a worker with one core and 512 MiB, and waits until the
// master's /json lists the worker ALIVE.
func StartStandalone(ctx context.Context, root string, home SparkHome, dir string) (*Standalone, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	mweb, err := FreePort()
	if err != nil {
		return nil, err
	}
	class := filepath.Join(home.Home, "bin", "spark-class")
	env := append(sparkEnv(root, home), "SPARK_LOG_DIR="+dir, "SPARK_WORKER_DIR="+filepath.Join(dir, "work"))
	mcmd := exec.Command("bash", class, "org.apache.spark.deploy.master.Master",
		"--host", "127.0.0.1", "--port", "0", "--webui-port", strconv.Itoa(mweb))
	mcmd.Dir, mcmd.Env = dir, env
	mlog := filepath.Join(dir, "master.log")
	mp, err := StartProc("master "+home.Version, mcmd, mlog)
	if err != nil {
		return nil, err
	}
	sa := &Standalone{Master: mp, WebURL: fmt.Sprintf("http://127.0.0.1:%d", mweb)}
	w := WatchLog(mlog)
	defer w.Close()
	m, _, err := w.WaitFor(ctx, reMasterPort, mp.Exited)
	if err != nil {
		sa.Stop()
		return nil, fmt.Errorf("master: %w\n%s", err, w.Tail(30))
	}
	sa.MasterURL = "spark://127.0.0.1:" + m[1]
	wweb, err := FreePort()
	if err != nil {
		sa.Stop()
		return nil, err
	}
	wcmd := exec.Command("bash", class, "org.apache.spark.deploy.worker.Worker", sa.MasterURL,
		"--host", "127.0.0.1", "--webui-port", strconv.Itoa(wweb), "--cores", "1", "--memory", "768m",
		"--work-dir", filepath.Join(dir, "work"))
	wcmd.Dir, wcmd.Env = dir, env
	wp, err := StartProc("worker "+home.Version, wcmd, filepath.Join(dir, "worker.log"))
	if err != nil {
		sa.Stop()
		return nil, err
	}
	sa.Worker = wp
	sa.WorkerWebURL = fmt.Sprintf("http://127.0.0.1:%d", wweb)
	for {
		st, err := sa.State(ctx)
		if err == nil && st.AliveWorkers > 0 {
			return sa, nil
		}
		if wp.Exited() || mp.Exited() {
			sa.Stop()
			return nil, fmt.Errorf("master or worker exited before the worker registered")
		}
		select {
		case <-ctx.Done():
			sa.Stop()
			return nil, fmt.Errorf("worker never registered (last error: %s): %w", lastErr(err), ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// MasterState is the part of the master's /json the tests read.
type MasterState struct {
	AliveWorkers int `json:"aliveworkers"`
	ActiveApps   []struct {
		ID    string `json:"id"`
		State string `json:"state"`
	} `json:"activeapps"`
	CompletedApps []struct {
		ID string `json:"id"`
	} `json:"completedapps"`
}

// State reads the master's /json.
func (sa *Standalone) State(ctx context.Context) (MasterState, error) {
	var st MasterState
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, sa.WebURL+"/json", nil)
	if err != nil {
		return st, fmt.Errorf("building request: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return st, fmt.Errorf("reading master state: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("master /json: %s", resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return st, fmt.Errorf("decoding master state: %w", err)
	}
	return st, nil
}

// Stop ends the worker, then the master.
func (sa *Standalone) Stop() {
	if sa.Worker != nil {
		_ = sa.Worker.Stop(15 * time.Second)
	}
	_ = sa.Master.Stop(15 * time.Second)
}
