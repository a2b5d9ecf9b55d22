package discovery

import (
	"context"
	"errors"
	"fmt"
	lru "github.com/hashicorp/golang-lru/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
)

// Labels and names Spark on Kubernetes and the Spark operator use.
const (
	labelSparkRole  = "spark-role"
	labelAppID      = "spark-app-selector" // Spark sets it to the app id
	uiPortName      = "spark-ui"
	driverRole      = "driver"
	sparkAppGroup   = "sparkoperator.k8s.io"
	sparkAppVersion = "v1beta2"
	sparkAppPlural  = "sparkapplications"
	// kubeErrorHold is how long a failed list or watch keeps the source
	// reported down: the reflector retries with a backoff of up to 30 s
	// and reports every failure, and says nothing when it recovers.
	kubeErrorHold = 35 * time.Second
	// crdRecheck is how often the SparkApplication API is looked for
	// while it is not installed.
	crdRecheck = time.Minute
	// kubeSyncWait bounds how long a round waits for the first list.
	kubeSyncWait = 10 * time.Second
)

var sparkAppGVR = schema.GroupVersionResource{Group: sparkAppGroup, Version: sparkAppVersion, Resource: sparkAppPlural}

// kubeSource watches driver pods (and, where the Spark operator's CRD is
// installed, SparkApplications) with client-go informers: one list, then a
// watch, per namespace or for all namespaces. Changes are pushed to the
// discoverer as they happen; each round the poll side reads the informers'
// caches, which costs no API request.
type kubeSource struct {
	cfg      KubernetesSource
	rest     *rest.Config
	selector labels.Selector
	log      *zap.Logger
	// clients makes the API clients; tests replace it.
	clients func() (kubernetes.Interface, dynamic.Interface, error)

	mu    sync.Mutex
	pods  []cache.SharedIndexInformer // set by run
	execs []cache.SharedIndexInformer // executor pods, set by run
	cs    kubernetes.Interface        // set by run
	// logCS serves pod logs: a client of its own, with its own client-side
	// rate limit, so that users asking for logs at will never hold back
	// discovery's lists and watches; nil: cs serves them (tests' fakes).
	logCS    kubernetes.Interface
	apps     []cache.SharedIndexInformer // SparkApplication informers, once found
	errAt    time.Time
	err      error
	netErr   error                 // the last request's network error, nil once one answers
	clusters map[string]clusterApp // SparkApplications by namespace/name
	// runs remembers the SparkApplication each app id ran under: once the
	// operator starts the next run, the status names that one, and the
	// earlier runs (ended, still listed) keep their name and namespace,
	// which their by-name links and owners are made of.
	runs *lru.Cache[string, clusterApp]
	now  func() time.Time
}

// maxRuns bounds kubeSource.runs: the runs a History Server may still list.
const maxRuns = 16384

// clusterApp is what the Spark operator says about one SparkApplication.
type clusterApp struct {
	namespace, name string
	state           string // status.applicationState.state, e.g. RUNNING, COMPLETED
	appID           string // status.sparkApplicationId
	driverPod       string // status.driverInfo.podName
}

var klogOnce sync.Once

func newKubeSource(cfg KubernetesSource, logger *zap.Logger) (*kubeSource, error) {
	if logger == nil {
		logger = zap.NewNop()
	}
	rc, err := kubeRESTConfig(cfg)
	if err != nil {
		return nil, err
	}
	sel, err := driverSelector(cfg.LabelSelector)
	if err != nil {
		return nil, err
	}
	// client-go logs through klog; its errors reach our log through the
	// watch error handlers instead.
	klogOnce.Do(func() { klog.SetLogger(logr.Discard()) })
	runs, _ := lru.New[string, clusterApp](maxRuns) // fails only for a size under 1
	k := &kubeSource{cfg: cfg, rest: rc, selector: sel, log: logger, clusters: map[string]clusterApp{}, runs: runs, now: time.Now}
	// The reflector retries a refused watch quietly; the transport sees it.
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &netHealth{next: rt, k: k} })
	k.clients = func() (kubernetes.Interface, dynamic.Interface, error) {
		cs, err := kubernetes.NewForConfig(k.rest)
		if err != nil {
			return nil, nil, err
		}
		logCS, err := kubernetes.NewForConfig(k.rest) // its own rate limiter
		if err != nil {
			return nil, nil, err
		}
		k.mu.Lock()
		k.logCS = logCS
		k.mu.Unlock()
		dyn, err := dynamic.NewForConfig(k.rest)
		return cs, dyn, err
	}
	return k, nil
}

