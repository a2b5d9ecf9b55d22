// Command scale measures one sparkgate against many apps, for make bench:
// a fake History Server listing -apps finished apps and -drivers live fake
// drivers (one process, a loopback listener each, answering
// /api/v1/applications and /environment as a Spark 3.5.9 driver does), the
// real sparkgate binary in front of them (static source listing the
// drivers, the History Server as a history source with ACLs). It runs the
// gateway three times, against nothing, a tenth of the apps and all of
// them, and reports, as Markdown on stdout: the time until every app is
// routable, the index's first page and a filtered page, the merged
// /api/v1/applications, RSS, CPU per discovery round with nothing
// changing, the cost per app (the differences to the empty gateway), the
// drivers' time to routable from the gateway's log (verify_took, and
// env_took once their ACLs are read), and
// how long after the History Server lists a just-finished app its ACLs
// are read while a user asks for it, and, with every app known, how long
// a driver that starts later takes from its log line to the user's first
// page. It must not be used for anything but loopback benchmarks.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sparkgate/sparkgate/bench/internal/benchio"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

type options struct {
	bin, dir        string
	apps, drivers   int
	interval        time.Duration
	rounds, samples int
	// profile: take a CPU profile of the gateway over the rounds with
	// nothing changing (it costs the gateway some CPU of its own).
	profile bool
}

func run(args []string) error {
	fs := flag.NewFlagSet("scale", flag.ContinueOnError)
	var o options
	fs.StringVar(&o.bin, "sparkgate", "bin/sparkgate", "sparkgate `binary`")
	fs.StringVar(&o.dir, "dir", "bench/out/scale", "`directory` for configs and the gateways' logs")
	fs.IntVar(&o.apps, "apps", 10000, "finished apps the History Server lists")
	fs.IntVar(&o.drivers, "drivers", 500, "live fake drivers")
	fs.DurationVar(&o.interval, "interval", 2*time.Second, "discovery.interval of the gateway")
	fs.IntVar(&o.rounds, "rounds", 15, "discovery rounds the CPU is measured over")
	fs.IntVar(&o.samples, "samples", 15, "requests per timed URL")
	fs.BoolVar(&o.profile, "profile", false, "save a CPU profile of each gateway over the rounds with nothing changing (as <dir>/sparkgate-<apps>-idle.pb.gz; it is not the CPU figure's run)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if u, err := user.Current(); err == nil {
		viewer = u.Username // local mode signs in the OS user
	}
	if err := os.MkdirAll(o.dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", o.dir, err)
	}
	sizes := []struct{ apps, drivers int }{{0, 0}, {o.apps / 10, o.drivers / 10}, {o.apps, o.drivers}}
	var res []result
	for i, s := range sizes {
		r, err := measure(o, s.apps, s.drivers, i == len(sizes)-1)
		if err != nil {
			return fmt.Errorf("%d apps, %d drivers: %w", s.apps, s.drivers, err)
		}
		res = append(res, r)
	}
	report(os.Stdout, o, res)
	return nil
}

// result is what one gateway run measured.
type result struct {
	apps, drivers, visible int
	routable, aclsRead     time.Duration
	timed                  []timing
	rssKB, hwmKB           int
	cpuPerRound            time.Duration
	listsPerRound          float64         // whole lists read
	partsPerRound          float64         // lists since a date read
	verify                 []time.Duration // drivers' verify_took
	envTook                []time.Duration // drivers' env_took
	// the just-finished app (largest run only)
	finished                         bool
	listWait, aclDelay, userRoutable time.Duration
	userTries                        int
	// drivers started after the gateway settled (largest run only): from
	// the log line to the user's first 200, and the gateway's log figures
	late []lateDriver
}

// lateDriver is one driver announced by a log line once the gateway knows
// every other app.
type lateDriver struct {
	id                                    string
	toPage, sinceLogLine, verify, envTook time.Duration
}

type timing struct {
	label, path string
	p50, p90    time.Duration
	bytes       int
	rows        int
}

