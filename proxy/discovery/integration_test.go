package discovery

import (
	"bufio"
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
)

// TestIntegrationRealDriver starts a real pyspark driver with
// spark.ui.port=0 and checks that the follower and the verifier find it
// with the id its own REST API reports. Set SPARKGATE_SPARK_HOME to the
// directory holding venv/ (for example .cache/spark/3.5.9); make e2e does,
// and fails if the test skipped.
//
// pyspark's default log4j profile lowers the console to WARN for shells
// (and `python -c` counts as one), which hides the SparkUI line; the test
// therefore points SPARK_CONF_DIR at a log4j2.properties that keeps
// org.apache.spark at INFO on stderr.
func TestIntegrationRealDriver(t *testing.T) {
	home := os.Getenv("SPARKGATE_SPARK_HOME")
	if home == "" {
		t.Skip("SPARKGATE_SPARK_HOME not set")
	}
	py := filepath.Join(home, "venv", "bin", "python")
	if _, err := os.Stat(py); err != nil {
		t.Fatalf("no python at %s: %v", py, err)
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "conf")
	os.Mkdir(conf, 0o755)
	props := strings.Join([]string{
		"rootLogger.level = info",
		"rootLogger.appenderRef.stdout.ref = console",
		"appender.console.type = Console",
		"appender.console.name = console",
		"appender.console.target = SYSTEM_ERR",
		"appender.console.layout.type = PatternLayout",
		"appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex",
		"logger.spark.name = org.apache.spark",
		"logger.spark.level = info",
		"logger.jetty.name = org.sparkproject.jetty",
		"logger.jetty.level = warn",
	}, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(conf, "log4j2.properties"), []byte(props), 0o644); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "driver.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()

	reg := NewRegistry()
	d := New(Config{
		Interval: time.Duration(time.Hour), // only the log may find it
		Logs:     []LogSource{{Paths: []string{logPath}, Host: "127.0.0.1"}},
	}, reg, zaptest.NewLogger(t))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go d.Run(ctx)

	script := "from pyspark.sql import SparkSession; s=SparkSession.builder.master('local[1]')" +
		".config('spark.ui.port','0').getOrCreate(); print('APPID='+s.sparkContext.applicationId+' '+s.sparkContext.uiWebUrl, flush=True); import time; time.sleep(60)"
	cmd := exec.CommandContext(ctx, py, "-c", script)
	cmd.Env = append(os.Environ(), "SPARK_CONF_DIR="+conf)
	cmd.Stderr = logFile
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	// The app id printed by the driver itself, to compare with.
	idCh := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "APPID="); ok {
				idCh <- v
			}
		}
	}()
	var wantID, uiWebURL string
	select {
	case v := <-idCh:
		wantID, uiWebURL, _ = strings.Cut(v, " ")
	case <-time.After(2 * time.Minute):
		b, _ := os.ReadFile(logPath)
		t.Fatalf("driver printed no app id; log:\n%s", b)
	}
	waitFor(t, reg, "the real driver", live(wantID))
	a, _ := reg.Lookup(wantID)

	// When did the port line reach the file? Compare its log4j timestamp
	// (second resolution) with now: logged, not asserted.
	var lineAt time.Time
	b, _ := os.ReadFile(logPath)
	for _, l := range strings.Split(string(b), "\n") {
		if ev, ok := ParseLine(l); ok && ev.Kind == EventUIPort && len(l) > 17 {
			lineAt, _ = time.ParseInLocation("06/01/02 15:04:05", l[:17], time.Local)
		}
	}
	t.Logf("found %s (user %s, spark %s) at %s; log line to routable <= %s (second-resolution log time)",
		a.ID, a.User, a.SparkVersion, a.UIURL, time.Since(lineAt).Truncate(time.Millisecond))
	// The host is the one the driver's log names (its executor's host, which
	// differs between machines); the port is the random one it bound.
	want, err := url.Parse(uiWebURL)
	if err != nil {
		t.Fatalf("driver printed uiWebUrl %q: %v", uiWebURL, err)
	}
	if a.UIURL == nil || a.UIURL.Scheme != "http" || a.UIURL.Port() != want.Port() {
		t.Errorf("UIURL = %v; want http on the driver's random port %s (uiWebUrl %s)", a.UIURL, want.Port(), uiWebURL)
	}
}
