package discovery

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

const (
	historyEnvParallel = 4
	// historyDecodeYield is how many new entries of a list are decoded
	// without first giving way to driver verifications (giveWay): a
	// just-finished app is decoded at once, a first list of thousands
	// waits for a burst of drivers.
	historyDecodeYield = 256
	historyEnvRetry    = time.Minute // after a failed environment read
	// historyFullPeriod is how often the whole app list is read; the
	// polls between read the running apps and those that ended at most
	// historyEndSlack before the newest end listed (readList). The slack
	// covers a server listing a log late (its update interval, a long
	// parse) and drivers' clocks.
	historyFullPeriod = 5 * time.Minute
	historyEndSlack   = 10 * time.Minute
)

// historySource polls one History Server: its app list each interval, and
// each app's environment (for the ACL properties) once per completed
// attempt, or again when an incomplete attempt's lastUpdated moves.
//
// A poll costs what changed: between reads of the whole list it asks only
// for the running apps and those that ended lately (readList); an answer
// identical to the last one is recognised by its hash and changes nothing
// (unless environment reads are still owed), and in a changed answer only
// the entries whose bytes changed are decoded.
type historySource struct {
	cfg  HistorySource
	base *url.URL
	c    *client
	log  *zap.Logger
	// envBudget bounds the environment reads of one poll; the rest wait
	// for the next poll so a large backlog cannot stall the list.
	envBudget time.Duration

	mu  sync.Mutex // guards env: the environment reads run in parallel
	env map[envKey]*envEntry

	// visit, if set, is told of completed attempts as they are loaded
	// (history_visit.go); visits queues them for its workers.
	visit  HistoryVisit
	visits chan envKey
	// visitsOwed is set when a visit owed was not queued (the queue was
	// full, or it failed): requeueVisits looks for them until none is.
	visitsOwed bool

	// Touched only by poll, which never runs twice at once.
	seed     maphash.Seed
	last     []historyApp   // the list as last read, in order, ACLProps unset
	lastKeys []uint64       // the hash of each entry's bytes as read
	index    map[string]int // app id -> position in last
	byKey    map[uint64]int // lastKeys -> position in last
	running  []string       // ids of the apps in last still running
	owed     bool           // the last poll left environment reads to do
	// listSum is the hash of the last whole list; 0 once a part read
	// since changed last. partSum is the hash of the last part read since
	// the last whole list, 0 if none.
	listSum, partSum uint64
	// fullAt is when the whole list was last read; fullPeriod how often it
	// is; newestEnd the newest end (Unix ms) of a completed app listed.
	fullAt     time.Time
	fullPeriod time.Duration
	newestEnd  int64
	noParts    bool // the server refused a list since a date
	// wholeReads and partReads count the lists asked for (HistoryLists).
	wholeReads, partReads atomic.Int64
	// listBuf holds the last list answer; nothing keeps its bytes past
	// poll (entries are decoded into strings of their own).
	listBuf bytes.Buffer
}

type envKey struct{ id, attempt string }

type envEntry struct {
	completed bool
	// older is an attempt other than the newest: not visited, as the
	// index shows the newest's summary.
	older       bool
	lastUpdated int64
	acl         map[string]string
	failedAt    time.Time
	// visit is where the completed attempt's visit is, and visitFailedAt
	// when it last failed.
	visit         visitState
	visitFailedAt time.Time
}

// historyApp is one app as a History Server lists it.
type historyApp struct {
	ID, Name, User, AttemptID, SparkVersion string
	Start, End                              time.Time
	Ref                                     HistoryRef
	lastUpdated                             int64 // the newest attempt's lastUpdatedEpoch
}

func newHistorySource(cfg HistorySource, c *client, interval time.Duration) (*historySource, error) {
	base, err := parseRootURL(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", cfg.Name, err)
	}
	return &historySource{
		cfg: cfg, base: base, c: c, log: zap.NewNop(), envBudget: max(2*interval, 10*time.Second), env: map[envKey]*envEntry{},
		seed: maphash.MakeSeed(), fullPeriod: historyFullPeriod, visits: make(chan envKey, historyVisitQueue),
	}, nil
}

func (h *historySource) name() string { return "history:" + h.cfg.Name }

// HistoryLists is how many app lists discovery asked a History Server for
// since start: Whole lists, and Parts (the running apps and those ended
// lately, readList).
type HistoryLists struct {
	Source       string // as in Sources: "history:<name>"
	Whole, Parts int64
}

// HistoryLists reports the lists asked of each History Server, in the
// configured order.
func (d *Discoverer) HistoryLists() []HistoryLists {
	out := make([]HistoryLists, len(d.hist))
	for i, h := range d.hist {
		out[i] = HistoryLists{Source: h.name(), Whole: h.wholeReads.Load(), Parts: h.partReads.Load()}
	}
	return out
}

