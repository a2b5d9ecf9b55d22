//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDiagnosisLostExecutor runs, on the newest installed Spark, a
// standalone master and worker, a History Server, a gateway and one small
// app on the cluster; kills the app's executor (the worker starts
// another), and checks that the diagnosis reports exactly that executor as
// lost, with the reason Spark recorded, while the app runs and, from the
// History Server, after it has stopped (its normal shutdown is no finding).
func TestDiagnosisLostExecutor(t *testing.T) {
	s := newSuite(t)
	s.requireGateway(t)
	homes := s.sparkHomes(t)
	home := homes[len(homes)-1]
	t.Run(home.Version, func(t *testing.T) { s.runLostExecutor(t, home) })
}

func (s *suite) runLostExecutor(t *testing.T, home SparkHome) {
	ctx := ctxFor(t, 8*time.Minute)
	dir := s.freshDir(t, "diagnosis-lost-"+home.Version)
	events := filepath.Join(dir, "events")
	for _, d := range []string{events, filepath.Join(dir, "gateway")} {
		if err := mkdir(d); err != nil {
			t.Fatal(err)
		}
	}
	sa, err := StartStandalone(ctx, s.root, home, filepath.Join(dir, "cluster"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sa.Stop)
	hs, err := StartHistoryServer(ctx, s.root, home, events, filepath.Join(dir, "history"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hs.Stop() })
	gw, client := s.localGateway(ctx, t, filepath.Join(dir, "gateway"), GatewayOptions{Discovery: map[string]any{
		"interval":   "1s",
		"standalone": []any{map[string]any{"url": sa.WebURL}},
		"history":    []any{map[string]any{"name": "local", "url": hs.URL}},
	}})
	name := "diag-lost-" + strings.ReplaceAll(home.Version, ".", "_")
	d, err := StartSmallDriver(ctx, s.root, home, SmallOptions{
		Name: name, LogPath: filepath.Join(dir, name+".log"), WorkDir: filepath.Join(dir, "driver"),
		Master: sa.MasterURL,
		Confs:  map[string]string{"spark.eventLog.enabled": "true", "spark.eventLog.dir": "file:" + events},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Kill)
	if _, _, err := d.Watch.WaitFor(ctx, reReady, d.Proc.Exited); err != nil {
		t.Fatal(err)
	}
	if _, _, err := gw.WaitListed(ctx, client, func(id string) bool { return id == d.AppID }); err != nil {
		t.Fatal(err)
	}
	before, err := getDiagnosis(ctx, client, gw.URL, d.AppID)
	if err != nil {
		t.Fatal(err)
	}
	if len(before.Findings) != 0 {
		t.Errorf("before the kill: findings %v; want none", before.kinds())
	}

	pid, err := executorPID(sa.Worker.Cmd.Process.Pid, d.AppID)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("killing executor process %d: %v", pid, err)
	}
	t.Logf("killed the executor of %s (pid %d)", d.AppID, pid)
	check := func(t *testing.T, live bool) diagJSON {
		t.Helper()
		for {
			dj, err := getDiagnosis(ctx, client, gw.URL, d.AppID)
			if err == nil && dj.Live == live && slices.Contains(dj.kinds(), "executor_removed") {
				return dj
			}
			if ctx.Err() != nil {
				t.Fatalf("no executor_removed finding (live=%v): %v %v", live, err, dj.kinds())
			}
			time.Sleep(2 * time.Second) // past diagnosis.cache_ttl at most 15 times
		}
	}
	t.Run("live", func(t *testing.T) {
		dj := check(t, true)
		t.Logf("findings %v: %s", dj.kinds(), dj.Findings[0].Seen)
		if !slices.Equal(dj.kinds(), []string{"executor_removed"}) || !strings.Contains(dj.Findings[0].Seen, "executor 0 ") {
			t.Errorf("findings = %+v; want executor 0 removed, nothing else", dj.Findings)
		}
	})
	t.Run("history", func(t *testing.T) {
		if err := d.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		if err := hs.WaitApp(ctx, d.AppID, true); err != nil {
			t.Fatal(err)
		}
		dj := check(t, false)
		t.Logf("from %s: %v", dj.Source, dj.kinds())
		for _, f := range dj.Findings {
			t.Logf("  %s: %s", f.Kind, f.Seen)
		}
		if !slices.Equal(dj.kinds(), []string{"executor_removed"}) || !strings.Contains(dj.Findings[0].Seen, "executor 0 ") {
			t.Errorf("finished app's findings = %v; want executor 0 removed, and the app's normal shutdown no finding", dj.kinds())
		}
	})
}

// executorPID finds, among the processes of the worker's process group
// (the executors the worker started), the executor of appID.
func executorPID(workerPGID int, appID string) (int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pgid, err := syscall.Getpgid(pid); err != nil || pgid != workerPGID {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if bytes.Contains(cmd, []byte("CoarseGrainedExecutorBackend")) && bytes.Contains(cmd, []byte(appID)) {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no executor of %s in the worker's process group %d", appID, workerPGID)
}
