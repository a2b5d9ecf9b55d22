package proxy

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// A driver's port outlives it: the next Spark app on the host takes the
// first free port from 4040, often the one a driver has just given up.
// Until discovery notices (a log line, a probe, the liveness check in its
// turn, a refused connection), a new connection to the address reached the
// newcomer, and its pages went out under the old app's id, judged by the
// old app's lists. So before the transport uses a new connection to a live
// app's driver, discovery is asked (Options.Confirm) whether the address
// still serves the app; connections kept alive were confirmed when they
// were made, and a driver that exits closes them.

// errNotConfirmed wraps a failed confirmation: the connection is not used
// and the request is answered with a page that reloads itself (proxyError).
var errNotConfirmed = errors.New("the driver's address was not confirmed to serve the app")

// confirmFresh is how long a confirmation stands for the new connections
// made after it: a page's assets open several at once, one confirmation
// serves them all.
const confirmFresh = time.Second

// confirmer runs Options.Confirm once for the new connections to an app's
// driver made at the same time, and lets a success stand for confirmFresh.
type confirmer struct {
	confirm func(ctx context.Context, appID string) error
	now     func() time.Time
	mu      sync.Mutex
	m       map[string]*confirmation
}

type confirmation struct {
	done chan struct{} // closed once err and at are set
	err  error
	at   time.Time
}

func newConfirmer(confirm func(context.Context, string) error, now func() time.Time) *confirmer {
	return &confirmer{confirm: confirm, now: now, m: make(map[string]*confirmation)}
}

// check confirms that appID's driver still answers at its address; ctx is
// the dial's.
func (c *confirmer) check(ctx context.Context, appID string) error {
	c.mu.Lock()
	f := c.m[appID]
	if f != nil {
		select {
		case <-f.done:
			if f.err != nil || c.now().Sub(f.at) >= confirmFresh {
				f = nil // ask again
			}
		default: // under way: wait for it
		}
	}
	if f == nil {
		f = &confirmation{done: make(chan struct{})}
		c.m[appID] = f
		if len(c.m) > maxConfirmations {
			c.sweepLocked()
		}
		c.mu.Unlock()
		// The asker's own context bounds the check; the others waiting
		// on it get its answer.
		f.err = c.confirm(ctx, appID)
		f.at = c.now()
		close(f.done)
	} else {
		c.mu.Unlock()
	}
	select {
	case <-f.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if f.err != nil {
		return fmt.Errorf("%w: %w", errNotConfirmed, f.err)
	}
	return nil
}

// maxConfirmations bounds the remembered confirmations: past it, the ones
// that are done are dropped.
const maxConfirmations = 4096

func (c *confirmer) sweepLocked() {
	for id, f := range c.m {
		select {
		case <-f.done:
			delete(c.m, id)
		default:
		}
	}
}
