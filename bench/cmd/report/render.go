package main

import (
	"fmt"
	"slices"
	"strings"
)

// scenario is one wrk run of scripts/bench.sh; name is its file in out/wrk.
type scenario struct{ name, label string }

var scenarios = []scenario{
	{"static-direct", "static upstream, direct"},
	{"static-gateway", "static upstream via sparkgate (local session)"},
	{"static-gateway-gzip", "static upstream via sparkgate, client accepts gzip"},
	{"static-api-direct", "static upstream REST jobs, direct"},
	{"static-api-gateway", "static upstream REST jobs via sparkgate"},
	{"driver-jobs-direct", "Spark driver /jobs/, direct"},
	{"driver-jobs-gateway", "Spark driver /jobs/ via sparkgate"},
	{"driver-jobs-direct-gzip", "Spark driver /jobs/, direct, client accepts gzip"},
	{"driver-jobs-gateway-gzip", "Spark driver /jobs/ via sparkgate, client accepts gzip"},
	{"driver-api-direct", "Spark driver REST jobs, direct"},
	{"driver-api-gateway", "Spark driver REST jobs via sparkgate"},
	{"auth-none", "sparkgate, no session (challenge)"},
	{"healthz", "sparkgate /_/healthz"},
	{"sbs-direct-html", "side by side, HTML page without kill controls: directly"},
	{"sbs-nginx-html", "side by side, HTML page without kill controls: nginx (keep-alive upstream)"},
	{"sbs-bare-html", "side by side, HTML page without kill controls: bare Go httputil.ReverseProxy"},
	{"sbs-o2p-html", "side by side, HTML page without kill controls: oauth2-proxy (OIDC session)"},
	{"sbs-sg-html", "side by side, HTML page without kill controls: sparkgate (OIDC session)"},
	{"sbs-direct-kill", "side by side, running app's jobs page with kill controls, chunked as a driver sends it: directly"},
	{"sbs-nginx-kill", "side by side, running app's jobs page with kill controls, chunked as a driver sends it: nginx"},
	{"sbs-bare-kill", "side by side, running app's jobs page with kill controls, chunked as a driver sends it: bare Go"},
	{"sbs-o2p-kill", "side by side, running app's jobs page with kill controls, chunked as a driver sends it: oauth2-proxy"},
	{"sbs-sg-kill", "side by side, running app's jobs page with kill controls, chunked as a driver sends it: sparkgate"},
	{"sbs-direct-killfit", "side by side, running app's jobs page with fewer kill controls, with its length as a driver sends a page that fits Jetty's buffer: directly"},
	{"sbs-nginx-killfit", "side by side, the jobs page that fits, with its length: nginx"},
	{"sbs-bare-killfit", "side by side, the jobs page that fits, with its length: bare Go"},
	{"sbs-o2p-killfit", "side by side, the jobs page that fits, with its length: oauth2-proxy"},
	{"sbs-sg-killfit", "side by side, the jobs page that fits, with its length: sparkgate"},
	{"sbs-direct-killlen", "side by side, the kill-heavy page with its length (Spark sends it chunked): directly"},
	{"sbs-nginx-killlen", "side by side, the kill-heavy page with its length: nginx"},
	{"sbs-bare-killlen", "side by side, the kill-heavy page with its length: bare Go"},
	{"sbs-o2p-killlen", "side by side, the kill-heavy page with its length: oauth2-proxy"},
	{"sbs-sg-killlen", "side by side, the kill-heavy page with its length: sparkgate"},
	{"sbs-direct-json", "side by side, 200-byte REST JSON: directly"},
	{"sbs-nginx-json", "side by side, 200-byte REST JSON: nginx"},
	{"sbs-bare-json", "side by side, 200-byte REST JSON: bare Go"},
	{"sbs-o2p-json", "side by side, 200-byte REST JSON: oauth2-proxy"},
	{"sbs-sg-json", "side by side, 200-byte REST JSON: sparkgate"},
}

// comparison is a ratio a/b of two runs of the same run of the script.
type comparison struct{ label, a, b string }

