//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
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
}

// StartProc starts cmd with stdout and stderr appended to logPath, so that
// it dies with the suite: in a process group of its own (Stop signals the
// whole group), and with Pdeathsig SIGKILL, which the kernel sends when the
// suite dies in any way, a SIGKILL or a test timeout included, where no
// cleanup of ours runs. Every child of the suite must start here.
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
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
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
// leader, then SIGKILLs the group. It is safe to call more than once.
func (p *Proc) Stop(grace time.Duration) error {
	if p.Exited() {
		return nil
	}
	pgid := p.Cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := p.Wait(ctx); err == nil || !errors.Is(err, context.DeadlineExceeded) {
		// The leader is gone; what it left in its group (a JVM that
		// ignored the TERM, a Python worker) goes too. Its pid was reaped
		// just now, so the group id cannot name someone else's group yet.
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		return nil
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	_ = p.Wait(ctx2)
	return fmt.Errorf("%s did not stop within %v; killed", p.Name, grace)
}

// lastErr describes the last error of a polling loop, which may be none.
func lastErr(err error) string {
	if err == nil {
		return "none"
	}
	return err.Error()
}
