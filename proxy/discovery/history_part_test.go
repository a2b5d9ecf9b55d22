package discovery

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"
)

// partHistory is a History Server whose app list applies minEndDate as
// Spark's ApplicationListResource does: every running app, and the
// completed ones with an attempt that ended at or after it.
type partHistory struct {
	mu      sync.Mutex
	apps    []partApp // newest first, as the server lists them
	ignore  bool      // answer every list whole, as a server without minEndDate would
	refuse  bool      // answer a list since a date with 400, as a proxy that allows no query might
	whole   int       // lists asked for whole
	parts   []int64   // the minEndDate of each list asked for in part
	badDate bool      // a minEndDate Spark could not parse
}

type partApp struct {
	id          string
	end         int64 // Unix ms; 0 while running
	lastUpdated int64
}

func (s *partHistory) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/v1/applications" {
		_, _ = w.Write([]byte(`{"sparkProperties":[["spark.acls.enable","true"]],"systemProperties":[]}`))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	from := int64(-1 << 62)
	if q := r.URL.Query().Get("minEndDate"); q != "" {
		if s.refuse {
			s.parts = append(s.parts, 0)
			http.Error(w, "query not allowed", http.StatusBadRequest)
			return
		}
		t, err := time.Parse("2006-01-02T15:04:05.000MST", q)
		if err != nil {
			s.badDate = true
			http.Error(w, "Couldn't parse date: "+q, http.StatusBadRequest)
			return
		}
		from = t.UnixMilli()
		s.parts = append(s.parts, from)
	} else {
		s.whole++
	}
	type attempt struct {
		Start       int64  `json:"startTimeEpoch"`
		End         int64  `json:"endTimeEpoch"`
		LastUpdated int64  `json:"lastUpdatedEpoch"`
		User        string `json:"sparkUser"`
		Completed   bool   `json:"completed"`
	}
	type app struct {
		ID       string    `json:"id"`
		Attempts []attempt `json:"attempts"`
	}
	var out []app
	for _, a := range s.apps {
		if a.end != 0 && a.end < from && !s.ignore {
			continue
		}
		at := attempt{Start: 1, End: a.end, LastUpdated: a.lastUpdated, User: "alice", Completed: a.end != 0}
		if a.end == 0 {
			at.End = -1
		}
		out = append(out, app{a.id, []attempt{at}})
	}
	_ = json.NewEncoder(w).Encode(out)
}

func (s *partHistory) set(apps ...partApp) { s.mu.Lock(); s.apps = apps; s.mu.Unlock() }

// asked returns the lists asked for whole and in part since the last call.
func (s *partHistory) asked() (whole, parts int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	whole, parts = s.whole, len(s.parts)
	s.whole, s.parts = 0, nil
	return whole, parts
}

