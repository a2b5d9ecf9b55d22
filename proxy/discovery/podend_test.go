package discovery

import (
	corev1 "k8s.io/api/core/v1"
	"net/url"
	"testing"
	"time"
)

// TestGonePodDeleteKeepsEndedAt: the usual end of a driver pod is
// two events: an update (Succeeded, or a deletion timestamp) and then the
// delete. The first ends X and keeps the target; the second keeps it too
// (its app ended there), so a Kubernetes offer read before the pod was
// gone, held up in a poll, credits nothing at the reused IP.
func TestGonePodDeleteKeepsEndedAt(t *testing.T) {
	d, now := stepDisc()
	kc := revKubeCand()
	kc.seen = *now
	d.offer(kc)
	verifyDone(d, kc.url, driverInfo{ID: revX, User: "alice"})
	readAt := now.Add(100 * time.Millisecond)
	*now = readAt.Add(200 * time.Millisecond)
	d.onPushed(pushed{c: kc, gone: true, reason: "driver pod team-a/x-driver is being deleted"})
	*now = now.Add(50 * time.Millisecond)
	d.onPushed(pushed{c: kc, gone: true, reason: "driver pod team-a/x-driver deleted"})
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
		t.Errorf("X published again at the deleted pod's reused address from an offer read before it ended, source %q", a.app.Source)
	}
}

// TestUnlistedAppNotBackByLog: X, named by the master at U, finishes; the
// process that took U answers as X/alice and its owner's log names U.
// endUnlisted ends X, and the log line does not republish it: only a
// master or ResourceManager naming X there may.
func TestUnlistedAppNotBackByLog(t *testing.T) {
	d, now := stepDisc()
	const x = "app-20260101000000-0001"
	u, _ := url.Parse("http://10.0.0.5:4040")
	master := "master:http://m"
	d.polls = []pollSource{listPoll{master}}
	listing := func() []candidate { return []candidate{{url: u, source: master, appID: x, seen: *now}} }
	ended := 0
	poll := func(cands []candidate) {
		*now = now.Add(time.Second)
		for _, cs := range d.logCands {
			for _, c := range cs {
				d.offer(c)
			}
		}
		d.onPolled([][]candidate{cands}, []bool{true})
		if a := d.apps[x]; a != nil && a.app.State == Ended {
			ended++
		}
		answerAsAlice(d, u, x)
	}
	poll(listing())
	// X finishes; mallory's process takes U and her log names U.
	d.onLogs([]logCandidates{{path: "/var/log/mallory/driver.log", urls: []*url.URL{u}}}, *now, false)
	for range 10 {
		poll(nil)
	}
	if ended == 0 {
		t.Fatal("setup: X never ended")
	}
	if a := d.apps[x]; a.app.State == Running {
		t.Errorf("X, no longer listed by the master that named it, live again at U under %q (ended %d times)", a.app.Source, ended)
	}
}

// TestActiveMasterBlipKeepsApp: an HA pair. m1 named X at U; it failed
// over to m2, which lists X at U (X's source follows it), and m1
// came back as standby (answers, lists nothing). Then m2, the active one,
// does not answer for three intervals (a restart, a network blip): X,
// its driver answering throughout, is not ended on the standby's empty
// answers while a master that could list it is silent.
func TestActiveMasterBlipKeepsApp(t *testing.T) {
	d, now := stepDisc()
	const x = "app-20260101000000-0001"
	u, _ := url.Parse("http://10.0.0.5:4040")
	m1, m2 := "master:http://m1:8080", "master:http://m2:8080"
	d.polls = []pollSource{listPoll{m1}, listPoll{m2}}
	// Read during the coming round (offer clamps seen to its now).
	at := listsAt(now, u, x)
	ended := false
	poll := func(r1 []candidate, ok1 bool, r2 []candidate, ok2 bool) {
		*now = now.Add(time.Second)
		d.onPolled([][]candidate{r1, r2}, []bool{ok1, ok2})
		if a := d.apps[x]; a != nil && a.app.State == Ended {
			ended = true
		}
		answerAsAlice(d, u, x)
	}
	poll(at(m1), true, nil, true) // m1 active, m2 standby
	for range 3 {
		poll(nil, false, at(m2), true) // m1 down, m2 active
	}
	for range 3 {
		poll(nil, true, at(m2), true) // m1 back as standby
	}
	if ended || d.apps[x].app.Source != m2 {
		t.Fatalf("setup: ended %v, %+v (want the source of the master that lists it)", ended, d.apps[x])
	}
	for range 3 {
		poll(nil, true, nil, false) // m2, the active one, does not answer
	}
	poll(nil, true, at(m2), true)
	if ended {
		t.Errorf("X ended while the active master did not answer (only the standby did); now %v, source %q", d.apps[x].app.State, d.apps[x].app.Source)
	}
}

// TestOldPodDeleteKeepsNewApp: mallory's driver pod M (her namespace,
// watched) finished, Succeeded, and is kept, its status still giving its
// IP; alice's new driver pod gets that IP and her app Y is found there.
// Mallory deletes M: the delete event names M's old URL, the same key,
// and does not end Y, another pod's app, whose pod runs on.
func TestOldPodDeleteKeepsNewApp(t *testing.T) {
	d, now := stepDisc()
	const y = "spark-ffff456789abcdef0123456789abcdef"
	mc, _ := podURL(driverPod("team-m", "m-driver", "spark-mmmm", 4040, corev1.PodRunning, "10.244.0.9"))
	d.offer(mc)
	verifyDone(d, mc.url, driverInfo{ID: "spark-mmmm", User: "mallory"})
	*now = now.Add(time.Second)
	d.onPushed(pushed{c: mc, gone: true, reason: "driver pod team-m/m-driver is Succeeded"})
	*now = now.Add(time.Second)
	yc, _ := podURL(driverPod("team-a", "y-driver", y, 4040, corev1.PodRunning, "10.244.0.9"))
	d.onPushed(pushed{c: yc})
	verifyDone(d, yc.url, driverInfo{ID: y, User: "alice"})
	if a := d.apps[y]; a == nil || a.app.State != Running {
		t.Fatalf("setup: %+v", d.apps[y])
	}
	*now = now.Add(time.Second)
	d.onPushed(pushed{c: mc, gone: true, reason: "driver pod team-m/m-driver deleted"})
	if a := d.apps[y]; a.app.State != Running {
		t.Errorf("alice's Y, whose pod runs, ended by the delete of mallory's old pod at the same IP")
	}
}