// driverSelector is spark-role=driver and the configured selector.
func driverSelector(s string) (labels.Selector, error) {
	sel, err := labels.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("kubernetes label_selector: %w", err)
	}
	role, err := labels.NewRequirement(labelSparkRole, "=", []string{driverRole})
	if err != nil {
		return nil, fmt.Errorf("kubernetes label_selector: %w", err)
	}
	reqs, _ := sel.Requirements()
	for _, r := range reqs {
		if r.Key() == labelSparkRole {
			return sel, nil // the operator said what it wants
		}
	}
	return sel.Add(*role), nil
}

// kubeRESTConfig builds the client configuration: a kubeconfig file when
// one is configured, else the API server URL, token file and CA file (the
// in-cluster defaults). The token file is re-read by client-go, so
// projected tokens that rotate keep working.
func kubeRESTConfig(cfg KubernetesSource) (*rest.Config, error) {
	var rc *rest.Config
	if cfg.Kubeconfig != "" {
		var err error
		rc, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
			&clientcmd.ClientConfigLoadingRules{ExplicitPath: cfg.Kubeconfig},
			&clientcmd.ConfigOverrides{CurrentContext: cfg.Context}).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("kubernetes kubeconfig %s: %w", cfg.Kubeconfig, err)
		}
	} else {
		base, err := parseRootURL(cfg.APIServer)
		if err != nil {
			return nil, fmt.Errorf("kubernetes api server: %w", err)
		}
		rc = &rest.Config{Host: base.String()}
		if cfg.TokenFile != "" {
			if _, err := os.Stat(cfg.TokenFile); err == nil {
				rc.BearerTokenFile = cfg.TokenFile
			} else if !errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("kubernetes token_file: %w", err)
			}
		}
		if cfg.CAFile != "" {
			_, err := os.Stat(cfg.CAFile)
			switch {
			case err == nil:
				rc.CAFile = cfg.CAFile
			case errors.Is(err, os.ErrNotExist) && base.Scheme == "http":
				// Plain HTTP (kubectl proxy, tests): no CA needed.
			default:
				return nil, fmt.Errorf("kubernetes ca_file: %w", err)
			}
		}
	}
	rc.UserAgent = "sparkgate"
	rc.QPS, rc.Burst = 20, 40
	return rc, nil
}

func (k *kubeSource) name() string { return "kubernetes" }

func (k *kubeSource) namespaces() []string {
	if len(k.cfg.Namespaces) == 0 {
		return []string{metav1.NamespaceAll}
	}
	return k.cfg.Namespaces
}

// watchFailed records a failed list or watch for the source's health.
func (k *kubeSource) watchFailed(what string) cache.WatchErrorHandlerWithContext {
	return func(_ context.Context, _ *cache.Reflector, err error) {
		k.mu.Lock()
		k.err, k.errAt = fmt.Errorf("%s: %w", what, err), k.now()
		k.mu.Unlock()
		if !errors.Is(err, context.Canceled) {
			k.log.Warn("kubernetes watch failed", zap.String("watch", what), zap.Error(err))
		}
	}
}

// run starts the informers and pushes every change until ctx is done.
func (k *kubeSource) run(ctx context.Context, push func(pushed)) {
	cs, dyn, err := k.clients()
	if err != nil {
		k.watchFailed("client")(ctx, nil, err)
		return
	}
	var pods []cache.SharedIndexInformer
	for _, ns := range k.namespaces() {
		f := informers.NewSharedInformerFactoryWithOptions(cs, time.Duration(k.cfg.Resync),
			informers.WithNamespace(ns),
			informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = k.selector.String() }),
			informers.WithTransform(trimDriverPod))
		inf := f.Core().V1().Pods().Informer()
		what := "pods in namespace " + ns
		if ns == metav1.NamespaceAll {
			what = "pods in all namespaces"
		}
		_ = inf.SetWatchErrorHandlerWithContext(k.watchFailed(what))
		_ = inf.AddIndexers(cache.Indexers{appIndex: appIndexFunc})
		_, _ = inf.AddEventHandler(k.podHandler(push))
		pods = append(pods, inf)
	}
	execs := k.executorInformers(cs)
	k.mu.Lock()
	k.pods, k.execs, k.cs = pods, execs, cs
	k.mu.Unlock()
	for _, inf := range append(pods, execs...) {
		go inf.RunWithContext(ctx)
	}
	if k.cfg.SparkApplications != "off" {
		k.watchSparkApps(ctx, cs.Discovery(), dyn, push)
	}
	<-ctx.Done()
}

