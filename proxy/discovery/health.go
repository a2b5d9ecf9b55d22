package discovery

import (
	"slices"
	"strings"
	"sync"
	"time"
)

// SourceHealth is how one polled source (static list, probe, standalone
// master, Kubernetes, YARN, History Server) answered its last round.
type SourceHealth struct {
	Name        string    // e.g. "yarn:http://rm:8088", "history:main"
	Up          bool      // the last poll answered
	LastError   string    // the last poll's error, "" when Up
	LastSuccess time.Time // zero until a poll has answered
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

func (h *health) record(name string, err error, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = map[string]*SourceHealth{}
	}
	s := h.m[name]
	if s == nil {
		s = &SourceHealth{Name: name}
		h.m[name] = s
	}
	s.Up = err == nil
	if err != nil {
		s.LastError = err.Error()
		s.Failures++
		return
	}
	s.LastError = ""
	s.LastSuccess = now
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
