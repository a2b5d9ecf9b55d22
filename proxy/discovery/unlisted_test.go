package discovery

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeMaster is a standalone master whose active apps the test sets:
// each id maps to its Application Detail UI link ("" for none: an app run
// with spark.ui.enabled=false).
type fakeMaster struct {
	mu   sync.Mutex
	apps map[string]string
}

func (m *fakeMaster) set(apps map[string]string) { m.mu.Lock(); m.apps = apps; m.mu.Unlock() }

func (m *fakeMaster) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch r.URL.Path {
	case "/json/":
		var ids []string
		for id := range m.apps {
			ids = append(ids, fmt.Sprintf(`{"id":%q,"state":"RUNNING"}`, id))
		}
		fmt.Fprintf(w, `{"activeapps":[%s],"status":"ALIVE"}`, strings.Join(ids, ","))
	case "/app/":
		link, ok := m.apps[r.URL.Query().Get("appId")]
		if !ok {
			http.Error(w, "No running application with ID", 404)
			return
		}
		if link == "" {
			fmt.Fprint(w, `<html><body><ul><li><strong>ID:</strong> x</li></ul></body></html>`)
			return
		}
		fmt.Fprintf(w, `<li><strong><a href=%q>Application Detail UI</a></strong></li>`, link)
	default:
		http.NotFound(w, r)
	}
}

// listsAt returns what a source that gives ids finds when it lists app id
// at u: a candidate read a second after *now, as the rounds of stepDisc
// tests advance it.
func listsAt(now *time.Time, u *url.URL, id string) func(source string) []candidate {
	return func(source string) []candidate {
		return []candidate{{url: u, source: source, appID: id, seen: now.Add(time.Second)}}
	}
}

// TestUILessAppDoesNotKeepPortTakerLive: alice's X, named by the master at
// U, finishes; a process that took U answers every liveness check as
// X/alice. Meanwhile anyone runs an app W on the same master with
// spark.ui.enabled=false: its app page has no Application Detail UI link,
// so every master poll is partial. A partial list still names every app
// found before (their links are cached), so X ends all the same.
func TestUILessAppDoesNotKeepPortTakerLive(t *testing.T) {
	const x, w = "app-20260101000000-0001", "app-20260101000000-0002"
	const u = "http://10.0.0.5:4040"
	fm := &fakeMaster{}
	fm.set(map[string]string{x: u})
	srv := httptest.NewServer(fm)
	defer srv.Close()
	m := newMasterSource(mustURL(t, srv.URL), newClient(nil))

	d, now := stepDisc()
	d.polls = []pollSource{m}
	poll := func() {
		*now = now.Add(time.Second)
		cands, err := m.candidates(context.Background())
		for j := range cands {
			cands[j].seen = *now
		}
		d.onPolled([][]candidate{cands}, []bool{answered(err)})
		if tg := d.targets[u]; tg != nil && tg.verifying {
			verifyDone(d, mustURL(t, u), driverInfo{ID: x, User: "alice"})
		}
		if a := d.apps[x]; a != nil && a.app.State == Running {
			// The process at U answers the liveness check as X/alice.
			d.onChecked(x, a, apiApp{ID: x, Attempts: []apiAttempt{{SparkUser: "alice"}}}, nil, false)
		}
	}
	poll()
	if a := d.apps[x]; a == nil || a.app.State != Running || !bindsIDs(a.app.Source) {
		t.Fatalf("setup: %+v", d.apps[x])
	}
	// X finishes; W (no UI) runs on the master.
	fm.set(map[string]string{w: ""})
	if _, err := m.candidates(context.Background()); err == nil {
		t.Fatal("setup: want the master's partial answer to err")
	}
	for range 10 {
		poll()
	}
	if a := d.apps[x]; a.app.State == Running {
		t.Errorf("X still live at %s under %q ten polls after the master stopped listing it: a UI-less app on the master made every poll partial", u2s(a.app.UIURL), a.app.Source)
	}
}

