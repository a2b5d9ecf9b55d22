package discovery

import (
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
)

// SourceHealth is how one polled source (static list, probe, standalone
// master, Kubernetes, YARN, History Server) answered its last round.
type SourceHealth struct {
	Name        string    // e.g. "yarn:http://rm:8088", "history:main"
	Up          bool      // the last poll answered
	LastError   string    // the last poll's error, "" when Up
	LastSuccess time.Time // zero until a poll has answered
	DownSince   time.Time // the first failed poll of the current outage; zero when Up
	Failures    uint64    // failed polls since start
}

// health records each source's last poll; polls run on their own
// goroutines, readers (metrics scrapes) on others.
type health struct {
	mu        sync.Mutex
	m         map[string]*SourceHealth
	conflicts map[string]uint64 // refused app claims, by source kind
}

func (h *health) conflict(kind string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.conflicts == nil {
		h.conflicts = map[string]uint64{}
	}
	h.conflicts[kind]++
}

// Conflicts reports how many drivers' claims to an app discovery refused
// since start, by source kind ("probe", "log", "yarn", …): a claim that a
// History Server, the source itself or an earlier owner contradicts.
func (d *Discoverer) Conflicts() map[string]uint64 {
	d.health.mu.Lock()
	defer d.health.mu.Unlock()
	out := make(map[string]uint64, len(d.health.conflicts))
	for k, v := range d.health.conflicts {
		out[k] = v
	}
	return out
}

// change is what one poll did to a source's state.
type change int

const (
	unchanged change = iota
	wentDown         // the first failure, or the first since it answered
	cameBack         // an answer after failures
)

// record notes one poll's outcome and says whether it changed the source's
// state, so that an outage is logged once when it starts and once when it
// ends rather than at every interval.
func (h *health) record(name string, err error, now time.Time) change {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = map[string]*SourceHealth{}
	}
	s := h.m[name]
	first := s == nil
	if first {
		s = &SourceHealth{Name: name}
		h.m[name] = s
	}
	wasUp := s.Up
	s.Up = err == nil
	if err != nil {
		s.LastError = err.Error()
		s.Failures++
		if first || wasUp {
			s.DownSince = now
			return wentDown
		}
		return unchanged
	}
	s.LastError = ""
	s.LastSuccess = now
	s.DownSince = time.Time{}
	if !first && !wasUp {
		return cameBack
	}
	return unchanged
}

// noteHealth records a poll of source (kind names it in the log: "discovery
// source", "history server") and logs a change of state: a warning when it
// stops answering, an info line when it answers again; each failure in
// between only at debug level. Its state stays visible in Sources (the
// index page, sparkgate_discovery_source_up).
func (d *Discoverer) noteHealth(kind, name string, err error) {
	now := d.now()
	switch d.health.record(name, err, now) {
	case wentDown:
		d.log.Warn(kind+" down; retrying every interval, logging again when it answers",
			zap.String("source", name), zap.Error(err))
	case cameBack:
		d.log.Info(kind+" answers again", zap.String("source", name))
	default:
		if err != nil {
			d.log.Debug(kind+" still down", zap.String("source", name), zap.Error(err))
		}
	}
}

// Sources reports every polled source that has been asked at least once,
// by name. Driver logs are followed, not polled, and are not listed.
func (d *Discoverer) Sources() []SourceHealth {
	d.health.mu.Lock()
	out := make([]SourceHealth, 0, len(d.health.m))
	for _, s := range d.health.m {
		out = append(out, *s)
	}
	d.health.mu.Unlock()
	slices.SortFunc(out, func(a, b SourceHealth) int { return strings.Compare(a.Name, b.Name) })
	return out
}
