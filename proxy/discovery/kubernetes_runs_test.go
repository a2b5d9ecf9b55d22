package discovery

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSparkApplicationRunClaimDoesNotStick: the memory of the
// SparkApplication each app id ran under (kubeSource.runs) must not take
// another namespace's claim. Team etl's run 1 of "orders" ended and the
// status names run 2; a SparkApplication of namespace mallory names run 1
// (its status, or its driver pod's spark-app-selector label, which the
// namespace's editors can set) and is then deleted: run 1 stays etl's
// "orders", whose pod it ran as. Found by a review.
func TestSparkApplicationRunClaimDoesNotStick(t *testing.T) {
	t.Parallel()
	k, err := newKubeSource(KubernetesSource{APIServer: "http://127.0.0.1:1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	push := func(pushed) {}
	run1 := &App{ID: "spark-run1", Source: "kubernetes:etl/orders-driver"} // its driver pod's
	k.onSparkApp(sparkApp("etl", "orders", "RUNNING", "spark-run1", "orders-driver"), false, push)
	if ca, ok := k.clusterAppFor(run1); !ok || ca.namespace != "etl" {
		t.Fatalf("run 1 while it runs: %+v %v; want etl/orders", ca, ok)
	}
	// The operator restarts the job: the status names run 2.
	k.onSparkApp(sparkApp("etl", "orders", "SUBMITTED", "spark-run2", "orders-driver"), false, push)
	if ca, ok := k.clusterAppFor(run1); !ok || ca.namespace != "etl" || ca.name != "orders" {
		t.Fatalf("run 1 once the status names run 2: %+v %v; want etl/orders (the fix under review)", ca, ok)
	}
	// mallory's SparkApplication names run 1 for a moment, then is gone.
	evil := sparkApp("mallory", "orders", "RUNNING", "spark-run1", "x-driver")
	k.onSparkApp(evil, false, push)
	_, _ = k.clusterAppFor(run1) // a publish round while it claims the id
	k.onSparkApp(evil, true, push)
	ca, ok := k.clusterAppFor(run1)
	if ok && ca.namespace != "etl" {
		t.Errorf("run 1 after namespace mallory's SparkApplication named it once and was deleted: %s/%s; want etl/orders (or none): a withdrawn claim of another namespace sticks", ca.namespace, ca.name)
	}
}

// TestSparkApplicationRunMemoryNotLentToAnyDriver: the memory of the run
// each app id was found under serves that app's own records only (its
// driver pod's, a History Server's), not whoever reports the id. Once an
// earlier run of team etl's "orders" has ended and been forgotten
// (ended_retention; no History Server lists it), mallory's own driver,
// found by a static entry, reports that run's id and the Spark user etl's
// drivers run as (185): it must not be published as etl's "orders", whose
// by-name owner it would then be. Found by a review.
func TestSparkApplicationRunMemoryNotLentToAnyDriver(t *testing.T) {
	t.Parallel()
	drv := newFakeDriver(t, "spark-run1")
	drv.claim("spark-run1", "185")
	_, portS, _ := net.SplitHostPort(drv.url().Host)
	port, _ := strconv.Atoi(portS)
	mallory := newFakeDriver(t, "local-1796138513974")
	mallory.claim("local-1796138513974", "185")
	reg := NewRegistry()
	d := New(Config{Interval: time.Duration(100 * time.Millisecond), EndedRetention: time.Duration(time.Nanosecond),
		Static: []string{mallory.srv.URL}, Kubernetes: &KubernetesSource{APIServer: "http://127.0.0.1:1"}}, reg, zaptest.NewLogger(t))
	cs, dyn := fakeKube(t, d.kube)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	pods := cs.CoreV1().Pods("etl")
	if _, err := pods.Create(ctx, driverPod("etl", "orders-driver", "spark-run1", port, corev1.PodRunning, "127.0.0.1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sas := dyn.Resource(sparkAppGVR).Namespace("etl")
	if _, err := sas.Create(ctx, sparkApp("etl", "orders", "RUNNING", "spark-run1", "orders-driver"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, reg, "run 1 live as SparkApplication etl/orders", func(s *Snapshot) bool {
		a, ok := s.Lookup("spark-run1")
		return ok && a.Live() && a.ClusterName == "etl/orders"
	})
	// Run 1 ends, the operator starts run 2; run 1 is forgotten.
	if err := pods.Delete(ctx, "orders-driver", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := sas.Update(ctx, sparkApp("etl", "orders", "SUBMITTED", "spark-run2", "orders-driver"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, reg, "run 1 forgotten", func(s *Snapshot) bool { _, ok := s.Lookup("spark-run1"); return !ok })

	// mallory's driver, found by a static entry, now reports run 1's id.
	mallory.claim("spark-run1", "185")
	waitFor(t, reg, "mallory's driver live as spark-run1", func(s *Snapshot) bool {
		a, ok := s.Lookup("spark-run1")
		return ok && a.Live() && a.UIURL.String() == mallory.url().String()
	})
	if a, _ := reg.Lookup("spark-run1"); a.ClusterName != "" {
		t.Errorf("mallory's driver (source %q) reporting a forgotten run's id is published as SparkApplication %q: "+
			"by-name owner \"185 in etl\", team etl's; want no SparkApplication", a.Source, a.ClusterName)
	}
}