// podHandler turns pod events into candidates offered at once and ends
// pushed at once.
func (k *kubeSource) podHandler(push func(pushed)) cache.ResourceEventHandler {
	seen := func(obj any) {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		if c, ok := podCandidate(pod); ok {
			push(pushed{c: c})
			return
		}
		if c, ok := podURL(pod); ok && podFinished(pod) {
			push(pushed{c: c, gone: true, reason: "driver pod " + pod.Namespace + "/" + pod.Name + " is " + string(pod.Status.Phase)})
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: seen,
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*corev1.Pod)
			n, ok2 := newObj.(*corev1.Pod)
			if !ok1 || !ok2 {
				return
			}
			oc, wasUp := podCandidate(o)
			nc, isUp := podCandidate(n)
			if wasUp && (!isUp || nc.key() != oc.key()) {
				// Failed, Succeeded, being deleted, or moved: the old
				// address ends now.
				push(pushed{c: oc, gone: true, reason: "driver pod " + n.Namespace + "/" + n.Name + " is " + podState(n)})
			}
			if isUp || !wasUp {
				seen(n)
			}
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			pod, ok := obj.(*corev1.Pod)
			if !ok {
				return
			}
			if c, ok := podURL(pod); ok {
				push(pushed{c: c, gone: true, reason: "driver pod " + pod.Namespace + "/" + pod.Name + " deleted"})
			}
		},
	}
}

func podState(p *corev1.Pod) string {
	if p.DeletionTimestamp != nil {
		return "being deleted"
	}
	return string(p.Status.Phase)
}

func podFinished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded || p.DeletionTimestamp != nil
}

// podURL is the driver UI a pod serves or served: http://<podIP>:<the
// container port named spark-ui>.
func podURL(p *corev1.Pod) (candidate, bool) {
	ip := net.ParseIP(p.Status.PodIP)
	if ip == nil {
		return candidate{}, false
	}
	port := 0
	for _, c := range p.Spec.Containers {
		for _, cp := range c.Ports {
			if cp.Name == uiPortName && cp.ContainerPort > 0 && cp.ContainerPort < 65536 {
				port = int(cp.ContainerPort)
			}
		}
	}
	if port == 0 {
		return candidate{}, false
	}
	u, err := rootURL(&url.URL{Scheme: "http", Host: net.JoinHostPort(ip.String(), strconv.Itoa(port))})
	if err != nil {
		return candidate{}, false
	}
	return candidate{
		url:    u,
		source: "kubernetes:" + p.Namespace + "/" + p.Name,
		appID:  p.Labels[labelAppID],
	}, true
}

// podCandidate is a running driver pod's UI.
func podCandidate(p *corev1.Pod) (candidate, bool) {
	if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
		return candidate{}, false
	}
	return podURL(p)
}

