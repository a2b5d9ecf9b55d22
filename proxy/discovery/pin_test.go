package discovery

import (
	"context"
	"errors"
	"net"
	"net/url"
	"testing"
	"time"
)

// TestAllowedNetworks: a driver found under a host name is verified at the
// address it resolved to, inside discovery.allowed_networks, and refused
// outside them.
func TestAllowedNetworks(t *testing.T) {
	t.Parallel()
	drv := newFakeDriver(t, "local-7")
	_, port, _ := net.SplitHostPort(drv.url().Host)
	byName := "http://localhost:" + port

	_, reg := startDiscoverer(t, Config{Static: []string{byName}, AllowedNetworks: []string{"127.0.0.0/8"}})
	waitFor(t, reg, "local-7 live", live("local-7"))
	a, _ := reg.Lookup("local-7")
	if want := "127.0.0.1:" + port; a.Addr != want || a.UIURL.String() != byName {
		t.Errorf("app UIURL %s Addr %q; want %s at %s", a.UIURL, a.Addr, byName, want)
	}
	if got, ok := reg.Load().Pin("localhost:" + port); !ok || got != a.Addr {
		t.Errorf("Pin(localhost:%s) = %q, %t; want %q", port, got, ok, a.Addr)
	}

	outside := newFakeDriver(t, "local-9")
	d, reg2 := startDiscoverer(t, Config{Static: []string{outside.srv.URL}, AllowedNetworks: []string{"10.0.0.0/8", "192.0.2.1"}})
	waitFor(t, reg2, "ready", func(*Snapshot) bool { return d.Ready() })
	time.Sleep(300 * time.Millisecond) // a few rounds
	if _, ok := reg2.Lookup("local-9"); ok {
		t.Error("a driver outside allowed_networks was published")
	}
	if n := outside.hits.Load(); n != 0 {
		t.Errorf("the driver outside allowed_networks was asked %d times; want never", n)
	}
}

// TestPinsDialVerifiedAddress: once pinned, a host:port is dialled at the
// verified address, whatever its name resolves to now (here: nothing).
func TestPinsDialVerifiedAddress(t *testing.T) {
	t.Parallel()
	drv := newFakeDriver(t, "local-8")
	p := newPins(nil)
	p.m.Store("driver.invalid:4040", drv.url().Host)
	var d net.Dialer
	c, err := p.dialer(d.DialContext)(context.Background(), "tcp", "driver.invalid:4040")
	if err != nil {
		t.Fatalf("dialling a pinned name: %v", err)
	}
	_ = c.Close()
	u, _ := url.Parse("http://203.0.113.9:4040")
	p2 := newPins([]string{"127.0.0.0/8"})
	if _, err := p2.resolve(context.Background(), u); !errors.Is(err, errNotAllowed) {
		t.Errorf("resolve(%s) with 127.0.0.0/8 allowed = %v; want errNotAllowed", u, err)
	}
}

func TestParseNetwork(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"10.1.2.3/8": "10.0.0.0/8", "192.0.2.7": "192.0.2.7/32", "::1": "::1/128", "fd00::/8": "fd00::/8"} {
		if got, err := parseNetwork(in); err != nil || got.String() != want {
			t.Errorf("parseNetwork(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "10.0.0.0/33", "example.com", "10.0.0"} {
		if _, err := parseNetwork(bad); err == nil {
			t.Errorf("parseNetwork(%q) = nil error; want one", bad)
		}
	}
}
