package discovery

import (
	"errors"
	"net/url"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TestPodGoneEndsNoMasterApp: alice's X, named by the master at
// U, runs. Mallory (owning watched namespace team-m) runs a pod labelled
// as a driver whose process answers as X/alice: it is taken quietly as a
// second address of X (t.appID = X at her pod's key). She deletes the pod:
// X, not her pod's app, is not ended (its own source and liveness check
// end it).
func TestPodGoneEndsNoMasterApp(t *testing.T) {
	d, now := stepDisc()
	const x = "app-20260101000000-0001"
	u, _ := url.Parse("http://10.0.0.5:4040")
	master := "master:http://m"
	d.offer(candidate{url: u, source: master, appID: x, seen: *now})
	verifyDone(d, u, driverInfo{ID: x, User: "alice"})
	if a := d.apps[x]; a == nil || a.app.State != Running || a.app.Source != master {
		t.Fatalf("setup: %+v", d.apps[x])
	}
	*now = now.Add(time.Second)
	mc, _ := podURL(driverPod("team-m", "m-driver", "", 4040, corev1.PodRunning, "10.244.7.7"))
	d.onPushed(pushed{c: mc})
	verifyDone(d, mc.url, driverInfo{ID: x, User: "alice"})
	if tg := d.targets[mc.key()]; tg == nil || tg.appID != x {
		t.Fatalf("setup: mallory's pod not a second address of X: %+v", tg)
	}
	*now = now.Add(time.Second)
	d.onPushed(pushed{c: mc, gone: true, reason: "driver pod team-m/m-driver deleted"})
	if a := d.apps[x]; a.app.State != Running {
		t.Errorf("alice's master-named X, whose driver runs at %s, ended by the delete of mallory's pod %s", u, mc.url)
	}
}

// TestPodGoneEndsNoOtherKubeApp: the same for a Kubernetes app of
// Alice's whose pod is in team-a.
func TestPodGoneEndsNoOtherKubeApp(t *testing.T) {
	d, now := stepDisc()
	kc := revKubeCand()
	d.offer(kc)
	verifyDone(d, kc.url, driverInfo{ID: revX, User: "alice"})
	*now = now.Add(time.Second)
	mc, _ := podURL(driverPod("team-m", "m-driver", "", 4040, corev1.PodRunning, "10.244.7.7"))
	d.onPushed(pushed{c: mc})
	verifyDone(d, mc.url, driverInfo{ID: revX, User: "alice"})
	if tg := d.targets[mc.key()]; tg == nil || tg.appID != revX {
		t.Fatalf("setup: %+v", tg)
	}
	*now = now.Add(time.Second)
	d.onPushed(pushed{c: mc, gone: true, reason: "driver pod team-m/m-driver deleted"})
	if a := d.apps[revX]; a.app.State != Running {
		t.Errorf("X ended")
	}
}

// TestOldPodDeleteKeepsLogFoundApp: TestOldPodDeleteKeepsNewApp with
// alice's driver pod in a namespace the gateway does not watch, so her Y
// is found by her driver log (or a probe), not the Kubernetes source.
// Mallory's kept Succeeded pod M had the IP; she deletes M and its delete
// event does not end Y, which is not M's app.
func TestOldPodDeleteKeepsLogFoundApp(t *testing.T) {
	d, now := stepDisc()
	const y = "spark-ffff456789abcdef0123456789abcdef"
	mc, _ := podURL(driverPod("team-m", "m-driver", "spark-mmmm", 4040, corev1.PodRunning, "10.244.0.9"))
	d.offer(mc)
	verifyDone(d, mc.url, driverInfo{ID: "spark-mmmm", User: "mallory"})
	*now = now.Add(time.Second)
	d.onPushed(pushed{c: mc, gone: true, reason: "driver pod team-m/m-driver is Succeeded"})
	*now = now.Add(time.Second)
	d.offer(candidate{url: mc.url, source: "log:/var/log/alice/driver.log", appID: y, seen: *now})
	verifyDone(d, mc.url, driverInfo{ID: y, User: "alice"})
	if a := d.apps[y]; a == nil || a.app.State != Running {
		t.Fatalf("setup: %+v", d.apps[y])
	}
	*now = now.Add(time.Second)
	d.onPushed(pushed{c: mc, gone: true, reason: "driver pod team-m/m-driver deleted"})
	if a := d.apps[y]; a.app.State != Running {
		t.Errorf("alice's log-found Y ended by the delete of mallory's old pod at the same IP")
	}
}

// TestDeadMasterHoldsNoEnds: a configured master m1 that never answers
// (decommissioned, a wrong URL) holds back no ends: X, named by m2 at U,
// finishes and m2 stops listing it; a process that took U answers every
// liveness check as X/alice; X ends all the same. (A master silent for
// less than the hold after answering, silentHold intervals and three
// minutes at least, holds them back: it may be the active one of an HA
// pair, TestActiveMasterBlipKeepsApp, TestLongMasterFailoverKeepsApp.)
func TestDeadMasterHoldsNoEnds(t *testing.T) {
	d, now := stepDisc()
	const x = "app-20260101000000-0001"
	u, _ := url.Parse("http://10.0.0.5:4040")
	m1, m2 := "master:http://m1:8080", "master:http://m2:8080"
	d.polls = []pollSource{listPoll{m1}, listPoll{m2}}
	poll := func(r2 []candidate) {
		*now = now.Add(time.Second)
		d.onPolled([][]candidate{nil, r2}, []bool{false, true})
		answerAsAlice(d, u, x)
	}
	poll([]candidate{{url: u, source: m2, appID: x, seen: now.Add(time.Second)}})
	if a := d.apps[x]; a == nil || a.app.Source != m2 {
		t.Fatalf("setup: %+v", d.apps[x])
	}
	for range 20 {
		poll(nil) // m2 answers and no longer lists X
	}
	if a := d.apps[x]; a.app.State == Running {
		t.Errorf("X live under %q 20 rounds after the master that named it stopped listing it (m1 never answers)", a.app.Source)
	}
}

// TestLogFoundKubeDriverCheckedWhenPodGoes: Alice's Spark-on-Kubernetes
// driver logs its UI line with spark.driver.host, the driver service's
// name, and the log is read before the pod's UI answers: X is found first
// at the service URL (pinned to the pod's ip:port), and the pod's own URL
// is taken as a second address. When the pod goes, X is not its pod's app
// there, so the gone event does not end it, but has it checked at once:
// the first refused connection ends it.
func TestLogFoundKubeDriverCheckedWhenPodGoes(t *testing.T) {
	d, now := stepDisc()
	svc, _ := url.Parse("http://x-driver-svc.team-a.svc:4040")
	d.onLogs([]logCandidates{{path: "/var/log/pods/team-a_x-driver/spark-kubernetes-driver/0.log", urls: []*url.URL{svc}, appHint: revX}}, *now, false)
	verifyDone(d, svc, driverInfo{ID: revX, User: "alice", addr: "10.244.0.9:4040"})
	if a := d.apps[revX]; a == nil || a.app.State != Running || a.key != svc.String() {
		t.Fatalf("setup: %+v", d.apps[revX])
	}
	*now = now.Add(time.Second)
	kc := revKubeCand() // team-a/x-driver at 10.244.0.9:4040
	d.onPushed(pushed{c: kc})
	verifyDone(d, kc.url, driverInfo{ID: revX, User: "alice", addr: "10.244.0.9:4040"})
	if tg := d.targets[kc.key()]; tg == nil || tg.appID != revX {
		t.Fatalf("setup: pod URL not a second address of X: %+v", tg)
	}
	*now = now.Add(time.Second)
	d.onPushed(pushed{c: kc, gone: true, reason: "driver pod team-a/x-driver deleted"})
	a := d.apps[revX]
	if !a.checking {
		t.Fatalf("X not checked when the pod at its pinned address went (state %v)", a.app.State)
	}
	if tg := d.targets[kc.key()]; tg != nil && tg.appID != "" {
		t.Errorf("the gone pod's address still taken for X")
	}
	d.onChecked(revX, a, apiApp{}, &unreachableError{refused: true, err: errors.New("connection refused")}, true)
	if a.app.State != Ended {
		t.Errorf("X %v after the check of its gone pod's address was refused", a.app.State)
	}
}

// TestLongMasterFailoverKeepsApp: an HA pair with ZooKeeper. m1,
// the active master, names X at U and dies; m2, the standby, answers with
// no apps until it has recovered the state (Spark's docs: the whole
// recovery takes 1-2 minutes, longer than silentHold intervals at the
// default 5 s). X runs throughout and is not ended; m2 lists it once
// active.
func TestLongMasterFailoverKeepsApp(t *testing.T) {
	d, now := stepDisc()
	const x = "app-20260101000000-0001"
	u, _ := url.Parse("http://10.0.0.5:4040")
	m1, m2 := "master:http://m1:8080", "master:http://m2:8080"
	d.polls = []pollSource{listPoll{m1}, listPoll{m2}}
	at := listsAt(now, u, x)
	endedAt := -1
	round := 0
	poll := func(r1 []candidate, ok1 bool, r2 []candidate, ok2 bool) {
		round++
		*now = now.Add(time.Second)
		d.onPolled([][]candidate{r1, r2}, []bool{ok1, ok2})
		if a := d.apps[x]; a != nil && a.app.State == Ended && endedAt < 0 {
			endedAt = round
		}
		answerAsAlice(d, u, x)
	}
	poll(at(m1), true, nil, true) // m1 active, m2 standby
	for range 14 {                // 14 intervals (70 s at 5 s) of failover
		poll(nil, false, nil, true)
	}
	poll(nil, false, at(m2), true) // m2 active, lists X at U
	if endedAt >= 0 {
		t.Errorf("running X ended at round %d of a master failover (m1 silent, standby m2 empty); now %v", endedAt, d.apps[x].app.State)
	}
}

// TestStalePodGoneEndsNoLogFoundApp: Mallory's old pod M had the IP
// Alice's pod now has; a poll read while M ran (its label set to X) is
// delivered late, then M's delete event: X, served at that ip:port by
// Alice's pod, is not ended (only checked).
func TestStalePodGoneEndsNoLogFoundApp(t *testing.T) {
	d, now := stepDisc()
	readM := *now
	svc, _ := url.Parse("http://x-driver-svc.team-a.svc:4040")
	d.onLogs([]logCandidates{{path: "/var/log/pods/team-a_x-driver/0.log", urls: []*url.URL{svc}, appHint: revX}}, *now, false)
	*now = now.Add(time.Second)
	verifyDone(d, svc, driverInfo{ID: revX, User: "alice", addr: "10.244.0.9:4040"})
	kc := revKubeCand()
	d.onPushed(pushed{c: kc})
	verifyDone(d, kc.url, driverInfo{ID: revX, User: "alice", addr: "10.244.0.9:4040"})
	mc := kc
	mc.source, mc.seen = "kubernetes:team-m/m-driver", readM
	*now = now.Add(time.Second)
	d.offer(mc) // the held-up poll
	d.onPushed(pushed{c: mc, gone: true, reason: "driver pod team-m/m-driver deleted"})
	if a := d.apps[revX]; a.app.State != Running {
		t.Errorf("alice's X ended by the delete of mallory's old pod")
	}
}

// TestSilentMasterEndsNothing: the only configured master named
// X at U, then stops answering (a restart, a network partition between
// the gateway and the master) for four minutes, longer than the hold
// (max(silentHold intervals, failoverHold)). X's driver answers every
// liveness check throughout. endUnlisted's own rule is "a source that does
// not answer ends nothing", but once the silent master no longer holds back
// ends, its empty (unanswered) rounds are counted as unlisted: X ends as
// unlisted (and only the master naming it again may bring it back).
func TestSilentMasterEndsNothing(t *testing.T) {
	d, now := stepDisc()
	const x = "app-20260101000000-0001"
	u, _ := url.Parse("http://10.0.0.5:4040")
	m := "master:http://m:8080"
	d.polls = []pollSource{listPoll{m}}
	endedAt := -1
	round := 0
	poll := func(cands []candidate, ok bool) {
		round++
		*now = now.Add(time.Second)
		d.onPolled([][]candidate{cands}, []bool{ok})
		if a := d.apps[x]; a != nil && a.app.State == Ended && endedAt < 0 {
			endedAt = round
		}
		answerAsAlice(d, u, x)
	}
	poll([]candidate{{url: u, source: m, appID: x, seen: now.Add(time.Second)}}, true)
	if a := d.apps[x]; a == nil || a.app.Source != m {
		t.Fatalf("setup: %+v", d.apps[x])
	}
	for range 240 {
		poll(nil, false) // the master does not answer
	}
	if endedAt >= 0 {
		t.Errorf("X, its driver answering every check, ended at round %d while its only master did not answer (unlistedEnd=%v)", endedAt, d.apps[x].unlistedEnd)
	}
}

// TestUnreadableActiveMasterEndsNothing: an HA pair. m1, active, names
// alice's X at U; m2 is the standby (answers, lists nothing). A
// partition between the gateway and m1 makes m1's list unreadable from
// then on (an app's name larger than listBodyMax no longer can:
// TestMasterListWithHugeAppName). After the hold m1 counts as down, but m2's
// empty answers count only m2's apps: X, its driver answering every
// check, stays running.
func TestUnreadableActiveMasterEndsNothing(t *testing.T) {
	d, now := stepDisc()
	const x = "app-20260101000000-0001"
	u, _ := url.Parse("http://10.0.0.5:4040")
	m1, m2 := "master:http://m1:8080", "master:http://m2:8080"
	d.polls = []pollSource{listPoll{m1}, listPoll{m2}}
	endedAt := -1
	round := 0
	poll := func(r1 []candidate, ok1 bool) {
		round++
		*now = now.Add(time.Second)
		for _, cs := range d.logCands {
			for _, c := range cs {
				d.offer(c)
			}
		}
		d.onPolled([][]candidate{r1, nil}, []bool{ok1, true})
		if a := d.apps[x]; a != nil && a.app.State == Ended && endedAt < 0 {
			endedAt = round
		}
		answerAsAlice(d, u, x)
	}
	poll([]candidate{{url: u, source: m1, appID: x, seen: now.Add(time.Second)}}, true)
	if a := d.apps[x]; a == nil || a.app.Source != m1 {
		t.Fatalf("setup: %+v", d.apps[x])
	}
	d.onLogs([]logCandidates{{path: "/var/log/alice/x.log", urls: []*url.URL{u}, appHint: x}}, *now, false)
	for range 240 {
		poll(nil, false) // m1's list unreadable (mallory's app), m2 standby
	}
	if a := d.apps[x]; endedAt >= 0 || a.app.State != Running {
		t.Errorf("alice's X, its driver answering every check, ended at round %d and is %v at round %d (unlistedEnd=%v)", endedAt, a.app.State, round, a.unlistedEnd)
	}
}