// candidates lists the running driver pods in the informers' caches. An
// error says the source cannot be trusted to be current: not synced yet,
// or a list or watch failed recently.
func (k *kubeSource) candidates(ctx context.Context) ([]candidate, error) {
	// The first round waits a little for the first list, so that
	// readiness means the pods were seen.
	deadline := time.Now().Add(kubeSyncWait)
	for !k.synced() && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	k.mu.Lock()
	pods := k.pods
	err, errAt := k.err, k.errAt
	k.mu.Unlock()
	var out []candidate
	synced := k.synced()
	for _, inf := range pods {
		for _, obj := range inf.GetStore().List() {
			if p, ok := obj.(*corev1.Pod); ok {
				if c, ok := podCandidate(p); ok {
					out = append(out, c)
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b candidate) int { return strings.Compare(a.key(), b.key()) })
	k.mu.Lock()
	netErr := k.netErr
	k.mu.Unlock()
	switch {
	case netErr != nil:
		return out, fmt.Errorf("kubernetes api server: %w", netErr)
	case err != nil && k.now().Sub(errAt) < kubeErrorHold:
		return out, err
	case !synced:
		return out, errors.New("kubernetes: pod list not synced yet")
	}
	return out, nil
}

// synced reports whether every pod informer has listed once.
func (k *kubeSource) synced() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, inf := range k.pods {
		if !inf.HasSynced() {
			return false
		}
	}
	return len(k.pods) > 0
}

// watchSparkApps starts a SparkApplication informer per namespace once the
// API server serves the operator's CRD, looking again every crdRecheck.
func (k *kubeSource) watchSparkApps(ctx context.Context, disc discovery.DiscoveryInterface, dyn dynamic.Interface, push func(pushed)) {
	for {
		ok, err := servesSparkApps(disc)
		if err != nil {
			k.log.Debug("looking for the SparkApplication API", zap.Error(err))
		}
		if ok {
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(crdRecheck):
		}
	}
	k.log.Info("watching SparkApplications", zap.Strings("namespaces", k.cfg.Namespaces))
	var infs []cache.SharedIndexInformer
	for _, ns := range k.namespaces() {
		f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, time.Duration(k.cfg.Resync), ns, nil)
		inf := f.ForResource(sparkAppGVR).Informer()
		_ = inf.SetWatchErrorHandlerWithContext(k.watchFailed("sparkapplications in namespace " + ns))
		_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { k.onSparkApp(obj, false, push) },
			UpdateFunc: func(_, obj any) { k.onSparkApp(obj, false, push) },
			DeleteFunc: func(obj any) { k.onSparkApp(obj, true, push) },
		})
		infs = append(infs, inf)
		go inf.RunWithContext(ctx)
	}
	k.mu.Lock()
	k.apps = infs
	k.mu.Unlock()
}

// servesSparkApps reports whether the API server has the SparkApplication
// resource.
func servesSparkApps(disc discovery.DiscoveryInterface) (bool, error) {
	rl, err := disc.ServerResourcesForGroupVersion(sparkAppGroup + "/" + sparkAppVersion)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, r := range rl.APIResources {
		if r.Name == sparkAppPlural {
			return true, nil
		}
	}
	return false, nil
}

func (k *kubeSource) onSparkApp(obj any, deleted bool, push func(pushed)) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	ca := clusterApp{namespace: u.GetNamespace(), name: u.GetName()}
	ca.state, _, _ = unstructured.NestedString(u.Object, "status", "applicationState", "state")
	ca.appID, _, _ = unstructured.NestedString(u.Object, "status", "sparkApplicationId")
	ca.driverPod, _, _ = unstructured.NestedString(u.Object, "status", "driverInfo", "podName")
	key := ca.namespace + "/" + ca.name
	k.mu.Lock()
	old, had := k.clusters[key]
	if deleted {
		delete(k.clusters, key)
	} else {
		k.clusters[key] = ca
	}
	k.mu.Unlock()
	if deleted || !had || old != ca {
		push(pushed{}) // republish: names and states on the index
	}
}

// clusterAppFor finds the SparkApplication of an app: by the id in its
// status, else by its driver pod's spark-app-selector label, else (an
// earlier run, the status naming a later one) the one it was found under
// before, with no state: the SparkApplication's is its latest run's.
//
// An app found as a driver pod belongs to a SparkApplication of the pod's
// namespace only: another namespace's, whose status or label names the
// app's id, is anyone's who may edit there. Only such a match, checked by
// the pod's namespace, is remembered, and the memory serves only that
// app's own records (its pod's, or a History Server's once it has
// ended), never a driver found otherwise that reports the id.
func (k *kubeSource) clusterAppFor(a *App) (clusterApp, bool) {
	podNS := podNamespace(a.Source)
	fits := func(ca clusterApp) bool { return podNS == "" || ca.namespace == podNS }
	remember := func(ca clusterApp) {
		if podNS != "" {
			k.runs.Add(a.ID, ca)
		}
	}
	hist := strings.HasPrefix(a.Source, "history:")
	k.mu.Lock()
	defer k.mu.Unlock()
	if ca, ok := k.runs.Get(a.ID); ok && hist {
		// A finished app whose driver pod was seen stays its pod's
		// namespace's: a SparkApplication of another namespace that names
		// its id now (the operator copies the driver pod's label, which
		// anyone who may edit pods there may set) takes nothing over.
		if cur, ok := k.clusters[ca.namespace+"/"+ca.name]; ok && cur.appID == a.ID {
			return cur, true
		}
		ca.state = ""
		return ca, true
	}
	for _, ca := range k.clusters {
		if ca.appID == a.ID && fits(ca) {
			remember(ca)
			return ca, true
		}
	}
	for _, ca := range k.clusters {
		if ca.appID != "" || ca.driverPod == "" || !fits(ca) {
			continue
		}
		for _, inf := range k.pods {
			obj, ok, _ := inf.GetStore().GetByKey(ca.namespace + "/" + ca.driverPod)
			if p, isPod := obj.(*corev1.Pod); ok && isPod && p.Labels[labelAppID] == a.ID {
				remember(ca)
				return ca, true
			}
		}
	}
	if ca, ok := k.runs.Get(a.ID); ok && podNS != "" && fits(ca) {
		ca.state = ""
		return ca, true
	}
	return clusterApp{}, false
}

