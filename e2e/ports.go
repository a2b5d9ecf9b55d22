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