var comparisons = []comparison{
	{"gateway / direct, static upstream", "static-gateway", "static-direct"},
	{"gateway / direct, static upstream REST (no stripping)", "static-api-gateway", "static-api-direct"},
	{"gateway / direct, real driver /jobs/", "driver-jobs-gateway", "driver-jobs-direct"},
	{"gateway / direct, real driver /jobs/, both gzip", "driver-jobs-gateway-gzip", "driver-jobs-direct-gzip"},
	{"gzip / plain through sparkgate, static HTML", "static-gateway-gzip", "static-gateway"},
	{"gateway / direct, real driver REST jobs", "driver-api-gateway", "driver-api-direct"},
	{"no session (auth check + 401) / healthz (no auth)", "auth-none", "healthz"},
	{"valid session (auth + proxy + strip) / no session", "static-gateway", "auth-none"},
	{"side by side: sparkgate / bare Go, HTML without kill controls (goal: req/s >= 0.8, p99 <= 1.5)", "sbs-sg-html", "sbs-bare-html"},
	{"side by side: sparkgate / bare Go, HTML with kill controls, chunked as a driver sends it (goal: req/s >= 0.8, p99 <= 1.5)", "sbs-sg-kill", "sbs-bare-kill"},
	{"side by side: sparkgate / bare Go, HTML with kill controls, with its length as a driver sends a page that fits (goal: req/s >= 0.8, p99 <= 1.5)", "sbs-sg-killfit", "sbs-bare-killfit"},
	{"side by side: sparkgate / bare Go, the kill-heavy page with its length, which Spark sends chunked (stress)", "sbs-sg-killlen", "sbs-bare-killlen"},
	{"side by side: sparkgate / bare Go, REST JSON (goal: req/s >= 0.9)", "sbs-sg-json", "sbs-bare-json"},
	{"side by side: sparkgate / oauth2-proxy, HTML without kill controls (goal: req/s >= 2)", "sbs-sg-html", "sbs-o2p-html"},
	{"side by side: sparkgate / oauth2-proxy, HTML with kill controls, chunked (goal: req/s >= 2)", "sbs-sg-kill", "sbs-o2p-kill"},
	{"side by side: sparkgate / oauth2-proxy, HTML with kill controls, with its length as a driver sends a page that fits (goal: req/s >= 2)", "sbs-sg-killfit", "sbs-o2p-killfit"},
	{"side by side: sparkgate / oauth2-proxy, the kill-heavy page with its length, which Spark sends chunked (stress)", "sbs-sg-killlen", "sbs-o2p-killlen"},
	{"side by side: sparkgate / oauth2-proxy, REST JSON (goal: req/s >= 2)", "sbs-sg-json", "sbs-o2p-json"},
	{"side by side: sparkgate / nginx, HTML without kill controls", "sbs-sg-html", "sbs-nginx-html"},
	{"side by side: bare Go / directly, HTML without kill controls", "sbs-bare-html", "sbs-direct-html"},
	{"side by side: nginx / directly, HTML without kill controls", "sbs-nginx-html", "sbs-direct-html"},
	{"side by side: sparkgate / directly, HTML without kill controls", "sbs-sg-html", "sbs-direct-html"},
}

