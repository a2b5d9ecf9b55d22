//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// HistoryServer is a running Spark History Server.
type HistoryServer struct {
	Proc *Proc
	Port int
	URL  string
}

// StartHistoryServer runs spark-class org.apache.spark.deploy.history.HistoryServer
// on a free port, reading eventDir every 2 s, and waits until it answers.
// props adds History Server settings (e.g. spark.history.ui.acls.enable).
func StartHistoryServer(ctx context.Context, root string, home SparkHome, eventDir, workDir string, props map[string]string) (*HistoryServer, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(workDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", workDir, err)
	}
	all := map[string]string{
		"spark.history.fs.logDirectory":    "file:" + eventDir,
		"spark.history.ui.port":            fmt.Sprint(port),
		"spark.history.fs.update.interval": "2s",
		"spark.history.fs.cleaner.enabled": "false",
	}
	for k, v := range props {
		all[k] = v
	}
	keys := make([]string, 0, len(all))
	for k := range all {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, all[k])
	}
	propFile := filepath.Join(workDir, "history.properties")
	if err := os.WriteFile(propFile, []byte(b.String()), 0o644); err != nil {
		return nil, fmt.Errorf("writing %s: %w", propFile, err)
	}
	cmd := exec.Command("bash", filepath.Join(home.Home, "bin", "spark-class"),
		"org.apache.spark.deploy.history.HistoryServer", "--properties-file", propFile)
	cmd.Dir = workDir
	cmd.Env = append(os.Environ(),
		"SPARK_HOME="+home.Home,
		"SPARK_CONF_DIR="+filepath.Join(root, "e2e", "spark", "conf"),
		"SPARK_LOG_DIR="+workDir,
	)
	p, err := StartProc("history server "+home.Version, cmd, filepath.Join(workDir, "history.log"))
	if err != nil {
		return nil, err
	}
	hs := &HistoryServer{Proc: p, Port: port, URL: fmt.Sprintf("http://127.0.0.1:%d", port)}
	if err := waitHTTP(ctx, hs.URL+"/api/v1/applications", p.Exited); err != nil {
		_ = p.Stop(10 * time.Second)
		return nil, fmt.Errorf("history server: %w", err)
	}
	return hs, nil
}

// WaitApp waits until the History Server lists appID with its newest attempt
// completed (or, with completed false, at all).
func (hs *HistoryServer) WaitApp(ctx context.Context, appID string, completed bool) error {
	c := &http.Client{Timeout: 5 * time.Second}
	for {
		var app struct {
			ID       string `json:"id"`
			Attempts []struct {
				Completed bool `json:"completed"`
			} `json:"attempts"`
		}
		resp, err := c.Get(hs.URL + "/api/v1/applications/" + appID)
		if err == nil {
			if resp.StatusCode == http.StatusOK {
				err = json.NewDecoder(resp.Body).Decode(&app)
			}
			resp.Body.Close()
			if err == nil && app.ID == appID && len(app.Attempts) > 0 && (!completed || app.Attempts[0].Completed) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("history server never listed %s (completed=%v): %w", appID, completed, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// WaitUI waits until the History Server renders appID's Jobs page, and
// returns the error statuses it answered before. Listing an app as completed
// and rendering its UI are separate steps in the History Server: right after
// the listing, Spark 4.3 has answered 500 for the page once (CI, stop 22).
func (hs *HistoryServer) WaitUI(ctx context.Context, appID string) ([]int, error) {
	c := NoRedirectClient(nil)
	var refused []int
	for {
		resp, err := c.Get(hs.URL + "/history/" + appID + "/jobs/")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return refused, nil
			}
			refused = append(refused, resp.StatusCode)
		}
		select {
		case <-ctx.Done():
			return refused, fmt.Errorf("history server never rendered %s's jobs page (answers %v): %w", appID, refused, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Stop ends the History Server.
func (hs *HistoryServer) Stop() error { return hs.Proc.Stop(15 * time.Second) }

// waitHTTP polls url until it answers 200.
func waitHTTP(ctx context.Context, url string, exited func() bool) error {
	return waitHTTPWith(ctx, &http.Client{Timeout: 2 * time.Second}, url, exited)
}

// waitHTTPWith polls url with c until it answers 200.
func waitHTTPWith(ctx context.Context, c *http.Client, url string, exited func() bool) error {
	for {
		resp, err := c.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if exited != nil && exited() {
			return fmt.Errorf("process exited before %s answered", url)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", url, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
