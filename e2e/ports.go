//go:build e2e

package e2e

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Ports handed out by FreePort are chosen below the kernel's ephemeral
// range. A port the OS picked for "port 0" can be taken again by anything
// else that asks for port 0 (a Spark driver with spark.ui.port=0, its RPC
// and block manager ports, every outgoing connection) in the seconds
// before the process it was chosen for binds it; a port outside that range
// can only be taken by someone who names it.
const (
	portFloor        = 20000
	defaultEphemeral = 32768
)

var (
	portsMu sync.Mutex
	handed  = map[int]bool{}
)

// FreePort returns a TCP port on 127.0.0.1 that is free now, outside the
// ephemeral range, and not returned before by this process.
func FreePort() (int, error) {
	ceiling := ephemeralLow()
	portsMu.Lock()
	defer portsMu.Unlock()
	for range 200 {
		p := portFloor + rand.IntN(ceiling-portFloor)
		if handed[p] {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue
		}
		_ = l.Close()
		handed[p] = true
		return p, nil
	}
	return 0, fmt.Errorf("no free port in [%d, %d) after 200 tries", portFloor, ceiling)
}

// ephemeralLow reads the low end of Linux's ephemeral port range.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return defaultEphemeral
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return defaultEphemeral
	}
	lo, err := strconv.Atoi(f[0])
	if err != nil || lo <= portFloor+1000 {
		return defaultEphemeral
	}
	return lo
}

// portOwners describes who listens on each busy TCP port in [lo, hi]:
// "pid 123 (java … SparkSubmit …)", from /proc/net/tcp{,6} and the socket
// inodes in /proc/<pid>/fd. A listener whose process this user may not read
// is named by its socket inode only.
func portOwners(lo, hi int) map[int]string {
	inodes := map[string]int{} // socket inode -> port
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fs := strings.Fields(line)
			// sl local_address rem_address st tx:rx tr:tm retrnsmt uid timeout inode
			if len(fs) < 10 || fs[3] != "0A" { // 0A: LISTEN
				continue
			}
			i := strings.LastIndexByte(fs[1], ':')
			port, err := strconv.ParseInt(fs[1][i+1:], 16, 32)
			if err != nil || int(port) < lo || int(port) > hi {
				continue
			}
			inodes[fs[9]] = int(port)
		}
	}
	owners := map[int]string{}
	for inode, port := range inodes {
		owners[port] = "socket inode " + inode + " (owner not readable)"
	}
	pids, _ := os.ReadDir("/proc")
	for _, p := range pids {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		fds, err := os.ReadDir("/proc/" + p.Name() + "/fd")
		if err != nil {
			continue
		}
		for _, fd := range fds {
			l, err := os.Readlink("/proc/" + p.Name() + "/fd/" + fd.Name())
			if err != nil || !strings.HasPrefix(l, "socket:[") {
				continue
			}
			if port, ok := inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")]; ok {
				owners[port] = "pid " + p.Name() + " (" + cmdline(p.Name()) + ")"
			}
		}
	}
	return owners
}

// cmdline returns a process's command line, shortened to what names it.
func cmdline(pid string) string {
	b, err := os.ReadFile("/proc/" + pid + "/cmdline")
	if err != nil {
		return "?"
	}
	s := strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}
