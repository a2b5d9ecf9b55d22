package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// slotLimit bounds the requests one driver has waiting for an answer:
// from the round trip's start (connecting included) until the answer's
// headers arrive or the round trip fails. A request that finds every slot
// taken waits for one as long as it may wait to connect
// (Config.DialTimeout), taking a slot being the first step of connecting,
// then gets a 503 without reaching the driver.
//
// Each driver is a process a user started, so it may hang, by accident or
// on purpose, and every browser showing its pages keeps asking: without a
// bound, each of those requests would hold a connection to it, up to
// ResponseHeaderTimeout, and the gateway's descriptors are shared by every
// app. A driver's Jetty serves its UI from a pool of 200 threads (the
// default QueuedThreadPool of JettyUtils.startJettyServer): the default
// bound is a little above that, so that it never keeps a driver from
// using all of them, and requests past it would only queue inside the
// driver instead of here.
//
// An answer that is streaming holds no slot: a client that reads slowly
// (or not at all) must not lock the app's other viewers out, and the
// bodies it streams are bounded by the clients that asked for them.
type slotLimit struct {
	rt    http.RoundTripper
	slots chan struct{}
	wait  time.Duration
}

// errUpstreamBusy is the error of a request that waited out the wait for
// a slot.
var errUpstreamBusy = errors.New("upstream busy")

func newSlotLimit(rt http.RoundTripper, n int, wait time.Duration) *slotLimit {
	return &slotLimit{rt: rt, slots: make(chan struct{}, n), wait: wait}
}

func (l *slotLimit) RoundTrip(r *http.Request) (*http.Response, error) {
	select {
	case l.slots <- struct{}{}:
	default:
		if err := l.await(r.Context()); err != nil {
			return nil, err
		}
	}
	defer func() { <-l.slots }()
	return l.rt.RoundTrip(r)
}

// await takes a slot once one is free, or fails when the request ends or
// the wait is over.
func (l *slotLimit) await(ctx context.Context) error {
	t := time.NewTimer(l.wait)
	defer t.Stop()
	select {
	case l.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return fmt.Errorf("%w: all %d requests it may have waiting for an answer waited longer than %v", errUpstreamBusy, cap(l.slots), l.wait)
	}
}
