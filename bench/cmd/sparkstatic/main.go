// Command sparkstatic is a fast stand-in for a Spark driver UI, for the
// benchmarks: it serves pages captured from a real driver (the jobs page and
// the REST answers discovery reads) at the paths a driver serves them, from
// memory, so that a load test measures the gateway and not Spark's page
// rendering. It must not be used for anything but loopback benchmarks.
//
// The capture directory holds jobs.html, applications.json,
// environment.json and jobs.json (see scripts/bench.sh). A missing JSON file
// is synthesised from -id; a missing jobs.html is an error. -kill-html
// names a second page (a running app's jobs page, with kill controls),
// served at /running/jobs/ and, always with its length, at
// /running/jobs/length/; -kill-fit-html names one that fits Jetty's
// buffer (fewer jobs running), served at /running/fit/jobs/; a small REST
// answer (one job, about 200 bytes) is served at
// /api/v1/applications/<id>/jobs/0. Pages go out as a driver's Jetty
// sends them (writeAsJetty).
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "sparkstatic:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("sparkstatic", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:0", "loopback `host:port` to serve on")
	dir := fs.String("dir", "", "capture `directory` (jobs.html, applications.json, environment.json, jobs.json)")
	jobsHTML := fs.String("jobs-html", "", "jobs page `file` when the capture has none")
	id := fs.String("id", "", "app id to serve under; the captured id is replaced by it everywhere")
	killHTML := fs.String("kill-html", "", "`file` served at /running/jobs/ and /running/jobs/length/ (a jobs page with kill controls)")
	fitHTML := fs.String("kill-fit-html", "", "`file` served at /running/fit/jobs/ (a jobs page with kill controls that fits Jetty's buffer)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	host, _, err := net.SplitHostPort(*listen)
	if err != nil || !net.ParseIP(host).IsLoopback() {
		return fmt.Errorf("-listen %q: must be a loopback address", *listen)
	}
	site, err := load(*dir, *jobsHTML, *id)
	if err != nil {
		return err
	}
	for _, p := range []struct {
		file string
		to   *[]byte
	}{{*killHTML, &site.kill}, {*fitHTML, &site.fit}} {
		if p.file == "" {
			continue
		}
		b, err := os.ReadFile(p.file) //nolint:gosec // the file of this tool's own -kill-html or -kill-fit-html flag
		if err != nil {
			return fmt.Errorf("reading kill page: %w", err)
		}
		*p.to = b
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listening: %w", err)
	}
	fmt.Printf("sparkstatic app_id=%s url=http://%s\n", site.id, ln.Addr())
	srv := &http.Server{Handler: site, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: time.Minute}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	go func() { <-stop; _ = srv.Close() }()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving: %w", err)
	}
	return nil
}

// site is the captured pages, ready to serve.
type site struct {
	id                    string
	jobs, apps, env, ajob []byte
	kill, fit, small      []byte
}