// podNamespace is the namespace of the driver pod an app was found as
// (source "kubernetes:<namespace>/<pod>"); "" for any other source.
func podNamespace(source string) string {
	rest, ok := strings.CutPrefix(source, "kubernetes:")
	if !ok {
		return ""
	}
	ns, _, _ := strings.Cut(rest, "/")
	return ns
}

// annotate sets an app's ClusterName and ClusterState from its
// SparkApplication, when there is one.
func (d *Discoverer) annotate(a *App) {
	if d.kube == nil {
		return
	}
	if ca, ok := d.kube.clusterAppFor(a); ok {
		a.ClusterName = ca.namespace + "/" + ca.name
		a.ClusterState = ca.state
	}
}

// startPushes runs every push source in a worker; its changes reach Run's
// goroutine through d.events.
func (d *Discoverer) startPushes(ctx context.Context, workers *sync.WaitGroup) {
	for _, s := range d.polls {
		ps, ok := s.(pushSource)
		if !ok {
			continue
		}
		workers.Add(1)
		go func() {
			defer workers.Done()
			ps.run(ctx, func(p pushed) { d.send(ctx, func() { d.onPushed(p) }) })
		}()
	}
}

// onPushed handles one pushed change: a candidate is verified now (fresh
// evidence beats backoff); a gone candidate ends its app now, so its
// bookmark goes to the History Server.
func (d *Discoverer) onPushed(p pushed) {
	d.dirty = true
	if p.c.url == nil {
		d.histStale = true // news of a SparkApplication may annotate history apps
		return
	}
	key := p.c.key()
	t := d.targets[key]
	if p.gone {
		if t == nil {
			return
		}
		if a := d.apps[t.appID]; a != nil && (a.key != key || a.app.Source != p.c.source) {
			// Not this pod's app: another driver this address was taken
			// for (a second address: a driver found first by the service
			// name its log gives), or another pod's or source's app at the
			// IP this one had. Its liveness check, now, ends it if its
			// driver was this pod (on the first refused connection).
			if a.key != key {
				t.appID = ""
			}
			d.checkApp(a.app.ID, true)
			return
		}
		if t.appID != "" {
			// The target stays (until it idles out) to remember when its
			// app ended: an offer read before then, held up in a poll,
			// vouches for nothing at the pod's address (target.credit).
			d.endApp(t.appID, p.reason)
			return
		}
		if !t.verifying && t.endedAt.IsZero() {
			// A target where an app ended stays too (a pod's delete
			// follows its Succeeded or being-deleted update).
			delete(d.targets, key)
		}
		return
	}
	if t != nil && t.appID == "" {
		t.retryAt = time.Time{}
	}
	d.offer(p.c)
}

// netHealth records whether the API server answers at all: a request that
// fails in the network marks the source down until one gets an answer.
type netHealth struct {
	next http.RoundTripper
	k    *kubeSource
}

func (n *netHealth) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := n.next.RoundTrip(r)
	if err != nil && r.Context().Err() != nil {
		return resp, err // cancelled by us, not the server's fault
	}
	n.k.mu.Lock()
	n.k.netErr = err
	n.k.mu.Unlock()
	return resp, err
}
