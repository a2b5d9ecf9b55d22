package discovery

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeHistory is a History Server listing apps; its list can change.
type fakeHistory struct {
	srv     *httptest.Server
	mu      sync.Mutex
	list    string // the /api/v1/applications answer
	envFail bool   // environments answer 404, as for an app still being parsed
}

func newFakeHistory(t *testing.T, list string) *fakeHistory {
	t.Helper()
	h := &fakeHistory{list: list}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		list, envFail := h.list, h.envFail
		h.mu.Unlock()
		if r.URL.Path == "/api/v1/applications" {
			fmt.Fprint(w, list)
			return
		}
		if envFail {
			http.Error(w, "no such app", http.StatusNotFound)
			return
		}
		fmt.Fprint(w, `{"sparkProperties":[["spark.acls.enable","true"]]}`)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *fakeHistory) set(list string) { h.mu.Lock(); h.list = list; h.mu.Unlock() }

func histEntry(id, user string, completed bool) string {
	return fmt.Sprintf(`{"id":%q,"name":"n","attempts":[{"startTimeEpoch":1,"endTimeEpoch":2,"lastUpdatedEpoch":2,"sparkUser":%q,"completed":%t}]}`, id, user, completed)
}

// TestClaimOfFinishedHistoryAppRefused is the takeover of issue 10: a
// server answering with another user's finished app id and its own user
// neither becomes the app nor changes who owns it, before or after it stops.
func TestClaimOfFinishedHistoryAppRefused(t *testing.T) {
	t.Parallel()
	hs := newFakeHistory(t, "["+histEntry("app-1-0003", "dave", true)+"]")
	liar := newFakeDriver(t, "app-1-0003")
	liar.claim("app-1-0003", "alice")
	d, reg := startDiscoverer(t, Config{History: []HistorySource{{Name: "hs", URL: hs.srv.URL}}, Static: []string{liar.srv.URL}})
	waitFor(t, reg, "ready", func(*Snapshot) bool { return d.Ready() })
	eventually(t, "the claim is counted", func() bool { return d.Conflicts()["static"] == 1 })
	a, ok := reg.Lookup("app-1-0003")
	if !ok || a.Live() || a.User != "dave" || a.Source != "history:hs" || a.History[0].User != "dave" {
		t.Fatalf("app-1-0003 = %+v; want dave's history record", a)
	}
	liar.srv.Close()
	time.Sleep(300 * time.Millisecond) // a few rounds
	if a, _ := reg.Lookup("app-1-0003"); a.User != "dave" || a.Live() {
		t.Errorf("after the liar stopped: app = %+v", a)
	}
	if n := d.Conflicts()["static"]; n != 1 {
		t.Errorf("conflicts = %d; want the one claim counted once", n)
	}
}

// TestClaimEvictedWhenHistoryDisagrees: a claim verified before any History
// Server listed the app is withdrawn when one lists it with another owner.
func TestClaimEvictedWhenHistoryDisagrees(t *testing.T) {
	t.Parallel()
	hs := newFakeHistory(t, "[]")
	liar := newFakeDriver(t, "app-2-0001")
	liar.claim("app-2-0001", "alice")
	d, reg := startDiscoverer(t, Config{History: []HistorySource{{Name: "hs", URL: hs.srv.URL}}, Static: []string{liar.srv.URL}})
	waitFor(t, reg, "the claim, live", live("app-2-0001"))
	hs.set("[" + histEntry("app-2-0001", "dave", false) + "]")
	waitFor(t, reg, "dave's record", func(s *Snapshot) bool {
		a, ok := s.Lookup("app-2-0001")
		return ok && !a.Live() && a.User == "dave"
	})
	eventually(t, "the claim is counted", func() bool { return d.Conflicts()["static"] == 1 })
}

