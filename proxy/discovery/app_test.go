package discovery

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestSnapshotParts: a snapshot of driver-found apps over a shared set of
// history-only apps lists and looks up exactly what one snapshot of the
// driver-found apps and the unshadowed history apps would.
func TestSnapshotParts(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 50 {
		var own, hist, all []*App
		ownIDs := map[string]bool{}
		for i := range r.IntN(20) {
			a := &App{ID: fmt.Sprintf("app-%d", r.IntN(40)), State: State(r.IntN(2)), StartTime: time.Unix(int64(r.IntN(10)), 0), Name: fmt.Sprint("own", i)}
			if !ownIDs[a.ID] {
				all = append(all, a)
			}
			ownIDs[a.ID] = true
			own = append(own, a)
		}
		for i := range r.IntN(30) {
			a := &App{ID: fmt.Sprintf("app-%d", r.IntN(40)), State: Ended, StartTime: time.Unix(int64(r.IntN(10)), 0), Name: fmt.Sprint("hist", i)}
			hist = append(hist, a)
		}
		histSet := newAppSet(hist)
		for _, a := range histSet.list {
			if !ownIDs[a.ID] {
				all = append(all, a)
			}
		}
		got, want := newSnapshot(newAppSet(own), histSet), NewSnapshot(all)
		names := func(as []*App) []string {
			var out []string
			for _, a := range as {
				out = append(out, a.ID+"/"+a.Name)
			}
			return out
		}
		if diff := cmp.Diff(names(want.Apps()), names(got.Apps())); diff != "" {
			t.Fatalf("round %d: Apps() (-want +got):\n%s", round, diff)
		}
		for i := range 40 {
			id := fmt.Sprintf("app-%d", i)
			w, wok := want.Lookup(id)
			g, gok := got.Lookup(id)
			if wok != gok || w != g {
				t.Fatalf("round %d: Lookup(%s) = %v, %t; want %v, %t", round, id, g, gok, w, wok)
			}
		}
	}
}
