package main

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// wrkRun is what one wrk run reported.
type wrkRun struct {
	Requests  int64
	ReqPerSec float64
	P50, P99  float64 // milliseconds
	Non2xx3xx int64
	SockErrs  int64 // connect, read, write and timeout errors
	// CPUMicros is the CPU time (user and system) the processes under
	// test (a proxy, not the upstream or wrk) used during the run, when
	// scripts/bench.sh measured it ("# cpu_us N"); HasCPU says it did.
	CPUMicros float64
	HasCPU    bool
}

// CPUPerRequest is the processes' CPU time per request, in microseconds.
func (w wrkRun) CPUPerRequest() (float64, bool) {
	if !w.HasCPU || w.Requests == 0 {
		return 0, false
	}
	return w.CPUMicros / float64(w.Requests), true
}

// parseWrk reads the text wrk prints with --latency, and the CPU time
// scripts/bench.sh appends.
func parseWrk(r io.Reader) (wrkRun, error) {
	var w wrkRun
	var seen50, seen99, seenRPS bool
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && f[0] == "50%":
			v, err := parseDuration(f[1])
			if err != nil {
				return w, err
			}
			w.P50, seen50 = v, true
		case len(f) == 2 && f[0] == "99%":
			v, err := parseDuration(f[1])
			if err != nil {
				return w, err
			}
			w.P99, seen99 = v, true
		case len(f) >= 3 && f[1] == "requests" && f[2] == "in":
			w.Requests, _ = strconv.ParseInt(f[0], 10, 64)
		case len(f) == 2 && f[0] == "Requests/sec:":
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				return w, fmt.Errorf("requests/sec %q: %w", f[1], err)
			}
			w.ReqPerSec, seenRPS = v, true
		case len(f) == 3 && f[0] == "#" && f[1] == "cpu_us":
			v, err := strconv.ParseFloat(f[2], 64)
			if err != nil {
				return w, fmt.Errorf("cpu_us %q: %w", f[2], err)
			}
			w.CPUMicros, w.HasCPU = v, true
		case len(f) == 5 && f[0] == "Non-2xx":
			w.Non2xx3xx, _ = strconv.ParseInt(f[4], 10, 64)
		case len(f) > 2 && f[0] == "Socket" && f[1] == "errors:":
			// Socket errors: connect 0, read 0, write 0, timeout 0
			for i := 3; i < len(f); i += 2 {
				n, _ := strconv.ParseInt(strings.TrimSuffix(f[i], ","), 10, 64)
				w.SockErrs += n
			}
		}
	}
	if err := sc.Err(); err != nil {
		return w, fmt.Errorf("reading wrk output: %w", err)
	}
	if !seen50 || !seen99 || !seenRPS {
		return w, fmt.Errorf("not wrk --latency output (p50 %v, p99 %v, req/s %v)", seen50, seen99, seenRPS)
	}
	return w, nil
}

// parseDuration reads wrk's "812.00us", "1.23ms", "2.00s" or "1.00m" as
// milliseconds.
func parseDuration(s string) (float64, error) {
	units := []struct {
		suffix string
		ms     float64
	}{{"us", 1e-3}, {"ms", 1}, {"s", 1e3}, {"m", 60e3}, {"h", 3600e3}}
	for _, u := range units {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			v, err := strconv.ParseFloat(num, 64)
			if err != nil {
				return 0, fmt.Errorf("duration %q: %w", s, err)
			}
			return v * u.ms, nil
		}
	}
	return 0, fmt.Errorf("duration %q: unknown unit", s)
}

// goBench is one line of `go test -bench -benchmem` output.
type goBench struct {
	Pkg, Name                       string
	NsPerOp, MBPerS, BPerOp, Allocs float64
	HasMB                           bool
}

// parseGoBench reads `go test -bench . -benchmem` output of several packages.
func parseGoBench(r io.Reader) ([]goBench, error) {
	var out []goBench
	pkg := ""
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && f[0] == "pkg:" {
			pkg = f[1]
			continue
		}
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		b := goBench{Pkg: pkg, Name: trimProcs(f[0])}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			switch f[i+1] {
			case "ns/op":
				b.NsPerOp = v
			case "MB/s":
				b.MBPerS, b.HasMB = v, true
			case "B/op":
				b.BPerOp = v
			case "allocs/op":
				b.Allocs = v
			}
		}
		out = append(out, b)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading go bench output: %w", err)
	}
	return out, nil
}

// benchSummary is a Go benchmark run one or more times (go test -count):
// the median of each figure, and every run in order.
type benchSummary struct {
	goBench
	Runs []goBench
}

// mbRange is the lowest and highest MB/s of the runs.
func (b benchSummary) mbRange() (lo, hi float64) {
	lo, hi = b.Runs[0].MBPerS, b.Runs[0].MBPerS
	for _, r := range b.Runs[1:] {
		lo, hi = min(lo, r.MBPerS), max(hi, r.MBPerS)
	}
	return lo, hi
}

// summarize groups the runs of each benchmark (by package and name), in
// the order each first appears, with the median of each figure.
func summarize(runs []goBench) []benchSummary {
	var out []benchSummary
	at := map[[2]string]int{}
	for _, r := range runs {
		k := [2]string{r.Pkg, r.Name}
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			out = append(out, benchSummary{})
		}
		out[i].Runs = append(out[i].Runs, r)
	}
	for i := range out {
		s := &out[i]
		figure := func(f func(goBench) float64) float64 {
			v := make([]float64, len(s.Runs))
			for j, r := range s.Runs {
				v[j] = f(r)
			}
			return median(v)
		}
		s.Pkg, s.Name = s.Runs[0].Pkg, s.Runs[0].Name
		s.HasMB = s.Runs[0].HasMB
		s.NsPerOp = figure(func(r goBench) float64 { return r.NsPerOp })
		s.MBPerS = figure(func(r goBench) float64 { return r.MBPerS })
		s.BPerOp = figure(func(r goBench) float64 { return r.BPerOp })
		s.Allocs = figure(func(r goBench) float64 { return r.Allocs })
	}
	return out
}

// trimProcs drops the -GOMAXPROCS suffix go test adds to benchmark names.
func trimProcs(name string) string {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return name
	}
	if _, err := strconv.Atoi(name[i+1:]); err != nil {
		return name
	}
	return name[:i]
}

// figure is one line of figures.tsv: name, value, unit.
type figure struct {
	Name, Unit string
	Value      float64
}

func parseFigures(r io.Reader) ([]figure, error) {
	var out []figure
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) != 3 {
			continue
		}
		v, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			return nil, fmt.Errorf("figure %s: %w", f[0], err)
		}
		out = append(out, figure{Name: f[0], Value: v, Unit: f[2]})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading figures: %w", err)
	}
	return out, nil
}
