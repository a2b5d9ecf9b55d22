// Command freeport prints n distinct free TCP ports on 127.0.0.1, one per
// line, for scripts/bench.sh to give to servers that need their address
// before they start (their public URL names it). The ports are held open
// together while chosen, so they are distinct; another process may still
// take one before the server binds it.
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
)

func main() {
	n := flag.Int("n", 1, "how many ports")
	flag.Parse()
	var lns []net.Listener
	for range *n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, "freeport:", err)
			os.Exit(1)
		}
		lns = append(lns, ln)
	}
	for _, ln := range lns {
		fmt.Println(ln.Addr().(*net.TCPAddr).Port)
		// The port is only reported; a failed close of an unused listener loses nothing.
		_ = ln.Close()
	}
}
