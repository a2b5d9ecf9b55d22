//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// Redis is a real redis-server (Debian's package, installed by
// scripts/setup-replicas.sh) on a free loopback port, without persistence.
type Redis struct {
	Proc *Proc
	Addr string
}

// StartRedis starts redis-server with its files in dir and waits until it
// answers PING.
func StartRedis(ctx context.Context, dir string) (*Redis, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redis-server is not installed; run scripts/setup-replicas.sh: %w", err)
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir)
	p, err := StartProc("redis-server", cmd, filepath.Join(dir, "redis.log"))
	if err != nil {
		return nil, err
	}
	r := &Redis{Proc: p, Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	for {
		if err := redisPing(r.Addr); err == nil {
			return r, nil
		}
		if p.Exited() {
			return nil, fmt.Errorf("redis-server exited at start; see %s", p.Log)
		}
		select {
		case <-ctx.Done():
			_ = p.Stop(5 * time.Second)
			return nil, fmt.Errorf("redis-server never answered: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// redisPing sends PING in Redis's inline protocol and expects +PONG.
func redisPing(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	buf := make([]byte, 7)
	n, err := c.Read(buf)
	if err != nil {
		return err
	}
	if string(buf[:n]) != "+PONG\r\n" {
		return fmt.Errorf("PING answered %q", buf[:n])
	}
	return nil
}

// Stop ends the server.
func (r *Redis) Stop() error { return r.Proc.Stop(5 * time.Second) }
