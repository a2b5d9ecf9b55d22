package discovery

import (
	"context"
	"net/url"
	"sync/atomic"
	"testing"
	"time"
)

// stepDisc is a discoverer of 1 s intervals on a clock the test moves,
// driven by hand (no Run): offers and verifications happen as the test says.
func stepDisc() (*Discoverer, *time.Time) {
	d := New(Config{Interval: time.Second}, NewRegistry(), nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d.ctx = ctx
	now := time.Unix(1_800_000_000, 0)
	d.now = func() time.Time { return now }
	return d, &now
}

// verifyDone plays the verification that offer started finishing with info.
func verifyDone(d *Discoverer, u *url.URL, info driverInfo) {
	tg := d.targets[u.String()]
	if !tg.verifying {
		tg.verifying = true
		d.pending++
	}
	d.onVerified(tg, info, nil)
}

// TestStaleOfferNamingAppCreditsNothing: the master named X at U; X ends
// (another id answered at U) while a poll that read the master before the
// end is held up; the process now at U writes a driver log naming U with
// its own id Z, then claims X. The held-up master offer (read before the
// end) and the log (naming Z) vouch for nothing: X is not published again.
func TestStaleOfferNamingAppCreditsNothing(t *testing.T) {
	d, now := stepDisc()
	const x, z = "app-20260101000000-0001", "app-20260101000000-0099"
	u, _ := url.Parse("http://10.0.0.5:4040")
	master := "master:http://m"
	// X at U, found by the master.
	d.offer(candidate{url: u, source: master, appID: x, seen: *now})
	verifyDone(d, u, driverInfo{ID: x, User: "alice"})
	if a := d.apps[x]; a == nil || a.app.State != Running || a.app.Source != master {
		t.Fatalf("setup: %+v", d.apps[x])
	}
	// Round R starts: the master is read (X still listed) at R.
	readAt := now.Add(100 * time.Millisecond)
	*now = readAt.Add(200 * time.Millisecond)
	// The liveness check of round R finds another id at U (the port taker): X ends, U is verified at once.
	d.endApp(x, "another app answers at its url")
	tg := d.targets[u.String()]
	tg.verifying = true // verify(t) started by onChecked; the taker shows the placeholder
	d.pending++
	// The taker's own log names U with its id Z (an offer made now).
	*now = now.Add(200 * time.Millisecond)
	d.offer(candidate{url: u, source: "log:/var/log/mallory/driver.log", appID: z})
	// The poll of round R is handed over: the master's list read before X ended.
	*now = now.Add(200 * time.Millisecond)
	d.offer(candidate{url: u, source: master, appID: x, seen: readAt})
	// The taker now answers: X, owner alice.
	d.onVerified(tg, driverInfo{ID: x, User: "alice"}, nil)
	a := d.apps[x]
	if a.app.State == Running {
		t.Errorf("port taker published as X, source %s (want X ended: the master's list was read before X ended)", a.app.Source)
	}
}

// TestLogLineDoesNotEvictNamedApp: a driver log (its owner writes it)
// naming another id at U, where the master named X, does not withdraw X,
// cycle after cycle, while the master keeps listing it.
func TestLogLineDoesNotEvictNamedApp(t *testing.T) {
	d, now := stepDisc()
	const x, z = "app-20260101000000-0001", "app-20260101000000-0099"
	u, _ := url.Parse("http://10.0.0.5:4040")
	master := "master:http://m"
	d.offer(candidate{url: u, source: master, appID: x, seen: *now})
	verifyDone(d, u, driverInfo{ID: x, User: "alice"})
	for i := 0; i < 3; i++ {
		if a := d.apps[x]; i > 0 && (a == nil || a.app.State != Running) {
			t.Fatalf("cycle %d: X not republished after the backoff", i)
		}
		*now = now.Add(time.Second)
		d.onLogs([]logCandidates{{path: "/var/log/mallory/driver.log", urls: []*url.URL{u}, appHint: z}}, *now, false)
		if a := d.apps[x]; a == nil || a.app.State != Running {
			tg := d.targets[u.String()]
			t.Errorf("cycle %d: X, named by the master at U, withdrawn by mallory's log line (retry in %s)", i, tg.retryAt.Sub(*now))
		}
		// 12 intervals of rounds: the master keeps listing X at U, the log is re-offered.
		for r := 0; r < 13; r++ {
			*now = now.Add(time.Second)
			d.offer(candidate{url: u, source: "log:/var/log/mallory/driver.log", appID: z})
			d.offer(candidate{url: u, source: master, appID: x, seen: *now})
			if tg := d.targets[u.String()]; tg.verifying {
				verifyDone(d, u, driverInfo{ID: x, User: "alice"})
			}
		}
	}
}

// slowProbe is a poll source whose read takes d and finds nothing.
type slowProbe struct{ d time.Duration }

func (s slowProbe) name() string { return "probe" }
func (s slowProbe) candidates(ctx context.Context) ([]candidate, error) {
	select {
	case <-time.After(s.d):
	case <-ctx.Done():
	}
	return nil, nil
}

// listingMaster lists x at u on every read.
type listingMaster struct {
	u     *url.URL
	x     string
	calls atomic.Int64
}

func (m *listingMaster) name() string { return "master:http://m" }
func (m *listingMaster) candidates(context.Context) ([]candidate, error) {
	m.calls.Add(1)
	return []candidate{{url: m.u, source: m.name(), appID: m.x}}, nil
}

// TestSlowSourceDoesNotBlock: a source whose read takes more than three
// intervals (a probe sweep of many silent addresses) holds every poll; the
// master's offers it delivers late still credit the driver the master
// names (an offer is held from when it is handled).
func TestSlowSourceDoesNotBlock(t *testing.T) {
	for _, slow := range []time.Duration{250 * time.Millisecond, 350 * time.Millisecond} {
		slowSourceCase(t, slow)
	}
}

func slowSourceCase(t *testing.T, slow time.Duration) {
	const x = "app-20260101000000-0031"
	vic := newFakeDriver(t, x)
	m := &listingMaster{u: vic.url(), x: x}
	_, reg := startWith(t, m, slowProbe{d: slow})
	deadline := time.Now().Add(4 * time.Second)
	for time.Now().Before(deadline) {
		if a, ok := reg.Lookup(x); ok && a.Live() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("X, listed by the master every poll, not published after 4 s (master read %d times; driver asked %d times)", m.calls.Load(), vic.hits.Load())
}

// TestStaleOfferUpgradesNoPortTaker: the master named X at U; X ends
// (alice's driver exited, its checks failed) while a poll that read the
// master before the end is held up by a slower source. Mallory's process
// takes U and claims X/alice; her own driver log (or a probe) offers U
// after the end, so X is taken back at U with that weak source (rule 4
// lets the same address return). Then the held-up poll is handled: its
// master offer, read before X ended, must not vouch for the process now
// at U. offer() upgrades the live app's Source to the master's anyway.
func TestStaleOfferUpgradesNoPortTaker(t *testing.T) {
	d, now := stepDisc()
	const x = "app-20260101000000-0001"
	u, _ := url.Parse("http://10.0.0.5:4040")
	master := "master:http://m"
	d.offer(candidate{url: u, source: master, appID: x, seen: *now})
	verifyDone(d, u, driverInfo{ID: x, User: "alice"})
	if a := d.apps[x]; a == nil || a.app.State != Running || a.app.Source != master {
		t.Fatalf("setup: %+v", d.apps[x])
	}
	// Round R: the master is read (X still listed) at readAt; the poll is held up.
	readAt := now.Add(100 * time.Millisecond)
	*now = readAt.Add(300 * time.Millisecond)
	// Alice's driver has exited: its liveness checks fail, X ends.
	d.endApp(x, "driver did not answer")
	// Mallory's process now listens on U; her driver log names U.
	*now = now.Add(200 * time.Millisecond)
	d.offer(candidate{url: u, source: "log:/var/log/mallory/driver.log"})
	verifyDone(d, u, driverInfo{ID: x, User: "alice"})
	a := d.apps[x]
	if a.app.State != Running || a.app.Source != "log:/var/log/mallory/driver.log" {
		t.Fatalf("setup: want X back at U with the log's source, got %v %q", a.app.State, a.app.Source)
	}
	// The held-up poll is handled: the master's list read before X ended.
	*now = now.Add(200 * time.Millisecond)
	d.offer(candidate{url: u, source: master, appID: x, seen: readAt})
	a = d.apps[x]
	if VouchesForID(a.app.Source) {
		t.Errorf("port taker at %s published as X with source %q (VouchesForID: alice's executor logs served by mallory's ACLs); the master's offer was read before X ended",
			u2s(a.app.UIURL), a.app.Source)
	}
}

// TestForgedLogLinesDoNotWithdrawApp: alice's app X runs at U, a
// static entry of the gateway's configuration. Mallory writes, once every
// 13 intervals, a fresh driver log (any file the log globs match) whose
// UI line names U and whose app-id line names her own app Z. A log line
// only has U checked: X stays published (each line withdrew it for 12
// intervals when a log could evict an app no stronger source found).
func TestForgedLogLinesDoNotWithdrawApp(t *testing.T) {
	d, now := stepDisc()
	const x, z = "app-20260101000000-0001", "app-20260101000000-0099"
	u, _ := url.Parse("http://10.0.0.5:4040")
	d.offer(candidate{url: u, source: "static", seen: *now})
	verifyDone(d, u, driverInfo{ID: x, User: "alice"})
	if a := d.apps[x]; a == nil || a.app.State != Running {
		t.Fatalf("setup: %+v", d.apps[x])
	}
	up, rounds := 0, 0
	for r := 0; r < 130; r++ {
		*now = now.Add(time.Second)
		if r%13 == 0 {
			p := "/var/log/spark/mallory-" + string(rune('a'+r/13)) + ".log"
			d.onLogs([]logCandidates{{path: p, urls: []*url.URL{u}, appHint: z}}, *now, false)
		}
		d.offer(candidate{url: u, source: "static", seen: *now})
		for _, cs := range d.logCands {
			for _, c := range cs {
				d.offer(c)
			}
		}
		if tg := d.targets[u.String()]; tg.verifying {
			verifyDone(d, u, driverInfo{ID: x, User: "alice"})
		}
		rounds++
		if a := d.apps[x]; a != nil && a.app.State == Running {
			up++
		}
	}
	if up < rounds*9/10 {
		t.Errorf("alice's static app X was published in %d of %d rounds: withdrawn by mallory's log lines naming its URL", up, rounds)
	}
}

// listPoll is a polled source that lists what the test says.
type listPoll struct{ source string }

func (p listPoll) name() string                                    { return p.source }
func (p listPoll) candidates(context.Context) ([]candidate, error) { return nil, nil }

// TestUnlistedAppEnds: X, named by the master at U, finishes and the
// master stops listing it; a process that took U before X's liveness
// check noticed answers every check as X, owner alice. X ends once the
// master's answered polls have not listed it at U offerHeld times in a row
// (not while the master does not answer), and comes back when the master
// lists it there again.
func TestUnlistedAppEnds(t *testing.T) {
	d, now := stepDisc()
	const x = "app-20260101000000-0001"
	u, _ := url.Parse("http://10.0.0.5:4040")
	other, _ := url.Parse("http://10.0.0.6:4040")
	master := "master:http://m"
	d.polls = []pollSource{listPoll{master}}
	listing := func(at *url.URL) []candidate { return []candidate{{url: at, source: master, appID: x, seen: *now}} }
	poll := func(ok bool, cands []candidate) {
		*now = now.Add(time.Second)
		d.onPolled([][]candidate{cands}, []bool{ok})
		answerAsAlice(d, u, x)
	}
	running := func() bool { a := d.apps[x]; return a != nil && a.app.State == Running }
	poll(true, listing(u))
	if !running() || d.apps[x].app.Source != master {
		t.Fatalf("setup: %+v", d.apps[x])
	}
	for range 10 {
		poll(true, listing(u))
	}
	if !running() {
		t.Fatal("X ended while the master listed it")
	}
	// The master does not answer: nothing is ended on its silence.
	for range 5 {
		poll(false, nil)
	}
	if !running() {
		t.Fatal("X ended while the master did not answer")
	}
	// The master lists X at another address: not at U.
	poll(true, listing(other))
	poll(true, nil)
	if !running() {
		t.Fatal("X ended after two polls")
	}
	poll(true, nil)
	if running() {
		t.Fatalf("X still running at %s, source %q, three answered polls after the master stopped listing it there", u2s(d.apps[x].app.UIURL), d.apps[x].app.Source)
	}
	for range 5 {
		poll(true, nil)
	}
	if running() {
		t.Fatal("X published again while the master does not list it")
	}
	// The master lists X at U again (a master that recovered its apps).
	poll(true, listing(u))
	if !running() {
		t.Fatalf("X not published again when the master lists it at U: %+v", d.apps[x])
	}
}

// TestGonePodStaleOfferCreditsNothing: Alice's driver pod finishes (the
// watch says it is gone) while a poll of the Kubernetes source that read
// it before is held up; its pod IP is reused at once, and what answers
// there claims X, owner alice. The held-up offer, read before X ended,
// vouches for nothing: X is not published again with the pod's source
// (which would serve Alice's pods' logs by what answers there).
func TestGonePodStaleOfferCreditsNothing(t *testing.T) {
	d, now := stepDisc()
	kc := revKubeCand()
	kc.seen = *now
	d.offer(kc)
	verifyDone(d, kc.url, driverInfo{ID: revX, User: "alice"})
	readAt := now.Add(100 * time.Millisecond)
	*now = readAt.Add(200 * time.Millisecond)
	d.onPushed(pushed{c: kc, gone: true, reason: "driver pod team-a/x-driver is Succeeded"})
	if d.apps[revX].app.State != Ended {
		t.Fatalf("setup: X not ended")
	}
	*now = now.Add(200 * time.Millisecond)
	stale := kc
	stale.seen = readAt
	d.offer(stale)
	if tg := d.targets[kc.url.String()]; tg != nil && tg.verifying {
		verifyDone(d, kc.url, driverInfo{ID: revX, User: "alice"})
	}
	if a := d.apps[revX]; a.app.State == Running {
		t.Errorf("X published again at the gone pod's address from an offer read before it ended, source %q", a.app.Source)
	}
}

// answerAsAlice plays the driver at u after a round's polls: it answers a
// verification started there, and the running app x's liveness check, as
// app x, owner alice (as a process that took the port may).
func answerAsAlice(d *Discoverer, u *url.URL, x string) {
	if tg := d.targets[u.String()]; tg != nil && tg.verifying {
		verifyDone(d, u, driverInfo{ID: x, User: "alice"})
	}
	if a := d.apps[x]; a != nil && a.app.State == Running {
		d.onChecked(x, a, apiApp{ID: x, Attempts: []apiAttempt{{SparkUser: "alice"}}}, nil, false)
	}
}
