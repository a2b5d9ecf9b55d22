// Command bareproxy is the baseline of the side-by-side load test of
// scripts/bench.sh: a bare net/http/httputil.ReverseProxy in front of one
// upstream, with nothing but keep-alive connections to it (no
// authentication, no rewriting). It must not be used for anything but
// loopback benchmarks.
package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "bareproxy:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("bareproxy", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:0", "loopback `host:port` to serve on")
	upstream := fs.String("upstream", "", "upstream `URL`")
	if err := fs.Parse(args); err != nil {
		return err
	}
	host, _, err := net.SplitHostPort(*listen)
	if err != nil || !net.ParseIP(host).IsLoopback() {
		return fmt.Errorf("-listen %q: must be a loopback address", *listen)
	}
	u, err := url.Parse(*upstream)
	if err != nil || u.Host == "" {
		return fmt.Errorf("-upstream %q: not a URL", *upstream)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 256 // as many idle upstream connections as wrk keeps open
	rp.Transport = tr
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listening: %w", err)
	}
	fmt.Printf("bareproxy url=http://%s\n", ln.Addr())
	srv := &http.Server{Handler: rp, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: time.Minute}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	go func() { <-stop; _ = srv.Close() }()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving: %w", err)
	}
	return nil
}
