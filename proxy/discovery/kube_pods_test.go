package discovery

import (
	"context"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap/zaptest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stesting "k8s.io/client-go/testing"
)

func executorPod(ns, name, appID, execID string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{
			"spark-role": "executor", "spark-app-selector": appID, "spark-exec-id": execID,
		}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{
			{Name: "sidecar"}, {Name: "spark-kubernetes-executor", Image: "spark"},
		}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.1.1"},
	}
}

// TestKubeAppPods: an app's pods are its driver pod and its executor pods
// in the watched namespaces, found by the spark-app-selector label in the
// caches; another app's pods and pods elsewhere are not; a log is asked of
// the API server for the pod given, with the options given.
func TestKubeAppPods(t *testing.T) {
	t.Parallel()
	k, err := newKubeSource(KubernetesSource{APIServer: "http://127.0.0.1:1", Namespaces: []string{"a", "b"}, Resync: time.Hour, SparkApplications: "off"}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	cs, _ := fakeKube(t, k,
		driverPod("a", "drv", "spark-1", 4040, corev1.PodRunning, "10.0.0.7"),
		executorPod("a", "drv-exec-10", "spark-1", "10"),
		executorPod("a", "drv-exec-2", "spark-1", "2"),
		executorPod("a", "other-exec-1", "spark-2", "1"),
		executorPod("c", "elsewhere-exec-1", "spark-1", "1"),
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "plain", Labels: map[string]string{"spark-app-selector": "spark-1"}}},
	)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { k.run(ctx, func(pushed) {}); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	want := []Pod{
		{Namespace: "a", Name: "drv", ExecID: "driver", Containers: []string{"spark-kubernetes-driver"}, Phase: "Running"},
		{Namespace: "a", Name: "drv-exec-2", ExecID: "2", Containers: []string{"spark-kubernetes-executor", "sidecar"}, Phase: "Running"},
		{Namespace: "a", Name: "drv-exec-10", ExecID: "10", Containers: []string{"spark-kubernetes-executor", "sidecar"}, Phase: "Running"},
	}
	var got []Pod
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if got = k.appPods("spark-1"); len(got) == len(want) {
			break
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("appPods(spark-1) (-want +got):\n%s", diff)
	}
	if got := k.appPods("spark-9"); len(got) != 0 {
		t.Errorf("appPods(spark-9) = %v; want none", got)
	}
	// AppPods: the pods of an app the Kubernetes source found (in its
	// driver's namespace) or a History Server lists (where its driver pods
	// agree); none for a driver that a probe, a log line or a static entry
	// found, which may claim any id, nor for an id that names nothing.
	d := &Discoverer{kube: k, reg: NewRegistry()}
	for _, tc := range []struct {
		source string
		want   int
	}{
		{"kubernetes:a/drv", 3},
		{"history:main", 0},
		{"probe:10.0.0.9:4040", 0},
		{"log:/var/log/spark/x.log", 0},
		{"static", 0},
		{"master:http://m:8080", 0},
	} {
		d.reg.Store(NewSnapshot([]*App{{ID: "spark-1", User: "alice", Source: tc.source}}))
		if got := d.AppPods("spark-1"); len(got) != tc.want {
			t.Errorf("AppPods(spark-1) of an app found by %s = %v; want %d pods", tc.source, got, tc.want)
		}
	}
	// Ended, a History Server lists it: the namespace of the driver the
	// Kubernetes source found, kept beside the server's record.
	d.reg.Store(NewSnapshot([]*App{{ID: "spark-1", User: "alice", Source: "history:main",
		Driver: &DriverRecord{Source: "kubernetes:a/drv", User: "alice"}}}))
	if got := d.AppPods("spark-1"); len(got) != 3 {
		t.Errorf("AppPods(spark-1) of a listed app whose driver the Kubernetes source found = %v; want 3 pods", got)
	}
	d.reg.Store(NewSnapshot([]*App{{ID: "spark-1", User: "alice", Source: "history:main",
		Driver: &DriverRecord{Source: "kubernetes:b/drv", User: "alice"}}}))
	if got := d.AppPods("spark-1"); len(got) != 0 {
		t.Errorf("AppPods(spark-1) of a driver found in namespace b = %v; want none (its pods are in a)", got)
	}
	d.reg.Store(NewSnapshot(nil))
	if got := d.AppPods("spark-1"); len(got) != 0 {
		t.Errorf("AppPods(spark-1) with no app of that id = %v; want none", got)
	}
	// The executors' cache holds trimmed pods.
	for _, inf := range k.execs {
		for _, obj := range inf.GetStore().List() {
			if p := obj.(*corev1.Pod); p.Status.PodIP != "" || p.Spec.Containers[0].Image != "" {
				t.Errorf("executor pod %s cached untrimmed: %+v", p.Name, p)
			}
		}
	}

	rc, err := k.podLog(ctx, want[1], PodLogOptions{Container: "spark-kubernetes-executor", TailLines: 100, LimitBytes: 4096, Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	_ = rc.Close()
	if string(b) != "fake logs" {
		t.Errorf("log = %q", b)
	}
	var logs []k8stesting.GenericAction
	for _, a := range cs.Actions() {
		if a.GetSubresource() == "log" {
			logs = append(logs, a.(k8stesting.GenericAction))
		}
	}
	if len(logs) != 1 || logs[0].GetNamespace() != "a" || logs[0].GetVerb() != "get" {
		t.Fatalf("log requests = %+v; want one get in namespace a", logs)
	}
	o := logs[0].GetValue().(*corev1.PodLogOptions)
	if o.Container != "spark-kubernetes-executor" || o.TailLines == nil || *o.TailLines != 100 || o.LimitBytes == nil || *o.LimitBytes != 4096 || !o.Follow || o.Timestamps {
		t.Errorf("log options = %+v", o)
	}
	rc, err = k.podLog(ctx, want[0], PodLogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = rc.Close()
	last := cs.Actions()[len(cs.Actions())-1].(k8stesting.GenericAction)
	if o := last.GetValue().(*corev1.PodLogOptions); o.TailLines != nil || o.LimitBytes != nil || o.Follow {
		t.Errorf("log options without limits = %+v", o)
	}
}

// TestInNamespace: an app's pods are those in its driver's namespace, as
// discovery found the driver, or as its driver pods agree; anyone who may
// create pods elsewhere can label them with the app's id.
func TestInNamespace(t *testing.T) {
	t.Parallel()
	pods := []Pod{
		{Namespace: "team", Name: "drv", ExecID: "driver"},
		{Namespace: "aaa", Name: "fake-exec-1", ExecID: "1"},
		{Namespace: "team", Name: "exec-1", ExecID: "1"},
	}
	names := func(ps []Pod) (out []string) {
		for _, p := range ps {
			out = append(out, p.Namespace+"/"+p.Name)
		}
		return out
	}
	if got := names(inNamespace(slices.Clone(pods), "team")); !slices.Equal(got, []string{"team/drv", "team/exec-1"}) {
		t.Errorf("in the driver's namespace: %v", got)
	}
	if got := inNamespace(slices.Clone(pods), ""); len(got) != 0 {
		t.Errorf("in no namespace: %v; want none", names(got))
	}
	two := append(slices.Clone(pods), Pod{Namespace: "aaa", Name: "fake-drv", ExecID: "driver"})
	if got := names(inNamespace(slices.Clone(two), "team")); !slices.Equal(got, []string{"team/drv", "team/exec-1"}) {
		t.Errorf("driver pods in two namespaces, the driver found in team: %v", got)
	}
}
