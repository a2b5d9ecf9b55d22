package main

import (
	"os"
	"strings"
	"testing"
)

// TestSystemdReloadDoesNotStop: the unit once had ExecReload=kill -TERM,
// so `systemctl reload` stopped the gateway. It has no ExecReload now
// (reload is refused; the gateway ignores SIGHUP), and nothing else in it
// sends a stopping signal.
func TestSystemdReloadDoesNotStop(t *testing.T) {
	b, err := os.ReadFile("../../deploy/systemd/sparkgate.service")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "ExecReload=") {
			t.Errorf("sparkgate.service has %q; want no ExecReload (the gateway does not reload in place)", line)
		}
		if strings.HasPrefix(line, "Exec") && strings.Contains(line, "kill") {
			t.Errorf("sparkgate.service has %q; want no signal sent by the unit", line)
		}
	}
}
