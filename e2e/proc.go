//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
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

// StartProc starts cmd with stdout and stderr appended to logPath.
func StartProc(name string, cmd *exec.Cmd, logPath string) (*Proc, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening log of %s: %w", name, err)
	}
	cmd.Stdout = f
	cmd.Stderr = f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
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

// Stop sends SIGTERM to the process group, waits up to grace, then SIGKILLs
// it. It is safe to call more than once.
func (p *Proc) Stop(grace time.Duration) error {
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

// lastErr describes the last error of a polling loop, which may be none.
func lastErr(err error) string {
	if err == nil {
		return "none"
	}
	return err.Error()
}
