package discovery

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sync"
	"time"
)

const (
	historyEnvParallel = 4
	historyEnvRetry    = time.Minute // after a failed environment read
)

// historySource polls one History Server: its app list each interval, and
// each app's environment (for the ACL properties) once per completed
// attempt, or again when an incomplete attempt's lastUpdated moves.
type historySource struct {
	cfg  HistorySource
	base *url.URL
	c    *client
	// envBudget bounds the environment reads of one poll; the rest wait
	// for the next poll so a large backlog cannot stall the list.
	envBudget time.Duration

	mu  sync.Mutex // guards env: the environment reads run in parallel
	env map[envKey]*envEntry
}

type envKey struct{ id, attempt string }

type envEntry struct {
	completed   bool
	lastUpdated int64
	acl         map[string]string
	failedAt    time.Time
}

// historyApp is one app as a History Server lists it.
type historyApp struct {
	ID, Name, User, AttemptID, SparkVersion string
	Start, End                              time.Time
	Ref                                     HistoryRef
}

func newHistorySource(cfg HistorySource, c *client, interval time.Duration) (*historySource, error) {
	base, err := parseRootURL(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", cfg.Name, err)
	}
	return &historySource{cfg: cfg, base: base, c: c, envBudget: max(2*interval, 10*time.Second), env: map[envKey]*envEntry{}}, nil
}

func (h *historySource) name() string { return "history:" + h.cfg.Name }

// poll lists every app (completed and running) the server has.
func (h *historySource) poll(ctx context.Context) ([]historyApp, error) {
	var apps []apiApp
	if err := h.c.getJSON(ctx, h.base, "api/v1/applications", listBodyMax, &apps); err != nil {
		return nil, fmt.Errorf("listing %s: %w", h.name(), err)
	}
	out := make([]historyApp, 0, len(apps))
	type job struct {
		key         envKey
		completed   bool
		lastUpdated int64
		idx         int
	}
	var jobs []job
	live := make(map[envKey]bool, len(apps))
	now := time.Now()
	h.mu.Lock()
	for _, a := range apps {
		if !validAppIDHint(a.ID) || len(a.Attempts) == 0 {
			continue
		}
		atts := slices.Clone(a.Attempts)
		slices.SortStableFunc(atts, func(x, y apiAttempt) int {
			switch {
			case x.StartTimeEpoch > y.StartTimeEpoch:
				return -1
			case x.StartTimeEpoch < y.StartTimeEpoch:
				return 1
			}
			return 0
		})
		newest := atts[0]
		ha := historyApp{
			ID: a.ID, Name: a.Name, User: newest.SparkUser, AttemptID: newest.AttemptID,
			SparkVersion: newest.AppSparkVersion,
			Ref: HistoryRef{
				Server: h.cfg.Name, BaseURL: h.base, Completed: newest.Completed, User: newest.SparkUser,
				ACLsEnable: h.cfg.ACLsEnable, AdminACLs: h.cfg.AdminACLs, AdminACLsGroups: h.cfg.AdminACLsGroups,
			},
		}
		if newest.StartTimeEpoch > 0 {
			ha.Start = time.UnixMilli(newest.StartTimeEpoch)
		}
		if newest.EndTimeEpoch > 0 {
			ha.End = time.UnixMilli(newest.EndTimeEpoch)
		}
		for _, at := range atts {
			ha.Ref.Attempts = append(ha.Ref.Attempts, at.AttemptID)
		}
		key := envKey{a.ID, newest.AttemptID}
		live[key] = true
		e := h.env[key]
		fresh := e != nil && e.acl != nil && (e.completed || e.lastUpdated == newest.LastUpdatedEpoch)
		if e != nil && e.acl != nil {
			ha.Ref.ACLProps = e.acl // the last known value until a refetch lands
		}
		if !fresh && (e == nil || e.failedAt.IsZero() || now.Sub(e.failedAt) > historyEnvRetry) {
			jobs = append(jobs, job{key, newest.Completed, newest.LastUpdatedEpoch, len(out)})
		}
		out = append(out, ha)
	}
	for k := range h.env {
		if !live[k] {
			delete(h.env, k)
		}
	}
	h.mu.Unlock()

	ectx, cancel := context.WithTimeout(ctx, h.envBudget)
	defer cancel()
	sem := make(chan struct{}, historyEnvParallel)
	var wg sync.WaitGroup
	for _, j := range jobs {
		select {
		case sem <- struct{}{}:
		case <-ectx.Done():
		}
		if ectx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			p := "api/v1/applications/" + url.PathEscape(j.key.id)
			if j.key.attempt != "" {
				p += "/" + url.PathEscape(j.key.attempt)
			}
			acl, _, err := h.c.environmentProps(ectx, h.base, p+"/environment")
			h.mu.Lock()
			defer h.mu.Unlock()
			if err != nil {
				if !errors.Is(err, context.DeadlineExceeded) && ectx.Err() == nil {
					h.env[j.key] = &envEntry{failedAt: time.Now(), acl: h.aclOf(j.key)}
				}
				return
			}
			h.env[j.key] = &envEntry{completed: j.completed, lastUpdated: j.lastUpdated, acl: acl}
			out[j.idx].Ref.ACLProps = acl
		}()
	}
	wg.Wait()
	return out, nil
}

// aclOf returns the cached ACLs of key; h.mu must be held.
func (h *historySource) aclOf(k envKey) map[string]string {
	if e := h.env[k]; e != nil {
		return e.acl
	}
	return nil
}

// fetchACLs reads one app's ACL properties from its event log now, out of
// the poll's turn, and keeps them for the next polls.
func (h *historySource) fetchACLs(ctx context.Context, id, attempt string, completed bool) (map[string]string, error) {
	p := "api/v1/applications/" + url.PathEscape(id)
	if attempt != "" {
		p += "/" + url.PathEscape(attempt)
	}
	acl, _, err := h.c.environmentProps(ctx, h.base, p+"/environment")
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	// lastUpdated 0: an app still in progress is read again by the next
	// poll, as its event log may still change.
	h.env[envKey{id, attempt}] = &envEntry{completed: completed, acl: acl}
	h.mu.Unlock()
	return acl, nil
}
