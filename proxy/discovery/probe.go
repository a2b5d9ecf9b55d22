package discovery

import (
	"context"
	"fmt"
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
	targets []string   // host:port
	urls    []*url.URL // http://host:port of each target, checked by rootURL
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
				hp := net.JoinHostPort(h, strconv.Itoa(port))
				u, err := rootURL(&url.URL{Scheme: "http", Host: hp})
				if err != nil {
					return nil, fmt.Errorf("probe %s: %w", hp, err)
				}
				p.targets, p.urls = append(p.targets, hp), append(p.urls, u)
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
				url:    p.urls[i],
				source: "probe:" + p.targets[i],
			})
		}
	}
	return out, ctx.Err()
}
