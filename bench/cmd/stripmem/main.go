// Command stripmem measures the memory and speed of proxy.NewStrippingReader on a
// large page: it streams a generated Spark-like jobs page (50 MiB by
// default, with a kill link in every row and large inline timeline
// scripts) through the stripper and, as the baseline, through io.Copy, and
// prints the peak HeapInuse, the bytes allocated and the throughput of each
// as tab-separated figures (name, value, unit) for scripts/bench.sh.
//
// The page is generated while it is read, so the input itself holds no
// memory; what the figures show is what the copy path holds.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/sparkgate/sparkgate/proxy"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "stripmem:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("stripmem", flag.ContinueOnError)
	size := fs.Int64("size", 50<<20, "page size in `bytes`")
	if err := fs.Parse(args); err != nil {
		return err
	}
	// Baseline first: a plain copy allocates almost nothing, so it does
	// not raise the heap the stripper run starts from.
	for _, mode := range []string{"copy", "stripper"} {
		m, err := measure(mode, *size)
		if err != nil {
			return err
		}
		p := "stripmem." + mode + "."
		fmt.Printf("%sin_bytes\t%d\tB\n", p, m.in)
		fmt.Printf("%sout_bytes\t%d\tB\n", p, m.out)
		fmt.Printf("%skill_links_out\t%d\tcount\n", p, m.killsOut)
		fmt.Printf("%skill_links_in\t%d\tcount\n", p, m.killsIn)
		fmt.Printf("%speak_heap_inuse\t%d\tB\n", p, m.peakHeap)
		fmt.Printf("%sheap_inuse_growth\t%d\tB\n", p, m.peakHeap-m.startHeap)
		fmt.Printf("%stotal_alloc\t%d\tB\n", p, m.alloc)
		fmt.Printf("%sthroughput\t%.1f\tMB/s\n", p, float64(m.in)/1e6/m.elapsed.Seconds())
	}
	return nil
}

// measurement is one pass of the page through a copy path.
type measurement struct {
	in, out, killsIn, killsOut int64
	startHeap, peakHeap, alloc uint64
	elapsed                    time.Duration
}

func measure(mode string, size int64) (measurement, error) {
	page := newPage(size) // its ~1 MiB block belongs to neither copy path
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m := measurement{startHeap: ms.HeapInuse, peakHeap: ms.HeapInuse}
	allocStart := ms.TotalAlloc
	sample := func() {
		runtime.ReadMemStats(&ms)
		m.peakHeap = max(m.peakHeap, ms.HeapInuse)
	}
	page.sample = sample
	in := &killCounter{}
	src := io.TeeReader(page, in)
	sink := &killCounter{}
	start := time.Now()
	switch mode {
	case "copy":
		if _, err := io.Copy(sink, src); err != nil {
			return m, fmt.Errorf("copy: %w", err)
		}
	case "stripper":
		if _, err := io.Copy(sink, proxy.NewStrippingReader(io.NopCloser(src))); err != nil {
			return m, fmt.Errorf("stripping: %w", err)
		}
	}
	m.elapsed = time.Since(start)
	sample()
	m.alloc = ms.TotalAlloc - allocStart
	m.in, m.killsIn = in.n, in.kills
	m.out, m.killsOut = sink.n, sink.kills
	if m.in != size {
		return m, fmt.Errorf("%s: generated %d bytes; want %d", mode, m.in, size)
	}
	return m, nil
}

// killCounter counts the bytes written and the "kill-link" markers in them,
// also across write boundaries, without allocating.
type killCounter struct {
	n, kills int64
	tail     [16]byte // the last len(marker)-1 bytes written
	tailLen  int
}

var marker = []byte("kill-link")

func (k *killCounter) Write(p []byte) (int, error) {
	k.n += int64(len(p))
	k.kills += int64(bytes.Count(p, marker))
	// A marker split across writes: tail's end plus p's start.
	var j [32]byte
	w := append(append(j[:0], k.tail[:k.tailLen]...), p[:min(len(p), len(marker)-1)]...)
	k.kills += int64(bytes.Count(w, marker))
	if len(p) >= len(marker)-1 {
		k.tailLen = copy(k.tail[:], p[len(p)-(len(marker)-1):])
	} else {
		w = append(append(j[:0], k.tail[:k.tailLen]...), p...)
		k.tailLen = copy(k.tail[:], w[max(0, len(w)-(len(marker)-1)):])
	}
	return len(p), nil
}