// figureLabels orders and names the figures of figures.tsv that the
// report shows; others are listed after them under their raw names.
var figureLabels = []struct{ name, label string }{
	{"rss.sparkgate.start.vmhwm", "sparkgate (local) peak RSS after start and sign-in"},
	{"rss.sparkgate.end.vmhwm", "sparkgate (local) peak RSS after all its wrk runs"},
	{"rss.sparkgate.end.vmrss", "sparkgate (local) RSS at the end"},
	{"rss.sparkgate-oidc.end.vmhwm", "sparkgate (OIDC) peak RSS after its wrk run"},
	{"rss.oauth2-proxy.end.vmhwm", "oauth2-proxy peak RSS after its wrk run"},
	{"rss.bareproxy.end.vmhwm", "bare Go reverse proxy peak RSS after its wrk runs"},
	{"stripmem.copy.throughput", "50 MiB page, io.Copy: throughput"},
	{"stripmem.stripper.throughput", "50 MiB page, stripper: throughput"},
	{"stripmem.copy.heap_inuse_growth", "50 MiB page, io.Copy: peak HeapInuse growth"},
	{"stripmem.stripper.heap_inuse_growth", "50 MiB page, stripper: peak HeapInuse growth"},
	{"stripmem.copy.peak_heap_inuse", "50 MiB page, io.Copy: peak HeapInuse (process)"},
	{"stripmem.stripper.peak_heap_inuse", "50 MiB page, stripper: peak HeapInuse (process)"},
	{"stripmem.copy.total_alloc", "50 MiB page, io.Copy: bytes allocated"},
	{"stripmem.stripper.total_alloc", "50 MiB page, stripper: bytes allocated"},
	{"stripmem.stripper.out_bytes", "50 MiB page, stripper: bytes out"},
	{"stripmem.stripper.kill_links_in", "50 MiB page: kill links in"},
	{"stripmem.stripper.kill_links_out", "50 MiB page, stripper: kill links left"},
	{"bytes.static-gateway.plain", "static jobs page via sparkgate, plain: bytes"},
	{"bytes.static-gateway.gzip", "static jobs page via sparkgate, gzip: bytes"},
	{"bytes.driver-jobs.direct.gzip", "driver /jobs/ direct, gzip: bytes"},
	{"bytes.driver-jobs.gateway.gzip", "driver /jobs/ via sparkgate, gzip: bytes"},
}

// figureRatios are a/b ratios of figures.
var figureRatios = []comparison{
	{"sparkgate peak RSS end / start", "rss.sparkgate.end.vmhwm", "rss.sparkgate.start.vmhwm"},
	{"sparkgate OIDC / oauth2-proxy peak RSS", "rss.sparkgate-oidc.end.vmhwm", "rss.oauth2-proxy.end.vmhwm"},
	{"stripper / io.Copy throughput, 50 MiB page", "stripmem.stripper.throughput", "stripmem.copy.throughput"},
	{"gzip / plain bytes, static jobs page via sparkgate", "bytes.static-gateway.gzip", "bytes.static-gateway.plain"},
	{"gateway / direct bytes, driver /jobs/, both gzip", "bytes.driver-jobs.gateway.gzip", "bytes.driver-jobs.direct.gzip"},
}

// benchRatios are a/b ratios of Go benchmarks (MB/s when both have it,
// else ns/op), named package-relative as pkg-suffix.Name.
var benchRatios = []comparison{
	// Both halves of BenchmarkStripper read the page through a 32 KiB
	// buffer into a writer that copies every byte, as a socket would.
	{"stripper / io.Copy MB/s (every captured page of proxy/testdata, same source, buffer and sink)", "proxy.BenchmarkStripper/fast", "proxy.BenchmarkStripper/io.Copy"},
	{"stripper / io.Copy MB/s (the three kill-heavy jobs pages, 20 kill controls each)", "proxy.BenchmarkStripper/fast-kill20", "proxy.BenchmarkStripper/io.Copy-kill20"},
	{"sparkgate / bare Go proxy MB/s, kill-heavy 3.5.9 jobs page with its length, whole request in one process (wall clock)", "proxy.BenchmarkServeAppHTML/kill20", "proxy.BenchmarkBareProxyHTML/kill20"},
	{"sparkgate / bare Go proxy MB/s, the same page chunked as a driver sends it, whole request in one process (wall clock)", "proxy.BenchmarkServeAppHTML/kill20-chunked", "proxy.BenchmarkBareProxyHTML/kill20-chunked"},
	{"handler only / whole request path ns/op", "proxy.BenchmarkServeAppHandler", "proxy.BenchmarkServeApp"},
	{"gzip / plain MB/s, whole path for the real 18 KB jobs page", "proxy.BenchmarkServeAppHTML/gzip", "proxy.BenchmarkServeAppHTML/identity"},
}

