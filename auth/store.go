package auth

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// sessionStore is what replicas share (store_redis.go). Every method is
// bounded by the context it gets.
type sessionStore interface {
	// revoke records id as signed out of, for ttl.
	revoke(ctx context.Context, id string, ttl time.Duration) error
	// revoked reports whether id was signed out of on any replica.
	revoked(ctx context.Context, id string) (bool, error)
	// lock takes the renewal lock of a session for ttl unless another
	// replica holds it; token releases it.
	lock(ctx context.Context, name string, ttl time.Duration) (token string, ok bool, err error)
	// unlock releases a lock taken with token (and no other).
	unlock(ctx context.Context, name, token string) error
	// putRenewed and getRenewed share the encoded cookie value a session
	// was renewed to, under the hash of the value it was renewed from.
	putRenewed(ctx context.Context, from, value string, ttl time.Duration) error
	getRenewed(ctx context.Context, from string) (string, bool, error)
	// claim records key for ttl; first says no replica had recorded it.
	claim(ctx context.Context, key string, ttl time.Duration) (first bool, err error)
	ping(ctx context.Context) error
	close() error
}

// Store operations, the op label of sparkgate_session_store_errors_total.
const (
	OpCheck   = "check"   // is a session revoked
	OpRevoke  = "revoke"  // record a sign-out
	OpLock    = "lock"    // take or release a renewal lock
	OpRenewed = "renewed" // share or read a renewed session
	OpClaim   = "claim"   // take a one-time token (ClaimOnce)
	OpPing    = "ping"    // probe while down
)

// StoreOps lists the operations, so that every series exists from the start.
var StoreOps = []string{OpCheck, OpRevoke, OpLock, OpRenewed, OpClaim, OpPing}

// StoreStats is the shared store's health, for metrics.
type StoreStats struct {
	// Up is false from a failed operation until a probe answers again.
	Up bool
	// Errors counts failed operations by op.
	Errors map[string]uint64
	// Unchecked counts requests whose session was accepted without asking
	// the store (it was down): the fail-open decisions.
	Unchecked uint64
	// Pending is the number of sign-outs not yet written to the store.
	Pending int
}

// retryInterval is how often a down store is probed, and queued sign-outs
// are retried.
const retryInterval = time.Second

// maxPending bounds the sign-outs queued while the store is down; past it
// the oldest are dropped (they still hold on the replica that took them).
const maxPending = 1 << 14

// shared wraps a sessionStore with what the gateway does when it fails:
// it fails open (a session is accepted without the shared check, counted
// in Unchecked), keeps sign-outs in the local list and queues them, and
// probes the store until it answers, then writes the queued sign-outs. A
// down store is not asked on the request path, so that an outage does not
// add its timeout to every request.
type shared struct {
	store   sessionStore
	timeout time.Duration // bounds each operation
	ttl     time.Duration // of a revocation: the session TTL
	logger  *zap.Logger
	now     func() time.Time

	down      atomic.Bool
	probing   atomic.Bool
	errs      map[string]*atomic.Uint64
	unchecked atomic.Uint64

	mu      sync.Mutex
	pending map[string]time.Time // sign-outs to write: id → when

	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

func newShared(store sessionStore, timeout, ttl time.Duration, logger *zap.Logger) *shared {
	s := &shared{store: store, timeout: timeout, ttl: ttl, logger: logger, now: time.Now,
		errs: make(map[string]*atomic.Uint64, len(StoreOps)), pending: make(map[string]time.Time), stop: make(chan struct{})}
	for _, op := range StoreOps {
		s.errs[op] = new(atomic.Uint64)
	}
	return s
}

func (s *shared) ctx(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(parent), s.timeout)
}

// failed counts err against op and marks the store down.
func (s *shared) failed(op string, err error) {
	s.errs[op].Add(1)
	if s.down.CompareAndSwap(false, true) {
		s.logger.Warn("session store down: sessions are accepted without the shared revocation check until it answers",
			zap.String("op", op), zap.Error(err))
	}
	s.probe()
}

// probe starts the prober unless it runs: it pings the store every
// retryInterval, and once it answers writes the queued sign-outs and marks
// the store up.
func (s *shared) probe() {
	select {
	case <-s.stop:
		return // closed
	default:
	}
	if !s.probing.CompareAndSwap(false, true) {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if s.probeUntilUp() {
			s.probing.Store(false)
			// A failure between marking the store up and here found the
			// prober still running: start it again.
			if s.down.Load() {
				s.probe()
			}
		}
	}()
}

