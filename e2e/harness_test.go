//go:build e2e

package e2e

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestStartUniqueDriver: a driver that drew another's app id, or failed
// on its event log for that reason, is started again; other failures are
// not retried.
func TestStartUniqueDriver(t *testing.T) {
	ctx := ctxFor(t, time.Minute)
	var started []*Driver
	fake := func(id string) *Driver {
		p, err := StartProc("fake driver", exec.Command("sleep", "60"), filepath.Join(t.TempDir(), "fake.log"))
		if err != nil {
			t.Fatal(err)
		}
		d := &Driver{Proc: p, AppID: id, Opts: DriverOptions{Name: "fake"}}
		started = append(started, d)
		t.Cleanup(d.Kill)
		return d
	}
	ids := &uniqueIDs{taken: map[string]bool{"local-1": true}}
	tries := 0
	d, err := startUniqueDriver(ctx, ids, func() (*Driver, error) {
		tries++
		switch tries {
		case 1:
			return nil, errors.New("driver acl-B: process exited: java.io.IOException: Target log directory already exists")
		case 2:
			return fake("local-1"), nil
		}
		return fake("local-2"), nil
	})
	if err != nil || d.AppID != "local-2" || tries != 3 {
		t.Fatalf("startUniqueDriver = %v, %v after %d tries; want local-2 after 3", d, err, tries)
	}
	if !started[0].Proc.Exited() {
		t.Errorf("the driver that drew local-1 again still runs; want it killed")
	}
	if !ids.taken["local-2"] {
		t.Errorf("local-2 was not claimed")
	}

	tries = 0
	if _, err := startUniqueDriver(ctx, ids, func() (*Driver, error) {
		tries++
		return nil, errors.New("driver acl-C: python not found")
	}); err == nil || tries != 1 {
		t.Errorf("startUniqueDriver with another failure = %v after %d tries; want that error after 1", err, tries)
	}
}

// TestPortOwners proves portOwners names the process listening on a port,
// which the probe test prints when Spark's default UI ports are all taken.
func TestPortOwners(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	got := portOwners(port, port)[port]
	if want := fmt.Sprintf("pid %d (", os.Getpid()); !strings.HasPrefix(got, want) {
		t.Errorf("portOwners(%d) = %q; want it to start with %q", port, got, want)
	}
}

// TestWantedSparkVersions: the suite's matrix is the list setup installs,
// and a version missing from the installations is reported, not dropped.
func TestWantedSparkVersions(t *testing.T) {
	t.Setenv("SPARK_E2E_VERSIONS", "")
	t.Setenv("SPARK_VERSIONS", "")
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	want, err := WantedSparkVersions(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) < 2 {
		t.Errorf("WantedSparkVersions = %v; want the several versions scripts/setup-spark.sh installs", want)
	}
	installed := []SparkHome{{Version: want[0]}}
	homes, missing := matchVersions(installed, want)
	if len(homes) != 1 || !slices.Equal(missing, want[1:]) {
		t.Errorf("matchVersions(%v, %v) = %v, %v; want one home and missing %v", installed, want, homes, missing, want[1:])
	}
	t.Setenv("SPARK_E2E_VERSIONS", "9.9.9")
	if got, _ := WantedSparkVersions(root); !slices.Equal(got, []string{"9.9.9"}) {
		t.Errorf("WantedSparkVersions with SPARK_E2E_VERSIONS=9.9.9 = %v", got)
	}
}
