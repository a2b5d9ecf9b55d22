package main

import (
	"bufio"
	"bytes"
	"math"
	"os"
	"path"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"go.uber.org/zap"
)

// memoryLimitShare is the part of the container's memory limit the Go
// runtime is told it may use (GOMEMLIMIT): the rest is room for what the
// runtime does not count (the binary, thread stacks, kernel buffers of
// sockets) before the kernel kills the process.
const memoryLimitShare = 0.9

// setMemoryLimit makes the Go runtime collect harder as the gateway nears
// its container's memory limit, instead of letting the heap double past it
// under a burst of users (GOGC alone lets it grow to twice what is live)
// and be killed: a soft limit of nine tenths of the cgroup's memory limit.
// GOMEMLIMIT, when set, wins; without a cgroup limit nothing changes.
func setMemoryLimit(logger *zap.Logger) {
	if os.Getenv("GOMEMLIMIT") != "" {
		logger.Info("memory limit from GOMEMLIMIT", zap.Int64("bytes", debug.SetMemoryLimit(-1)))
		return
	}
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return
	}
	limit, ok := cgroupMemoryLimit(self, "/sys/fs/cgroup")
	if !ok {
		return
	}
	soft := int64(float64(limit) * memoryLimitShare)
	debug.SetMemoryLimit(soft)
	logger.Info("memory limit from the cgroup", zap.Int64("cgroup_bytes", limit), zap.Int64("gomemlimit_bytes", soft))
}

// cgroupMemoryLimit returns the memory limit that applies to the process
// whose /proc/self/cgroup is self, with cgroupfs mounted at root: the
// smallest memory.max from its cgroup v2 group up to the root, or its
// cgroup v1 memory controller's memory.limit_in_bytes. ok is false when no
// limit is set (or none can be read).
func cgroupMemoryLimit(self []byte, root string) (limit int64, ok bool) {
	limit = math.MaxInt64
	sc := bufio.NewScanner(bytes.NewReader(self))
	for sc.Scan() {
		// hierarchy-ID:controller-list:cgroup-path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 || !strings.HasPrefix(parts[2], "/") {
			continue
		}
		var files []string
		switch {
		case parts[0] == "0" && parts[1] == "":
			// cgroup v2: every group from this one up to the root may limit.
			for dir := path.Clean(parts[2]); ; dir = path.Dir(dir) {
				files = append(files, filepath.Join(root, dir, "memory.max"))
				if dir == "/" {
					break
				}
			}
		case slices.Contains(strings.Split(parts[1], ","), "memory"):
			// cgroup v1; inside a container the group is often mounted as
			// the controller's root.
			files = append(files, filepath.Join(root, "memory", parts[2], "memory.limit_in_bytes"),
				filepath.Join(root, "memory", "memory.limit_in_bytes"))
		}
		for _, f := range files {
			if n, found := readLimit(f); found && n < limit {
				limit, ok = n, true
			}
		}
	}
	return limit, ok
}

// noLimitV1 is what cgroup v1 reports for no limit, rounded down to a page:
// anything this large is no limit.
const noLimitV1 = 1 << 62

// readLimit reads a memory.max or memory.limit_in_bytes file: a number of
// bytes, or "max" (no limit, as is a v1 figure near 2^63).
func readLimit(file string) (int64, bool) {
	b, err := os.ReadFile(file) //nolint:gosec // a cgroupfs path built above
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n <= 0 || n >= noLimitV1 {
		return 0, false
	}
	return n, true
}
