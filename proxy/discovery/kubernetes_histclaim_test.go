package discovery

import "testing"

// TestHistoryAppNotAttributedToAnotherNamespace: a finished app that only
// a History Server lists (source "history:…", or the History Server's
// record of an ended app whose driver pod the Kubernetes source found) is
// not given to a SparkApplication of another namespace whose status names
// its id. Team etl's run 1 of "orders" ran as a pod in etl and ended; the
// operator's status now names run 2. mallory's SparkApplication names run
// 1 (status.sparkApplicationId, which the operator copies from the driver
// pod's spark-app-selector label, which mallory may patch): run 1 must stay
// etl/orders (by-name owner "185 in etl"), not become mallory/evil, whose
// /by-name/evil/ would then lead to it and etl's /by-name/orders/ lose it.
func TestHistoryAppNotAttributedToAnotherNamespace(t *testing.T) {
	t.Parallel()
	k, err := newKubeSource(KubernetesSource{APIServer: "http://127.0.0.1:1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	push := func(pushed) {}
	live := &App{ID: "spark-run1", Source: "kubernetes:etl/orders-driver"}
	k.onSparkApp(sparkApp("etl", "orders", "RUNNING", "spark-run1", "orders-driver"), false, push)
	if ca, ok := k.clusterAppFor(live); !ok || ca.namespace != "etl" {
		t.Fatalf("run 1 while it runs: %+v %v; want etl/orders", ca, ok)
	}
	k.onSparkApp(sparkApp("etl", "orders", "SUBMITTED", "spark-run2", "orders-driver"), false, push)
	hist := &App{ID: "spark-run1", Source: "history:main", State: Ended}
	if ca, ok := k.clusterAppFor(hist); !ok || ca.namespace != "etl" {
		t.Fatalf("run 1 as the History Server lists it: %+v %v; want etl/orders", ca, ok)
	}
	k.onSparkApp(sparkApp("mallory", "evil", "COMPLETED", "spark-run1", "evil-driver"), false, push)
	for range 20 { // the clusters map is read in random order
		if ca, ok := k.clusterAppFor(hist); ok && ca.namespace != "etl" {
			t.Fatalf("etl's finished run 1 is attributed to SparkApplication %s/%s of another namespace, which names its id; want etl/orders", ca.namespace, ca.name)
		}
	}
}
