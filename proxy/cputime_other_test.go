//go:build !unix

package proxy

import "time"

// processCPU is not measured here: the per-CPU-second figure is left out.
func processCPU() time.Duration { return 0 }