func measure(o options, nApps, nDrivers int, finishing bool) (result, error) {
	r := result{apps: nApps, drivers: nDrivers}
	var servers []*http.Server
	defer func() {
		for _, s := range servers {
			_ = s.Close()
		}
	}()
	hs := newHistory(nApps)
	hsURL, err := serve(hs, &servers)
	if err != nil {
		return r, err
	}
	started := time.Now().Add(-time.Hour)
	var urls []string
	for i := range nDrivers {
		u, err := serve(newDriver(i, started), &servers)
		if err != nil {
			return r, err
		}
		urls = append(urls, u)
	}
	for i := range nApps {
		if i%3 == 0 {
			r.visible++
		}
	}
	for i := range nDrivers {
		if i%3 == 0 {
			r.visible++
		}
	}

	name := fmt.Sprintf("sparkgate-%d", nApps)
	conf := filepath.Join(o.dir, name+".yaml")
	var c strings.Builder
	port, err := freePort()
	if err != nil {
		return r, err
	}
	var metricsPort int
	if o.profile {
		if metricsPort, err = freePort(); err != nil {
			return r, err
		}
		fmt.Fprintf(&c, "metrics_listen: 127.0.0.1:%d\ndebug_pprof: true\n", metricsPort)
	}
	fmt.Fprintf(&c, "listen: 127.0.0.1:%d\nauth: {mode: local}\nlog: {format: json}\ndiscovery:\n  interval: %s\n", port, o.interval)
	fmt.Fprintf(&c, "  history:\n    - {name: hs, url: %q, acls_enable: true}\n  static:\n", hsURL)
	for _, u := range urls {
		fmt.Fprintf(&c, "    - %s\n", u)
	}
	if nDrivers == 0 {
		c.WriteString("    []\n")
	}
	// Every run follows the same kind of glob (only the largest gets
	// logs, after its CPU figure), so the figures differ by apps alone;
	// logs of an earlier run in -dir are removed first.
	lateGlob := filepath.Join(o.dir, name+"-late-*.log")
	stale, _ := filepath.Glob(lateGlob)
	for _, f := range stale {
		if err := os.Remove(f); err != nil {
			return r, fmt.Errorf("removing an earlier run's log: %w", err)
		}
	}
	fmt.Fprintf(&c, "  logs:\n    - {paths: [%q]}\n", lateGlob)
	if err := os.WriteFile(conf, []byte(strings.Replace(c.String(), "  static:\n    []\n", "  static: []\n", 1)), 0o600); err != nil {
		return r, fmt.Errorf("writing config: %w", err)
	}
	logPath := filepath.Join(o.dir, name+".log")
	logf, err := os.Create(logPath) //nolint:gosec // a log under this tool's own -dir
	if err != nil {
		return r, fmt.Errorf("creating log: %w", err)
	}
	defer logf.Close() //nolint:errcheck // the gateway wrote it; nothing to flush here
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, o.bin, "-config", conf) //nolint:gosec // the gateway binary of this run
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return r, fmt.Errorf("starting %s: %w", o.bin, err)
	}
	defer cmd.Wait() //nolint:errcheck // stopped by cancel; its exit status is not a figure
	pid := cmd.Process.Pid

	base, token, err := waitStart(logPath, 30*time.Second)
	if err != nil {
		return r, err
	}
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	resp, err := client.Get(token)
	if err != nil {
		return r, fmt.Errorf("signing in: %w", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	// Routable: the user's merged list holds every app she may view.
	deadline := time.Now().Add(3 * time.Minute)
	for {
		n, err := countApps(client, base+"/api/v1/applications")
		if err == nil && n >= r.visible {
			r.routable = time.Since(t0)
			break
		}
		if time.Now().After(deadline) {
			return r, fmt.Errorf("after 3 min the user sees %d apps; want %d (last error: %w)", n, r.visible, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Nothing changing: every History Server app's ACLs read once (the
	// gateway reads a backlog a bounded batch per poll).
	for hs.envHits.Load() < int64(nApps) {
		if time.Now().After(deadline) {
			return r, fmt.Errorf("after 3 min the History Server's environments were read %d times; want %d", hs.envHits.Load(), nApps)
		}
		time.Sleep(100 * time.Millisecond)
	}
	r.aclsRead = time.Since(t0)
	for _, t := range []timing{
		{label: "index, first page", path: "/"},
		{label: "index, filtered page (?q=user007)", path: "/?q=user007"},
		{label: "index, page 3", path: "/?page=3"},
		{label: "merged /api/v1/applications", path: "/api/v1/applications"},
		{label: "merged /api/v1/applications?status=completed&limit=100", path: "/api/v1/applications?status=completed&limit=100"},
	} {
		if err := timeURL(client, base, &t, o.samples); err != nil {
			return r, err
		}
		r.timed = append(r.timed, t)
	}
	// CPU with nothing changing: no requests, one round to settle first.
	time.Sleep(o.interval)
	lists0, parts0, cpu0 := hs.listHits.Load(), hs.partHits.Load(), cpuTicks(pid)
	time.Sleep(time.Duration(o.rounds) * o.interval)
	lists1, parts1, cpu1 := hs.listHits.Load(), hs.partHits.Load(), cpuTicks(pid)
	r.cpuPerRound = time.Duration(float64(cpu1-cpu0) / clockTicks * float64(time.Second) / float64(o.rounds))
	if o.profile {
		secs := int((time.Duration(o.rounds) * o.interval).Seconds())
		out := filepath.Join(o.dir, name+"-idle.pb.gz")
		if err := benchio.SaveURL(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/profile?seconds=%d", metricsPort, secs), out); err != nil {
			return r, fmt.Errorf("CPU profile: %w", err)
		}
	}
	r.listsPerRound = float64(lists1-lists0) / float64(o.rounds)
	r.partsPerRound = float64(parts1-parts0) / float64(o.rounds)
	r.rssKB, r.hwmKB = procStatus(pid, "VmRSS"), procStatus(pid, "VmHWM")

	if finishing {
		r.finished = true
		id := "application_1764000000001_99999"
		added := time.Now()
		hs.add(nApps, id)
		tries := 0
		for time.Since(added) < time.Minute {
			tries++
			resp, err := client.Get(base + "/api/v1/applications/" + id + "/jobs")
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		done := time.Now()
		hs.mu.Lock()
		listed, env := hs.listedAt, hs.envAt
		hs.mu.Unlock()
		if listed.IsZero() || env.IsZero() {
			return r, fmt.Errorf("the just-finished app: listed %v, ACLs read %v", listed, env)
		}
		r.listWait, r.aclDelay, r.userRoutable, r.userTries = listed.Sub(added), env.Sub(listed), done.Sub(listed), tries
		if r.late, err = startLate(o, client, base, strings.Replace(lateGlob, "*", "%d", 1), nDrivers, started, &servers); err != nil {
			return r, err
		}
	}
	cancel()
	_ = cmd.Wait()
	r.verify, r.envTook, err = verifyTimes(logPath)
	if err != nil {
		return r, err
	}
	return r, lateTimes(logPath, r.late)
}

// lateDrivers is how many drivers startLate announces, one at a time.
const lateDrivers = 7

// startLate starts drivers one at a time once the gateway knows every
// other app, each announced by a Spark 3.5.9 log line in a file the
// gateway follows, and times the user's first 200 for its jobs page from
// the moment the line is written (the user asks every 5 ms). The drivers
// are ones the user may view (their ACLs name her).
func startLate(o options, client *http.Client, base, logPattern string, first int, started time.Time, servers *[]*http.Server) ([]lateDriver, error) {
	var out []lateDriver
	for k := range lateDrivers {
		i := first + 3*k + (3-first%3)%3 // i%3 == 0: viewable
		d := newDriver(i, started)
		u, err := serve(d, servers)
		if err != nil {
			return out, err
		}
		port := u[strings.LastIndexByte(u, ':')+1:]
		line := fmt.Sprintf("26/12/01 10:00:00 INFO Utils: Successfully started service 'SparkUI' on port %s.\n"+
			"26/12/01 10:00:00 INFO SparkUI: Bound SparkUI to 0.0.0.0, and started at http://127.0.0.1:%s\n", port, port)
		wrote := time.Now()
		if err := os.WriteFile(fmt.Sprintf(logPattern, k), []byte(line), 0o600); err != nil {
			return out, fmt.Errorf("writing a driver log: %w", err)
		}
		for {
			resp, err := client.Get(base + "/app/" + d.id + "/jobs/")
			last := fmt.Sprint(err)
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
				last = resp.Status
			}
			if time.Since(wrote) > time.Minute {
				return out, fmt.Errorf("late driver %s: no 200 a minute after its log line (last answer: %s)", d.id, last)
			}
			time.Sleep(5 * time.Millisecond)
		}
		out = append(out, lateDriver{id: d.id, toPage: time.Since(wrote)})
		time.Sleep(o.interval / 2) // apart, so each is timed alone
	}
	return out, nil
}

// lateTimes fills in the late drivers' since_log_line and verify_took from
// their "driver found" lines.
func lateTimes(logPath string, late []lateDriver) error {
	if len(late) == 0 {
		return nil
	}
	b, err := os.ReadFile(logPath) //nolint:gosec // this tool's own log file
	if err != nil {
		return fmt.Errorf("reading log: %w", err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		var l struct {
			Msg    string  `json:"msg"`
			AppID  string  `json:"app_id"`
			Since  float64 `json:"since_log_line"`
			Verify float64 `json:"verify_took"`
			Env    float64 `json:"env_took"`
		}
		if json.Unmarshal([]byte(line), &l) != nil {
			continue
		}
		for i := range late {
			switch {
			case late[i].id != l.AppID:
			case l.Msg == "driver found":
				late[i].sinceLogLine = time.Duration(l.Since * float64(time.Second))
				late[i].verify = time.Duration(l.Verify * float64(time.Second))
			case l.Msg == "driver environment read":
				late[i].envTook = time.Duration(l.Env * float64(time.Second))
			}
		}
	}
	for _, d := range late {
		if d.sinceLogLine == 0 {
			return fmt.Errorf("late driver %s: no \"driver found\" line with since_log_line in %s", d.id, logPath)
		}
	}
	return nil
}

// freePort is a loopback port free a moment ago: the gateway's sign-in URL
// names its listen address, so it cannot listen on port 0.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer ln.Close() //nolint:errcheck // only its port is used
	return ln.Addr().(*net.TCPAddr).Port, nil
}

var tokenRE = regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+/oauth2/token\?token=[0-9a-f]+`)

// waitStart waits for the gateway's one-time sign-in URL in its log.
func waitStart(logPath string, limit time.Duration) (base, token string, err error) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(logPath) //nolint:gosec // this tool's own log file
		if m := tokenRE.Find(b); m != nil {
			token = string(m)
			return token[:strings.Index(token, "/oauth2/")], token, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return "", "", fmt.Errorf("no sign-in URL in %s after %s", logPath, limit)
}

func countApps(c *http.Client, u string) (int, error) {
	resp, err := c.Get(u)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close() //nolint:errcheck // read-only body
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	var apps []json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&apps); err != nil {
		return 0, fmt.Errorf("GET %s: %w", u, err)
	}
	return len(apps), nil
}

// timeURL GETs base+t.path samples times, one at a time, and keeps the
// median and 90th percentile of the time to the last byte.
func timeURL(c *http.Client, base string, t *timing, samples int) error {
	var ds []time.Duration
	for range samples {
		start := time.Now()
		resp, err := c.Get(base + t.path)
		if err != nil {
			return fmt.Errorf("GET %s: %w", t.path, err)
		}
		b, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			return fmt.Errorf("GET %s: %w", t.path, err)
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", t.path, resp.Status)
		}
		ds = append(ds, time.Since(start))
		t.bytes = len(b)
		t.rows = strings.Count(string(b), "<tr data-search=")
		if strings.HasPrefix(t.path, "/api/") {
			t.rows = strings.Count(string(b), `"attempts"`)
		}
	}
	slices.Sort(ds)
	t.p50, t.p90 = ds[len(ds)/2], ds[len(ds)*9/10]
	return nil
}

const clockTicks = 100 // USER_HZ on Linux

// cpuTicks is utime+stime of pid from /proc/<pid>/stat.
func cpuTicks(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	return u + k
}

// procStatus is a kB figure of /proc/<pid>/status.
func procStatus(pid int, key string) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return n
		}
	}
	return 0
}

// verifyTimes reads the verify_took of every "driver found" line and the
// env_took of every "driver environment read" line, each sorted.
func verifyTimes(logPath string) (verify, env []time.Duration, err error) {
	f, err := os.Open(logPath) //nolint:gosec // this tool's own log file
	if err != nil {
		return nil, nil, fmt.Errorf("reading log: %w", err)
	}
	defer f.Close() //nolint:errcheck // read-only
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l struct {
			Msg     string  `json:"msg"`
			Verify  float64 `json:"verify_took"`
			EnvTook float64 `json:"env_took"`
		}
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			continue
		}
		switch l.Msg {
		case "driver found":
			verify = append(verify, time.Duration(l.Verify*float64(time.Second)))
		case "driver environment read":
			env = append(env, time.Duration(l.EnvTook*float64(time.Second)))
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, io.EOF) {
		return nil, nil, fmt.Errorf("reading log: %w", err)
	}
	slices.Sort(verify)
	slices.Sort(env)
	return verify, env, nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

func report(w io.Writer, o options, res []result) {
	p := func(format string, args ...any) { _, _ = fmt.Fprintf(w, format, args...) }
	p("## Scale of one gateway (bench/cmd/scale)\n\n")
	p("A fake History Server (Spark 3.5.9's list and environment shapes, ACLs on, one app in three viewable by the user) and fake live drivers on loopback ports, the real sparkgate binary in local mode in front of them (discovery.interval %s), the OS user signed in (local mode). Times are client-side on loopback, to the last byte, median (p90) of %d sequential requests.\n\n", o.interval, o.samples)
	p("| figure |")
	for _, r := range res {
		p(" %d apps + %d drivers |", r.apps, r.drivers)
	}
	p("\n|---|")
	for range res {
		p("---:|")
	}
	p("\n")
	row := func(label string, f func(r result) string) {
		p("| %s |", label)
		for _, r := range res {
			p(" %s |", f(r))
		}
		p("\n")
	}
	row("apps the user may view", func(r result) string { return strconv.Itoa(r.visible) })
	row("start to every app the user may view listed", func(r result) string { return fmt.Sprintf("%.1f s", r.routable.Seconds()) })
	row("start to every History Server app's ACLs read", func(r result) string { return fmt.Sprintf("%.1f s", r.aclsRead.Seconds()) })
	for i := range res[0].timed {
		row(res[0].timed[i].label, func(r result) string {
			t := r.timed[i]
			return fmt.Sprintf("%s (%s), %d rows, %d KB", ms(t.p50), ms(t.p90), t.rows, t.bytes/1024)
		})
	}
	row("RSS (peak)", func(r result) string {
		return fmt.Sprintf("%.1f MiB (%.1f)", float64(r.rssKB)/1024, float64(r.hwmKB)/1024)
	})
	row("CPU per discovery interval, nothing changing", func(r result) string { return ms(r.cpuPerRound) })
	row("History Server lists read per interval, whole + in part (rounds done)", func(r result) string {
		return fmt.Sprintf("%.1f + %.1f", r.listsPerRound, r.partsPerRound)
	})
	spread := func(v []time.Duration) string {
		if len(v) == 0 {
			return "-"
		}
		return fmt.Sprintf("%s / %s / %s", ms(v[len(v)/2]), ms(v[len(v)*9/10]), ms(v[len(v)-1]))
	}
	row("drivers' verify_took p50 / p90 / max (verification start to routable for owner and admins)", func(r result) string { return spread(r.verify) })
	row("drivers' env_took p50 / p90 / max (verification start to routable with the app's ACLs read)", func(r result) string { return spread(r.envTook) })
	base := res[0]
	p("\nCPU is utime+stime of /proc/<pid>/stat over %d intervals with no request and nothing changing, divided by %d; where fewer History Server lists than intervals were read, rounds took longer than the interval. Between whole lists (every 5 minutes) discovery reads a part: the running apps and those ended lately.\n", o.rounds, o.rounds)
	p("\nCost per app, against the empty gateway of the same run:\n\n| run | RSS per app | CPU per discovery interval per app |\n|---|---:|---:|\n")
	for _, r := range res[1:] {
		n := r.apps + r.drivers
		p("| %d apps + %d drivers | %.0f bytes | %.1f µs |\n", r.apps, r.drivers,
			float64(r.rssKB-base.rssKB)*1024/float64(n), float64(r.cpuPerRound-base.cpuPerRound)/float64(time.Microsecond)/float64(n))
	}
	for _, r := range res {
		if len(r.late) > 0 {
			pick := func(f func(lateDriver) time.Duration) string {
				var v []time.Duration
				for _, d := range r.late {
					v = append(v, f(d))
				}
				slices.Sort(v)
				return fmt.Sprintf("%s / %s / %s", ms(v[0]), ms(v[len(v)/2]), ms(v[len(v)-1]))
			}
			p("\nDrivers started after the gateway knew all %d apps (%d, one at a time, each announced by Spark's SparkUI log line in a followed file; min / median / max):\n\n| from | to | time |\n|---|---|---:|\n", r.apps+r.drivers, len(r.late))
			p("| the log line written | the user's first 200 for the driver's jobs page (asked every 5 ms) | %s |\n", pick(func(d lateDriver) time.Duration { return d.toPage }))
			p("| the log line written | the gateway registers the driver (since_log_line; includes the log poll) | %s |\n", pick(func(d lateDriver) time.Duration { return d.sinceLogLine }))
			p("| the driver's verification starts | registered (verify_took: the gateway's share once Spark's REST answers) | %s |\n", pick(func(d lateDriver) time.Duration { return d.verify }))
			p("| the driver's verification starts | its ACLs read and published (env_took: the gateway's share for users the app's ACLs let in) | %s |\n", pick(func(d lateDriver) time.Duration { return d.envTook }))
		}
		if r.finished {
			p("\nA just-finished app (the History Server starts listing it; the user asks for its REST jobs every 20 ms from then on): the gateway's next poll listed it %s after it was added; its ACLs were read from the History Server %s after that listing; the user's request answered 200 %s after the listing (%d tries).\n",
				ms(r.listWait), ms(r.aclDelay), ms(r.userRoutable), r.userTries)
		}
	}
}
