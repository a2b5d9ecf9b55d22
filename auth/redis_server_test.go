package auth

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisServer is a real redis-server (Debian's package, installed by
// scripts/setup-replicas.sh) on a loopback port of its own, without
// persistence, stopped when the test ends.
type redisServer struct {
	t    testing.TB
	bin  string
	dir  string
	port int
	cmd  *exec.Cmd
	done chan struct{}
}

func (r *redisServer) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(r.port)) }

// startRedis starts redis-server, or skips the test when the binary is
// missing outside CI; on CI (CI set) a missing binary fails the test, since
// make check installs it.
func startRedis(t testing.TB) *redisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		msg := "redis-server is not installed (scripts/setup-replicas.sh installs Debian's package)"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	r := &redisServer{t: t, bin: bin, dir: t.TempDir(), port: port}
	r.start()
	t.Cleanup(r.stop)
	return r
}

func (r *redisServer) start() {
	r.t.Helper()
	r.cmd = exec.Command(r.bin, "--port", strconv.Itoa(r.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", r.dir, "--logfile", filepath.Join(r.dir, "redis.log"))
	if err := r.cmd.Start(); err != nil {
		r.t.Fatalf("starting redis-server: %v", err)
	}
	r.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { _ = cmd.Wait(); close(done) }(r.cmd, r.done)
	c := redis.NewClient(&redis.Options{Addr: r.addr(), MaxRetries: -1})
	defer c.Close()
	for range 200 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return
		}
		select {
		case <-r.done:
			log, _ := os.ReadFile(filepath.Join(r.dir, "redis.log"))
			r.t.Fatalf("redis-server exited at start:\n%s", log)
		case <-time.After(25 * time.Millisecond):
		}
	}
	r.t.Fatalf("redis-server on %s never answered PING", r.addr())
}

// stop kills the server (as a crash would) and waits for it to end.
func (r *redisServer) stop() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	select {
	case <-r.done:
		return
	default:
	}
	_ = r.cmd.Process.Kill()
	<-r.done
}

// client returns a client of the server, closed when the test ends.
func (r *redisServer) client() *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: r.addr()})
	r.t.Cleanup(func() { _ = c.Close() })
	return c
}

// redisConfig is oidcConfig with the shared store on r, under a key
// prefix of the test's own.
func redisConfig(idp *fakeIDP, r *redisServer, keys ...string) Config {
	cfg := oidcConfig(idp, keys...)
	cfg.Session.Store = StoreRedis
	// A generous timeout: on a busy test machine a slow answer would count
	// as the store down, which the tests of an answering store must not see.
	cfg.Session.Redis = RedisConfig{Addr: r.addr(), KeyPrefix: fmt.Sprintf("test-%d:", time.Now().UnixNano()), Timeout: 2 * time.Second}
	cfg.SetDefaults()
	return cfg
}