// poll lists every app (completed and running) the server has. changed is
// false, and apps nil, when the list and every app's ACLs are as the last
// poll returned them.
func (h *historySource) poll(ctx context.Context) (apps []historyApp, changed bool, err error) {
	h.requeueVisits(time.Now())
	// Work on a large backlog gives way to live drivers being verified
	// (giveWay), for a quarter of the budget at most in all.
	yieldUntil := time.Now().Add(h.envBudget / 4)
	listed, err := h.readList(ctx, yieldUntil)
	if err != nil {
		return nil, false, err
	}
	if !listed && !h.owed {
		return nil, false, nil
	}
	out := slices.Clone(h.last)

	// One job per attempt whose ACLs are not current: older is -1 for the
	// newest attempt, else its index in Ref.Older.
	type job struct {
		key         envKey
		completed   bool
		lastUpdated int64
		idx, older  int
	}
	var jobs []job
	live := make(map[envKey]bool, len(out))
	now := time.Now()
	h.mu.Lock()
	want := func(key envKey, completed bool, lastUpdated int64, idx, older int) map[string]string {
		live[key] = true
		e := h.env[key]
		if e != nil && e.older != (older >= 0) {
			// A newer attempt came (or went): only the newest is visited.
			if e.older = older >= 0; !e.older && e.visitFailedAt.IsZero() {
				h.queueVisitLocked(key, e)
			} else if !e.older {
				h.visitsOwed = true // its retry is owed
			}
		}
		if !h.fresh(key, lastUpdated) && (e == nil || e.failedAt.IsZero() || now.Sub(e.failedAt) > historyEnvRetry) {
			jobs = append(jobs, job{key, completed, lastUpdated, idx, older})
		}
		if e != nil {
			return e.acl // the last known value until a refetch lands
		}
		return nil
	}
	for i := range out {
		ha := &out[i]
		ha.Ref.ACLProps = want(envKey{ha.ID, ha.AttemptID}, ha.Ref.Completed, ha.lastUpdated, i, -1)
		if len(ha.Ref.Older) > 0 {
			ha.Ref.Older = slices.Clone(ha.Ref.Older) // entries' copy stays without ACLs
			for k := range ha.Ref.Older {
				a := &ha.Ref.Older[k]
				a.ACLProps = want(envKey{ha.ID, a.ID}, a.Completed, a.lastUpdated, i, k)
			}
		}
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
	var read atomic.Int64
	for _, j := range jobs {
		h.giveWay(ectx, yieldUntil)
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
			h.setEnvLocked(j.key, &envEntry{completed: j.completed, older: j.older >= 0, lastUpdated: j.lastUpdated, acl: acl})
			if ref := &out[j.idx].Ref; j.older < 0 {
				ref.ACLProps = acl
			} else {
				ref.Older[j.older].ACLProps = acl
			}
			read.Add(1)
		}()
	}
	wg.Wait()
	h.mu.Lock()
	h.owed = false
	for i := range out {
		if !h.freshApp(&out[i]) {
			h.owed = true
			break
		}
	}
	h.mu.Unlock()
	if !listed && read.Load() == 0 {
		return nil, false, nil
	}
	return out, true, nil
}

// readList brings h.last up to date and reports whether it changed. Most
// polls ask only for what can have changed since the last answers: the
// running apps and those that ended at most historyEndSlack before the
// newest end seen (Spark's minEndDate, which keeps every running app). The
// whole list is read every fullPeriod, to learn of apps removed (the
// cleaner, a log deleted) or listed late (a log copied in, a server
// catching up); and at once when a running app is in neither part, or
// when the server ignored minEndDate and sent everything anyway.
func (h *historySource) readList(ctx context.Context, yieldUntil time.Time) (bool, error) {
	now := time.Now()
	if h.last != nil && h.newestEnd > 0 && !h.noParts && now.Sub(h.fullAt) < h.fullPeriod {
		h.partReads.Add(1)
		changed, whole, err := h.readSince(ctx, yieldUntil)
		var unreachable *unreachableError
		switch {
		case err != nil && !errors.As(err, &unreachable) && ctx.Err() == nil:
			// It answered, but not with a list: a server or a proxy
			// before it that refuses minEndDate gets whole lists.
			h.noParts = true
			h.log.Warn("History Server refused a list since a date; reading its whole list every poll", zap.String("source", h.name()), zap.Error(err))
		case err != nil || !whole:
			return changed, err
		}
	}
	h.wholeReads.Add(1)
	return h.readFull(ctx, yieldUntil, now)
}