// TestClaimAgreeingWithHistoryKept: a running app that its History Server
// lists in progress with the same owner is the normal case and stays live;
// once the History Server says it finished, it ends.
func TestClaimAgreeingWithHistoryKept(t *testing.T) {
	t.Parallel()
	hs := newFakeHistory(t, "["+histEntry("app-3-0001", "alice", false)+"]")
	drv := newFakeDriver(t, "app-3-0001")
	d, reg := startDiscoverer(t, Config{History: []HistorySource{{Name: "hs", URL: hs.srv.URL}}, Static: []string{drv.srv.URL}})
	waitFor(t, reg, "live with its history ref", func(s *Snapshot) bool {
		a, ok := s.Lookup("app-3-0001")
		return ok && a.Live() && len(a.History) == 1
	})
	hs.set("[" + histEntry("app-3-0001", "alice", true) + "]")
	waitFor(t, reg, "ended by the History Server", ended("app-3-0001"))
	// Its UI still answers, as a driver's does for a moment while it
	// stops: asked again, it is the same driver, not a claim to refuse.
	d.send(context.Background(), func() { d.offer(candidate{url: drv.url(), source: "static"}) })
	eventually(t, "asked again", func() bool {
		done := make(chan bool)
		d.send(context.Background(), func() {
			t := d.targets[candidate{url: drv.url(), source: "static"}.key()]
			done <- t != nil && !t.verifying && t.retryAt.After(d.now())
		})
		return <-done
	})
	if n := len(d.Conflicts()); n != 0 {
		t.Errorf("conflicts = %v; want none", d.Conflicts())
	}
	if a, _ := reg.Lookup("app-3-0001"); a.Live() {
		t.Error("the ended app is live again")
	}
}

// TestSecondOwnerRefused: the first verified owner keeps the id; a second
// address answering for it with another owner is refused, and with the same
// owner it is the same driver under a second address.
func TestSecondOwnerRefused(t *testing.T) {
	t.Parallel()
	first := newFakeDriver(t, "local-42")
	d, reg := startDiscoverer(t, Config{Static: []string{first.srv.URL}})
	waitFor(t, reg, "first live", live("local-42"))
	second := newFakeDriver(t, "local-42")
	second.claim("local-42", "mallory")
	d.send(context.Background(), func() { d.offer(candidate{url: second.url(), source: "probe:x"}) })
	eventually(t, "the second claim is counted", func() bool { return d.Conflicts()["probe"] == 1 })
	if a, _ := reg.Lookup("local-42"); a.User != "alice" || a.UIURL.String() != first.srv.URL {
		t.Errorf("app = %+v; want the first owner's", a)
	}
}

// TestSourceNamedIDMustMatch: where the source names the app (YARN, the
// master, a pod label, a log's id line), a driver reporting another id is
// refused.
func TestSourceNamedIDMustMatch(t *testing.T) {
	t.Parallel()
	drv := newFakeDriver(t, "app-9-0009")
	d, reg := startDiscoverer(t, Config{})
	d.send(context.Background(), func() { d.offer(candidate{url: drv.url(), source: "master:m", appID: "app-9-0001"}) })
	eventually(t, "counted", func() bool { return d.Conflicts()["master"] == 1 })
	if _, ok := reg.Lookup("app-9-0009"); ok {
		t.Error("app-9-0009 published although the master names app-9-0001 there")
	}
	drv.claim("app-9-0001", "alice")
	d.send(context.Background(), func() {
		t := d.targets[drv.url().String()]
		t.retryAt = time.Time{}
		d.offer(candidate{url: drv.url(), source: "master:m", appID: "app-9-0001"})
	})
	waitFor(t, reg, "the matching id", live("app-9-0001"))
}