func TestHistoryPollParts(t *testing.T) {
	t.Parallel()
	now := time.Now().UnixMilli()
	old := partApp{id: "app-old", end: now - 48*3600_000, lastUpdated: now - 48*3600_000}
	done := partApp{id: "app-done", end: now - 60_000, lastUpdated: now - 60_000}
	run := partApp{id: "app-run", lastUpdated: now - 1000}
	hs := &partHistory{}
	hs.set(done, run, old)
	srv := httptest.NewServer(hs)
	defer srv.Close()
	h, err := newHistorySource(HistorySource{Name: "hs", URL: srv.URL}, newClient(nil), DefaultInterval)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ids := func(apps []historyApp) []string {
		var out []string
		for _, a := range apps {
			s := a.ID
			if !a.Ref.Completed {
				s += " (running)"
			}
			out = append(out, s)
		}
		return out
	}
	// step polls once and checks what changed and which lists were read.
	step := func(name string, wantChanged bool, wantWhole, wantParts int, want ...string) {
		t.Helper()
		apps, changed, err := h.poll(ctx)
		if err != nil {
			t.Fatalf("%s: poll: %v", name, err)
		}
		if changed != wantChanged {
			t.Errorf("%s: changed = %t; want %t", name, changed, wantChanged)
		}
		if changed && !slices.Equal(ids(apps), want) {
			t.Errorf("%s: apps = %q; want %q", name, ids(apps), want)
		}
		if !slices.Equal(ids(h.last), want) {
			t.Errorf("%s: the list kept = %q; want %q", name, ids(h.last), want)
		}
		if whole, parts := hs.asked(); whole != wantWhole || parts != wantParts {
			t.Errorf("%s: lists read whole %d, in part %d; want %d and %d", name, whole, parts, wantWhole, wantParts)
		}
	}

	step("first poll", true, 1, 0, "app-done", "app-run (running)", "app-old")
	step("nothing changed", false, 0, 1, "app-done", "app-run (running)", "app-old")
	// The part asked for starts historyEndSlack before the newest end.
	h.poll(ctx) //nolint:errcheck // checked by the figures below
	hs.mu.Lock()
	if len(hs.parts) != 1 || hs.parts[0] != done.end-historyEndSlack.Milliseconds() {
		t.Errorf("minEndDate asked = %v; want [%d] (the newest end less %s)", hs.parts, done.end-historyEndSlack.Milliseconds(), historyEndSlack)
	}
	hs.parts = nil
	hs.mu.Unlock()

	// The running app ends, in place; a new app ends and goes first.
	run.end = now
	fresh := partApp{id: "app-new", end: now + 1, lastUpdated: now + 1}
	hs.set(fresh, run, done, old)
	step("two ended", true, 0, 1, "app-new", "app-done", "app-run", "app-old")
	step("nothing changed again", false, 0, 1, "app-new", "app-done", "app-run", "app-old")

	// A completed app removed from the server stays until the whole list
	// is read again, a fullPeriod after the last.
	hs.set(fresh, run, done)
	step("removed, not yet read whole", false, 0, 1, "app-new", "app-done", "app-run", "app-old")
	h.fullAt = h.fullAt.Add(-h.fullPeriod)
	step("read whole", true, 1, 0, "app-new", "app-run", "app-done") // in the server's order

	// A running app that is in neither part is looked up in the whole
	// list at once (removed here).
	run2 := partApp{id: "app-run2", lastUpdated: now}
	hs.set(run2, fresh, run, done)
	step("new running", true, 0, 1, "app-run2 (running)", "app-new", "app-run", "app-done")
	hs.set(fresh, run, done)
	step("running app gone", true, 1, 1, "app-new", "app-run", "app-done")

	// A server that ignores minEndDate sends everything: the answer is
	// taken as the whole list, in the same poll.
	hs.mu.Lock()
	hs.ignore = true
	hs.mu.Unlock()
	hs.set(fresh, run, old)
	step("server ignores minEndDate", true, 1, 1, "app-new", "app-run", "app-old")

	// An end in the future counts as now: the parts still ask from before
	// the others' ends.
	hs.mu.Lock()
	hs.ignore = false
	hs.mu.Unlock()
	future := partApp{id: "app-future", end: now + 365*24*3600_000, lastUpdated: now}
	hs.set(future, fresh, run, old)
	step("future end", true, 0, 1, "app-future", "app-new", "app-run", "app-old")
	hs.set(future, fresh, run, old)
	h.poll(ctx) //nolint:errcheck // checked by the figures below
	hs.mu.Lock()
	if len(hs.parts) != 1 || hs.parts[0] > time.Now().UnixMilli()-historyEndSlack.Milliseconds() {
		t.Errorf("minEndDate after an end in the future = %v; want at most now less %s", hs.parts, historyEndSlack)
	}
	if hs.badDate {
		t.Error("a minEndDate asked for was not in Spark's date format")
	}
	hs.mu.Unlock()

	// A server that refuses minEndDate gets whole lists, from that poll on.
	hs.mu.Lock()
	hs.refuse = true
	hs.parts = nil
	hs.mu.Unlock()
	hs.set(fresh, run, old)
	step("server refuses minEndDate", true, 1, 1, "app-new", "app-run", "app-old")
	step("whole lists from then on", false, 1, 0, "app-new", "app-run", "app-old")
	if got := (HistoryLists{Whole: h.wholeReads.Load(), Parts: h.partReads.Load()}); got.Whole != 6 || got.Parts != 11 {
		t.Errorf("lists counted: %d whole, %d parts; want 6 and 11 (as the server saw them)", got.Whole, got.Parts)
	}
}
