//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// LoadBalancer is Debian's nginx on loopback, round-robin over upstreams,
// retrying an idempotent request on the next upstream when one refuses the
// connection or times out (proxy_next_upstream error timeout).
type LoadBalancer struct {
	Proc      *Proc
	URL       string
	AccessLog string // one line per request: status, upstream addresses and statuses
}

// nginxConf is the whole configuration; everything nginx writes goes to
// the test's directory. One worker, so round-robin is one sequence.
const nginxConf = `%s
worker_processes 1;
daemon off;
pid %[2]s/nginx.pid;
error_log %[2]s/error.log info;
events { worker_connections 256; }
http {
	client_body_temp_path %[2]s/client_body;
	proxy_temp_path %[2]s/proxy;
	fastcgi_temp_path %[2]s/fastcgi;
	uwsgi_temp_path %[2]s/uwsgi;
	scgi_temp_path %[2]s/scgi;
	log_format lb '$status $request_method "$request_uri" upstream=$upstream_addr upstream_status=$upstream_status';
	access_log %[2]s/access.log lb;
	upstream sparkgate {
%[3]s	}
	server {
		listen %[4]s;
		location / {
			proxy_pass http://sparkgate;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
			proxy_set_header Host $http_host;
			proxy_connect_timeout 2s;
			proxy_read_timeout 60s;
			proxy_buffering off;
			# Only idempotent requests are retried (nginx never retries a
			# POST unless told to with non_idempotent).
			proxy_next_upstream error timeout;
			proxy_next_upstream_tries 3;
		}
	}
}
`

// StartLoadBalancer writes <dir>/nginx.conf and runs nginx on
// 127.0.0.1:port in front of upstreams (host:port each).
func StartLoadBalancer(ctx context.Context, dir string, port int, upstreams []string) (*LoadBalancer, error) {
	bin := "/usr/sbin/nginx"
	if _, err := os.Stat(bin); err != nil {
		if bin, err = exec.LookPath("nginx"); err != nil {
			return nil, fmt.Errorf("nginx is not installed; run scripts/setup-replicas.sh: %w", err)
		}
	}
	var ups strings.Builder
	for _, u := range upstreams {
		// max_fails=1: a replica that refused a connection gets no
		// requests for fail_timeout, as a health-checking LB would do.
		fmt.Fprintf(&ups, "\t\tserver %s max_fails=1 fail_timeout=30s;\n", u)
	}
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;" // workers write into the test's directory
	}
	listen := fmt.Sprintf("127.0.0.1:%d", port)
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, fmt.Appendf(nil, nginxConf, user, dir, ups.String(), listen), 0o644); err != nil {
		return nil, fmt.Errorf("writing %s: %w", conf, err)
	}
	cmd := exec.Command(bin, "-p", dir, "-c", conf, "-e", filepath.Join(dir, "error.log"))
	p, err := StartProc("nginx", cmd, filepath.Join(dir, "nginx.out"))
	if err != nil {
		return nil, err
	}
	lb := &LoadBalancer{Proc: p, URL: "http://" + listen, AccessLog: filepath.Join(dir, "access.log")}
	if err := waitHTTP(ctx, lb.URL+"/_/healthz", p.Exited); err != nil {
		_ = p.Stop(5 * time.Second)
		b, _ := os.ReadFile(filepath.Join(dir, "error.log"))
		return nil, fmt.Errorf("nginx: %w\n%s", err, b)
	}
	return lb, nil
}

// Host is the load balancer's host:port.
func (l *LoadBalancer) Host() string { return strings.TrimPrefix(l.URL, "http://") }

// Stop ends nginx (SIGTERM: fast shutdown).
func (l *LoadBalancer) Stop() error { return l.Proc.Stop(5 * time.Second) }
