//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// The binaries scripts/setup-kube.sh installs, in a cache outside the clone
// (scripts/kube-env.sh has the same defaults).
const (
	kubeVersion = "v1.37.2"
	helmVersion = "v3.22.0"
)

func kubeCache() string {
	if c := os.Getenv("SPARKGATE_CACHE"); c != "" {
		return c
	}
	if c := os.Getenv("XDG_CACHE_HOME"); c != "" {
		return filepath.Join(c, "sparkgate")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "sparkgate")
}

// KubeAPIServerBin is the kube-apiserver scripts/setup-kube.sh built.
func KubeAPIServerBin() string {
	if b := os.Getenv("SPARKGATE_KUBE_APISERVER"); b != "" {
		return b
	}
	return filepath.Join(kubeCache(), "kube", kubeVersion, "kube-apiserver")
}

// HelmBin is the helm scripts/setup-kube.sh installed.
func HelmBin() string {
	if b := os.Getenv("SPARKGATE_HELM"); b != "" {
		return b
	}
	return filepath.Join(kubeCache(), "helm", helmVersion, "helm")
}

// KubeInstalled says what of etcd, kube-apiserver and helm is missing.
func KubeInstalled() error {
	var missing []string
	if _, err := exec.LookPath("etcd"); err != nil {
		missing = append(missing, "etcd")
	}
	for _, b := range []string{KubeAPIServerBin(), HelmBin()} {
		if _, err := os.Stat(b); err != nil {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing %s: run scripts/setup-kube.sh", strings.Join(missing, ", "))
	}
	return nil
}

// KubeAPI is etcd and a kube-apiserver on loopback: RBAC on, a
// system:masters token for the test itself, service-account tokens signed
// by a key of its own, and an audit log of the requests of the users the
// test names.
type KubeAPI struct {
	Etcd, API *Proc
	URL       string // https://127.0.0.1:<port>
	CAFile    string // the serving certificate's bundle
	AuditLog  string
	Admin     *rest.Config
	Client    kubernetes.Interface
	Dynamic   dynamic.Interface
	mapper    meta.RESTMapper
}

// StartKubeAPI starts etcd and kube-apiserver in dir, both on free loopback
// ports, and waits for /readyz. auditUsers are the user names whose
// requests the audit log records (metadata only); extra are more
// kube-apiserver flags (StandInKubelet.APIServerArgs).
func StartKubeAPI(ctx context.Context, dir string, auditUsers []string, extra ...string) (*KubeAPI, error) {
	if err := KubeInstalled(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	var ports [3]int
	for i := range ports {
		p, err := FreePort()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	client := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peer := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	etcd := exec.Command("etcd", "--name", "default", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "default="+peer, "--log-level", "warn")
	k := &KubeAPI{}
	var err error
	if k.Etcd, err = StartProc("etcd", etcd, filepath.Join(dir, "etcd.log")); err != nil {
		return nil, err
	}
	fail := func(err error) (*KubeAPI, error) { k.Stop(); return nil, err }
	if err := waitHTTP(ctx, client+"/health", k.Etcd.Exited); err != nil {
		return fail(fmt.Errorf("etcd: %w", err))
	}

	keyFile := filepath.Join(dir, "sa.key")
	if err := writeRSAKey(keyFile); err != nil {
		return fail(err)
	}
	tokBytes := make([]byte, 16)
	_, _ = rand.Read(tokBytes)
	adminToken := hex.EncodeToString(tokBytes)
	tokenFile := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokenFile, []byte(adminToken+",e2e-admin,e2e-admin,system:masters\n"), 0o600); err != nil {
		return fail(err)
	}
	policy := map[string]any{
		"apiVersion": "audit.k8s.io/v1", "kind": "Policy",
		"omitStages": []string{"RequestReceived"},
		"rules":      []any{map[string]any{"level": "Metadata", "users": auditUsers}, map[string]any{"level": "None"}},
	}
	if len(auditUsers) == 0 {
		policy["rules"] = []any{map[string]any{"level": "None"}}
	}
	pb, _ := json.Marshal(policy)
	policyFile := filepath.Join(dir, "audit-policy.json")
	if err := os.WriteFile(policyFile, pb, 0o600); err != nil {
		return fail(err)
	}
	k.AuditLog = filepath.Join(dir, "audit.log")
	certDir := filepath.Join(dir, "certs")
	k.URL = fmt.Sprintf("https://127.0.0.1:%d", ports[2])
	api := exec.Command(KubeAPIServerBin(), append([]string{
		"--etcd-servers=" + client,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", ports[2]),
		"--cert-dir=" + certDir,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + keyFile,
		"--service-account-signing-key-file=" + keyFile,
		"--token-auth-file=" + tokenFile,
		"--authorization-mode=RBAC",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--endpoint-reconciler-type=none",
		"--disable-admission-plugins=ServiceAccount",
		"--audit-policy-file=" + policyFile,
		"--audit-log-path=" + k.AuditLog,
		"--audit-log-format=json",
	}, extra...)...)
	if k.API, err = StartProc("kube-apiserver", api, filepath.Join(dir, "kube-apiserver.log")); err != nil {
		return fail(err)
	}
	k.CAFile = filepath.Join(certDir, "apiserver.crt")
	k.Admin = &rest.Config{Host: k.URL, BearerToken: adminToken, TLSClientConfig: rest.TLSClientConfig{CAFile: k.CAFile}, QPS: 50, Burst: 100}
	if err := k.waitReady(ctx); err != nil {
		return fail(err)
	}
	if k.Client, err = kubernetes.NewForConfig(k.Admin); err != nil {
		return fail(err)
	}
	if k.Dynamic, err = dynamic.NewForConfig(k.Admin); err != nil {
		return fail(err)
	}
	return k, nil
}

// waitReady polls /readyz with the admin token until it answers 200.
func (k *KubeAPI) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(90 * time.Second)
	for {
		if k.API.Exited() {
			return errors.New("kube-apiserver exited; see its log")
		}
		if _, err := os.Stat(k.CAFile); err == nil {
			rt, err := rest.TransportFor(k.Admin)
			if err == nil {
				c := &http.Client{Transport: rt, Timeout: 5 * time.Second}
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, k.URL+"/readyz", nil)
				if resp, err := c.Do(req); err == nil {
					resp.Body.Close()
					if resp.StatusCode == http.StatusOK {
						return nil
					}
				}
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return errors.New("kube-apiserver not ready in 90 s")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Stop ends kube-apiserver, then etcd.
func (k *KubeAPI) Stop() {
	if k.API != nil {
		_ = k.API.Stop(10 * time.Second)
	}
	if k.Etcd != nil {
		_ = k.Etcd.Stop(10 * time.Second)
	}
}

func writeRSAKey(path string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return fmt.Errorf("generating the service-account key: %w", err)
	}
	b := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// ApplyYAML server-side applies every document of a multi-document YAML
// stream (as kubectl apply --server-side would) and returns the kinds and
// names applied.
func (k *KubeAPI) ApplyYAML(ctx context.Context, data []byte, manager string) ([]string, error) {
	if k.mapper == nil {
		disc, err := discovery.NewDiscoveryClientForConfig(k.Admin)
		if err != nil {
			return nil, fmt.Errorf("discovery client: %w", err)
		}
		k.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	}
	var applied []string
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return applied, fmt.Errorf("parsing YAML: %w", err)
		}
		if len(doc) == 0 {
			continue
		}
		obj := &unstructured.Unstructured{Object: doc}
		gvk := obj.GroupVersionKind()
		m, err := k.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			// A CRD applied a moment ago: look again.
			if r, ok := k.mapper.(meta.ResettableRESTMapper); ok {
				r.Reset()
			}
			if m, err = k.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
				return applied, fmt.Errorf("%s %s: %w", gvk, obj.GetName(), err)
			}
		}
		body, err := json.Marshal(obj.Object)
		if err != nil {
			return applied, fmt.Errorf("encoding %s: %w", obj.GetName(), err)
		}
		var ri dynamic.ResourceInterface = k.Dynamic.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			ns := obj.GetNamespace()
			if ns == "" {
				ns = "default"
			}
			ri = k.Dynamic.Resource(m.Resource).Namespace(ns)
		}
		force := true
		if _, err := ri.Patch(ctx, obj.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: manager, Force: &force}); err != nil {
			return applied, fmt.Errorf("applying %s %s/%s: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
		}
		applied = append(applied, gvk.Kind+" "+strings.TrimPrefix(obj.GetNamespace()+"/"+obj.GetName(), "/"))
	}
	return applied, nil
}