// eventually polls cond; the deadline only bounds a failing test.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWantACLsReadsHistoryNow: a History Server that could not give an
// app's ACLs at its listing (it answers 404 while it parses the event log)
// is asked again at once when a request waits for them, not a minute later.
func TestWantACLsReadsHistoryNow(t *testing.T) {
	t.Parallel()
	twice := `{"id":"application_5_0002","name":"n","attempts":[
	{"attemptId":"2","startTimeEpoch":3,"endTimeEpoch":4,"lastUpdatedEpoch":4,"sparkUser":"dave","completed":true},
	{"attemptId":"1","startTimeEpoch":1,"endTimeEpoch":2,"lastUpdatedEpoch":2,"sparkUser":"erin","completed":true}]}`
	hs := newFakeHistory(t, "["+histEntry("app-5-0001", "dave", true)+","+twice+"]")
	hs.envFail = true
	d, reg := startDiscoverer(t, Config{History: []HistorySource{{Name: "hs", URL: hs.srv.URL}}})
	waitFor(t, reg, "listed without ACLs", func(s *Snapshot) bool {
		a, ok := s.Lookup("app-5-0001")
		b, _ := s.Lookup("application_5_0002")
		return ok && len(a.History) == 1 && a.History[0].ACLProps == nil &&
			b != nil && len(b.History) == 1 && len(b.History[0].Older) == 1 && b.History[0].Older[0].ACLProps == nil
	})
	hs.mu.Lock()
	hs.envFail = false
	hs.mu.Unlock()
	d.WantACLs("app-5-0001")
	waitFor(t, reg, "its ACLs", func(s *Snapshot) bool {
		a, _ := s.Lookup("app-5-0001")
		return a.History[0].ACLProps["spark.acls.enable"] == "true"
	})
	// Every attempt's, the older one's too.
	d.WantACLs("application_5_0002")
	waitFor(t, reg, "both attempts' ACLs", func(s *Snapshot) bool {
		b, _ := s.Lookup("application_5_0002")
		r := b.History[0]
		return r.ACLProps["spark.acls.enable"] == "true" && r.Older[0].ID == "1" && r.Older[0].User == "erin" &&
			r.Older[0].ACLProps["spark.acls.enable"] == "true"
	})
}

