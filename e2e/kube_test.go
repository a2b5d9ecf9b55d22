//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

var (
	sparkAppGVR = schema.GroupVersionResource{Group: "sparkoperator.k8s.io", Version: "v1beta2", Resource: "sparkapplications"}
	crdGVR      = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// The chart's release in the test: its ServiceAccount is the gateway's
// identity, and the watched namespaces get Roles and NetworkPolicies.
const (
	kubeRelease   = "sg"
	kubeGatewayNS = "sparkgate"
	kubeGatewaySA = "sg-sparkgate"
)

var kubeWatched = []string{"spark-a", "spark-b"}

// kubeNode is the Node the driver pods run on: the stand-in kubelet.
// kubeViewer is the gateway's user, the one the drivers let view.
const (
	kubeNode   = "e2e-node"
	kubeViewer = "kube-viewer"
)

// kubeLogEnv is what the pod-log checks need besides the main gateway.
type kubeLogEnv struct {
	kubelet   *StandInKubelet
	outGW     *Gateway     // signed in as a user without the apps' view ACL
	outClient *http.Client // its session
}

// kubeInterval is the gateway's poll interval in the test: long enough that
// a pod routable well within it was found by the watch, not a poll.
const kubeInterval = 5 * time.Second

// TestKubernetes runs etcd and a real kube-apiserver on loopback (no
// kubelet): it applies the Helm chart's manifests and the plain ones with
// server-side apply, runs the gateway with the token of the chart's
// ServiceAccount, and makes one driver pod per Spark version (3.5 and the
// newest 4.x) stand for a real local driver: the pod's spark-ui port is
// the driver's UI port and its status is patched Running at 127.0.0.1.
// The gateway must list each app as soon as its pod runs, serve it
// cleanly, refuse kills, send its bookmark to the History Server as soon
// as the pod is deleted, and show the SparkApplication's name and state.
func TestKubernetes(t *testing.T) {
	s := newSuite(t)
	s.requireGateway(t)
	if err := KubeInstalled(); err != nil {
		t.Fatal(err)
	}
	homes := kubeHomes(t, s.sparkHomes(t))
	ctx := ctxFor(t, 20*time.Minute)
	dir := s.freshDir(t, "kubernetes")
	gwUser := "system:serviceaccount:" + kubeGatewayNS + ":" + kubeGatewaySA
	kubelet, err := StartStandInKubelet(filepath.Join(dir, "kubelet"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kubelet.Stop)
	t0 := time.Now()
	k, err := StartKubeAPI(ctx, filepath.Join(dir, "kube"), []string{gwUser}, kubelet.APIServerArgs()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Stop)
	t.Logf("etcd and kube-apiserver %s ready in %v", kubeVersion, time.Since(t0).Round(time.Millisecond))
	for _, ns := range append([]string{kubeGatewayNS, "spark", "other"}, kubeWatched...) {
		if _, err := k.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := kubelet.CreateNode(ctx, k, kubeNode); err != nil {
		t.Fatal(err)
	}
	crd, err := os.ReadFile(filepath.Join(s.root, "e2e", "kube", "sparkapplications-crd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.ApplyYAML(ctx, crd, "e2e"); err != nil {
		t.Fatal(err)
	}
	waitCRD(ctx, t, k, "sparkapplications.sparkoperator.k8s.io")

	t.Run("manifests", func(t *testing.T) { checkManifests(ctx, t, k, s.root, s.gwBin, dir) })
	if t.Failed() {
		t.FailNow()
	}
	gwCfg := serviceAccountConfig(ctx, t, k, filepath.Join(dir, "token"))
	t.Run("rbac", func(t *testing.T) { checkRBAC(ctx, t, gwCfg) })

	events := filepath.Join(dir, "events")
	if err := mkdir(events); err != nil {
		t.Fatal(err)
	}
	hs, err := StartHistoryServer(ctx, s.root, homes[len(homes)-1], events, filepath.Join(dir, "history"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hs.Stop() })
	gwDir := filepath.Join(dir, "gateway")
	if err := mkdir(gwDir); err != nil {
		t.Fatal(err)
	}
	gwStart := time.Now()
	kubeDiscovery := map[string]any{
		"interval": kubeInterval.String(),
		"kubernetes": map[string]any{
			"api_server": k.URL, "token_file": filepath.Join(dir, "token"), "ca_file": k.CAFile,
			"namespaces": kubeWatched,
		},
		"history": []any{map[string]any{"name": "local", "url": hs.URL}},
	}
	// The gateway's user is the drivers' one viewer (spark.ui.view.acls);
	// a second gateway on the same cluster signs in someone else.
	gw, client := s.localGateway(ctx, t, gwDir, GatewayOptions{Discovery: kubeDiscovery,
		Auth: map[string]any{"mode": "local", "local": map[string]any{"user": kubeViewer}}})
	outDir := filepath.Join(dir, "gateway-outsider")
	if err := mkdir(outDir); err != nil {
		t.Fatal(err)
	}
	// It says "403" where the main one would say "no such app" (reveal_denied).
	outGW, outClient := s.localGateway(ctx, t, outDir, GatewayOptions{Discovery: kubeDiscovery,
		Auth:  map[string]any{"mode": "local", "local": map[string]any{"user": "kube-outsider"}},
		Proxy: map[string]any{"kill": "deny", "reveal_denied": true}})
	env := &kubeLogEnv{kubelet: kubelet, outGW: outGW, outClient: outClient}
	for deadline := time.Now().Add(3 * kubeInterval); ; {
		up, err := gw.Metric(ctx, "sparkgate_discovery_source_up", `source="kubernetes"`)
		if err == nil && up == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("sparkgate_discovery_source_up{source=kubernetes} = %v (%v); want 1 (the ServiceAccount may list and watch pods)\n%s", up, err, gw.Watch.Tail(20))
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	var firstPod time.Time // when the first pod was created
	for i, home := range homes {
		ns := kubeWatched[i%len(kubeWatched)]
		t.Run(home.Version, func(t *testing.T) { s.runKubeDriver(t, k, gw, client, hs, home, ns, events, dir, &firstPod, env) })
	}
	reqs, err := k.AuditRequests(gwUser, gwStart)
	if err != nil {
		t.Fatal(err)
	}
	mins := time.Since(gwStart).Minutes()
	verbs := map[string]int{}
	afterPods := 0
	for _, r := range reqs {
		verbs[r.Verb]++
		if !firstPod.IsZero() && r.Received.After(firstPod) {
			afterPods++
		}
	}
	t.Logf("of which %d after the first driver pod was created (pods created, patched and deleted, SparkApplications changed: all seen through the open watches)", afterPods)
	t.Logf("API-server requests by the gateway's ServiceAccount: %d in %.1f min = %.1f/min (by verb %v), with %d apps discovered",
		len(reqs), mins, float64(len(reqs))/mins, verbs, len(homes))
	_ = RecordFigure(s.outDir, "kube_apiserver_requests_per_minute", fmt.Sprintf("%.1f", float64(len(reqs))/mins))
	if len(reqs) == 0 {
		t.Error("the audit log has no request by the gateway's ServiceAccount")
	}
	for _, r := range reqs {
		if r.Verb != "list" && r.Verb != "watch" && r.Verb != "get" {
			t.Errorf("gateway sent %s %s; want only get, list and watch", r.Verb, r.URI)
		}
	}
}

// kubeHomes picks one Spark 3.5 and the newest 4.x.
func kubeHomes(t *testing.T, homes []SparkHome) []SparkHome {
	t.Helper()
	var out []SparkHome
	var four *SparkHome
	for i, h := range homes {
		switch {
		case strings.HasPrefix(h.Version, "3.5.") && len(out) == 0:
			out = append(out, h)
		case strings.HasPrefix(h.Version, "4."):
			four = &homes[i]
		}
	}
	if four != nil {
		out = append(out, *four)
	}
	if len(out) == 0 {
		t.Fatal("no Spark 3.5 or 4.x under .cache/spark")
	}
	return out
}

func waitCRD(ctx context.Context, t *testing.T, k *KubeAPI, name string) {
	t.Helper()
	for {
		u, err := k.Dynamic.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			for _, c := range conds {
				m, _ := c.(map[string]any)
				if m["type"] == "Established" && m["status"] == "True" {
					return
				}
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("CRD %s never established (%v)", name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkManifests lints and renders the Helm chart (namespaces listed, and
// all namespaces) and server-side applies what it renders and the plain
// manifests of deploy/kubernetes.
func checkManifests(ctx context.Context, t *testing.T, k *KubeAPI, root, gwBin, dir string) {
	chart := filepath.Join(root, "deploy", "helm", "sparkgate")
	listed := map[string]string{"watch.namespaces": `["spark-a","spark-b"]`}
	all := map[string]string{"watch.namespaces": `[]`, "serviceMonitor.enabled": "true", "ingress.enabled": "true"}
	for _, set := range []map[string]string{listed, all} {
		if out, err := HelmLint(ctx, chart, set); err != nil {
			t.Errorf("helm lint %v: %v", set, err)
		} else {
			t.Logf("helm lint %v: %s", set, strings.TrimSpace(out))
		}
	}
	rendered, err := RenderChart(ctx, chart, kubeRelease, kubeGatewayNS, listed)
	if err != nil {
		t.Fatal(err)
	}
	kinds := kindsOf(t, rendered)
	for _, want := range []string{"ServiceAccount", "ConfigMap", "Deployment", "Service", "PodDisruptionBudget",
		"Role spark-a", "Role spark-b", "RoleBinding spark-a", "RoleBinding spark-b", "NetworkPolicy spark-a", "NetworkPolicy spark-b"} {
		if !slices.Contains(kinds, want) {
			t.Errorf("helm template with namespaces renders %v; want a %s", kinds, want)
		}
	}
	if slices.Contains(kinds, "ClusterRole") || slices.Contains(kinds, "ClusterRoleBinding") {
		t.Errorf("helm template with namespaces listed renders a ClusterRole: %v", kinds)
	}
	for _, want := range []string{"readOnlyRootFilesystem: true", "runAsNonRoot: true", "path: /_/healthz", "path: /_/readyz",
		"name: SPARKGATE_OIDC_CLIENT_SECRET", "name: SPARKGATE_SESSION_KEYS", "secretKeyRef:", "port: 4040", "endPort: 4039",
		"resources: [pods/log]"} {
		if !strings.Contains(string(rendered), want) {
			t.Errorf("rendered chart lacks %q", want)
		}
	}
	checkChartConfig(ctx, t, rendered, gwBin, dir)
	applied, err := k.ApplyYAML(ctx, rendered, "helm")
	if err != nil {
		t.Errorf("server-side apply of the chart: %v", err)
	}
	t.Logf("applied the chart: %v", applied)

	// All namespaces: a ClusterRole, no Role, no NetworkPolicy. Applied as
	// another release, so the gateway's own identity keeps its Roles only.
	renderedAll, err := RenderChart(ctx, chart, "sgall", kubeGatewayNS, all)
	if err != nil {
		t.Fatal(err)
	}
	kinds = kindsOf(t, renderedAll)
	for _, want := range []string{"ClusterRole", "ClusterRoleBinding", "ServiceMonitor", "Ingress"} {
		if !slices.Contains(kinds, want) {
			t.Errorf("helm template for all namespaces renders %v; want a %s", kinds, want)
		}
	}
	for _, k := range kinds {
		if strings.HasPrefix(k, "Role ") || strings.HasPrefix(k, "NetworkPolicy ") {
			t.Errorf("helm template for all namespaces renders a %s", k)
		}
	}
	var docs []string
	for doc := range strings.SplitSeq(string(renderedAll), "\n---") {
		if !strings.Contains(doc, "kind: ServiceMonitor") { // its CRD is not installed here
			docs = append(docs, doc)
		}
	}
	if applied, err := k.ApplyYAML(ctx, []byte(strings.Join(docs, "\n---")), "helm"); err != nil {
		t.Errorf("server-side apply of the chart for all namespaces: %v", err)
	} else {
		t.Logf("applied the chart for all namespaces: %v", applied)
	}

	plain, err := os.ReadFile(filepath.Join(root, "deploy", "kubernetes", "sparkgate.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if applied, err := k.ApplyYAML(ctx, plain, "kubectl"); err != nil {
		t.Errorf("server-side apply of deploy/kubernetes/sparkgate.yaml: %v", err)
	} else {
		t.Logf("applied deploy/kubernetes/sparkgate.yaml: %v", applied)
	}
}

var reKindLine = regexp.MustCompile(`(?m)^kind: (\S+)`)
var reNSLine = regexp.MustCompile(`(?m)^  namespace: (\S+)`)

// kindsOf lists the kinds of a rendered stream; Roles, RoleBindings and
// NetworkPolicies with their namespace ("Role spark-a").
func kindsOf(t *testing.T, rendered []byte) []string {
	t.Helper()
	var out []string
	for doc := range strings.SplitSeq(string(rendered), "\n---") {
		m := reKindLine.FindStringSubmatch(doc)
		if m == nil {
			continue
		}
		kind := m[1]
		if kind == "Role" || kind == "RoleBinding" || kind == "NetworkPolicy" {
			if ns := reNSLine.FindStringSubmatch(doc); ns != nil {
				kind += " " + ns[1]
			}
		}
		out = append(out, kind)
	}
	return out
}

// serviceAccountConfig asks the API server for a token of the chart's
// ServiceAccount, writes it to tokenFile and returns a client config that
// uses it.
func serviceAccountConfig(ctx context.Context, t *testing.T, k *KubeAPI, tokenFile string) *rest.Config {
	t.Helper()
	exp := int64(3600)
	tr, err := k.Client.CoreV1().ServiceAccounts(kubeGatewayNS).CreateToken(ctx, kubeGatewaySA,
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for the chart's ServiceAccount %s/%s: %v", kubeGatewayNS, kubeGatewaySA, err)
	}
	if err := os.WriteFile(tokenFile, []byte(tr.Status.Token), 0o600); err != nil {
		t.Fatal(err)
	}
	return &rest.Config{Host: k.URL, BearerToken: tr.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAFile: k.CAFile}}
}

// checkRBAC: the chart's ServiceAccount may list and watch pods and
// SparkApplications and read pod logs in the watched namespaces, and
// nothing else.
func checkRBAC(ctx context.Context, t *testing.T, cfg *rest.Config) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range kubeWatched {
		if _, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err != nil {
			t.Errorf("list pods in %s with the gateway's token: %v", ns, err)
		}
	}
	for _, ns := range kubeWatched {
		// No such pod yet: a 404 says the request was allowed.
		err := cs.CoreV1().Pods(ns).GetLogs("none", &corev1.PodLogOptions{}).Do(ctx).Error()
		if !apierrors.IsNotFound(err) {
			t.Errorf("get pods/log in %s with the gateway's token: %v; want NotFound (allowed, no such pod)", ns, err)
		}
	}
	forbidden := map[string]func() error{
		"get pods/log in other": func() error {
			return cs.CoreV1().Pods("other").GetLogs("none", &corev1.PodLogOptions{}).Do(ctx).Error()
		},
		"create pods/exec in spark-a": func() error {
			return cs.CoreV1().RESTClient().Post().Namespace("spark-a").Resource("pods").Name("none").SubResource("exec").Do(ctx).Error()
		},
		"list secrets in spark-a": func() error {
			_, err := cs.CoreV1().Secrets("spark-a").List(ctx, metav1.ListOptions{})
			return err
		},
		"list pods in other": func() error {
			_, err := cs.CoreV1().Pods("other").List(ctx, metav1.ListOptions{})
			return err
		},
		"list pods in all namespaces": func() error {
			_, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
			return err
		},
		"delete a pod in spark-a": func() error {
			return cs.CoreV1().Pods("spark-a").Delete(ctx, "any", metav1.DeleteOptions{})
		},
		"create a configmap in spark-a": func() error {
			_, err := cs.CoreV1().ConfigMaps("spark-a").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
			return err
		},
	}
	for what, f := range forbidden {
		if err := f(); !apierrors.IsForbidden(err) {
			t.Errorf("%s with the gateway's token: %v; want Forbidden", what, err)
		} else {
			t.Logf("%s with the gateway's token: forbidden", what)
		}
	}
}

// runKubeDriver starts a real driver, makes a pod stand for it, and
// checks the gateway through the pod's life.
func (s *suite) runKubeDriver(t *testing.T, k *KubeAPI, gw *Gateway, client *http.Client, hs *HistoryServer, home SparkHome, ns, events, dir string, firstPod *time.Time, env *kubeLogEnv) {
	ctx := ctxFor(t, 8*time.Minute)
	name := "kube-" + strings.ReplaceAll(home.Version, ".", "_")
	work := filepath.Join(dir, name)
	d, err := StartDriver(ctx, s.root, home, DriverOptions{Name: name, EventDir: events, LogDir: work, WorkDir: work, LongJob: true,
		Confs: map[string]string{"spark.acls.enable": "true", "spark.ui.view.acls": kubeViewer}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Kill)
	if err := d.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	podName := strings.ReplaceAll(name, "_", "-") + "-driver"
	pods := k.Client.CoreV1().Pods(ns)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: podName, Namespace: ns, Labels: map[string]string{
			"spark-role": "driver", "spark-app-selector": d.AppID, "spark-version": home.Version,
		}},
		Spec: corev1.PodSpec{NodeName: kubeNode, Containers: []corev1.Container{{
			Name: "spark-kubernetes-driver", Image: "spark:" + home.Version,
			Ports: []corev1.ContainerPort{
				{Name: "driver-rpc-port", ContainerPort: 7078},
				{Name: "blockmanager", ContainerPort: 7079},
				{Name: "spark-ui", ContainerPort: int32(d.UIPort)},
			},
		}}},
	}
	if firstPod.IsZero() {
		*firstPod = time.Now()
	}
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The pod's container log is the real driver's log file.
	env.kubelet.Serve(ns, podName, "spark-kubernetes-driver", filepath.Join(work, name+".log"))
	// A SparkApplication for the driver, as the operator would keep it.
	appName := "pi-" + strings.ReplaceAll(strings.ReplaceAll(home.Version, ".", "-"), "_", "-")
	sparkApps := k.Dynamic.Resource(sparkAppGVR).Namespace(ns)
	sa := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "sparkoperator.k8s.io/v1beta2", "kind": "SparkApplication",
		"metadata": map[string]any{"name": appName, "namespace": ns},
		"spec": map[string]any{"type": "Python", "sparkVersion": home.Version, "mode": "cluster",
			"mainApplicationFile": "local:///opt/app.py", "driver": map[string]any{}, "executor": map[string]any{}},
	}}
	if _, err := sparkApps.Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	setAppState := func(state string) {
		t.Helper()
		patch := fmt.Sprintf(`{"status":{"applicationState":{"state":%q},"sparkApplicationId":%q,"driverInfo":{"podName":%q,"webUIPort":%d}}}`,
			state, d.AppID, podName, d.UIPort)
		if _, err := sparkApps.Patch(ctx, appName, types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
			t.Fatal(err)
		}
	}
	setAppState("SUBMITTED")
	// Pending: not routable.
	if code, err := gatewayStatus(ctx, client, http.MethodGet, gw.URL+"/app/"+d.AppID+"/jobs/"); err != nil || code == http.StatusOK {
		t.Errorf("GET /app/%s/jobs/ while its pod is Pending = %d (%v); want no driver page", d.AppID, code, err)
	}
	setAppState("RUNNING")
	tPatch := time.Now()
	status := `{"status":{"phase":"Running","podIP":"127.0.0.1","podIPs":[{"ip":"127.0.0.1"}]}}`
	if _, err := pods.Patch(ctx, podName, types.MergePatchType, []byte(status), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	tRunning := time.Now() // the API server has stored the status
	routable := pollStatus(ctx, t, client, gw.URL+"/app/"+d.AppID+"/jobs/", http.StatusOK)
	took := routable.Sub(tRunning)
	t.Logf("%s: pod %s/%s Running (the status patch took %v) → /app/%s/jobs/ routable %v after the patch returned (poll interval %v)",
		home.Version, ns, podName, tRunning.Sub(tPatch).Round(time.Millisecond), d.AppID, took.Round(time.Millisecond), kubeInterval)
	_ = RecordFigure(s.outDir, "kube_running_to_routable_"+home.Version, took)
	re := regexp.MustCompile(`driver found.*` + regexp.QuoteMeta(d.AppID) + `.*kubernetes:` + ns + `/` + podName)
	if _, _, ok := gw.Watch.Find(re); !ok {
		t.Errorf("gateway log has no line finding %s from pod %s/%s:\n%s", d.AppID, ns, podName, gw.Watch.Tail(20))
	}

	t.Run("index", func(t *testing.T) {
		want := fmt.Sprintf("SparkApplication %s/%s · RUNNING", ns, appName)
		waitIndex(ctx, t, gw, client, want)
	})
	t.Run("podlogs", func(t *testing.T) {
		checkPodLogs(ctx, t, k, gw, client, env, d, ns, podName, filepath.Join(work, name+".log"))
	})
	t.Run("podlogs-chromium", func(t *testing.T) { checkPodLogsChromium(ctx, t, gw, client, d, podName) })
	t.Run("crawl", func(t *testing.T) {
		cctx := ctxFor(t, 4*time.Minute)
		rep, err := Crawl(cctx, client, gw.URL+"/app/"+d.AppID+"/", CrawlOptions{
			MaxPages: 250,
			Scope:    []string{"/app/" + d.AppID + "/"},
			// The pod log pages (linked from the diagnosis) show the
			// driver's own log, which names its address by nature, and
			// their follow links stay open for minutes: "podlogs" crawls
			// them without the needles.
			Skip: func(u *url.URL) bool {
				return skipLogout(u) || strings.Contains(u.Path, "/_/logs/pod/")
			},
			Needles: d.HostPorts(),
		})
		if err != nil {
			t.Fatal(err)
		}
		logCrawl(t, "kubernetes gateway crawl "+home.Version, rep)
		checkTabs(t, rep, sparkTabs, "/app/"+d.AppID+"/")
		requireCleanCrawl(t, rep, 20)
	})
	t.Run("kill", func(t *testing.T) {
		jobID, stageID, err := LongJob(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		for _, kreq := range []struct{ method, path string }{
			{http.MethodGet, fmt.Sprintf("/app/%s/jobs/job/kill/?id=%d", d.AppID, jobID)},
			{http.MethodPost, fmt.Sprintf("/app/%s/jobs/job/kill/?id=%d", d.AppID, jobID)},
			{http.MethodGet, fmt.Sprintf("/app/%s/stages/stage/kill/?id=%d&terminate=true", d.AppID, stageID)},
		} {
			if code, err := gatewayStatus(ctx, client, kreq.method, gw.URL+kreq.path); err != nil || code != http.StatusForbidden {
				t.Errorf("%s %s = %d (%v); want 403", kreq.method, kreq.path, code, err)
			}
		}
		jobs, _, err := DriverJobs(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs {
			if j.JobID == jobID && j.Status != "RUNNING" {
				t.Errorf("job %d is %s after refused kills; want RUNNING", jobID, j.Status)
			}
		}
	})
	t.Run("deleted", func(t *testing.T) {
		// The driver keeps running: only the pod's deletion can end the
		// app, and the bookmark must go to the History Server at once.
		if err := hs.WaitApp(ctx, d.AppID, false); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * kubeInterval) // the gateway's next History Server poll
		tDelete := time.Now()
		if err := pods.Delete(ctx, podName, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		setAppState("COMPLETED")
		follow := &http.Client{Jar: client.Jar, Timeout: 60 * time.Second}
		histPrefix := "/hs/local/history/" + d.AppID + "/"
		var last string
		for {
			resp, err := follow.Get(gw.URL + "/app/" + d.AppID + "/jobs/")
			if err == nil {
				resp.Body.Close()
				last = fmt.Sprintf("%d at %s", resp.StatusCode, resp.Request.URL.Path)
				if resp.StatusCode == http.StatusOK && strings.HasPrefix(resp.Request.URL.Path, histPrefix) {
					break
				}
			}
			if time.Since(tDelete) > 90*time.Second || ctx.Err() != nil {
				t.Fatalf("bookmark never went to the History Server after the pod's deletion (last %s, %v)\n%s", last, err, gw.Watch.Tail(20))
			}
			time.Sleep(50 * time.Millisecond)
		}
		took := time.Since(tDelete)
		t.Logf("%s: pod deleted → bookmark at the History Server (%s) in %v, its driver still running", home.Version, histPrefix, took.Round(time.Millisecond))
		_ = RecordFigure(s.outDir, "kube_deleted_to_history_"+home.Version, took)
		waitIndex(ctx, t, gw, client, fmt.Sprintf("SparkApplication %s/%s · COMPLETED", ns, appName))
	})
	if err := d.Stop(ctx); err != nil {
		t.Logf("stopping the driver: %v", err)
	}
}

// pollStatus GETs u every 20 ms until it answers want, and returns when.
func pollStatus(ctx context.Context, t *testing.T, c *http.Client, u string, want int) time.Time {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	var code int
	var err error
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if code, err = gatewayStatus(ctx, c, http.MethodGet, u); err == nil && code == want {
			return time.Now()
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("GET %s never answered %d (last %d, %v)", u, want, code, err)
	return time.Time{}
}

// waitIndex waits until the index page shows want.
func waitIndex(ctx context.Context, t *testing.T, gw *Gateway, c *http.Client, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var body []byte
	for time.Now().Before(deadline) && ctx.Err() == nil {
		code, b, err := gatewayDo(ctx, c, http.MethodGet, gw.URL+"/")
		if err == nil && code == http.StatusOK {
			body = b
			if strings.Contains(string(b), want) {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Errorf("index never showed %q:\n%.2000s", want, body)
}

// checkChartConfig runs sparkgate -check-config on the sparkgate.yaml of
// the rendered chart's ConfigMap, with the Secret's variables set.
func checkChartConfig(ctx context.Context, t *testing.T, rendered []byte, gwBin, dir string) {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(rendered))
	for {
		var doc struct {
			Kind string            `yaml:"kind"`
			Data map[string]string `yaml:"data"`
		}
		if err := dec.Decode(&doc); err != nil {
			break
		}
		cfg, ok := doc.Data["sparkgate.yaml"]
		if doc.Kind != "ConfigMap" || !ok {
			continue
		}
		path := filepath.Join(dir, "chart-sparkgate.yaml")
		if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.CommandContext(ctx, gwBin, "-check-config", "-config", path)
		cmd.Env = append(os.Environ(), "SPARKGATE_OIDC_CLIENT_SECRET=example-secret",
			"SPARKGATE_SESSION_KEYS=c3BhcmtnYXRlLXRlc3Qta2V5LTMyLWJ5dGVzLWxvbmchIQ==")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("sparkgate -check-config on the chart's ConfigMap: %v\n%s", err, out)
		}
		return
	}
	t.Error("the rendered chart has no ConfigMap with sparkgate.yaml")
}
