//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Proc is a child process started by the harness, in its own process group
// so that stopping it also stops its children (spark-submit's JVM, Node).
type Proc struct {
	Name string
	Cmd  *exec.Cmd
	Log  string // the file that holds its stdout and stderr
	done chan struct{}
	err  error

	// watch is the group's watchdog (see startWatchdog) and lifeline the
	// write end of its stdin; nil if it could not start.
	watch     *exec.Cmd
	lifeline  *os.File
	unwatched sync.Once
}

// StartProc starts cmd with stdout and stderr appended to logPath, so that
// it dies with the suite, a SIGKILL or a test timeout included, where no
// cleanup of ours runs:
//   - it leads a process group of its own, which Stop signals whole;
//   - Pdeathsig SIGKILL: the kernel kills it when the suite dies;
//   - a watchdog in its group kills the group when the suite dies, for what
//     the child started (Pdeathsig is not inherited: the Python app under a
//     YARN spark-submit, a worker's executors).
//
// Every child of the suite must start here.
func StartProc(name string, cmd *exec.Cmd, logPath string) (*Proc, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening log of %s: %w", name, err)
	}
	cmd.Stdout = f
	cmd.Stderr = f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := startPinned(cmd); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &Proc{Name: name, Cmd: cmd, Log: logPath, done: make(chan struct{})}
	// A child that exits at once takes its group with it; then there is
	// nothing left to watch.
	p.watch, p.lifeline, _ = startWatchdog(cmd.Process.Pid)
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// watchdogScript ignores the signals Stop and a terminal send, waits for
// its stdin to end (the suite's end of the pipe closes when the suite dies,
// however it dies) and then kills its process group, itself included.
const watchdogScript = `trap '' TERM INT HUP; read -r _; kill -KILL -- "-$1"`

// startWatchdog starts a watchdog in process group pgid. While it lives, the
// group does too, so Stop may signal the group even after the leader was
// reaped without any risk of the id naming some later process's group.
func startWatchdog(pgid int) (*exec.Cmd, *os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("watchdog pipe: %w", err)
	}
	cmd := exec.Command("bash", "-c", watchdogScript, "watchdog", strconv.Itoa(pgid))
	cmd.Stdin = r
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: pgid}
	err = startPinned(cmd)
	r.Close()
	if err != nil {
		w.Close()
		return nil, nil, fmt.Errorf("starting watchdog of group %d: %w", pgid, err)
	}
	return cmd, w, nil
}

// The kernel sends Pdeathsig when the thread that forked the child ends,
// not the process (golang/go#27505): a child forked from an ordinary
// goroutine would be killed whenever the runtime retires that OS thread
// (a goroutine that exits while locked to it does). So every child is
// forked by one goroutine locked to its thread for the life of the suite.
var starter struct {
	once sync.Once
	reqs chan startReq
}

type startReq struct {
	cmd  *exec.Cmd
	done chan error
}

// startPinned runs cmd.Start on the starter's thread.
func startPinned(cmd *exec.Cmd) error {
	starter.once.Do(func() {
		starter.reqs = make(chan startReq)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the suite
			for r := range starter.reqs {
				r.done <- r.cmd.Start()
			}
		}()
	})
	r := startReq{cmd: cmd, done: make(chan error, 1)}
	starter.reqs <- r
	return <-r.done
}

// Exited reports whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Wait waits for the process to end or ctx to expire.
func (p *Proc) Wait(ctx context.Context) error {
	select {
	case <-p.done:
		return p.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stop sends SIGTERM to the process group, waits up to grace for its
// leader, then SIGKILLs the group, so nothing the leader started outlives
// it. It is safe to call more than once.
func (p *Proc) Stop(grace time.Duration) error {
	defer p.unwatch()
	if p.Exited() {
		return nil
	}
	pgid := p.Cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := p.Wait(ctx); err == nil || !errors.Is(err, context.DeadlineExceeded) {
		return nil
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	_ = p.Wait(ctx2)
	return fmt.Errorf("%s did not stop within %v; killed", p.Name, grace)
}

// unwatch kills what is left in the group (the watchdog keeps the group id
// from being reused until then) and reaps the watchdog.
func (p *Proc) unwatch() {
	p.unwatched.Do(func() {
		if p.watch == nil {
			return
		}
		_ = syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGKILL)
		_ = p.watch.Wait()
		p.lifeline.Close()
	})
}

// lastErr describes the last error of a polling loop, which may be none.
func lastErr(err error) string {
	if err == nil {
		return "none"
	}
	return err.Error()
}
