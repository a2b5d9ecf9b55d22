package discovery

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Labels of executor pods, and the informers' index by app.
const (
	executorRole = "executor"
	labelExecID  = "spark-exec-id" // Spark sets it on executor pods
	appIndex     = "spark-app"
)

// Pod is one pod of an app as the Kubernetes source's caches hold it: the
// driver pod or an executor pod, found by its spark-app-selector label.
type Pod struct {
	Namespace, Name string
	// ExecID is the Spark executor id the pod runs: "driver" for the
	// driver pod, the spark-exec-id label for an executor pod.
	ExecID string
	// Containers are the pod's containers, Spark's own first.
	Containers []string
	Phase      string
}

// PodLogOptions is what a pods/log request asks for; zero values ask for
// nothing (the whole log, no follow).
type PodLogOptions struct {
	Container  string
	TailLines  int64 // the last lines only; 0: from the start
	LimitBytes int64 // at most this many bytes; 0: no limit
	Follow     bool
	Timestamps bool
	Previous   bool // the previous, terminated instance of the container
}

// ErrNoKubernetes says no Kubernetes source is configured.
var ErrNoKubernetes = errors.New("no kubernetes source")

// sparkContainers are the container names Spark on Kubernetes gives its
// driver and executors.
var sparkContainers = []string{"spark-kubernetes-driver", "spark-kubernetes-executor"}

// appIndexFunc indexes pods by their spark-app-selector label.
func appIndexFunc(obj any) ([]string, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok || p.Labels[labelAppID] == "" {
		return nil, nil
	}
	return []string{p.Labels[labelAppID]}, nil
}

// trimPod keeps what discovery and pod logs read of a pod, so that a cache
// of many executor pods stays small.
func trimPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	t := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: p.Name, Namespace: p.Namespace, UID: p.UID, Labels: sparkLabels(p.Labels),
		ResourceVersion: p.ResourceVersion, DeletionTimestamp: p.DeletionTimestamp,
	}}
	t.Spec.NodeName = p.Spec.NodeName
	for _, c := range p.Spec.Containers {
		t.Spec.Containers = append(t.Spec.Containers, corev1.Container{Name: c.Name})
	}
	t.Status.Phase = p.Status.Phase
	return t, nil
}

// trimDriverPod keeps what discovery (podURL) and pod logs read of a
// driver pod: any user may create pods labelled spark-role=driver, each up
// to the API server's object size, so the cache must not hold them whole.
func trimDriverPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	t, _ := trimPod(p)
	tp := t.(*corev1.Pod)
	for i, c := range p.Spec.Containers {
		for _, cp := range c.Ports {
			if cp.Name == uiPortName {
				tp.Spec.Containers[i].Ports = append(tp.Spec.Containers[i].Ports, corev1.ContainerPort{Name: cp.Name, ContainerPort: cp.ContainerPort})
			}
		}
	}
	tp.Status.PodIP = p.Status.PodIP
	return tp, nil
}

// sparkLabels keeps the labels discovery and pod logs read.
func sparkLabels(l map[string]string) map[string]string {
	var out map[string]string
	for _, k := range []string{labelSparkRole, labelAppID, labelExecID} {
		if v, ok := l[k]; ok {
			if out == nil {
				out = make(map[string]string, 3)
			}
			out[k] = v
		}
	}
	return out
}

// executorInformers makes one informer of executor pods per watched
// namespace (spark-role=executor), indexed by app, holding trimmed pods.
func (k *kubeSource) executorInformers(cs kubernetes.Interface) []cache.SharedIndexInformer {
	var out []cache.SharedIndexInformer
	for _, ns := range k.namespaces() {
		f := informers.NewSharedInformerFactoryWithOptions(cs, 0,
			informers.WithNamespace(ns),
			informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = labelSparkRole + "=" + executorRole }),
			informers.WithTransform(trimPod))
		inf := f.Core().V1().Pods().Informer()
		_ = inf.AddIndexers(cache.Indexers{appIndex: appIndexFunc})
		what := "executor pods in namespace " + ns
		if ns == metav1.NamespaceAll {
			what = "executor pods in all namespaces"
		}
		_ = inf.SetWatchErrorHandlerWithContext(k.watchFailed(what))
		out = append(out, inf)
	}
	return out
}

