package discovery

import (
	"context"
	"net"
	"net/url"
	"strconv"
	"sync"
	"time"
)

const (
	probeDialTimeout = 300 * time.Millisecond // hosts in a probe list are near; a closed port answers at once
	probeParallel    = 32
)

// probeSource dials configured host×port pairs; open ports become
// candidates (verification decides whether a driver UI is behind them).
type probeSource struct {
	targets []string // host:port
	dial    func(ctx context.Context, network, addr string) (net.Conn, error)
}

func newProbeSource(cfgs []ProbeSource) (*probeSource, error) {
	p := &probeSource{dial: (&net.Dialer{Timeout: probeDialTimeout}).DialContext}
	for _, c := range cfgs {
		ports, err := ParsePorts(c.Ports)
		if err != nil {
			return nil, err
		}
		for _, h := range c.Hosts {
			for _, port := range ports {
				p.targets = append(p.targets, net.JoinHostPort(h, strconv.Itoa(port)))
			}
		}
	}
	return p, nil
}

func (p *probeSource) name() string { return "probe" }

func (p *probeSource) candidates(ctx context.Context) ([]candidate, error) {
	open := make([]bool, len(p.targets))
	sem := make(chan struct{}, probeParallel)
	var wg sync.WaitGroup
	for i, addr := range p.targets {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			dctx, cancel := context.WithTimeout(ctx, probeDialTimeout)
			defer cancel()
			if c, err := p.dial(dctx, "tcp", addr); err == nil {
				_ = c.Close() // only the connect mattered; nothing was written
				open[i] = true
			}
		}()
	}
	wg.Wait()
	var out []candidate
	for i, ok := range open {
		if ok {
			out = append(out, candidate{
				url:    &url.URL{Scheme: "http", Host: p.targets[i]},
				source: "probe:" + p.targets[i],
			})
		}
	}
	return out, ctx.Err()
}
