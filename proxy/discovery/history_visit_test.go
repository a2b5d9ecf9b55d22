package discovery

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestHistoryVisit: each completed attempt is visited once, right after
// its environment was read (not an attempt in progress, not an older
// attempt, not again at the next polls); a failed visit is repeated once historyVisitRetry has
// passed, and an attempt whose ACLs a request read first is visited too.
func TestHistoryVisit(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/applications" {
			fmt.Fprint(w, `[ {"id":"app-1","attempts":[{"startTimeEpoch":10,"endTimeEpoch":20,"lastUpdatedEpoch":20,"sparkUser":"alice","completed":true}]},
 {"id":"app-2","attempts":[{"attemptId":"1","startTimeEpoch":10,"endTimeEpoch":20,"lastUpdatedEpoch":20,"sparkUser":"alice","completed":true}]},
 {"id":"app-3","attempts":[{"startTimeEpoch":50,"endTimeEpoch":-1,"lastUpdatedEpoch":60,"sparkUser":"bob","completed":false}]},
 {"id":"app-6","attempts":[{"attemptId":"2","startTimeEpoch":30,"endTimeEpoch":40,"lastUpdatedEpoch":40,"sparkUser":"alice","completed":true},
   {"attemptId":"1","startTimeEpoch":10,"endTimeEpoch":20,"lastUpdatedEpoch":20,"sparkUser":"alice","completed":true}]}]`)
			return
		}
		fmt.Fprint(w, `{"sparkProperties":[["spark.acls.enable","true"]],"systemProperties":[]}`)
	}))
	defer srv.Close()
	h, err := newHistorySource(HistorySource{Name: "hs", URL: srv.URL}, newClient(nil), DefaultInterval)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		visits = map[string]int{}
		fail   = map[string]bool{"app-2/1": true}
		done   = make(chan struct{}, 16)
	)
	h.visit = func(_ context.Context, server, id, attempt string) error {
		mu.Lock()
		defer mu.Unlock()
		defer func() { done <- struct{}{} }()
		k := server + ":" + id + "/" + attempt
		visits[k]++
		if fail[id+"/"+attempt] {
			return errors.New("history server busy")
		}
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.runVisits(ctx)
	wait := func(n int) {
		t.Helper()
		for range n {
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("waiting for %d visits: %v", n, visits)
			}
		}
	}
	if _, _, err := h.poll(ctx); err != nil {
		t.Fatal(err)
	}
	wait(3)
	mu.Lock()
	fail = nil
	mu.Unlock()
	for range 3 {
		if _, _, err := h.poll(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// The failed visit comes again once its retry is due.
	h.requeueVisits(time.Now().Add(historyVisitRetry + time.Second))
	wait(1)
	h.requeueVisits(time.Now().Add(2 * historyVisitRetry))
	// Read for a request before any poll listed it.
	if _, err := h.fetchACLs(ctx, "app-4", "", true, false); err != nil {
		t.Fatal(err)
	}
	if _, err := h.fetchACLs(ctx, "app-5", "", false, false); err != nil {
		t.Fatal(err)
	}
	// An older attempt's ACLs: the index shows the newest's summary only.
	if _, err := h.fetchACLs(ctx, "app-7", "1", true, true); err != nil {
		t.Fatal(err)
	}
	wait(1)
	select {
	case <-done:
		t.Errorf("a visit too many: %v", visits)
	case <-time.After(100 * time.Millisecond):
	}
	mu.Lock()
	defer mu.Unlock()
	want := map[string]int{"hs:app-1/": 1, "hs:app-2/1": 2, "hs:app-4/": 1, "hs:app-6/2": 1}
	if diff := cmp.Diff(want, visits); diff != "" {
		t.Errorf("visits (-want +got):\n%s", diff)
	}
}

// TestHistoryVisitQueueFull: attempts that find the queue full are
// visited by later polls, historyVisitPerPoll at a time.
func TestHistoryVisitQueueFull(t *testing.T) {
	t.Parallel()
	const apps = historyVisitQueue + 2*historyVisitPerPoll
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/applications" {
			fmt.Fprint(w, "[")
			for i := range apps {
				if i > 0 {
					fmt.Fprint(w, ",")
				}
				fmt.Fprintf(w, `{"id":"app-%d","attempts":[{"startTimeEpoch":10,"lastUpdatedEpoch":20,"sparkUser":"alice","completed":true}]}`, i)
			}
			fmt.Fprint(w, "]")
			return
		}
		fmt.Fprint(w, `{"sparkProperties":[],"systemProperties":[]}`)
	}))
	defer srv.Close()
	h, err := newHistorySource(HistorySource{Name: "hs", URL: srv.URL}, newClient(nil), DefaultInterval)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	visited := map[string]int{}
	h.visit = func(_ context.Context, _, id, _ string) error {
		mu.Lock()
		visited[id]++
		mu.Unlock()
		return nil
	}
	ctx := context.Background()
	// No worker yet: the queue fills and the rest are owed.
	if _, _, err := h.poll(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(h.visits); n != historyVisitQueue {
		t.Fatalf("queued %d visits; want %d (the queue's size)", n, historyVisitQueue)
	}
	drain := func() {
		for len(h.visits) > 0 {
			k := <-h.visits
			_ = h.visit(ctx, "hs", k.id, k.attempt)
			h.mu.Lock()
			h.env[k].visit = visitDone
			h.mu.Unlock()
		}
	}
	drain()
	for poll := 1; poll <= 3; poll++ {
		if _, _, err := h.poll(ctx); err != nil {
			t.Fatal(err)
		}
		want := min(historyVisitPerPoll, apps-historyVisitQueue-(poll-1)*historyVisitPerPoll)
		if n := len(h.visits); n != want {
			t.Errorf("poll %d queued %d visits; want %d", poll, n, want)
		}
		drain()
	}
	mu.Lock()
	defer mu.Unlock()
	if len(visited) != apps {
		t.Errorf("visited %d apps; want %d", len(visited), apps)
	}
	for id, n := range visited {
		if n != 1 {
			t.Errorf("%s visited %d times; want once", id, n)
		}
	}
}