// TestMasterFailoverKeepsApp: two masters of an HA pair are
// configured. X is named at U by m1 (active); m1 fails, m2 takes over and
// lists X at U (X's source follows it); m1 comes back as standby
// and answers with no active apps. X is not ended: m2 lists it at U (an
// end would republish it with its ACLs unread).
func TestMasterFailoverKeepsApp(t *testing.T) {
	d, now := stepDisc()
	const x = "app-20260101000000-0001"
	u, _ := url.Parse("http://10.0.0.5:4040")
	m1, m2 := "master:http://m1:8080", "master:http://m2:8080"
	d.polls = []pollSource{listPoll{m1}, listPoll{m2}}
	at := func() []candidate { return []candidate{{url: u, source: m1, appID: x, seen: *now}} }
	at2 := func() []candidate { return []candidate{{url: u, source: m2, appID: x, seen: *now}} }
	ended := false
	poll := func(r1 []candidate, ok1 bool, r2 []candidate) {
		*now = now.Add(time.Second)
		d.onPolled([][]candidate{r1, r2}, []bool{ok1, true})
		if a := d.apps[x]; a != nil && a.app.State == Ended {
			ended = true
		}
		answerAsAlice(d, u, x)
	}
	poll(at(), true, nil) // m1 active, m2 standby
	if a := d.apps[x]; a == nil || a.app.Source != m1 {
		t.Fatalf("setup: %+v", d.apps[x])
	}
	first := d.apps[x]
	for range 3 {
		poll(nil, false, at2()) // m1 down, m2 active
	}
	for range 5 {
		poll(nil, true, at2()) // m1 back as standby: lists nothing
	}
	if ended || d.apps[x] != first {
		t.Errorf("X, listed by the active master m2 at U throughout, was ended (same liveApp after: %v, source now %q)", d.apps[x] == first, d.apps[x].app.Source)
	}
}

// TestNewDriverAtSecondAddressFound: alice's X runs at A (static); a
// process at B answered as X/alice, so B was taken for X's second address
// (t.appID = X). That process exits and bob's driver Y binds B; its log
// names Y at B. The log line has B verified again (checking X at A would
// not look at B): Y is found, and X stays.
func TestNewDriverAtSecondAddressFound(t *testing.T) {
	d, now := stepDisc()
	const x, y = "app-20260101000000-0001", "app-20260101000000-0002"
	a, _ := url.Parse("http://10.0.0.5:4040")
	b, _ := url.Parse("http://10.0.0.5:4041")
	d.offer(candidate{url: a, source: "static", seen: *now})
	verifyDone(d, a, driverInfo{ID: x, User: "alice"})
	d.offer(candidate{url: b, source: "probe", seen: *now})
	verifyDone(d, b, driverInfo{ID: x, User: "alice"})
	if tb := d.targets[b.String()]; tb.appID != x || d.apps[x].key != a.String() {
		t.Fatalf("setup: B not X's second address")
	}
	// Y now at B; its log names it there.
	for r := 0; r < 30; r++ {
		*now = now.Add(time.Second)
		if r == 0 {
			d.onLogs([]logCandidates{{path: "/var/log/bob/driver.log", urls: []*url.URL{b}, appHint: y}}, *now, false)
		}
		for _, cs := range d.logCands {
			for _, c := range cs {
				d.offer(c)
			}
		}
		d.offer(candidate{url: b, source: "kubernetes", appID: y, seen: *now})
		if tg := d.targets[b.String()]; tg.verifying {
			verifyDone(d, b, driverInfo{ID: y, User: "bob"})
		}
		if ax := d.apps[x]; ax != nil && ax.checking {
			d.onChecked(x, ax, apiApp{ID: x, Attempts: []apiAttempt{{SparkUser: "alice"}}}, nil, false)
		}
	}
	if ay := d.apps[y]; ay == nil || ay.app.State != Running {
		t.Errorf("bob's Y, named at B by its log and its pod for 30 intervals, never verified: B is still held as X's second address (t.appID=%q)", d.targets[b.String()].appID)
	}
	if ax := d.apps[x]; ax == nil || ax.app.State != Running {
		t.Errorf("X withdrawn")
	}
}

