//go:build e2e

package e2e

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestChildrenDieWithSuite proves that a child started with StartProc
// outlives the OS thread that asked for it but not the suite, and neither
// does what the child started: a helper process (this test binary) starts a
// child, which starts a grandchild, from a goroutine locked to a thread that
// then ends, reports both pids, and is killed with SIGKILL, so no cleanup of
// its own runs; both must then be gone.
func TestChildrenDieWithSuite(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperSuite$", "-test.v")
	cmd.Env = append(os.Environ(), "SPARKGATE_E2E_HELPER="+t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var child, grandchild int
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CHILD="); ok {
			c, g, _ := strings.Cut(v, " ")
			child, _ = strconv.Atoi(c)
			grandchild, _ = strconv.Atoi(g)
			break
		}
	}
	if child == 0 || grandchild == 0 {
		t.Fatalf("helper reported no child and grandchild pids (scan error %v)", sc.Err())
	}
	defer syscall.Kill(child, syscall.SIGKILL) // if the test fails
	defer syscall.Kill(grandchild, syscall.SIGKILL)
	if !running(child) {
		t.Fatalf("child %d died when the thread that started it ended; want it alive while the suite lives", child)
	}
	if !running(grandchild) {
		t.Fatalf("grandchild %d is not running before the suite was killed", grandchild)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range []int{child, grandchild} {
		for running(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("process %d (%s) still runs after the suite was killed (child %d, grandchild %d)", pid, procCmdline(pid), child, grandchild)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// TestHelperSuite is the suite stand-in TestChildrenDieWithSuite runs; it
// does nothing in a normal run.
func TestHelperSuite(_ *testing.T) {
	dir := os.Getenv("SPARKGATE_E2E_HELPER")
	if dir == "" {
		return
	}
	type started struct {
		p   *Proc
		tid int
	}
	ch := make(chan started)
	go func() {
		// Locked and never unlocked: the runtime ends this thread when the
		// goroutine returns, which would fire a Pdeathsig tied to it. (The
		// main thread, which the runtime never ends, is taken by init.)
		runtime.LockOSThread()
		// The child starts a grandchild (which Pdeathsig does not cover),
		// then becomes a sleep itself.
		p, err := StartProc("sleeper", exec.Command("bash", "-c", "sleep 301 & echo GRANDCHILD=$!; exec sleep 300"), filepath.Join(dir, "sleeper.log"))
		if err != nil {
			fmt.Println("ERROR", err)
			os.Exit(1)
		}
		ch <- started{p, syscall.Gettid()}
	}()
	s := <-ch
	child := s.p.Cmd.Process.Pid
	for {
		if _, err := os.Stat(fmt.Sprintf("/proc/self/task/%d", s.tid)); os.IsNotExist(err) {
			break // the thread that asked for the child has ended
		}
		time.Sleep(10 * time.Millisecond)
	}
	var grandchild string
	for grandchild == "" && !s.p.Exited() {
		b, _ := os.ReadFile(filepath.Join(dir, "sleeper.log"))
		_, grandchild, _ = strings.Cut(strings.TrimSpace(string(b)), "GRANDCHILD=")
		time.Sleep(10 * time.Millisecond)
	}
	// The child has exec'd its sleep (or died): only then does running()
	// tell the two apart.
	for !s.p.Exited() && !running(child) {
		time.Sleep(10 * time.Millisecond)
	}
	for range 50 { // give a Pdeathsig tied to that thread time to land
		if s.p.Exited() {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Printf("CHILD=%d %s\n", child, grandchild)
	select {} // until killed
}

func init() {
	if os.Getenv("SPARKGATE_E2E_HELPER") != "" {
		runtime.LockOSThread() // keep the helper's test goroutines off the main thread
	}
}

// running reports whether pid is a live sleep process (not gone, not a
// zombie, not a reused pid).
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) || s[i+2] == 'Z' {
		return false
	}
	return strings.HasPrefix(procCmdline(pid), "sleep")
}

func procCmdline(pid int) string { return cmdline(strconv.Itoa(pid)) }
