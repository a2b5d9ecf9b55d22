//go:build unix

package proxy

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time the process has used, user and system.
// Benchmarks report throughput per CPU second beside MB/s: on a shared
// machine the wall clock also counts the time other processes ran.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