// TestHistoryVisitNewestOnly: an older attempt is not visited, until the
// attempt that was newer leaves the list and it is the newest.
func TestHistoryVisitNewestOnly(t *testing.T) {
	t.Parallel()
	fh := newFakeHistory(t, `[{"id":"app-9","attempts":[{"attemptId":"2","startTimeEpoch":30,"endTimeEpoch":40,"lastUpdatedEpoch":40,"sparkUser":"alice","completed":true},
 {"attemptId":"1","startTimeEpoch":10,"endTimeEpoch":20,"lastUpdatedEpoch":20,"sparkUser":"alice","completed":true}]}]`)
	h, err := newHistorySource(HistorySource{Name: "hs", URL: fh.srv.URL}, newClient(nil), DefaultInterval)
	if err != nil {
		t.Fatal(err)
	}
	visits := make(chan string, 16)
	h.visit = func(_ context.Context, _, id, attempt string) error {
		visits <- id + "/" + attempt
		return nil
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go h.runVisits(ctx)
	next := func() string {
		t.Helper()
		select {
		case v := <-visits:
			return v
		case <-time.After(10 * time.Second):
			t.Fatal("no visit")
			return ""
		}
	}
	if _, _, err := h.poll(ctx); err != nil {
		t.Fatal(err)
	}
	if v := next(); v != "app-9/2" {
		t.Errorf("first visit %s; want app-9/2", v)
	}
	fh.set(`[{"id":"app-9","attempts":[{"attemptId":"1","startTimeEpoch":10,"endTimeEpoch":20,"lastUpdatedEpoch":20,"sparkUser":"alice","completed":true}]}]`)
	if _, _, err := h.poll(ctx); err != nil {
		t.Fatal(err)
	}
	if v := next(); v != "app-9/1" {
		t.Errorf("visit after attempt 2 left %s; want app-9/1", v)
	}
	select {
	case v := <-visits:
		t.Errorf("a visit too many: %s", v)
	case <-time.After(100 * time.Millisecond):
	}
}

// TestHistoryVisitSoonAfterBusy: a visit that failed for the caller's own
// load (ErrVisitSoon: the proxy's diagnoses held their bound) is due again
// historyVisitSoon later, where one the History Server failed waits
// historyVisitRetry: a moment of load (or a user's slow drivers holding the
// bound) must not leave finished apps without badges for ten minutes.
func TestHistoryVisitSoonAfterBusy(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/applications" {
			fmt.Fprint(w, `[ {"id":"app-1","attempts":[{"startTimeEpoch":10,"endTimeEpoch":20,"lastUpdatedEpoch":20,"sparkUser":"alice","completed":true}]},
 {"id":"app-2","attempts":[{"startTimeEpoch":10,"endTimeEpoch":20,"lastUpdatedEpoch":20,"sparkUser":"alice","completed":true}]}]`)
			return
		}
		fmt.Fprint(w, `{"sparkProperties":[["spark.acls.enable","true"]],"systemProperties":[]}`)
	}))
	defer srv.Close()
	h, err := newHistorySource(HistorySource{Name: "hs", URL: srv.URL}, newClient(nil), DefaultInterval)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		visits = map[string]int{}
		done   = make(chan struct{}, 16)
	)
	h.visit = func(_ context.Context, _, id, _ string) error {
		mu.Lock()
		defer mu.Unlock()
		defer func() { done <- struct{}{} }()
		visits[id]++
		switch {
		case visits[id] > 1:
			return nil
		case id == "app-1":
			return fmt.Errorf("summarizing: %w: busy", ErrVisitSoon)
		default:
			return errors.New("history server busy")
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.runVisits(ctx)
	wait := func(n int) {
		t.Helper()
		for range n {
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("waiting for %d visits: %v", n, visits)
			}
		}
	}
	if _, _, err := h.poll(ctx); err != nil {
		t.Fatal(err)
	}
	wait(2)
	h.requeueVisits(time.Now().Add(historyVisitSoon + time.Second))
	wait(1)
	select {
	case <-done:
		t.Errorf("a visit too many: %v", visits)
	case <-time.After(100 * time.Millisecond):
	}
	mu.Lock()
	defer mu.Unlock()
	if want := map[string]int{"app-1": 2, "app-2": 1}; !maps.Equal(visits, want) {
		t.Errorf("visits %v; want %v: the busy one again soon, the failed one not yet", visits, want)
	}
}