// TestFailedOverActiveUnreadableKeepsApp: an HA pair. m1 (active)
// names alice's X at U; m1 fails over to m2, which lists X at U; m1 comes
// back as the standby and answers every poll with no apps, and X's source
// follows the master that lists it (m2). Then m2's list becomes unreadable
// (a partition between the gateway and m2) for
// longer than the hold. X's driver answers every check and m2 still runs
// it: the standby's empty answers do not end it.
func TestFailedOverActiveUnreadableKeepsApp(t *testing.T) {
	d, now := stepDisc()
	const x = "app-20260101000000-0001"
	u, _ := url.Parse("http://10.0.0.5:4040")
	m1, m2 := "master:http://m1:8080", "master:http://m2:8080"
	d.polls = []pollSource{listPoll{m1}, listPoll{m2}}
	at := listsAt(now, u, x)
	endedAt, round, endedRounds := -1, 0, 0
	poll := func(r1 []candidate, ok1 bool, r2 []candidate, ok2 bool) {
		round++
		*now = now.Add(time.Second)
		d.onPolled([][]candidate{r1, r2}, []bool{ok1, ok2})
		if a := d.apps[x]; a != nil && a.app.State == Ended {
			endedRounds++
			if endedAt < 0 {
				endedAt = round
			}
		}
		answerAsAlice(d, u, x)
	}
	poll(at(m1), true, nil, true) // m1 active, m2 standby
	for range 3 {
		poll(nil, false, at(m2), true) // m1 down, m2 active
	}
	for range 5 {
		poll(nil, true, at(m2), true) // m1 back as standby
	}
	if a := d.apps[x]; a == nil || a.app.State != Running || a.app.Source != m2 || endedAt >= 0 {
		t.Fatalf("setup: %+v ended at %d", d.apps[x], endedAt)
	}
	for range 240 {
		poll(nil, true, nil, false) // m2 (active, runs X) unreadable; m1 standby answers empty
	}
	if endedAt >= 0 {
		t.Errorf("alice's X, running on the active master m2 and answering every check, ended at round %d (%q no longer lists it) and was ended for %d of the last rounds; now %v (unlistedEnd=%v)",
			endedAt, m1, endedRounds, d.apps[x].app.State, d.apps[x].unlistedEnd)
	}
}

// TestCollidingListingMovesNoSilentSource: two separate
// standalone clusters A (mA) and B (mB). Master ids are app-<second>-<n>,
// so B may hand out alice's id X too; an app on B registers its UI link
// as U (the link is whatever the driver registered). mA, X's source, is
// unreadable for a while (a partition) while mB lists "X"
// at U. X's source stays mA, which did not answer: were it to move to mB,
// mB's empty answers, once B's app stops, would end alice's X, whose driver
// answers at U all along.
func TestCollidingListingMovesNoSilentSource(t *testing.T) {
	d, now := stepDisc()
	const x = "app-20260101000000-0001"
	u, _ := url.Parse("http://10.0.0.5:4040")
	mA, mB := "master:http://ma:8080", "master:http://mb:8080"
	d.polls = []pollSource{listPoll{mA}, listPoll{mB}}
	at := func(m string) []candidate { return []candidate{{url: u, source: m, appID: x, seen: *now}} }
	poll := func(r1 []candidate, ok1 bool, r2 []candidate, ok2 bool) {
		*now = now.Add(time.Second)
		d.onPolled([][]candidate{r1, r2}, []bool{ok1, ok2})
		answerAsAlice(d, u, x) // alice's driver, still running
	}
	for range 3 {
		poll(at(mA), true, nil, true)
	}
	poll(nil, false, at(mB), true) // mA unreadable one round; B's colliding app listed at U
	if a := d.apps[x]; a.app.Source != mA {
		t.Errorf("X's source moved to %q on cluster B's listing while mA was silent", a.app.Source)
	}
	for range 300 {
		poll(nil, false, nil, true) // B's app gone; mA still unreadable
	}
	if a := d.apps[x]; a.app.State != Running {
		t.Errorf("alice's running X ended (source %q): %v", a.app.Source, a.app.State)
	}
}

// TestDeadActiveMasterFailoverEndsUnlisted: an HA pair, configured as
// one cluster. m1, active, names alice's X at U; m2 is not running (or not
// reachable). m1 dies for good (its host is gone); m2 is started, elected,
// and lists X at U. X's source follows m2, its partner, though m1 never
// answers again. X finishes, m2 stops listing it, and a process that took
// U answers every liveness check as X/alice: X must end, not stay live
// under the dead m1 with the port taker behind its id.
func TestDeadActiveMasterFailoverEndsUnlisted(t *testing.T) {
	d, now := stepDisc()
	const x = "app-20260101000000-0001"
	u, _ := url.Parse("http://10.0.0.5:4040")
	m1, m2 := "master:http://m1:8080", "master:http://m2:8080"
	d.polls = []pollSource{listPoll{m1}, listPoll{m2}}
	d.haCluster = map[string]string{m1: "a", m2: "a"}
	at := listsAt(now, u, x)
	poll := func(r1 []candidate, ok1 bool, r2 []candidate, ok2 bool) {
		*now = now.Add(time.Second)
		d.onPolled([][]candidate{r1, r2}, []bool{ok1, ok2})
		answerAsAlice(d, u, x) // alice's driver, then the port taker
	}
	for range 3 {
		poll(at(m1), true, nil, false) // m1 active, m2 not up
	}
	for range 60 {
		poll(nil, false, nil, false) // m1 dead
	}
	for range 300 { // m2 elected, lists X at U; m1 never answers again
		poll(nil, false, at(m2), true)
	}
	if a := d.apps[x]; a == nil || a.app.State != Running || a.app.Source != m2 {
		t.Fatalf("X after the failover: %+v; want running under %q", d.apps[x], m2)
	}
	for range 20 {
		poll(nil, false, nil, true) // X finished: m2 no longer lists it; a port taker answers as X/alice
	}
	if a := d.apps[x]; a.app.State == Running {
		t.Errorf("X live under %q 20 rounds after the only live master stopped listing it: the port taker at U keeps alice's id", a.app.Source)
	}
}