// readFull reads the whole list. An answer identical to the last whole one
// (and no part read since changed anything) is recognised by its hash, and
// in a changed answer only the entries whose bytes changed are decoded.
func (h *historySource) readFull(ctx context.Context, yieldUntil, now time.Time) (bool, error) {
	// Read into the buffer of the last poll: the list of 10,000 apps is
	// megabytes, which growing a new buffer every interval copied twice
	// over and left to the collector.
	body, u, err := h.c.getListInto(ctx, h.base, "api/v1/applications", &h.listBuf)
	defer releaseOversized(&h.listBuf, len(body))
	if err != nil {
		return false, fmt.Errorf("listing %s: %w", h.name(), err)
	}
	sum := maphash.Bytes(h.seed, body)
	if h.last != nil && sum == h.listSum {
		h.fullAt, h.partSum = now, 0
		return false, nil
	}
	raw, err := splitArray(body)
	if err != nil {
		return false, fmt.Errorf("listing %s: %s: decoding: %w: %w", h.name(), u.Redacted(), errNotDriver, err)
	}
	keys := make([]uint64, len(raw))
	unseen := 0
	for i, r := range raw {
		keys[i] = maphash.Bytes(h.seed, r)
		if _, ok := h.byKey[keys[i]]; !ok {
			unseen++
		}
	}
	if unseen > historyDecodeYield {
		// Decoding 10,000 entries costs a core for a quarter of a
		// second: live drivers being verified go first.
		h.giveWay(ctx, yieldUntil)
	}
	last := make([]historyApp, 0, len(raw))
	lastKeys := make([]uint64, 0, len(raw))
	for i, r := range raw {
		var ha historyApp
		if j, ok := h.byKey[keys[i]]; ok {
			ha = h.last[j]
		} else if ha, ok = h.decode(r); !ok {
			continue
		}
		last = append(last, ha)
		lastKeys = append(lastKeys, keys[i])
	}
	h.listSum, h.fullAt, h.partSum = sum, now, 0
	h.setLast(last, lastKeys)
	return true, nil
}

// readSince reads the part of the list that can have changed and merges it
// into h.last: an app listed anew replaces its entry, one not listed before
// goes first (the server lists the newest first). whole is true when the
// part cannot be merged and the whole list must be read.
func (h *historySource) readSince(ctx context.Context, yieldUntil time.Time) (changed, whole bool, err error) {
	since := h.newestEnd - historyEndSlack.Milliseconds()
	// Spark's SimpleDateParam: yyyy-MM-dd'T'HH:mm:ss.SSSz.
	p := "api/v1/applications?minEndDate=" + time.UnixMilli(since).UTC().Format("2006-01-02T15:04:05.000") + "GMT"
	body, u, err := h.c.getListInto(ctx, h.base, p, &h.listBuf)
	defer releaseOversized(&h.listBuf, len(body))
	if err != nil {
		return false, false, fmt.Errorf("listing %s: %w", h.name(), err)
	}
	sum := maphash.Bytes(h.seed, body)
	if sum == h.partSum {
		return false, false, nil
	}
	raw, err := splitArray(body)
	if err != nil {
		return false, false, fmt.Errorf("listing %s: %s: decoding: %w: %w", h.name(), u.Redacted(), errNotDriver, err)
	}
	if len(raw) > historyDecodeYield {
		h.giveWay(ctx, yieldUntil)
	}
	type part struct {
		ha historyApp
		k  uint64
	}
	var parts []part
	listed := make(map[string]bool, len(raw))
	for _, r := range raw {
		k := maphash.Bytes(h.seed, r)
		var ha historyApp
		j, same := h.byKey[k]
		if same {
			ha = h.last[j]
		} else {
			var ok bool
			if ha, ok = h.decode(r); !ok {
				continue
			}
		}
		if ha.Ref.Completed && ha.End.UnixMilli() < since {
			return false, true, nil // minEndDate was not applied: this is the whole list
		}
		listed[ha.ID] = true
		if !same {
			parts = append(parts, part{ha, k})
		}
	}
	for _, id := range h.running {
		if !listed[id] {
			return false, true, nil // removed, or ended before since by its driver's clock
		}
	}
	h.partSum = sum
	if len(parts) == 0 {
		return false, false, nil
	}
	last, lastKeys := slices.Clone(h.last), slices.Clone(h.lastKeys)
	var fresh []historyApp
	var freshKeys []uint64
	for _, p := range parts {
		if i, ok := h.index[p.ha.ID]; ok {
			last[i], lastKeys[i] = p.ha, p.k
			continue
		}
		fresh, freshKeys = append(fresh, p.ha), append(freshKeys, p.k)
	}
	// The next whole list is decoded against these entries, not skipped
	// by its hash: the parts moved h.last past the last whole list.
	h.listSum = 0
	h.setLast(append(fresh, last...), append(freshKeys, lastKeys...))
	return true, false, nil
}

