package discovery

import (
	"fmt"
	"testing"
	"time"
)

func BenchmarkRegistryLookup(b *testing.B) {
	apps := make([]*App, 1000)
	for i := range apps {
		apps[i] = &App{ID: fmt.Sprintf("app-20240501123456-%04d", i), StartTime: time.Unix(int64(i), 0)}
	}
	reg := NewRegistry()
	reg.Store(NewSnapshot(apps))
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := reg.Lookup("app-20240501123456-0500"); !ok {
			b.Fatal("not found")
		}
	}
}

func BenchmarkParseLine(b *testing.B) {
	lines := []string{
		"26/11/29 13:57:10 INFO SparkEnv: Registering MapOutputTracker",
		"26/11/29 13:57:10 INFO Utils: Successfully started service 'SparkUI' on port 36551.",
		`{"ts":"2026-11-29T13:57:16.953Z","level":"INFO","msg":"Successfully started service 'SparkUI' on port 34809.","logger":"Utils"}`,
		"26/11/29 13:57:14 INFO DAGScheduler: Job 0 finished: count at <stdin>:1, took 0.5 s",
	}
	for _, l := range lines {
		b.Run(fmt.Sprintf("%.30s", l), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ParseLine(l)
			}
		})
	}
}