// AuditEvent is one audit log line: one request (a watch counts once).
type AuditEvent struct {
	AuditID string `json:"auditID"`
	Stage   string `json:"stage"`
	Verb    string `json:"verb"`
	URI     string `json:"requestURI"`
	User    struct {
		Username string `json:"username"`
	} `json:"user"`
	Received time.Time `json:"requestReceivedTimestamp"`
	Status   struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// AuditRequests returns the requests user made that the audit log records,
// one per audit id, received at or after since.
func (k *KubeAPI) AuditRequests(user string, since time.Time) ([]AuditEvent, error) {
	f, err := os.Open(k.AuditLog)
	if err != nil {
		return nil, fmt.Errorf("opening the audit log: %w", err)
	}
	defer f.Close()
	seen := map[string]bool{}
	var out []AuditEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e AuditEvent
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.User.Username != user || seen[e.AuditID] || e.Received.Before(since) {
			continue
		}
		seen[e.AuditID] = true
		out = append(out, e)
	}
	return out, sc.Err()
}

// RenderChart runs helm template for the chart with values given as
// --set-json pairs and returns the manifests.
func RenderChart(ctx context.Context, chartDir, release, namespace string, set map[string]string) ([]byte, error) {
	args := []string{"template", release, chartDir, "--namespace", namespace}
	for k, v := range set {
		args = append(args, "--set-json", k+"="+v)
	}
	cmd := exec.CommandContext(ctx, HelmBin(), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}

// HelmLint runs helm lint --strict on the chart.
func HelmLint(ctx context.Context, chartDir string, set map[string]string) (string, error) {
	args := []string{"lint", "--strict", chartDir}
	for k, v := range set {
		args = append(args, "--set-json", k+"="+v)
	}
	out, err := exec.CommandContext(ctx, HelmBin(), args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("helm lint: %w\n%s", err, out)
	}
	return string(out), nil
}
