package discovery

import (
	"context"
	"net/url"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	corev1 "k8s.io/api/core/v1"
)

// What a second address proves: nothing. A driver at another address that
// reports a live app's id and owner is taken for the same driver under a
// second address, and both are what a driver says of itself. In these
// tests Mallory can run processes (a probe finds them) but cannot create
// pods in a watched namespace nor register with a master or
// ResourceManager; Alice's app X runs in a driver pod in team-a, which
// the Kubernetes source names.

const (
	revX      = "spark-0123456789abcdef0123456789abcdef"
	revMalURL = "http://10.0.0.66:4040" // mallory's process, found by the probe
)

// revKubeCand is the Kubernetes source's candidate for alice's driver pod.
func revKubeCand() candidate {
	c, ok := podURL(driverPod("team-a", "x-driver", revX, 4040, corev1.PodRunning, "10.244.0.9"))
	if !ok {
		panic("podURL")
	}
	return c
}

// TestSecondAddressDoesNotTakeEndedID: Mallory makes her address a second
// address of X while X runs; when Alice's driver pod finishes, her address
// does not take X's id (rule 4).
func TestSecondAddressDoesNotTakeEndedID(t *testing.T) {
	d, now := stepDisc()
	kc := revKubeCand()
	mal, _ := url.Parse(revMalURL)
	probe := "probe:10.0.0.66:4040"

	d.offer(kc)
	verifyDone(d, kc.url, driverInfo{ID: revX, User: "alice"})
	if a := d.apps[revX]; a == nil || a.app.Source != kc.source {
		t.Fatalf("setup: %+v", d.apps[revX])
	}
	// Mallory's fake driver claims X, owner alice, while X runs: accepted
	// quietly as the same driver under a second address.
	*now = now.Add(time.Second)
	d.offer(candidate{url: mal, source: probe})
	verifyDone(d, mal, driverInfo{ID: revX, User: "alice"})
	if d.targets[mal.String()].appID != revX {
		t.Fatalf("setup: mallory's address not taken as a second address")
	}
	// Alice's driver pod finishes: the Kubernetes source says so.
	*now = now.Add(time.Second)
	d.onPushed(pushed{c: kc, gone: true, reason: "driver pod team-a/x-driver is Succeeded"})
	if d.apps[revX].app.State != Ended {
		t.Fatalf("setup: X not ended")
	}
	// The probe finds mallory's process again.
	*now = now.Add(time.Second)
	d.offer(candidate{url: mal, source: probe})
	verifyDone(d, mal, driverInfo{ID: revX, User: "alice"})
	if a := d.apps[revX]; a.app.State == Running {
		t.Errorf("after alice's app ended, mallory's address took its id: running at %s, source %q (was %s)",
			u2s(a.app.UIURL), a.app.Source, kc.source)
	}
}

// TestKubeAtSecondAddressVouchesForNoOtherDriver: Mallory's fake driver is
// verified for X first (the probe found it); then the Kubernetes source
// names X at Alice's driver pod, which answers as X/alice and is taken as a
// second address. X keeps the probe's source: were it the pod's, AppPods(X)
// would give Alice's pods to the driver at Mallory's address, judged by
// the ACLs her process supplied.
func TestKubeAtSecondAddressVouchesForNoOtherDriver(t *testing.T) {
	d, now := stepDisc()
	kc := revKubeCand()
	mal, _ := url.Parse(revMalURL)

	d.offer(candidate{url: mal, source: "probe:10.0.0.66:4040"})
	verifyDone(d, mal, driverInfo{ID: revX, User: "alice"})
	a := d.apps[revX]
	// Mallory's driver environment: ACLs off (anyone may view).
	d.onEnv(revX, a, map[string]string{"spark.acls.enable": "false"}, "", nil)

	*now = now.Add(time.Second)
	d.offer(kc)
	verifyDone(d, kc.url, driverInfo{ID: revX, User: "alice"})

	a = d.apps[revX]
	if VouchesForID(a.app.Source) && u2s(a.app.UIURL) != u2s(kc.url) {
		t.Errorf("X is served by %s (ACLs %v from that driver) yet vouched for by %q, whose pod is at %s",
			u2s(a.app.UIURL), a.app.ACLProps, a.app.Source, u2s(kc.url))
	}

	// What the proxy's pod-log route sees: AppPods(X) with a Kubernetes
	// source whose caches hold alice's pods.
	k, err := newKubeSource(KubernetesSource{APIServer: "http://127.0.0.1:1", Namespaces: []string{"team-a"}, Resync: time.Hour, SparkApplications: "off"}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	fakeKube(t, k,
		driverPod("team-a", "x-driver", revX, 4040, corev1.PodRunning, "10.244.0.9"),
		executorPod("team-a", "x-exec-1", revX, "1"),
	)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { k.run(ctx, func(pushed) {}); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	eventually(t, "the Kubernetes source holds Alice's pods", func() bool { return len(k.appPods(revX)) == 2 })
	d.kube = k
	d.publish()
	snap, _ := d.reg.Load().Lookup(revX)
	if pods := d.AppPods(revX); len(pods) > 0 && u2s(snap.UIURL) != u2s(kc.url) {
		t.Errorf("published X: UIURL %s, ACLProps %v, Source %q; AppPods(X) = %d of alice's pods (%s/%s, ...)",
			u2s(snap.UIURL), snap.ACLProps, snap.Source, len(pods), pods[0].Namespace, pods[0].Name)
	}
}

// TestMissedChecksDoNotHandIDToSecondAddress: X runs at its pod
// (Kubernetes source); Mallory's address becomes a second address; X's UI
// misses two checks while the pod still runs, so X ends; the probe
// re-verifies Mallory first. She does not take X, and the pod takes it
// back when it answers again.
func TestMissedChecksDoNotHandIDToSecondAddress(t *testing.T) {
	d, now := stepDisc()
	kc := revKubeCand()
	mal, _ := url.Parse(revMalURL)
	probe := "probe:10.0.0.66:4040"

	d.offer(kc)
	verifyDone(d, kc.url, driverInfo{ID: revX, User: "alice"})
	*now = now.Add(time.Second)
	d.offer(candidate{url: mal, source: probe})
	verifyDone(d, mal, driverInfo{ID: revX, User: "alice"})
	// Two failed liveness checks of alice's UI (GC pause, network blip).
	*now = now.Add(time.Second)
	d.endApp(revX, "driver did not answer")
	// Next round: the probe (polled before the Kubernetes source) and
	// mallory's instant answer.
	*now = now.Add(time.Second)
	d.offer(candidate{url: mal, source: probe})
	verifyDone(d, mal, driverInfo{ID: revX, User: "alice"})
	d.offer(kc)
	verifyDone(d, kc.url, driverInfo{ID: revX, User: "alice"})

	a := d.apps[revX]
	if a.app.State != Running || u2s(a.app.UIURL) != u2s(kc.url) || a.app.Source != kc.source {
		t.Errorf("X %v at %s, source %q; want running at Alice's pod %s, source %q",
			a.app.State, u2s(a.app.UIURL), a.app.Source, u2s(kc.url), kc.source)
	}
}