// probeUntilUp pings until the store answers and the queued sign-outs are
// written, then marks it up; false means the store was closed first.
func (s *shared) probeUntilUp() bool {
	t := time.NewTicker(retryInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return false
		case <-t.C:
		}
		ctx, cancel := s.ctx(context.Background())
		err := s.store.ping(ctx)
		cancel()
		if err != nil {
			s.errs[OpPing].Add(1)
			continue
		}
		if !s.flush() {
			continue
		}
		s.down.Store(false)
		if !s.flush() {
			// A sign-out queued just before could not be written.
			s.down.Store(true)
			continue
		}
		s.logger.Info("session store answers again: sessions are checked against it again")
		return true
	}
}

// flush writes the queued sign-outs; it reports whether all were written.
func (s *shared) flush() bool {
	s.mu.Lock()
	ids := make(map[string]time.Time, len(s.pending))
	for id, at := range s.pending {
		ids[id] = at
	}
	s.mu.Unlock()
	for id := range ids {
		// A whole TTL from now, not from the sign-out: while it was
		// queued here, a replica whose store answered may have renewed a
		// copy of the session, to a whole TTL from then.
		ctx, cancel := s.ctx(context.Background())
		err := s.store.revoke(ctx, id, s.ttl)
		cancel()
		if err != nil {
			s.errs[OpRevoke].Add(1)
			return false
		}
		s.mu.Lock()
		delete(s.pending, id)
		s.mu.Unlock()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending) == 0
}

// revoke writes a sign-out to the store, or queues it when the store is
// down or fails.
func (s *shared) revoke(ctx context.Context, id string) {
	if !s.down.Load() {
		cctx, cancel := s.ctx(ctx)
		err := s.store.revoke(cctx, id, s.ttl)
		cancel()
		if err == nil {
			return
		}
		s.failed(OpRevoke, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) >= maxPending {
		var oldest string
		var at time.Time
		for k, v := range s.pending {
			if oldest == "" || v.Before(at) {
				oldest, at = k, v
			}
		}
		delete(s.pending, oldest)
	}
	s.pending[id] = s.now()
	s.probe()
}

// revoked asks the store whether id was signed out of. When the store is
// down it answers false at once (fail open) and counts the request.
func (s *shared) revoked(ctx context.Context, id string) bool {
	if s.down.Load() {
		s.unchecked.Add(1)
		return false
	}
	cctx, cancel := s.ctx(ctx)
	defer cancel()
	r, err := s.store.revoked(cctx, id)
	if err != nil {
		s.failed(OpCheck, err)
		s.unchecked.Add(1)
		return false
	}
	return r
}

// errStoreDown means an operation was not tried because the store is down.
var errStoreDown = errors.New("session store down")

// lock takes a renewal lock; errStoreDown or another error means the
// caller should go on alone, as a single replica would.
func (s *shared) lock(ctx context.Context, name string, ttl time.Duration) (string, bool, error) {
	if s.down.Load() {
		return "", false, errStoreDown
	}
	cctx, cancel := s.ctx(ctx)
	defer cancel()
	tok, ok, err := s.store.lock(cctx, name, ttl)
	if err != nil {
		s.failed(OpLock, err)
	}
	return tok, ok, err
}

// claim records key; errStoreDown or another error means the caller
// goes on alone, as a single replica would.
func (s *shared) claim(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	if s.down.Load() {
		return false, errStoreDown
	}
	cctx, cancel := s.ctx(ctx)
	defer cancel()
	first, err := s.store.claim(cctx, key, ttl)
	if err != nil {
		s.failed(OpClaim, err)
	}
	return first, err
}

func (s *shared) unlock(ctx context.Context, name, token string) {
	if s.down.Load() {
		return // the lock expires by itself
	}
	cctx, cancel := s.ctx(ctx)
	defer cancel()
	if err := s.store.unlock(cctx, name, token); err != nil {
		s.failed(OpLock, err)
	}
}

func (s *shared) putRenewed(ctx context.Context, from, value string) {
	if s.down.Load() {
		return
	}
	cctx, cancel := s.ctx(ctx)
	defer cancel()
	if err := s.store.putRenewed(cctx, from, value, s.ttl); err != nil {
		s.failed(OpRenewed, err)
	}
}

func (s *shared) getRenewed(ctx context.Context, from string) (string, bool) {
	if s.down.Load() {
		return "", false
	}
	cctx, cancel := s.ctx(ctx)
	defer cancel()
	v, ok, err := s.store.getRenewed(cctx, from)
	if err != nil {
		s.failed(OpRenewed, err)
		return "", false
	}
	return v, ok
}

func (s *shared) stats() StoreStats {
	st := StoreStats{Up: !s.down.Load(), Errors: make(map[string]uint64, len(s.errs)), Unchecked: s.unchecked.Load()}
	for op, n := range s.errs {
		st.Errors[op] = n.Load()
	}
	s.mu.Lock()
	st.Pending = len(s.pending)
	s.mu.Unlock()
	return st
}

func (s *shared) close() error {
	var err error
	s.stopOnce.Do(func() {
		close(s.stop)
		s.wg.Wait()
		err = s.store.close()
	})
	return err
}
