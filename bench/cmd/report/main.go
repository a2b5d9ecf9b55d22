// Command report turns the raw output of scripts/bench.sh (bench/out) into
// one Markdown report: the wrk runs with their ratios against the baseline
// measured in the same run, the Go benchmarks, and the memory figures. It
// only reads files; it measures nothing itself.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	dir := fs.String("dir", "bench/out", "`directory` scripts/bench.sh wrote to")
	if err := fs.Parse(args); err != nil {
		return err
	}
	in, err := load(*dir)
	if err != nil {
		return err
	}
	_, err = io.WriteString(out, render(in))
	return err
}

// inputs is everything the report is made from.
type inputs struct {
	meta [][2]string
	wrk  map[string]wrkRun
	// rounds are a side-by-side scenario's runs, round by round (its
	// files name.r1.txt, name.r2.txt, ...); wrk holds its median round.
	rounds  map[string][]wrkRun
	urls    map[string]string
	wrkErrs map[string]string
	bench   []goBench
	figures []figure
	// sections are Markdown sections other programs wrote (scale.md,
	// users.md), shown as they are.
	sections []string
}

func load(dir string) (inputs, error) {
	in := inputs{wrk: map[string]wrkRun{}, rounds: map[string][]wrkRun{}, urls: map[string]string{}, wrkErrs: map[string]string{}}
	if b, err := os.ReadFile(filepath.Join(dir, "meta.tsv")); err == nil { //nolint:gosec // dir is this tool's own -dir flag
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, "\t"); ok {
				in.meta = append(in.meta, [2]string{k, v})
			}
		}
	}
	for _, s := range scenarios {
		b, err := os.ReadFile(filepath.Join(dir, "wrk", s.name+".txt")) //nolint:gosec // dir is this tool's own -dir flag; s.name is a fixed scenario
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if u, ok := strings.CutPrefix(line, "# url "); ok {
				in.urls[s.name] = u
			}
		}
		w, err := parseWrk(strings.NewReader(string(b)))
		if err != nil {
			in.wrkErrs[s.name] = err.Error()
			continue
		}
		in.wrk[s.name] = w
		in.rounds[s.name] = loadRounds(dir, s.name)
	}
	for _, name := range []string{"users.md", "scale.md"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil && len(b) > 0 { //nolint:gosec // dir is this tool's own -dir flag; name is fixed
			in.sections = append(in.sections, string(b))
		}
	}
	if f, err := os.Open(filepath.Join(dir, "gobench.txt")); err == nil { //nolint:gosec // dir is this tool's own -dir flag
		in.bench, err = parseGoBench(f)
		_ = f.Close() // opened read-only; nothing to lose
		if err != nil {
			return in, err
		}
	}
	if f, err := os.Open(filepath.Join(dir, "figures.tsv")); err == nil { //nolint:gosec // dir is this tool's own -dir flag
		in.figures, err = parseFigures(f)
		_ = f.Close() // opened read-only; nothing to lose
		if err != nil {
			return in, err
		}
	}
	return in, nil
}

// loadRounds reads the runs of name round by round, up to the first round
// missing or unreadable.
func loadRounds(dir, name string) []wrkRun {
	var out []wrkRun
	for r := 1; ; r++ {
		b, err := os.ReadFile(filepath.Join(dir, "wrk", fmt.Sprintf("%s.r%d.txt", name, r))) //nolint:gosec // dir is this tool's own -dir flag; name is a fixed scenario
		if err != nil {
			return out
		}
		w, err := parseWrk(strings.NewReader(string(b)))
		if err != nil {
			return out
		}
		out = append(out, w)
	}
}
