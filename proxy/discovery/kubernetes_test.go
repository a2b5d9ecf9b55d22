package discovery

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap/zaptest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
)

// driverPod is a Spark driver pod as Spark on Kubernetes creates it.
func driverPod(ns, name, appID string, port int, phase corev1.PodPhase, ip string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{
			"spark-role": "driver", "spark-app-selector": appID,
		}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "spark-kubernetes-driver",
			Ports: []corev1.ContainerPort{
				{Name: "driver-rpc-port", ContainerPort: 7078},
				{Name: "spark-ui", ContainerPort: int32(port)},
			},
		}}},
		Status: corev1.PodStatus{Phase: phase, PodIP: ip},
	}
}

func sparkApp(ns, name, state, appID, pod string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "sparkoperator.k8s.io/v1beta2", "kind": "SparkApplication",
		"metadata": map[string]any{"namespace": ns, "name": name},
		"status": map[string]any{
			"applicationState":   map[string]any{"state": state},
			"sparkApplicationId": appID,
			"driverInfo":         map[string]any{"podName": pod},
		},
	}}
	return u
}

// fakeKube gives a kubeSource fake clients that serve the SparkApplication
// API as well as pods.
func fakeKube(t *testing.T, k *kubeSource, objs ...runtime.Object) (*fake.Clientset, dynamic.Interface) {
	t.Helper()
	cs := fake.NewClientset(objs...)
	cs.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{{
		GroupVersion: "sparkoperator.k8s.io/v1beta2",
		APIResources: []metav1.APIResource{{Name: "sparkapplications", Namespaced: true, Kind: "SparkApplication"}},
	}}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{sparkAppGVR: "SparkApplicationList"})
	k.clients = func() (kubernetes.Interface, dynamic.Interface, error) { return cs, dyn, nil }
	return cs, dyn
}

func TestDriverSelector(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"spark-role=driver":     "spark-role=driver",
		"team=a":                "spark-role=driver,team=a",
		"spark-role in (drv)":   "spark-role in (drv)",
		"team=a,env!=test":      "env!=test,spark-role=driver,team=a",
		"spark-role=driver,x=y": "spark-role=driver,x=y",
	} {
		sel, err := driverSelector(in)
		if err != nil || sel.String() != want {
			t.Errorf("driverSelector(%q) = %v, %v; want %q", in, sel, err, want)
		}
	}
	if _, err := driverSelector("a=(b"); err == nil {
		t.Error("driverSelector accepted a malformed selector")
	}
}

func TestKubeRESTConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte("tok-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rc, err := kubeRESTConfig(KubernetesSource{APIServer: "http://127.0.0.1:1", TokenFile: tok, CAFile: filepath.Join(dir, "missing-ca")})
	if err != nil || rc.BearerTokenFile != tok || rc.CAFile != "" || rc.Host != "http://127.0.0.1:1" {
		t.Errorf("kubeRESTConfig = %+v, %v", rc, err)
	}
	if _, err := kubeRESTConfig(KubernetesSource{APIServer: "https://k:6443", CAFile: filepath.Join(dir, "missing-ca")}); err == nil {
		t.Error("a missing CA file over https was accepted")
	}
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://10.0.0.1:6443", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: abc}}, {name: v, user: {token: def}}]
contexts: [{name: one, context: {cluster: c, user: u}}, {name: two, context: {cluster: c, user: v}}]
current-context: one
`), 0o600); err != nil {
		t.Fatal(err)
	}
	rc, err = kubeRESTConfig(KubernetesSource{Kubeconfig: kc, Context: "two"})
	if err != nil || rc.Host != "https://10.0.0.1:6443" || rc.BearerToken != "def" {
		t.Errorf("kubeRESTConfig(kubeconfig, context two) = %+v, %v", rc, err)
	}
	if _, err := kubeRESTConfig(KubernetesSource{Kubeconfig: filepath.Join(dir, "none")}); err == nil {
		t.Error("a missing kubeconfig was accepted")
	}
}

// TestKubeSourceWatch: pods in the watched namespaces are pushed as they
// turn Running, and pushed as gone when they fail or are deleted; pods in
// other namespaces, pending pods and pods without a UI port are not.
func TestKubeSourceWatch(t *testing.T) {
	t.Parallel()
	k, err := newKubeSource(KubernetesSource{APIServer: "http://127.0.0.1:1", Namespaces: []string{"a", "b"}, LabelSelector: "spark-role=driver", Resync: time.Hour, SparkApplications: "off"}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	cs, _ := fakeKube(t, k,
		driverPod("a", "one", "spark-1", 4040, corev1.PodRunning, "10.0.0.7"),
		driverPod("c", "elsewhere", "spark-3", 4040, corev1.PodRunning, "10.0.0.9"),
	)
	got := make(chan pushed, 16)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { k.run(ctx, func(p pushed) { got <- p }); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	next := func() pushed {
		t.Helper()
		select {
		case p := <-got:
			return p
		case <-time.After(10 * time.Second):
			t.Fatal("nothing pushed")
			return pushed{}
		}
	}
	p := next()
	if p.gone || p.c.key() != "http://10.0.0.7:4040" || p.c.appID != "spark-1" || p.c.source != "kubernetes:a/one" {
		t.Fatalf("first push = %+v", p)
	}
	pods := cs.CoreV1().Pods("b")
	pod := driverPod("b", "two", "spark-2", 4041, corev1.PodPending, "")
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod.Status.Phase, pod.Status.PodIP = corev1.PodRunning, "10.0.0.8"
	if _, err := pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if p := next(); p.gone || p.c.key() != "http://10.0.0.8:4041" || p.c.appID != "spark-2" {
		t.Fatalf("push after Running = %+v", p)
	}
	cands, err := k.candidates(ctx)
	if err != nil || !cmp.Equal(keys(cands), []string{"http://10.0.0.7:4040", "http://10.0.0.8:4041"}) {
		t.Errorf("candidates() = %v, %v", keys(cands), err)
	}
	pod.Status.Phase = corev1.PodFailed
	if _, err := pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if p := next(); !p.gone || p.c.key() != "http://10.0.0.8:4041" {
		t.Fatalf("push after Failed = %+v", p)
	}
	if err := cs.CoreV1().Pods("a").Delete(ctx, "one", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if p := next(); !p.gone || p.c.key() != "http://10.0.0.7:4040" {
		t.Fatalf("push after delete = %+v", p)
	}
	if cands, err := k.candidates(ctx); err != nil || len(cands) != 0 {
		t.Errorf("candidates() after the end = %v, %v; want none", keys(cands), err)
	}
}

// TestDiscovererKubernetes: with a poll interval of an hour, only the watch
// can make a pod's app live and end it; the SparkApplication's name and
// state reach the published app.
func TestDiscovererKubernetes(t *testing.T) {
	t.Parallel()
	drv := newFakeDriver(t, "app-k8s-1")
	_, portS, _ := net.SplitHostPort(drv.url().Host)
	port, _ := strconv.Atoi(portS)
	reg := NewRegistry()
	d := New(Config{Interval: time.Duration(time.Hour), Kubernetes: &KubernetesSource{APIServer: "http://127.0.0.1:1"}}, reg, zaptest.NewLogger(t))
	if d.kube == nil {
		t.Fatal("no kubernetes source")
	}
	cs, dyn := fakeKube(t, d.kube)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	pods := cs.CoreV1().Pods("spark")
	pod := driverPod("spark", "pi-driver", "app-k8s-1", port, corev1.PodPending, "")
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod.Status.Phase, pod.Status.PodIP = corev1.PodRunning, "127.0.0.1"
	if _, err := pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, reg, "the pod's app live", live("app-k8s-1"))
	if a, _ := reg.Lookup("app-k8s-1"); a.Source != "kubernetes:spark/pi-driver" {
		t.Errorf("Source = %q", a.Source)
	}
	if _, err := dyn.Resource(sparkAppGVR).Namespace("spark").Create(ctx, sparkApp("spark", "pi", "RUNNING", "", "pi-driver"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, reg, "the SparkApplication's name and state", func(s *Snapshot) bool {
		a, ok := s.Lookup("app-k8s-1")
		return ok && a.ClusterName == "spark/pi" && a.ClusterState == "RUNNING"
	})
	if err := pods.Delete(ctx, "pi-driver", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, reg, "the app ended at the pod's deletion", ended("app-k8s-1"))
	if _, err := dyn.Resource(sparkAppGVR).Namespace("spark").Update(ctx, sparkApp("spark", "pi", "COMPLETED", "app-k8s-1", "pi-driver"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, reg, "the SparkApplication's new state", func(s *Snapshot) bool {
		a, ok := s.Lookup("app-k8s-1")
		return ok && a.ClusterState == "COMPLETED" && !a.Live()
	})
}

// TestKubeSourceHealth: an API server that refuses the list (RBAC
// missing) makes the source report an error (shown in /metrics as down),
// not an empty list.
func TestKubeSourceHealth(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"pods is forbidden","reason":"Forbidden","code":403}`))
	}))
	t.Cleanup(srv.Close)
	k, err := newKubeSource(KubernetesSource{APIServer: srv.URL, LabelSelector: "spark-role=driver", Resync: time.Hour, SparkApplications: "off"}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	short, cancelShort := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancelShort()
	if _, err := k.candidates(short); err == nil {
		t.Error("candidates() before the informers started: no error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { k.run(ctx, func(pushed) {}); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	deadline := time.Now().Add(10 * time.Second)
	for {
		short, cancelShort := context.WithTimeout(ctx, 100*time.Millisecond)
		_, err := k.candidates(short)
		cancelShort()
		if err != nil && strings.Contains(err.Error(), "pods in all namespaces") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("candidates() error = %v; want the failed list", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestKubeSourceHealthRefused: an API server that refuses connections
// marks the source down, although the reflector retries the watch quietly.
func TestKubeSourceHealthRefused(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	k, err := newKubeSource(KubernetesSource{APIServer: "http://" + addr, LabelSelector: "spark-role=driver", Resync: time.Hour, SparkApplications: "off"}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { k.run(ctx, func(pushed) {}); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	deadline := time.Now().Add(10 * time.Second)
	for {
		short, cancelShort := context.WithTimeout(ctx, 100*time.Millisecond)
		_, err := k.candidates(short)
		cancelShort()
		if err != nil && strings.Contains(err.Error(), "connection refused") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("candidates() error = %v; want connection refused", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSparkApplicationRunsKeepTheirName: an app the Spark operator runs
// takes its by-name name and its namespace (its owner's half) from its
// SparkApplication. Once the operator restarts the job, the status names
// the next run, whose driver is still starting: the earlier run (ended,
// still listed) must keep being team etl's "orders", or in that window
// /by-name/orders/ holds none of etl's runs and anyone's app of that name
// is where a bookmark leads. It keeps no state: the SparkApplication's is
// the next run's.
func TestSparkApplicationRunsKeepTheirName(t *testing.T) {
	t.Parallel()
	drv := newFakeDriver(t, "spark-run1")
	_, portS, _ := net.SplitHostPort(drv.url().Host)
	port, _ := strconv.Atoi(portS)
	reg := NewRegistry()
	d := New(Config{Interval: time.Hour, Kubernetes: &KubernetesSource{APIServer: "http://127.0.0.1:1"}}, reg, zaptest.NewLogger(t))
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
		return ok && a.Live() && a.ClusterName == "etl/orders" && a.ClusterState == "RUNNING"
	})
	// The job fails and the operator restarts it: run 1's pod goes, the
	// status names run 2, whose driver is still starting.
	if err := pods.Delete(ctx, "orders-driver", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, reg, "run 1 ended", ended("spark-run1"))
	if _, err := sas.Update(ctx, sparkApp("etl", "orders", "SUBMITTED", "spark-run2", "orders-driver"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The update is republished (the SparkApplication's state is its
	// latest run's); run 1 is still etl's "orders", with no state.
	waitFor(t, reg, "run 1 republished after the status named run 2", func(s *Snapshot) bool {
		a, ok := s.Lookup("spark-run1")
		return ok && a.ClusterState != "RUNNING"
	})
	if a, _ := reg.Lookup("spark-run1"); a.ClusterName != "etl/orders" || a.ClusterState != "" {
		t.Errorf("run 1 once the status names run 2: SparkApplication %q, state %q; want etl/orders, none", a.ClusterName, a.ClusterState)
	}
}