// load reads the capture and renames its app id to id (when set).
func load(dir, jobsHTML, id string) (*site, error) {
	read := func(name string) []byte {
		if dir == "" {
			return nil
		}
		b, err := os.ReadFile(filepath.Join(dir, name)) //nolint:gosec // dir is this tool's own -dir flag; name is a fixed page
		if err != nil {
			return nil
		}
		return b
	}
	s := &site{jobs: read("jobs.html"), apps: read("applications.json"), env: read("environment.json"), ajob: read("jobs.json")}
	if s.jobs == nil && jobsHTML != "" {
		b, err := os.ReadFile(jobsHTML) //nolint:gosec // jobsHTML is this tool's own -jobs-html flag
		if err != nil {
			return nil, fmt.Errorf("reading jobs page: %w", err)
		}
		s.jobs = b
	}
	if s.jobs == nil {
		return nil, errors.New("no jobs page: give -dir with jobs.html or -jobs-html")
	}
	captured := ""
	if s.apps != nil {
		var apps []struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(s.apps, &apps); err != nil {
			return nil, fmt.Errorf("applications.json: %w", err)
		}
		if len(apps) != 1 {
			return nil, fmt.Errorf("applications.json: want one app, have %d", len(apps))
		}
		captured = apps[0].ID
	}
	if id == "" {
		id = captured
	}
	if id == "" {
		return nil, errors.New("no app id: give -id or a capture with applications.json")
	}
	if captured != "" && captured != id {
		for _, b := range []*[]byte{&s.jobs, &s.apps, &s.env, &s.ajob} {
			*b = bytes.ReplaceAll(*b, []byte(captured), []byte(id))
		}
	}
	s.id = id
	// A succeeded job as Spark's REST API describes it, cut to ~200 bytes.
	s.small = []byte(`{"jobId":0,"name":"count at driver.py:22","submissionTime":"2026-11-29T13:57:10.953GMT","stageIds":[0,1],"status":"SUCCEEDED","numTasks":8,"numCompletedTasks":8,"numCompletedStages":2}`)
	if s.apps == nil {
		now := time.Now().UnixMilli()
		s.apps = fmt.Appendf(nil, `[{"id":%q,"name":"sparkstatic","attempts":[{"sparkUser":"bench","completed":false,"appSparkVersion":"3.5.9","startTimeEpoch":%d,"endTimeEpoch":-1,"lastUpdatedEpoch":%d}]}]`, id, now, now)
	}
	if s.env == nil {
		s.env = fmt.Appendf(nil, `{"sparkProperties":[["spark.app.id",%q],["spark.app.name","sparkstatic"]],"systemProperties":[]}`, id)
	}
	if s.ajob == nil {
		s.ajob = []byte("[]")
	}
	return s, nil
}

// ServeHTTP answers like a Spark 3.5 driver for the paths it knows.
func (s *site) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "no-cache, no-store, must-revalidate")
	h.Set("X-Frame-Options", "SAMEORIGIN")
	api := "/api/v1/applications/" + s.id
	var body []byte
	switch r.URL.Path {
	case "/":
		http.Redirect(w, r, "/jobs/", http.StatusFound)
		return
	case "/jobs/":
		h.Set("Content-Type", "text/html;charset=utf-8")
		body = s.jobs
	case "/api/v1/applications":
		body = s.apps
	case api + "/environment":
		body = s.env
	case api + "/jobs":
		body = s.ajob
	case api + "/jobs/0":
		body = s.small
	case "/running/jobs/", "/running/jobs/length/", "/running/fit/jobs/":
		body = s.kill
		if r.URL.Path == "/running/fit/jobs/" {
			body = s.fit
		}
		if body == nil {
			http.NotFound(w, r)
			return
		}
		h.Set("Content-Type", "text/html;charset=utf-8")
	default:
		http.NotFound(w, r)
		return
	}
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "application/json")
	}
	if r.Method == http.MethodHead {
		h.Set("Content-Length", fmt.Sprint(len(body)))
		return
	}
	writeAsJetty(w, body, r.URL.Path == "/running/jobs/length/")
}

// jettyBuffer is the size of Jetty's output buffer in a Spark driver.
const jettyBuffer = 32 << 10

// writeAsJetty sends body as a Spark driver's Jetty does: a page that fits
// its output buffer with its length, a longer one chunked, a buffer at a
// time (seen on real 3.5.9 drivers: their 88 KB jobs page and 129 KB
// environment page come chunked). withLength sends any page with its
// length, as the benchmarks did before they served pages as Jetty does.
func writeAsJetty(w http.ResponseWriter, body []byte, withLength bool) {
	if withLength || len(body) <= jettyBuffer {
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		_, _ = w.Write(body)
		return
	}
	for p := body; len(p) > 0; {
		n := min(len(p), jettyBuffer)
		if _, err := w.Write(p[:n]); err != nil {
			return
		}
		w.(http.Flusher).Flush()
		p = p[n:]
	}
}