// appPods lists the pods labelled with the app's id in the caches: driver
// pods first, then executor pods by executor id.
func (k *kubeSource) appPods(appID string) []Pod {
	k.mu.Lock()
	infs := append(append([]cache.SharedIndexInformer(nil), k.pods...), k.execs...)
	k.mu.Unlock()
	var out []Pod
	seen := map[string]bool{}
	for _, inf := range infs {
		objs, err := inf.GetIndexer().ByIndex(appIndex, appID)
		if err != nil {
			continue
		}
		for _, obj := range objs {
			p, ok := obj.(*corev1.Pod)
			if !ok || p.Labels[labelAppID] != appID || seen[p.Namespace+"/"+p.Name] {
				continue
			}
			var id string
			switch p.Labels[labelSparkRole] {
			case driverRole:
				id = "driver"
			case executorRole:
				id = p.Labels[labelExecID]
			default:
				continue
			}
			seen[p.Namespace+"/"+p.Name] = true
			out = append(out, Pod{Namespace: p.Namespace, Name: p.Name, ExecID: id, Containers: containerNames(p), Phase: string(p.Status.Phase)})
		}
	}
	slices.SortStableFunc(out, func(a, b Pod) int {
		if (a.ExecID == "driver") != (b.ExecID == "driver") {
			if a.ExecID == "driver" {
				return -1
			}
			return 1
		}
		an, aerr := strconv.Atoi(a.ExecID)
		bn, berr := strconv.Atoi(b.ExecID)
		if aerr == nil && berr == nil && an != bn {
			return cmp.Compare(an, bn)
		}
		return cmp.Or(cmp.Compare(a.ExecID, b.ExecID), cmp.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name))
	})
	return out
}

// containerNames lists a pod's containers, Spark's own first.
func containerNames(p *corev1.Pod) []string {
	var spark, others []string
	for _, c := range p.Spec.Containers {
		if slices.Contains(sparkContainers, c.Name) {
			spark = append(spark, c.Name)
		} else {
			others = append(others, c.Name)
		}
	}
	return append(spark, others...)
}

// podLog opens a pod's log through the API server's pods/log.
func (k *kubeSource) podLog(ctx context.Context, p Pod, o PodLogOptions) (io.ReadCloser, error) {
	k.mu.Lock()
	cs := k.cs
	if k.logCS != nil {
		cs = k.logCS
	}
	k.mu.Unlock()
	if cs == nil {
		return nil, errors.New("kubernetes: not connected yet")
	}
	lo := &corev1.PodLogOptions{Container: o.Container, Follow: o.Follow, Timestamps: o.Timestamps, Previous: o.Previous}
	if o.TailLines > 0 {
		lo.TailLines = &o.TailLines
	}
	if o.LimitBytes > 0 {
		lo.LimitBytes = &o.LimitBytes
	}
	rc, err := cs.CoreV1().Pods(p.Namespace).GetLogs(p.Name, lo).Stream(ctx)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: log of pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	return rc, nil
}

// AppPods lists an app's driver and executor pods as the Kubernetes
// source's caches hold them (no API request); none without the source.
//
// The label that names a pod's app is anyone's to set who may create a
// pod in a watched namespace: only the pods in the namespace of the app's
// driver are its own, the one where the Kubernetes source found the driver
// it verified (live, or ended: App.Driver). An app that another source
// found (a probe, a log line, a static entry), or that only a History
// Server knows (an event log may be anyone's), has none.
func (d *Discoverer) AppPods(appID string) []Pod {
	if d.kube == nil {
		return nil
	}
	a, ok := d.reg.Load().Lookup(appID)
	if !ok {
		return nil
	}
	source := a.Source
	if a.Driver != nil {
		source = a.Driver.Source
	}
	rest, kube := strings.CutPrefix(source, "kubernetes:")
	if !kube {
		return nil
	}
	ns, _, _ := strings.Cut(rest, "/")
	return inNamespace(d.kube.appPods(appID), ns)
}

// inNamespace keeps the pods in namespace ns (none if ns is "").
func inNamespace(pods []Pod, ns string) []Pod {
	out := pods[:0]
	for _, p := range pods {
		if ns != "" && p.Namespace == ns {
			out = append(out, p)
		}
	}
	return out
}

// PodLog opens the log of one of an app's pods (a Pod AppPods returned)
// through the API server.
func (d *Discoverer) PodLog(ctx context.Context, p Pod, o PodLogOptions) (io.ReadCloser, error) {
	if d.kube == nil {
		return nil, ErrNoKubernetes
	}
	return d.kube.podLog(ctx, p, o)
}

// HasKubernetes reports whether a Kubernetes source is configured.
func (d *Discoverer) HasKubernetes() bool { return d.kube != nil }