// TestCollidingListingMovesNoDownSource: as
// TestCollidingListingMovesNoSilentSource, but mA's list stays unreadable
// (a partition, as in TestUnreadableActiveMasterEndsNothing) past
// the hold while cluster B's app with the colliding id X, its UI link
// registered as U, runs for minutes; no master names its cluster. X's
// source stays mA, and mB's empty answers once B's app stops do not end
// alice's X, whose driver answers at U all along.
func TestCollidingListingMovesNoDownSource(t *testing.T) {
	d, now := stepDisc()
	const x = "app-20260101000000-0001"
	u, _ := url.Parse("http://10.0.0.5:4040")
	mA, mB := "master:http://ma:8080", "master:http://mb:8080"
	d.polls = []pollSource{listPoll{mA}, listPoll{mB}}
	at := listsAt(now, u, x)
	endedAt, round := -1, 0
	poll := func(r1 []candidate, ok1 bool, r2 []candidate) {
		round++
		*now = now.Add(time.Second)
		d.onPolled([][]candidate{r1, r2}, []bool{ok1, true})
		if a := d.apps[x]; a != nil && a.app.State == Ended && endedAt < 0 {
			endedAt = round
		}
		answerAsAlice(d, u, x) // alice's driver, still running
	}
	for range 3 {
		poll(at(mA), true, nil)
	}
	for range 200 { // mA unreadable past the 3 min hold; B's colliding app listed at U
		poll(nil, false, at(mB))
	}
	src := d.apps[x].app.Source
	for range 20 {
		poll(nil, false, nil) // B's app stopped; mA still unreadable
	}
	if a := d.apps[x]; endedAt >= 0 || a.app.State != Running || src != mA {
		t.Errorf("alice's running X ended at round %d (source then %q, want %q): %v unlistedEnd=%v", endedAt, src, mA, a.app.State, a.unlistedEnd)
	}
}

// TestOtherClusterTakesNothingOver: clusters A (mA) and B (an HA pair
// mB1, mB2) are configured by name. Cluster B's app has alice's id X and
// registered U as its UI link. Neither while mA is unreadable (past the
// hold) nor after B fails over to mB2 does B's listing take X over: with mA unreadable X stays live and mB's empty lists end
// nothing; once mA answers without it, X ends.
func TestOtherClusterTakesNothingOver(t *testing.T) {
	d, now := stepDisc()
	const x = "app-20260101000000-0001"
	u, _ := url.Parse("http://10.0.0.5:4040")
	mA, mB1, mB2 := "master:http://ma:8080", "master:http://mb1:8080", "master:http://mb2:8080"
	d.polls = []pollSource{listPoll{mA}, listPoll{mB1}, listPoll{mB2}}
	d.haCluster = map[string]string{mA: "a", mB1: "b", mB2: "b"}
	at := listsAt(now, u, x)
	type ans struct {
		c  []candidate
		ok bool
	}
	endedAt, round := -1, 0
	poll := func(a, b1, b2 ans) {
		round++
		*now = now.Add(time.Second)
		d.onPolled([][]candidate{a.c, b1.c, b2.c}, []bool{a.ok, b1.ok, b2.ok})
		if a := d.apps[x]; a != nil && a.app.State == Ended && endedAt < 0 {
			endedAt = round
		}
		answerAsAlice(d, u, x)
	}
	silent, empty := ans{}, ans{ok: true}
	for range 3 {
		poll(ans{c: at(mA), ok: true}, empty, empty)
	}
	for range 300 { // mA unreadable; B's colliding app on mB1 at U
		poll(silent, ans{c: at(mB1), ok: true}, empty)
	}
	for range 30 { // B fails over
		poll(silent, silent, empty)
	}
	for range 10 { // mB2 leads; mB1 back as standby
		poll(silent, empty, ans{c: at(mB2), ok: true})
	}
	for range 20 { // B's app stops
		poll(silent, empty, empty)
	}
	if a := d.apps[x]; endedAt >= 0 || a.app.State != Running || a.app.Source != mA {
		t.Fatalf("alice's running X under %q (want %q), ended at round %d: %v unlistedEnd=%v",
			a.app.Source, mA, endedAt, a.app.State, a.unlistedEnd)
	}
	// X finishes: mA answers without it; a port taker answers at U.
	for range 10 {
		poll(empty, empty, empty)
	}
	if a := d.apps[x]; a.app.State == Running {
		t.Errorf("X live under %q ten rounds after its master stopped listing it: the port taker at U keeps alice's id", a.app.Source)
	}
}

