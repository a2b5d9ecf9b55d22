package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// slotLimit bounds the requests one upstream has in flight: from the
// round trip's start until the gateway closes the answer's body.
//
// Each driver is a process a user started, so it may be slow or hung on
// purpose: without a bound, every request to it would hold a connection
// to it, and the gateway's descriptors are shared by every app. A
// driver's Jetty serves its UI from a pool of 200 threads (the default
// QueuedThreadPool of JettyUtils.startJettyServer), so more connections
// than that only queue inside the driver instead of here.
//
// A request that finds every slot taken waits for one as long as it may
// wait to connect (Config.DialTimeout): taking a slot is the first step
// of connecting. A driver that hangs before its headers gives its slots
// back when they time out (ResponseHeaderTimeout); one that sends its
// headers and then stalls keeps them until the client goes, and meanwhile
// every other request to it gets the busy page, not a wait.
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
	resp, err := l.rt.RoundTrip(r)
	if err != nil {
		<-l.slots
		return nil, err
	}
	resp.Body = &slotBody{ReadCloser: resp.Body, l: l}
	return resp, nil
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
		return fmt.Errorf("%w: all %d requests it may have in flight took longer than %v", errUpstreamBusy, cap(l.slots), l.wait)
	}
}

// inFlight is the number of slots taken.
func (l *slotLimit) inFlight() int { return len(l.slots) }

// slotBody gives its request's slot back on the first Close.
type slotBody struct {
	io.ReadCloser
	l    *slotLimit
	done atomic.Bool
}

func (b *slotBody) Close() error {
	if b.done.CompareAndSwap(false, true) {
		<-b.l.slots
	}
	return b.ReadCloser.Close()
}
