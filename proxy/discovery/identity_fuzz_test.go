package discovery

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"
)

// FuzzIdentity drives the identity rules (identity.go) with random
// sequences of claims from drivers at a few addresses, with or without an
// id their source names, and of History Server records appearing, changing
// owner, finishing and going, and checks after every step:
//
//   - an app a History Server lists as finished is served as the History
//     Server's record: its owner is the record's sparkUser and it is not
//     live;
//   - a live app that a History Server lists has the record's owner;
//   - an id, once registered, keeps its owner for as long as the gateway
//     holds it: a claim with another owner never replaces it, but for one
//     from a source that names the app (a ResourceManager's, a master's)
//     over one a weaker source found;
//   - an id such a source named is never taken over by a weaker source's
//     claim at another address, running or ended, for as long as the
//     gateway holds it;
//   - a claim whose id is not the one its source names is never registered.
//
// No network is involved: the Discoverer's Run-goroutine methods are called
// directly, with a cancelled context so that the reads they start end at
// once.
func FuzzIdentity(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 2})                      // a claim its source contradicts
	f.Add([]byte{0, 0, 0, 0, 0, 4, 0, 0, 1, 0, 1, 0}) // a second owner after the first ended
	f.Add([]byte{2, 0, 0, 1, 0, 0, 0, 1, 0})          // another owner's claim of a finished app
	f.Add([]byte{2, 0, 0, 1, 0, 0, 0, 0, 0})          // the owner's claim of a finished app
	f.Add([]byte{0, 0, 0, 0, 0, 2, 0, 1, 0})          // the History Server names another owner
	f.Add([]byte{0, 0, 0, 0, 0, 1, 1, 0, 1, 1, 3})
	f.Add([]byte{1, 2, 1, 0, 0, 0, 2, 2, 0, 3, 1, 2, 2, 1, 3})
	f.Add([]byte{0, 1, 0, 3, 2, 0, 1, 0, 3, 2, 1, 3, 4, 3, 5, 0, 3})
	f.Add([]byte{0, 0, 5, 0, 0, 0, 0, 5, 1, 2, 4, 0, 3, 2, 0, 0, 3})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 1, 0, 1, 1})       // a weak claim, then the source's own, another owner
	f.Add([]byte{0, 1, 0, 0, 1, 4, 0, 0, 0, 0, 0, 0}) // the source's app ends; a weak claim of its id
	f.Fuzz(func(t *testing.T, ops []byte) {
		checkIdentitySequence(t, ops)
	})
}

var (
	fuzzIDs   = []string{"app-1-0001", "app-1-0002", "app-1-0003", "app-1-0004"}
	fuzzUsers = []string{"alice", "bob", "mallory"}
)

func checkIdentitySequence(t *testing.T, ops []byte) {
	t.Helper()
	d := New(Config{History: []HistorySource{{Name: "hs", URL: "http://127.0.0.1:1"}}}, NewRegistry(), nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d.ctx = ctx
	now := time.Unix(1_800_000_000, 0)
	d.now = func() time.Time { return now }
	hist := map[string]historyApp{} // the History Server's list, by id

	next := func() int {
		if len(ops) == 0 {
			return 0
		}
		b := ops[0]
		ops = ops[1:]
		return int(b)
	}
	setHistory := func() {
		list := make([]historyApp, 0, len(hist))
		for _, id := range fuzzIDs {
			if ha, ok := hist[id]; ok {
				list = append(list, ha)
			}
		}
		d.onHistory([][]historyApp{list}, []bool{true})
	}
	type holder struct {
		user   string
		strong bool   // found by a source that names the app
		key    string // at this address
	}
	owners := map[string]holder{} // while the gateway holds the id

	for step := 0; len(ops) > 0; step++ {
		now = now.Add(time.Second)
		op := next() % 6
		desc := ""
		switch op {
		case 0, 1: // a driver at address a claims id as user; its source names named (or none)
			a, id, user, named := next()%4, fuzzIDs[next()%len(fuzzIDs)], fuzzUsers[next()%len(fuzzUsers)], next()%(len(fuzzIDs)+1)
			u := &url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", 4040+a)}
			c := candidate{url: u, source: "static"}
			if named > 0 {
				c.appID, c.source = fuzzIDs[named-1], "yarn:rm"
			}
			tg := d.targets[c.key()]
			if tg == nil {
				tg = &target{c: c}
				d.targets[c.key()] = tg
			}
			tg.c = c
			if tg.verifying {
				continue
			}
			tg.verifying = true
			d.pending++
			before := d.apps[id]
			desc = fmt.Sprintf("%s at %s claims %s (source names %q)", user, u.Host, id, c.appID)
			d.onVerified(tg, driverInfo{ID: id, Name: "n", User: user, Start: now.Add(-time.Hour)}, nil)
			if c.appID != "" && !sameApp(c.appID, id) && d.apps[id] != before {
				t.Fatalf("step %d: %s: registered although the source names another app", step, desc)
			}
		case 2: // the History Server lists id with owner user, finished or not
			id, user, done := fuzzIDs[next()%len(fuzzIDs)], fuzzUsers[next()%len(fuzzUsers)], next()%2 == 1
			hist[id] = historyApp{ID: id, Name: "h", User: user, Start: now.Add(-2 * time.Hour), End: now,
				Ref: HistoryRef{Server: "hs", Attempts: []string{""}, Completed: done, User: user}}
			desc = fmt.Sprintf("history lists %s by %s, finished %t", id, user, done)
			setHistory()
		case 3: // the History Server drops id
			id := fuzzIDs[next()%len(fuzzIDs)]
			delete(hist, id)
			desc = "history drops " + id
			setHistory()
		case 4: // the driver of id stops answering
			id := fuzzIDs[next()%len(fuzzIDs)]
			desc = "driver of " + id + " ends"
			d.endApp(id, "fuzz")
		case 5: // time passes beyond the retention of ended apps
			now = now.Add(time.Duration(d.cfg.EndedRetention) + time.Second)
			desc = "retention passes"
			d.expire()
		}
		d.publish()
		snap := d.reg.Load()

		for id, a := range d.apps {
			o, ok := owners[id]
			strong := bindsIDs(a.app.Source)
			if ok && o.user != a.app.User && (o.strong || !strong) {
				t.Fatalf("step %d: %s: owner of %s changed from %s to %s", step, desc, id, o.user, a.app.User)
			}
			if ok && o.strong && !strong && o.key != a.key {
				t.Fatalf("step %d: %s: %s, named by its source, taken over by %s", step, desc, id, a.app.Source)
			}
		}
		for id := range owners {
			if d.apps[id] == nil {
				delete(owners, id)
			}
		}
		for id, a := range d.apps {
			owners[id] = holder{a.app.User, bindsIDs(a.app.Source), a.key}
		}
		for id, ha := range hist {
			a, ok := snap.Lookup(id)
			if !ok {
				t.Fatalf("step %d: %s: %s listed by the History Server is missing", step, desc, id)
			}
			if a.User != ha.User {
				t.Fatalf("step %d: %s: %s served with owner %s; the History Server says %s", step, desc, id, a.User, ha.User)
			}
			if ha.Ref.Completed && a.Live() {
				t.Fatalf("step %d: %s: %s is live although the History Server lists it finished", step, desc, id)
			}
		}
		for _, a := range snap.Apps() {
			if b, ok := snap.Lookup(a.ID); !ok || b != a {
				t.Fatalf("step %d: %s: Apps() and Lookup disagree on %s", step, desc, a.ID)
			}
		}
	}
}