// setLast installs h.last, whose entries' bytes hash to keys, and indexes
// it.
func (h *historySource) setLast(last []historyApp, keys []uint64) {
	h.last, h.lastKeys = last, keys
	h.index = make(map[string]int, len(last))
	h.byKey = make(map[uint64]int, len(last))
	h.running = h.running[:0]
	now := time.Now().UnixMilli()
	for i := range last {
		ha := &last[i]
		h.index[ha.ID] = i
		h.byKey[keys[i]] = i
		if !ha.Ref.Completed {
			h.running = append(h.running, ha.ID)
		} else if !ha.End.IsZero() {
			// An end in the future (a driver's clock, a crafted log)
			// counts as now: it must not move the parts past others.
			h.newestEnd = max(h.newestEnd, min(ha.End.UnixMilli(), now))
		}
	}
}

// giveWay waits, until the deadline at most, while requests to drivers
// are in flight: reading the ACLs of finished apps gives way to verifying
// live drivers (500 found at once beside a backlog of 10,000 event logs).
func (h *historySource) giveWay(ctx context.Context, deadline time.Time) {
	for len(h.c.drivers)+len(h.c.envs) > 0 && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
}

// decode reads one entry of the app list; ok is false for an entry that is
// not an app with a valid id and at least one attempt of a valid id. An
// attempt of another id is left out: its event log (anyone's) chose an id
// that is no path segment of this app's, and another log of the same app
// id must not hide the app's real attempts.
func (h *historySource) decode(raw []byte) (historyApp, bool) {
	var a apiApp
	if json.Unmarshal(raw, &a) != nil || !validAppIDHint(a.ID) {
		return historyApp{}, false
	}
	atts := slices.DeleteFunc(slices.Clone(a.Attempts), func(at apiAttempt) bool { return !validAttemptID(at.AttemptID) })
	if len(atts) == 0 {
		return historyApp{}, false
	}
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
		SparkVersion: newest.AppSparkVersion, lastUpdated: newest.LastUpdatedEpoch,
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
	ha.Ref.Attempts = make([]string, len(atts))
	for i, at := range atts {
		ha.Ref.Attempts[i] = at.AttemptID
		if i > 0 {
			ha.Ref.Older = append(ha.Ref.Older, HistoryAttempt{ID: at.AttemptID, User: at.SparkUser,
				Completed: at.Completed, lastUpdated: at.LastUpdatedEpoch})
		}
	}
	return ha, true
}

// fresh reports whether the cached ACLs of key are current for an attempt
// last updated at lastUpdated; h.mu must be held.
func (h *historySource) fresh(k envKey, lastUpdated int64) bool {
	e := h.env[k]
	return e != nil && e.acl != nil && (e.completed || e.lastUpdated == lastUpdated)
}

// freshApp reports whether the cached ACLs of every attempt of ha are
// current; h.mu must be held.
func (h *historySource) freshApp(ha *historyApp) bool {
	if !h.fresh(envKey{ha.ID, ha.AttemptID}, ha.lastUpdated) {
		return false
	}
	for _, a := range ha.Ref.Older {
		if !h.fresh(envKey{ha.ID, a.ID}, a.lastUpdated) {
			return false
		}
	}
	return true
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
func (h *historySource) fetchACLs(ctx context.Context, id, attempt string, completed, older bool) (map[string]string, error) {
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
	h.setEnvLocked(envKey{id, attempt}, &envEntry{completed: completed, older: older, acl: acl})
	h.mu.Unlock()
	return acl, nil
}

// releaseOversized drops buf's memory when it is more than twice what the
// last answer used (ReadFrom doubles it once at most for an answer of the
// same size): one refused answer of up to listBodyMax, or a list that
// shrank, is not held for good.
func releaseOversized(buf *bytes.Buffer, used int) {
	if buf.Cap() > 2*used+64<<10 {
		*buf = bytes.Buffer{}
	}
}

// splitArray splits a JSON array into its elements' bytes without decoding
// them: a changed list costs one pass over its bytes, and only the elements
// not seen before are decoded (each by json.Unmarshal, which rejects the
// malformed).
func splitArray(b []byte) ([][]byte, error) {
	b = bytes.TrimSpace(b)
	if len(b) < 2 || b[0] != '[' || b[len(b)-1] != ']' {
		return nil, errors.New("not a JSON array")
	}
	var out [][]byte
	depth, start, inStr, esc := 0, 1, false, false
	for i := 1; i < len(b)-1; i++ {
		c := b[i]
		switch {
		case inStr:
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			if depth--; depth < 0 {
				return nil, errors.New("unbalanced JSON array")
			}
		case c == ',' && depth == 0:
			out = append(out, bytes.TrimSpace(b[start:i]))
			start = i + 1
		}
	}
	if inStr || depth != 0 {
		return nil, errors.New("unbalanced JSON array")
	}
	if last := bytes.TrimSpace(b[start : len(b)-1]); len(last) > 0 || len(out) > 0 {
		out = append(out, last)
	}
	return out, nil
}