// TestHistoryListBufferKept checks the History Server list's buffer: kept
// from poll to poll while the answers are alike (no new buffer per
// interval), let go when the list shrinks far below it or an answer is
// refused, so that one large answer is not held for good.
func TestHistoryListBufferKept(t *testing.T) {
	t.Parallel()
	entries := func(n int) string {
		var b strings.Builder
		b.WriteString("[")
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(histEntry(fmt.Sprintf("app-20240101000000-%04d", i), "alice", true))
		}
		return b.String() + "]"
	}
	fh := newFakeHistory(t, entries(5000))
	h, err := newHistorySource(HistorySource{Name: "hs", URL: fh.srv.URL}, newClient(nil), DefaultInterval)
	if err != nil {
		t.Fatal(err)
	}
	poll := func() {
		t.Helper()
		if _, _, err := h.poll(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	poll()
	big := h.listBuf.Cap()
	if big < len(entries(5000)) {
		t.Fatalf("buffer after a %d-byte list holds %d bytes; want the list kept", len(entries(5000)), big)
	}
	fh.set(entries(4999))
	poll()
	if got := h.listBuf.Cap(); got != big {
		t.Errorf("buffer capacity %d after a list of the same size; want the same buffer (%d)", got, big)
	}
	fh.set(entries(3))
	poll()
	if got := h.listBuf.Cap(); got > 64<<10+2*len(entries(3)) {
		t.Errorf("buffer capacity %d after a list of %d bytes; want it let go", got, len(entries(3)))
	}
	fh.set(entries(5000))
	poll()
	fh.set("not a list")
	if _, _, err := h.poll(t.Context()); err == nil {
		t.Fatal("poll of a non-list succeeded")
	}
	if got := h.listBuf.Cap(); got > 64<<10 {
		t.Errorf("buffer capacity %d after a refused answer; want it let go", got)
	}
}

// TestSourceNamedAddressReplacesWeaker: a server a static entry (or a
// probe, a log, a pod) found first claims an id, as a future id is easy to
// guess; the standalone master then names that id at another address. The
// master's address replaces the first, whichever owner that claimed; a
// claim with another owner is counted as refused, one with the same owner
// (the same driver found twice) is not.
func TestSourceNamedAddressReplacesWeaker(t *testing.T) {
	t.Parallel()
	for _, owner := range []string{"alice", "mallory"} {
		first := newFakeDriver(t, "app-7-0001")
		first.claim("app-7-0001", owner)
		d, reg := startDiscoverer(t, Config{Static: []string{first.srv.URL}})
		waitFor(t, reg, "the first claim live", live("app-7-0001"))
		named := newFakeDriver(t, "app-7-0001") // alice's
		d.send(context.Background(), func() {
			d.offer(candidate{url: named.url(), source: "master:m", appID: "app-7-0001"})
		})
		waitFor(t, reg, "the master's address", func(s *Snapshot) bool {
			a, ok := s.Lookup("app-7-0001")
			return ok && a.Live() && a.UIURL.String() == named.srv.URL && a.User == "alice"
		})
		want := uint64(0)
		if owner != "alice" {
			want = 1
		}
		eventually(t, "the refused claims counted", func() bool { return d.Conflicts()["static"] == want })
		time.Sleep(300 * time.Millisecond) // rounds of the static entry
		if a, _ := reg.Lookup("app-7-0001"); a.UIURL.String() != named.srv.URL || d.Conflicts()["static"] != want {
			t.Errorf("first claim by %s: app at %s, %d refused claims; want the master's address, %d", owner, a.UIURL, d.Conflicts()["static"], want)
		}
	}
}

// TestSourceNamedAppNotTakenOverAfterItEnds: once the master has named an
// app, another address found by a weaker source does not become the app
// when it ends, with the same owner either: it would serve the owner's
// bookmarks with its own pages and ACLs.
func TestSourceNamedAppNotTakenOverAfterItEnds(t *testing.T) {
	t.Parallel()
	named := newFakeDriver(t, "app-9-0042")
	d, reg := startDiscoverer(t, Config{})
	d.send(context.Background(), func() {
		d.offer(candidate{url: named.url(), source: "master:m", appID: "app-9-0042"})
	})
	waitFor(t, reg, "the app live", live("app-9-0042"))
	other := newFakeDriver(t, "app-9-0042") // alice, as the app's owner
	d.send(context.Background(), func() { d.offer(candidate{url: other.url(), source: "probe:x"}) })
	named.srv.Close()
	d.Suspect("app-9-0042")
	waitFor(t, reg, "the app ended", ended("app-9-0042"))
	d.send(context.Background(), func() { d.offer(candidate{url: other.url(), source: "probe:x"}) })
	eventually(t, "the claim counted", func() bool { return d.Conflicts()["probe"] == 1 })
	if a, _ := reg.Lookup("app-9-0042"); a.Live() || a.UIURL.String() == other.srv.URL {
		t.Errorf("app = %+v; want the master's, ended", a)
	}
}

// TestEndedIDNotTakenOver: once an app has ended, another address that a
// probe finds may not take its id, even reporting the same owner (a driver
// says what it likes; its own ACLs would then open the ended app's logs
// under that id): refused, counted, the ended app kept. The source that
// names the app (here its master, for a new driver of the id) may.
func TestEndedIDNotTakenOver(t *testing.T) {
	t.Parallel()
	const id = "spark-0123abcd"
	victim := newFakeDriver(t, id)
	d, reg := startDiscoverer(t, Config{})
	d.send(context.Background(), func() {
		d.offer(candidate{url: victim.url(), source: "kubernetes:team-a/drv", appID: id})
	})
	waitFor(t, reg, "victim live with its ACLs", func(s *Snapshot) bool {
		a, ok := s.Lookup(id)
		return ok && a.Live() && a.ACLProps != nil
	})
	victim.srv.Close()
	d.Suspect(id)
	waitFor(t, reg, "victim ended", ended(id))

	fake := newFakeDriver(t, id) // reports the same owner, alice
	fake.props = [][]string{{"spark.acls.enable", "false"}}
	d.send(context.Background(), func() { d.offer(candidate{url: fake.url(), source: "probe:x"}) })
	eventually(t, "the claim is refused and counted", func() bool { return d.Conflicts()["probe"] == 1 })
	if a, _ := reg.Lookup(id); a.Live() || a.UIURL.String() != victim.srv.URL || a.Source != "kubernetes:team-a/drv" {
		t.Errorf("app after another address claimed its id = %s at %s (%s); want the ended victim's record", a.State, a.UIURL, a.Source)
	}

	d.send(context.Background(), func() {
		d.targets[fake.url().String()].retryAt = time.Time{}
		d.offer(candidate{url: fake.url(), source: "master:m", appID: id})
	})
	waitFor(t, reg, "the driver its master names", func(s *Snapshot) bool {
		a, ok := s.Lookup(id)
		return ok && a.Live() && a.UIURL.String() == fake.srv.URL
	})
}

// TestEventLogDoesNotEvictNamedApp: an event log anyone could write names
// another owner for a running app that the ResourceManager named, or lists
// it as finished: the app stays live and its driver's, and the
// ResourceManager's driver of an app the History Server already lists so
// is published. A driver a probe found is still evicted (rule 1).
func TestEventLogDoesNotEvictNamedApp(t *testing.T) {
	t.Parallel()
	const id, probed = "application_1700000000000_0042", "local-1700000000042"
	hs := newFakeHistory(t, "[]")
	victim := newFakeDriver(t, id)
	other := newFakeDriver(t, probed)
	d, reg := startDiscoverer(t, Config{History: []HistorySource{{Name: "hs", URL: hs.srv.URL}}})
	d.send(context.Background(), func() {
		d.offer(candidate{url: victim.url(), source: "yarn:rm", appID: id})
		d.offer(candidate{url: other.url(), source: "probe:x"})
	})
	waitFor(t, reg, "both live", func(s *Snapshot) bool { return live(id)(s) && live(probed)(s) })
	hs.set("[" + histEntry(id, "mallory", true) + "," + histEntry(probed, "mallory", false) + "]")
	waitFor(t, reg, "the probed app evicted", func(s *Snapshot) bool {
		a, ok := s.Lookup(probed)
		return ok && !a.Live() && a.User == "mallory"
	})
	if a, ok := reg.Lookup(id); !ok || !a.Live() || a.User != "alice" || a.Source != "yarn:rm" {
		t.Errorf("ResourceManager's app after a forged event log = %+v; want live, alice's, from yarn:rm", a)
	}

	// A new driver the ResourceManager names, for an id a History Server
	// lists as finished with another owner: published.
	const late = "application_1700000000000_0043"
	hs.set("[" + histEntry(id, "mallory", true) + "," + histEntry(late, "mallory", true) + "]")
	lateDrv := newFakeDriver(t, late)
	eventually(t, "the History Server's list read", func() bool {
		a, ok := reg.Lookup(late)
		return ok && a.User == "mallory"
	})
	d.send(context.Background(), func() { d.offer(candidate{url: lateDrv.url(), source: "yarn:rm", appID: late}) })
	waitFor(t, reg, "the named late driver", func(s *Snapshot) bool {
		a, ok := s.Lookup(late)
		return ok && a.Live() && a.User == "alice"
	})
}

// TestEndedNamedDriverKept: once an app the ResourceManager named has ended
// and a History Server lists it, the published app is the server's record
// (an owner an event log may have forged included), with the driver that
// the ResourceManager named beside it: its source, owner and ACLs. An app a
// probe found has none beside its record.
func TestEndedNamedDriverKept(t *testing.T) {
	t.Parallel()
	const named, probed = "application_1700000000000_0044", "local-1700000000044"
	hs := newFakeHistory(t, "[]")
	victim, other := newFakeDriver(t, named), newFakeDriver(t, probed)
	d, reg := startDiscoverer(t, Config{History: []HistorySource{{Name: "hs", URL: hs.srv.URL}}})
	d.send(context.Background(), func() {
		d.offer(candidate{url: victim.url(), source: "yarn:rm", appID: named})
		d.offer(candidate{url: other.url(), source: "probe:x"})
	})
	waitFor(t, reg, "both live with their ACLs", func(s *Snapshot) bool {
		a, ok := s.Lookup(named)
		b, ok2 := s.Lookup(probed)
		return ok && ok2 && a.Live() && b.Live() && a.ACLProps != nil && b.ACLProps != nil
	})
	victim.srv.Close()
	other.srv.Close()
	d.Suspect(named)
	d.Suspect(probed)
	waitFor(t, reg, "both ended", func(s *Snapshot) bool { return ended(named)(s) && ended(probed)(s) })
	hs.set("[" + histEntry(named, "mallory", true) + "," + histEntry(probed, "mallory", true) + "]")
	waitFor(t, reg, "the History Server's records", func(s *Snapshot) bool {
		a, ok := s.Lookup(named)
		b, ok2 := s.Lookup(probed)
		return ok && ok2 && a.Source == "history:hs" && b.Source == "history:hs"
	})
	a, _ := reg.Lookup(named)
	if a.User != "mallory" || a.Driver == nil || a.Driver.Source != "yarn:rm" || a.Driver.User != "alice" || a.Driver.ACLProps == nil {
		t.Errorf("ended named app = owner %q, driver %+v; want the server's owner and the ResourceManager's driver (alice's, with ACLs)", a.User, a.Driver)
	}
	if b, _ := reg.Lookup(probed); b.Driver != nil {
		t.Errorf("ended probed app has a driver record %+v; want none", b.Driver)
	}
	if n := len(reg.Load().Apps()); n != 2 {
		t.Errorf("snapshot lists %d apps; want 2 (the named app once)", n)
	}
}

// TestStrongestSourceStands: a driver pod's address is offered by the
// Kubernetes source and by a probe: the app is credited to the Kubernetes
// source (whose namespace its pod logs need) whichever offered last, and
// an app a probe verified first is credited to the Kubernetes source once
// it names the app there.
func TestStrongestSourceStands(t *testing.T) {
	t.Parallel()
	first, second := newFakeDriver(t, "spark-aaaa"), newFakeDriver(t, "spark-bbbb")
	d, reg := startDiscoverer(t, Config{})
	d.send(context.Background(), func() {
		d.offer(candidate{url: first.url(), source: "kubernetes:team/a-drv", appID: "spark-aaaa"})
		d.offer(candidate{url: first.url(), source: "probe:x"})
		d.offer(candidate{url: second.url(), source: "probe:x"})
	})
	waitFor(t, reg, "both live", func(s *Snapshot) bool { return live("spark-aaaa")(s) && live("spark-bbbb")(s) })
	if a, _ := reg.Lookup("spark-aaaa"); a.Source != "kubernetes:team/a-drv" {
		t.Errorf("app offered by the Kubernetes source, then a probe: source %q; want the Kubernetes source's", a.Source)
	}
	if a, _ := reg.Lookup("spark-bbbb"); a.Source != "probe:x" {
		t.Fatalf("app offered by a probe: source %q", a.Source)
	}
	d.send(context.Background(), func() {
		d.offer(candidate{url: second.url(), source: "kubernetes:team/b-drv", appID: "spark-bbbb"})
	})
	waitFor(t, reg, "credited to the Kubernetes source", func(s *Snapshot) bool {
		a, ok := s.Lookup("spark-bbbb")
		return ok && a.Source == "kubernetes:team/b-drv"
	})
	// A weaker source offering it again changes nothing.
	d.send(context.Background(), func() { d.offer(candidate{url: second.url(), source: "probe:x"}) })
	d.send(context.Background(), func() {})
	if a, _ := reg.Lookup("spark-bbbb"); a.Source != "kubernetes:team/b-drv" {
		t.Errorf("after a probe's offer: source %q; want still the Kubernetes source's", a.Source)
	}
}

// TestStrongerSourceNamingAnotherAppDoesNotBlock: a master lists an app
// whose driver registered another driver pod's address as its UI (its
// owner chooses it); the Kubernetes source offers the pod there. The pod's
// driver, which answers with the id its label names, is published, credited
// to the Kubernetes source; the master's claim to the address does not
// veto it.
func TestStrongerSourceNamingAnotherAppDoesNotBlock(t *testing.T) {
	t.Parallel()
	pod := newFakeDriver(t, "spark-aaaa")
	d, reg := startDiscoverer(t, Config{})
	d.send(context.Background(), func() {
		d.offer(candidate{url: pod.url(), source: "master:http://m", appID: "app-20260101000000-0007"})
		d.offer(candidate{url: pod.url(), source: "kubernetes:alice/drv", appID: "spark-aaaa"})
	})
	waitFor(t, reg, "the pod's driver", func(s *Snapshot) bool {
		a, ok := s.Lookup("spark-aaaa")
		return ok && a.Live() && a.Source == "kubernetes:alice/drv"
	})
	if _, ok := reg.Lookup("app-20260101000000-0007"); ok {
		t.Error("the master's app published at the pod's address")
	}
}

// TestStrongerSourceAtSecondAddress: a probe found a driver claiming app X
// at A (its own ACLs open to all); the real driver of X at U, found by a
// probe too, was taken for the same driver under a second address. When
// the master names X at U, U is verified again and replaces A (rule 3):
// the master's credit never goes to the driver at A.
func TestStrongerSourceAtSecondAddress(t *testing.T) {
	t.Parallel()
	const x = "app-20260101000000-0009"
	att, vic := newFakeDriver(t, x), newFakeDriver(t, x)
	att.props = [][]string{{"spark.acls.enable", "true"}, {"spark.ui.view.acls", "*"}}
	d, reg := startDiscoverer(t, Config{})
	d.send(context.Background(), func() { d.offer(candidate{url: att.url(), source: "probe:a"}) })
	waitFor(t, reg, "the driver at A", live(x))
	d.send(context.Background(), func() { d.offer(candidate{url: vic.url(), source: "probe:u"}) })
	eventually(t, "U taken for a second address", func() bool {
		got := make(chan bool)
		d.send(context.Background(), func() {
			tg := d.targets[vic.url().String()]
			got <- tg != nil && tg.appID == x && !tg.verifying
		})
		return <-got
	})
	d.send(context.Background(), func() { d.offer(candidate{url: vic.url(), source: "master:http://m", appID: x}) })
	waitFor(t, reg, "X at U, the master's", func(s *Snapshot) bool {
		a, ok := s.Lookup(x)
		return ok && a.Live() && a.UIURL.String() == vic.srv.URL && a.Source == "master:http://m"
	})
}

// TestPortReuseEarnsNoStaleCredit: the master named X at U; X finished (the
// master lists it no more) and another process took U, answering one
// liveness check with another id (X ends; U is verified at once) and then
// claiming X, with ACLs open to all. No source has offered U since X
// ended, so nothing vouches for it: it is not published (before, the
// master's last offer credited it, and its ACLs would have judged X's logs).
func TestPortReuseEarnsNoStaleCredit(t *testing.T) {
	t.Parallel()
	const x, z = "app-20260101000000-0011", "app-20260101000000-0099"
	fd := newFakeDriver(t, x)
	var oneZ, after atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/applications" {
			if oneZ.Add(-1) >= 0 {
				fd.mu.Lock()
				fd.id = z
				fd.mu.Unlock()
				fd.serve(w, r)
				fd.mu.Lock()
				fd.id = x
				fd.mu.Unlock()
				after.Store(1)
				return
			}
			if after.Load() > 0 {
				after.Add(1)
			}
		}
		fd.serve(w, r)
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	d, reg := startDiscoverer(t, Config{})
	d.send(context.Background(), func() { d.offer(candidate{url: u, source: "master:http://m", appID: x}) })
	waitFor(t, reg, "X live with its ACLs", func(s *Snapshot) bool {
		a, ok := s.Lookup(x)
		return ok && a.Live() && a.ACLProps["spark.ui.view.acls"] == "alice,bob"
	})
	fd.mu.Lock()
	fd.props = [][]string{{"spark.acls.enable", "true"}, {"spark.ui.view.acls", "*"}}
	fd.mu.Unlock()
	oneZ.Store(1)
	d.Suspect(x)
	eventually(t, "the newcomer at U verified after X ended", func() bool {
		done := make(chan bool)
		d.send(context.Background(), func() {
			tg := d.targets[u.String()]
			done <- after.Load() > 1 && tg != nil && !tg.verifying
		})
		return <-done
	})
	got := make(chan string)
	d.send(context.Background(), func() {
		a := d.apps[x]
		got <- fmt.Sprintf("%s %s %v", a.app.State, a.app.Source, a.app.ACLProps)
	})
	if s := <-got; !strings.HasPrefix(s, Ended.String()+" ") {
		t.Errorf("X after another process took U and claimed it = %s; want ended", s)
	}
}

// TestTwoAppsNamedAtOneAddress: a master lists the victim's app X at U and
// another app Y at U too (its driver registered U as its UI, as anyone's
// may), Y after X each round. X's driver, which answers at U, is
// published, credited to the master.
func TestTwoAppsNamedAtOneAddress(t *testing.T) {
	t.Parallel()
	const x, y = "app-20260101000000-0021", "app-20260101000000-0022"
	vic := newFakeDriver(t, x)
	d, reg := startDiscoverer(t, Config{})
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	go func() {
		tk := time.NewTicker(50 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tk.C:
				d.send(context.Background(), func() {
					d.offer(candidate{url: vic.url(), source: "master:http://m", appID: x})
					d.offer(candidate{url: vic.url(), source: "master:http://m", appID: y})
				})
			}
		}
	}()
	waitFor(t, reg, "X, the master's", func(s *Snapshot) bool {
		a, ok := s.Lookup(x)
		return ok && a.Live() && a.Source == "master:http://m"
	})
}
