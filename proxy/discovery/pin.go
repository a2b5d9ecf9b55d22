package discovery

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"sync"
)

// A driver's address is resolved once, when it is verified, and that
// address is the one dialled from then on, by discovery and by the proxy:
// a host name from a log line or a master page whose DNS answer changes
// later (DNS rebinding) cannot move an app to another server. The
// resolved address must lie in discovery.allowed_networks.

// errNotAllowed marks a candidate outside discovery.allowed_networks.
var errNotAllowed = errors.New("outside discovery.allowed_networks")

// parseNetwork reads a CIDR or a single address.
func parseNetwork(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is neither a CIDR nor an IP address", s)
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// pins maps a candidate's host:port to the ip:port verified for it.
type pins struct {
	allowed []netip.Prefix // empty: any
	m       sync.Map       // string → string
}

func newPins(networks []string) *pins {
	p := &pins{}
	for _, n := range networks {
		if pr, err := parseNetwork(n); err == nil { // validated with the config
			p.allowed = append(p.allowed, pr)
		}
	}
	return p
}

func (p *pins) allows(a netip.Addr) bool {
	if len(p.allowed) == 0 {
		return true
	}
	a = a.Unmap()
	for _, pr := range p.allowed {
		if pr.Contains(a) {
			return true
		}
	}
	return false
}

// hostPort is u's host and port as a transport dials it ("host:80" for
// http://host).
func hostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// resolve resolves u's host once, picks the first address in the allowed
// networks and pins u's host:port to it. It returns the pinned ip:port.
func (p *pins) resolve(ctx context.Context, u *url.URL) (string, error) {
	host, port, err := net.SplitHostPort(hostPort(u))
	if err != nil {
		return "", fmt.Errorf("address of %s: %w", u.Redacted(), err)
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		ctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		addrs, err = net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return "", &unreachableError{err: fmt.Errorf("resolving %s: %w", host, err)}
		}
	}
	for _, a := range addrs {
		if p.allows(a) {
			pinned := net.JoinHostPort(a.Unmap().String(), port)
			p.m.Store(hostPort(u), pinned)
			return pinned, nil
		}
	}
	return "", fmt.Errorf("%s (%v): %w", u.Redacted(), addrs, errNotAllowed)
}

// lookup returns the address pinned for a dialled host:port.
func (p *pins) lookup(addr string) (string, bool) {
	v, ok := p.m.Load(addr)
	if !ok {
		return "", false
	}
	return v.(string), true
}

// dialer dials the pinned address of a pinned host:port, and any other
// address (History Servers, cluster APIs: the operator's configuration) as
// it is.
func (p *pins) dialer(next func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if pinned, ok := p.lookup(addr); ok {
			addr = pinned
		}
		return next(ctx, network, addr)
	}
}

// Pin returns the ip:port that the driver address addr (host:port, as a
// transport dials it) was verified at, so that the proxy dials exactly
// that; ok is false for addresses discovery did not verify.
func (s *Snapshot) Pin(addr string) (string, bool) {
	v, ok := s.pins[addr]
	return v, ok
}
