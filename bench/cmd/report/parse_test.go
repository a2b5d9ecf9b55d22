package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// wrkOutput is real wrk 4.1 output (the last lines of a run with non-2xx
// answers and socket errors appended from another run).
const wrkOutput = `# url http://127.0.0.1:34059/jobs/
Running 1s test @ http://127.0.0.1:34059/jobs/
  2 threads and 8 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     3.80ms   12.99ms 122.23ms   93.45%
    Req/Sec    15.81k     4.28k   24.11k    77.27%
  Latency Distribution
     50%  183.00us
     75%  552.00us
     90%    6.51ms
     99%   69.80ms
  34624 requests in 1.10s, 601.95MB read
  Socket errors: connect 0, read 2, write 0, timeout 3
  Non-2xx or 3xx responses: 38533
Requests/sec:  31478.37
Transfer/sec:    547.27MB
`

func TestParseWrk(t *testing.T) {
	got, err := parseWrk(strings.NewReader(wrkOutput))
	if err != nil {
		t.Fatal(err)
	}
	want := wrkRun{Requests: 34624, ReqPerSec: 31478.37, P50: 0.183, P99: 69.8, Non2xx3xx: 38533, SockErrs: 5}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("parseWrk() (-want +got):\n%s", d)
	}
}

func TestParseWrkCPU(t *testing.T) {
	got, err := parseWrk(strings.NewReader(wrkOutput + "# cpu_us 6924800\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !got.HasCPU || got.CPUMicros != 6924800 {
		t.Errorf("CPU = %v, %v; want 6924800, true", got.CPUMicros, got.HasCPU)
	}
	if c, ok := got.CPUPerRequest(); !ok || c != 200 {
		t.Errorf("CPUPerRequest() = %v, %v; want 200, true", c, ok)
	}
	if _, err := parseWrk(strings.NewReader(wrkOutput + "# cpu_us many\n")); err == nil {
		t.Error("parseWrk with a bad cpu_us line: nil error; want one")
	}
	plain, _ := parseWrk(strings.NewReader(wrkOutput))
	if _, ok := plain.CPUPerRequest(); ok {
		t.Error("CPUPerRequest() of a run without CPU time: ok; want not")
	}
}

func TestParseWrkRefusesOtherText(t *testing.T) {
	for _, in := range []string{"", "unable to connect to 127.0.0.1:1 Connection refused\n", strings.Replace(wrkOutput, "Requests/sec", "Reqs", 1)} {
		if _, err := parseWrk(strings.NewReader(in)); err == nil {
			t.Errorf("parseWrk(%q) = nil error; want an error", in)
		}
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want float64
	}{{"812.00us", 0.812}, {"1.25ms", 1.25}, {"2.00s", 2000}, {"1.50m", 90000}}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseDuration(tt.in)
			if err != nil || got != tt.want {
				t.Errorf("parseDuration(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
	if _, err := parseDuration("3.0xs"); err == nil {
		t.Errorf("parseDuration(%q) = nil error; want an error", "3.0xs")
	}
}

func TestParseGoBench(t *testing.T) {
	out := `goos: linux
pkg: github.com/sparkgate/sparkgate/proxy
BenchmarkServeApp-2              	    8191	    145360 ns/op	   12046 B/op	     132 allocs/op
BenchmarkStripper/stripper-2     	    1243	    950123 ns/op	 143.21 MB/s	   52000 B/op	      61 allocs/op
PASS
pkg: github.com/sparkgate/sparkgate/auth
BenchmarkAuthenticateSession     	 1000000	      1043 ns/op	     320 B/op	       5 allocs/op
`
	got, err := parseGoBench(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	want := []goBench{
		{Pkg: "github.com/sparkgate/sparkgate/proxy", Name: "BenchmarkServeApp", NsPerOp: 145360, BPerOp: 12046, Allocs: 132},
		{Pkg: "github.com/sparkgate/sparkgate/proxy", Name: "BenchmarkStripper/stripper", NsPerOp: 950123, MBPerS: 143.21, HasMB: true, BPerOp: 52000, Allocs: 61},
		{Pkg: "github.com/sparkgate/sparkgate/auth", Name: "BenchmarkAuthenticateSession", NsPerOp: 1043, BPerOp: 320, Allocs: 5},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("parseGoBench() (-want +got):\n%s", d)
	}
}

// TestSummarize reads the stripper's benchmarks run three times
// (go test -count 3): each benchmark once, in the order of its first run,
// with the median of each figure, and the ratio of the pairs run in the
// same turn.
func TestSummarize(t *testing.T) {
	out := `pkg: github.com/sparkgate/sparkgate/proxy
BenchmarkStripper/fast-2   	 100	 400000 ns/op	 900.00 MB/s	 30000 B/op	 61 allocs/op
BenchmarkStripper/io.Copy-2	 100	  20000 ns/op	 20000.00 MB/s	 1100 B/op	 69 allocs/op
BenchmarkStripper/fast-2   	 100	 300000 ns/op	 1200.00 MB/s	 30010 B/op	 61 allocs/op
BenchmarkStripper/io.Copy-2	 100	  15000 ns/op	 24000.00 MB/s	 1100 B/op	 69 allocs/op
BenchmarkStripper/fast-2   	 100	 360000 ns/op	 1000.00 MB/s	 30020 B/op	 61 allocs/op
BenchmarkStripper/io.Copy-2	 100	  40000 ns/op	 10000.00 MB/s	 1100 B/op	 69 allocs/op
BenchmarkServeApp-2        	 100	 145360 ns/op	 12046 B/op	 132 allocs/op
`
	runs, err := parseGoBench(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	got := summarize(runs)
	var names []string
	for _, b := range got {
		names = append(names, fmt.Sprintf("%s x%d", b.Name, len(b.Runs)))
	}
	if d := cmp.Diff([]string{"BenchmarkStripper/fast x3", "BenchmarkStripper/io.Copy x3", "BenchmarkServeApp x1"}, names); d != "" {
		t.Fatalf("summarize() names (-want +got):\n%s", d)
	}
	fast, cp := got[0], got[1]
	if fast.MBPerS != 1000 || fast.NsPerOp != 360000 || fast.BPerOp != 30010 || !fast.HasMB {
		t.Errorf("fast median = %+v; want 1000 MB/s, 360000 ns/op, 30010 B/op", fast.goBench)
	}
	if lo, hi := fast.mbRange(); lo != 900 || hi != 1200 {
		t.Errorf("fast mbRange() = %v, %v; want 900, 1200", lo, hi)
	}
	// 900/20000, 1200/24000, 1000/10000: the pairs, not the medians
	// (1000/20000 = 0.05).
	if d := cmp.Diff([]float64{0.045, 0.05, 0.1}, pairedRatios(fast, cp)); d != "" {
		t.Errorf("pairedRatios() (-want +got):\n%s", d)
	}
	if r := median(pairedRatios(fast, cp)); r != 0.05 {
		t.Errorf("median of paired ratios = %v; want 0.05", r)
	}
	// MB/s against ns/op: no ratio.
	if r := pairedRatios(fast, got[2]); len(r) != 0 {
		t.Errorf("pairedRatios(fast, ServeApp) = %v; want none (MB/s against ns/op)", r)
	}
	// Two runs against one: the medians' ratio, once.
	serve := got[2]
	twice := summarize([]goBench{{Name: "x", NsPerOp: 2 * serve.NsPerOp}, {Name: "x", NsPerOp: 4 * serve.NsPerOp}})[0]
	if d := cmp.Diff([]float64{3}, pairedRatios(twice, serve)); d != "" {
		t.Errorf("pairedRatios of 2 runs against 1 (-want +got):\n%s", d)
	}
}

func TestRoundRatios(t *testing.T) {
	a := []wrkRun{{ReqPerSec: 90, P99: 12}, {ReqPerSec: 60, P99: 20}, {ReqPerSec: 80, P99: 10}}
	b := []wrkRun{{ReqPerSec: 100, P99: 10}, {ReqPerSec: 50, P99: 16}, {ReqPerSec: 100, P99: 10}}
	rps, p99, cpu := roundRatios(a, b)
	if cpu != nil {
		t.Errorf("CPU ratios %v of runs without CPU time, want none", cpu)
	}
	if d := cmp.Diff([]float64{0.9, 1.2, 0.8}, rps); d != "" {
		t.Errorf("req/s ratios (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]float64{1.2, 1.25, 1}, p99); d != "" {
		t.Errorf("p99 ratios (-want +got):\n%s", d)
	}
	if got, want := formatRatios(rps), "**0.90** (0.90 1.20 0.80)"; got != want {
		t.Errorf("formatRatios = %q, want %q", got, want)
	}
	if got, want := formatRatios([]float64{1, 2, 4, 3}), "**2.50** (1.00 2.00 4.00 3.00)"; got != want {
		t.Errorf("formatRatios of four = %q, want %q", got, want)
	}
	if rps, _, _ := roundRatios(a[:1], b); rps != nil {
		t.Errorf("one round: ratios %v, want none", rps)
	}
}

func TestRoundRatiosCPU(t *testing.T) {
	run := func(cpuMicros float64) wrkRun {
		return wrkRun{Requests: 1000, ReqPerSec: 100, P99: 10, CPUMicros: cpuMicros, HasCPU: true}
	}
	a := []wrkRun{run(150e3), run(240e3)}
	b := []wrkRun{run(100e3), run(200e3)}
	if _, _, cpu := roundRatios(a, b); !cmp.Equal([]float64{1.5, 1.2}, cpu) {
		t.Errorf("CPU ratios = %v, want [1.5 1.2]", cpu)
	}
	// One round without its CPU time: no CPU ratios at all, rather than
	// a median of some rounds.
	b[1].HasCPU = false
	if rps, _, cpu := roundRatios(a, b); cpu != nil || len(rps) != 2 {
		t.Errorf("a round without CPU time: req/s ratios %v, CPU ratios %v; want 2 and none", rps, cpu)
	}
}