// TestOtherClusterCreditedFirstGivesBack: clusters A (mA) and B (mB) are
// named. In the round alice's X is first verified at U, both list X there
// (B's app has the colliding id and registered U) and mB's read began
// later, so X may be credited to mB. Once B's app stops, mB's answers
// without X hand X to mA, which lists it: alice's running X never ends,
// not even when a forged event log has a History Server list X as
// completed (an ended X would then be refused its driver).
func TestOtherClusterCreditedFirstGivesBack(t *testing.T) {
	d, now := stepDisc()
	const x = "app-20260101000000-0001"
	u, _ := url.Parse("http://10.0.0.5:4040")
	mA, mB := "master:http://ma:8080", "master:http://mb:8080"
	d.polls = []pollSource{listPoll{mA}, listPoll{mB}}
	d.haCluster = map[string]string{mA: "a", mB: "b"}
	at := func(m string, late time.Duration) []candidate {
		return []candidate{{url: u, source: m, appID: x, seen: now.Add(late)}}
	}
	endedAt, round := -1, 0
	poll := func(r1, r2 []candidate) {
		round++
		*now = now.Add(time.Second)
		d.onPolled([][]candidate{r1, r2}, []bool{true, true})
		if a := d.apps[x]; a != nil && a.app.State == Ended && endedAt < 0 {
			endedAt = round
		}
		answerAsAlice(d, u, x)
	}
	poll(at(mA, 0), at(mB, time.Nanosecond)) // both list X at U; mB's read began later
	d.histByID = map[string][]*historyApp{x: {{ID: x, User: "alice", Ref: HistoryRef{Server: "h", Completed: true}}}}
	for range 60 {
		poll(at(mA, 0), nil) // B's app stopped; mA lists alice's X
	}
	if a := d.apps[x]; endedAt >= 0 || a.app.State != Running || a.app.Source != mA {
		t.Errorf("X, listed by mA every round, ended at round %d; now %v under %q", endedAt, a.app.State, a.app.Source)
	}
}

// TestUnnamedPairFollowsBackFromNamedCluster: u1 and u2 are an HA pair
// left unnamed; mB is a named cluster whose app has alice's id X and
// registered U. u1 fails over to u2 while mB lists X too, and X follows
// mB; once B's app stops, X follows u2 back, which lists it every round:
// it never ends.
func TestUnnamedPairFollowsBackFromNamedCluster(t *testing.T) {
	d, now := stepDisc()
	const x = "app-20260101000000-0001"
	u, _ := url.Parse("http://10.0.0.5:4040")
	u1, u2, mB := "master:http://u1:8080", "master:http://u2:8080", "master:http://mb:8080"
	d.polls = []pollSource{listPoll{u1}, listPoll{u2}, listPoll{mB}}
	d.haCluster = map[string]string{mB: "b"}
	at := listsAt(now, u, x)
	endedAt, round := -1, 0
	poll := func(r1, r2, r3 []candidate) {
		round++
		*now = now.Add(time.Second)
		d.onPolled([][]candidate{r1, r2, r3}, []bool{true, true, true})
		if a := d.apps[x]; a != nil && a.app.State == Ended && endedAt < 0 {
			endedAt = round
		}
		answerAsAlice(d, u, x)
	}
	for range 3 {
		poll(at(u1), nil, at(mB))
	}
	poll(nil, at(u2), at(mB)) // u1 fails over to u2
	for range 10 {
		poll(nil, at(u2), nil) // B's app stops
	}
	if a := d.apps[x]; endedAt >= 0 || a.app.Source != u2 {
		t.Errorf("X, listed by u2 every round, ended at round %d; source %q", endedAt, a.app.Source)
	}
}