func render(in inputs) string {
	var sb strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&sb, format, args...) }
	p("# sparkgate benchmarks\n\n")
	for _, kv := range in.meta {
		p("- %s: %s\n", kv[0], kv[1])
	}
	p("\nAbsolute numbers depend on the machine and on what else runs on it; the ratios, measured in the same run, are the signal.\n")

	p("\n## Load (wrk)\n\nCPU µs/req is the CPU time (user and system, from /proc) of the proxy under test alone, divided by the requests it served in the run: what an answer costs the proxy, which the machine's other load moves far less than req/s. The upstream and wrk are not counted; for nginx it is the master and its workers.\n\n| run | URL | req/s | p50 ms | p99 ms | requests | non-2xx/3xx | socket errors | CPU µs/req |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, s := range scenarios {
		if e, bad := in.wrkErrs[s.name]; bad {
			p("| %s | %s | failed: %s | | | | | | |\n", s.label, in.urls[s.name], e)
			continue
		}
		w, ok := in.wrk[s.name]
		if !ok {
			p("| %s | | not run | | | | | | |\n", s.label)
			continue
		}
		cpu := ""
		if c, ok := w.CPUPerRequest(); ok {
			cpu = fmt.Sprintf("%.0f", c)
		}
		p("| %s | %s | %.0f | %.3f | %.3f | %d | %d | %d | %s |\n", s.label, in.urls[s.name], w.ReqPerSec, w.P50, w.P99, w.Requests, w.Non2xx3xx, w.SockErrs, cpu)
	}
	p("\n### Ratios\n\nThe first two ratios divide the rows above (each the median round of its own). Where both sides ran round by round, the last two columns pair them within each round, seconds apart, which the machine's drift between rounds does not move: the median of those ratios, then each round's. The last column does the same for the two proxies' CPU time per request (a over b: above 1, a costs more).\n\n")
	p("| comparison | req/s ratio | p99 ratio | p50 added ms | same-round req/s ratio: median (rounds) | same-round p99 ratio: median (rounds) | same-round CPU µs/req ratio: median (rounds) |\n|---|---:|---:|---:|---:|---:|---:|\n")
	for _, c := range comparisons {
		a, okA := in.wrk[c.a]
		b, okB := in.wrk[c.b]
		if !okA || !okB || b.ReqPerSec == 0 || b.P99 == 0 {
			p("| %s | n/a | n/a | n/a | | | |\n", c.label)
			continue
		}
		rps, p99, cpu := roundRatios(in.rounds[c.a], in.rounds[c.b])
		p("| %s | %.2f | %.2f | %+.3f | %s | %s | %s |\n", c.label, a.ReqPerSec/b.ReqPerSec, a.P99/b.P99, a.P50-b.P50, formatRatios(rps), formatRatios(p99), formatRatios(cpu))
	}

	for _, sec := range in.sections {
		p("\n%s", sec)
	}

	p("\n## Memory\n\n| figure | value |\n|---|---:|\n")
	figs := map[string]figure{}
	for _, f := range in.figures {
		figs[f.Name] = f
	}
	shown := map[string]bool{}
	for _, l := range figureLabels {
		if f, ok := figs[l.name]; ok {
			p("| %s | %s |\n", l.label, formatFigure(f))
			shown[l.name] = true
		}
	}
	for _, f := range in.figures {
		if !shown[f.Name] && !strings.HasPrefix(f.Name, "stripmem.copy.kill") && !strings.HasSuffix(f.Name, "in_bytes") && f.Name != "stripmem.copy.out_bytes" {
			p("| %s | %s |\n", f.Name, formatFigure(f))
		}
	}
	p("\n| ratio | value |\n|---|---:|\n")
	for _, c := range figureRatios {
		a, okA := figs[c.a]
		b, okB := figs[c.b]
		if !okA || !okB || b.Value == 0 {
			p("| %s | n/a |\n", c.label)
			continue
		}
		p("| %s | %.2f |\n", c.label, a.Value/b.Value)
	}

	p("\n## Go benchmarks\n\nA benchmark run more than once (go test -count) shows the median of its runs, and the lowest and highest MB/s in brackets.\n\n| package | benchmark | runs | ns/op | MB/s | B/op | allocs/op |\n|---|---|---:|---:|---:|---:|---:|\n")
	byName := map[string]benchSummary{}
	for _, b := range summarize(in.bench) {
		pkg := strings.TrimPrefix(b.Pkg, "github.com/sparkgate/sparkgate/")
		byName[pkg+"."+b.Name] = b
		mb := ""
		if b.HasMB {
			mb = fmt.Sprintf("%.1f", b.MBPerS)
			if len(b.Runs) > 1 {
				lo, hi := b.mbRange()
				mb += fmt.Sprintf(" (%.1f-%.1f)", lo, hi)
			}
		}
		p("| %s | %s | %d | %.0f | %s | %.0f | %.0f |\n", pkg, b.Name, len(b.Runs), b.NsPerOp, mb, b.BPerOp, b.Allocs)
	}
	if len(in.bench) == 0 {
		p("| | not run | | | | | |\n")
	}
	p("\n| ratio | value |\n|---|---:|\n")
	for _, c := range benchRatios {
		a, okA := byName[c.a]
		b, okB := byName[c.b]
		if !okA || !okB {
			p("| %s | n/a |\n", c.label)
			continue
		}
		if r := pairedRatios(a, b); len(r) > 1 {
			p("| %s | %.3g (median of %d runs paired in order) |\n", c.label, median(r), len(r))
		} else if len(r) == 1 {
			p("| %s | %.3g |\n", c.label, r[0])
		} else {
			p("| %s | n/a |\n", c.label)
		}
	}
	return sb.String()
}

