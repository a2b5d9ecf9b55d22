// Command users loads one gateway with many users at once, for make bench:
// one keep-alive client (its own connection) per session cookie read from
// -cookies (one Cookie header a line, as bench/cmd/login -n prints them),
// each sending its requests one after the other, cycling over -paths (an
// HTML page, a REST answer, the index), for -duration. It reports, as
// Markdown on stdout: requests, errors (transport errors and answers
// other than 200), req/s, p50/p99/max latency, and the gateway's RSS
// (sampled every second, from /proc/<-pid>/status) before, peak, right
// after and -settle after the load. With -metrics (the gateway's
// Prometheus /metrics), it also reports the Go heap at those two moments:
// in use (live data and garbage not yet collected) and held but not in use
// nor returned to the OS, which tells data the gateway retains from heap
// the runtime has not yet given back. With -heap (the gateway's
// /debug/pprof/heap, served with debug_pprof), it saves a heap profile
// taken three quarters into the load to -heap-out, for go tool pprof.
// It must not be used for anything but loopback benchmarks.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sparkgate/sparkgate/bench/internal/benchio"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "users:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("users", flag.ContinueOnError)
	base := fs.String("base", "", "gateway `URL`")
	cookies := fs.String("cookies", "", "`file` of Cookie headers, one session a line")
	paths := fs.String("paths", "/", "comma-separated `paths` each client cycles over")
	duration := fs.Duration("duration", time.Minute, "how long the load lasts")
	pid := fs.Int("pid", 0, "the gateway's process `id`, for its RSS")
	metrics := fs.String("metrics", "", "the gateway's Prometheus metrics `URL`, for its Go heap")
	settle := fs.Duration("settle", 10*time.Second, "how long after the load RSS and heap are read again")
	heap := fs.String("heap", "", "the gateway's heap profile `URL` (/debug/pprof/heap), read during the load")
	heapOut := fs.String("heap-out", "users-heap.pb.gz", "`file` the heap profile is saved to")
	if err := fs.Parse(args); err != nil {
		return err
	}
	b, err := os.ReadFile(*cookies) //nolint:gosec // this tool's own -cookies flag
	if err != nil {
		return fmt.Errorf("reading cookies: %w", err)
	}
	var sessions []string
	for l := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			sessions = append(sessions, l)
		}
	}
	if len(sessions) == 0 {
		return fmt.Errorf("%s: no sessions", *cookies)
	}
	ps := strings.Split(*paths, ",")
	before := rss(*pid, "VmRSS")
	var peak atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), *duration)
	defer cancel()
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			if r := int64(rss(*pid, "VmRSS")); r > peak.Load() {
				peak.Store(r)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	heapDone := make(chan error, 1)
	if *heap != "" {
		go func() {
			select {
			case <-ctx.Done():
				heapDone <- errors.New("the load ended first")
			case <-time.After(*duration * 3 / 4):
				heapDone <- benchio.SaveURL(*heap, *heapOut)
			}
		}()
	}
	lat := make([][]time.Duration, len(sessions))
	var errs, non200 atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for i, cookie := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tr := &http.Transport{MaxIdleConnsPerHost: 1, MaxConnsPerHost: 1, DisableCompression: true}
			defer tr.CloseIdleConnections()
			c := &http.Client{Transport: tr, Timeout: 30 * time.Second,
				CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			for n := i; ctx.Err() == nil; n++ {
				req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, *base+ps[n%len(ps)], nil)
				req.Header.Set("Cookie", cookie)
				t0 := time.Now()
				resp, err := c.Do(req)
				if err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				_, err = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				if err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				if resp.StatusCode != http.StatusOK {
					if non200.Add(1) == 1 {
						firstErr.CompareAndSwap(nil, fmt.Sprintf("%s: %s", req.URL.Path, resp.Status))
					}
					continue
				}
				lat[i] = append(lat[i], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	// Every client has closed its connection (CloseIdleConnections).
	rssEnd, heapEnd := rss(*pid, "VmRSS"), readHeap(*metrics)
	time.Sleep(*settle)
	rssSettled, heapSettled := rss(*pid, "VmRSS"), readHeap(*metrics)
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	slices.Sort(all)
	pct := func(p float64) string {
		if len(all) == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f ms", float64(all[min(len(all)-1, int(p*float64(len(all))))])/float64(time.Millisecond))
	}
	fmt.Printf("## Many users at once (bench/cmd/users)\n\n")
	fmt.Printf("%d keep-alive clients, each with its own session (signed in through the OpenID provider) and its own connection, each sending requests one after another over %s, for %s.\n\n",
		len(sessions), strings.Join(ps, ", "), duration.String())
	fmt.Printf("| figure | value |\n|---|---:|\n")
	fmt.Printf("| requests answered 200 | %d |\n| req/s | %.0f |\n", len(all), float64(len(all))/elapsed.Seconds())
	fmt.Printf("| transport errors | %d |\n| answers other than 200 | %d |\n", errs.Load(), non200.Load())
	if e := firstErr.Load(); e != nil {
		fmt.Printf("| first error | %s |\n", strings.ReplaceAll(e.(string), "|", "/"))
	}
	fmt.Printf("| p50 | %s |\n| p99 | %s |\n| max | %s |\n", pct(0.5), pct(0.99), pct(1))
	fmt.Printf("| gateway RSS before | %.1f MiB |\n| gateway RSS peak (1 s samples) | %.1f MiB |\n| gateway RSS after | %.1f MiB |\n| gateway RSS %s after | %.1f MiB |\n| gateway peak RSS (VmHWM) | %.1f MiB |\n",
		float64(before)/1024, float64(peak.Load())/1024, float64(rssEnd)/1024, settle.String(), float64(rssSettled)/1024, float64(rss(*pid, "VmHWM"))/1024)
	for _, h := range []struct {
		when string
		m    map[string]float64
	}{{"after", heapEnd}, {settle.String() + " after", heapSettled}} {
		if h.m == nil {
			continue
		}
		mib := func(k string) float64 { return h.m[k] / (1 << 20) }
		fmt.Printf("| gateway Go heap %s: in use / held, not in use nor returned / goroutines | %.1f / %.1f MiB / %.0f |\n",
			h.when, mib("go_memstats_heap_inuse_bytes"), mib("go_memstats_heap_idle_bytes")-mib("go_memstats_heap_released_bytes"), h.m["go_goroutines"])
	}
	if *heap != "" {
		if err := <-heapDone; err != nil {
			return fmt.Errorf("heap profile: %w", err)
		}
	}
	return nil
}

// readHeap returns the Go runtime's figures of a Prometheus /metrics page
// (go_memstats_*, go_goroutines), nil if url is empty or unreadable.
func readHeap(url string) map[string]float64 {
	if url == "" {
		return nil
	}
	resp, err := http.Get(url) //nolint:gosec,noctx // this tool's own -metrics flag, loopback
	if err != nil {
		return nil
	}
	defer resp.Body.Close() //nolint:errcheck // read-only
	m := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, v, ok := strings.Cut(sc.Text(), " ")
		if !ok || !(strings.HasPrefix(name, "go_memstats_") || name == "go_goroutines") {
			continue
		}
		if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
			m[name] = f
		}
	}
	return m
}

// rss is a kB figure of /proc/<pid>/status, 0 if unknown.
func rss(pid int, key string) int {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close() //nolint:errcheck // read-only
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), key+":"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return n
		}
	}
	return 0
}
