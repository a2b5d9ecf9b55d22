package discovery

import (
	"context"
	"errors"
	"time"
)

// HistoryVisit is told of each completed attempt whose environment a
// History Server has just served to discovery. To serve it the server
// loaded the attempt's event log, and keeps it loaded for a while (the
// last spark.history.retainedApplications, 50 by default): other reads of
// the attempt cost it little now, and another load later. The proxy reads
// the attempt's index summary then, once, since a completed attempt does
// not change.
//
// A visit runs in the background, at most historyVisitParallel at a time
// per History Server, after the requests to live drivers in flight
// (giveWay); neither the ACL reads nor the verification of drivers wait
// for it. An error has the attempt visited again historyVisitRetry later.
type HistoryVisit func(ctx context.Context, server, appID, attempt string) error

const (
	historyVisitParallel = 2
	// historyVisitQueue is below the History Server's default retained
	// apps: an attempt queued is usually still loaded at its turn. An
	// attempt that finds the queue full is queued by a later poll.
	historyVisitQueue = 16
	// historyVisitPerPoll bounds the attempts a poll queues again (found
	// the queue full, or failed): each may cost the server a load.
	historyVisitPerPoll = 4
	historyVisitRetry   = 10 * time.Minute
	historyVisitSoon    = 30 * time.Second
	historyVisitTimeout = 2 * time.Minute
)

// ErrVisitSoon is wrapped by a visit's error that failed for the caller's
// own load, not the History Server's (the proxy's diagnoses held their
// bound): the attempt is visited again historyVisitSoon later, not
// historyVisitRetry.
var ErrVisitSoon = errors.New("visit again soon")

type visitState uint8

const (
	visitOwed visitState = iota
	visitQueued
	visitDone
)

// OnHistoryVisit installs f to be told of completed attempts as their
// History Servers load them (nil: nobody is told). Call it before Run.
func (d *Discoverer) OnHistoryVisit(f HistoryVisit) {
	for _, h := range d.hist {
		h.visit = f
	}
}

// setEnvLocked stores an environment read that succeeded and queues the
// visit of a completed attempt; h.mu must be held.
func (h *historySource) setEnvLocked(k envKey, e *envEntry) {
	if old := h.env[k]; old != nil && old.completed && e.completed {
		e.visit, e.visitFailedAt = old.visit, old.visitFailedAt
	}
	h.env[k] = e
	if e.visitFailedAt.IsZero() {
		h.queueVisitLocked(k, e)
	}
}

// queueVisitLocked queues k's visit if one is owed and the queue has
// room; h.mu must be held.
func (h *historySource) queueVisitLocked(k envKey, e *envEntry) bool {
	if h.visit == nil || !e.completed || e.older || e.acl == nil || e.visit != visitOwed {
		return false
	}
	select {
	case h.visits <- k:
		e.visit = visitQueued
		return true
	default:
		h.visitsOwed = true
		return false
	}
}

// requeueVisits queues, historyVisitPerPoll at most, the visits still
// owed: of attempts that found the queue full, or whose visit failed
// historyVisitRetry ago.
func (h *historySource) requeueVisits(now time.Time) {
	if h.visit == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.visitsOwed {
		return // every visit was queued when owed: nothing to look for
	}
	n, owed := 0, false
	for k, e := range h.env {
		if n >= historyVisitPerPoll || len(h.visits) == cap(h.visits) {
			return
		}
		if e.visit != visitOwed || h.visit == nil || !e.completed || e.older || e.acl == nil {
			continue
		}
		if !e.visitFailedAt.IsZero() && now.Sub(e.visitFailedAt) < historyVisitRetry {
			owed = true
			continue
		}
		if h.queueVisitLocked(k, e) {
			n++
		} else {
			owed = true
		}
	}
	h.visitsOwed = owed
}

// runVisits visits the queued attempts until ctx is done.
func (h *historySource) runVisits(ctx context.Context) {
	for {
		var k envKey
		select {
		case <-ctx.Done():
			return
		case k = <-h.visits:
		}
		h.giveWay(ctx, time.Now().Add(h.envBudget/4))
		vctx, cancel := context.WithTimeout(ctx, historyVisitTimeout)
		err := h.visit(vctx, h.cfg.Name, k.id, k.attempt)
		cancel()
		if ctx.Err() != nil {
			return
		}
		h.mu.Lock()
		if e := h.env[k]; e != nil && e.visit == visitQueued {
			if err == nil {
				e.visit = visitDone
			} else {
				e.visit, e.visitFailedAt = visitOwed, time.Now()
				if errors.Is(err, ErrVisitSoon) {
					// As if it had failed long enough ago to be due then.
					e.visitFailedAt = e.visitFailedAt.Add(historyVisitSoon - historyVisitRetry)
				}
				h.visitsOwed = true
			}
		}
		h.mu.Unlock()
	}
}