// pairedRatios divides a's runs by b's, the first by the first and so on
// (go test -count runs a benchmark's sub-benchmarks in order each time,
// so the pairs ran seconds apart): by MB/s where both have it, else by
// ns/op. With run counts that differ it divides the medians once.
func pairedRatios(a, b benchSummary) []float64 {
	ratio := func(x, y goBench) (float64, bool) {
		switch {
		case x.HasMB && y.HasMB && y.MBPerS > 0:
			return x.MBPerS / y.MBPerS, true
		case !x.HasMB && !y.HasMB && y.NsPerOp > 0:
			return x.NsPerOp / y.NsPerOp, true
		}
		return 0, false
	}
	if len(a.Runs) != len(b.Runs) {
		if r, ok := ratio(a.goBench, b.goBench); ok {
			return []float64{r}
		}
		return nil
	}
	var out []float64
	for i := range a.Runs {
		r, ok := ratio(a.Runs[i], b.Runs[i])
		if !ok {
			return nil
		}
		out = append(out, r)
	}
	return out
}

func formatFigure(f figure) string {
	switch f.Unit {
	case "B":
		return fmt.Sprintf("%.1f MiB", f.Value/(1<<20))
	case "kB":
		return fmt.Sprintf("%.1f MiB", f.Value/1024)
	case "count":
		return fmt.Sprintf("%.0f", f.Value)
	}
	return fmt.Sprintf("%.1f %s", f.Value, f.Unit)
}

// roundRatios pairs the runs of a and b round by round: a's req/s, p99
// and CPU time per request over b's, for every round both ran (none if
// either has only one; no CPU ratios unless every round of both has its
// CPU time).
func roundRatios(a, b []wrkRun) (rps, p99, cpu []float64) {
	n := min(len(a), len(b))
	if n < 2 {
		return nil, nil, nil
	}
	withCPU := true
	for i, y := range b[:n] {
		x := a[i]
		if y.ReqPerSec == 0 || y.P99 == 0 {
			return nil, nil, nil
		}
		rps = append(rps, x.ReqPerSec/y.ReqPerSec)
		p99 = append(p99, x.P99/y.P99)
		cx, okX := x.CPUPerRequest()
		cy, okY := y.CPUPerRequest()
		if withCPU = withCPU && okX && okY && cy > 0; withCPU {
			cpu = append(cpu, cx/cy)
		}
	}
	if !withCPU {
		cpu = nil
	}
	return rps, p99, cpu
}

// formatRatios shows ratios as their median and, in brackets, each.
func formatRatios(r []float64) string {
	if len(r) == 0 {
		return ""
	}
	each := make([]string, len(r))
	for i, v := range r {
		each[i] = fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("**%.2f** (%s)", median(r), strings.Join(each, " "))
}

// median is the middle of r (the mean of the two middle ones for an even
// count); r is not changed.
func median(r []float64) float64 {
	s := slices.Clone(r)
	slices.Sort(s)
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}
