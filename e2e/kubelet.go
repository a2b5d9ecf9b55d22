//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// StandInKubelet is the one stand-in of the Kubernetes tests: there is no
// kubelet and no container runtime here, so this HTTPS server answers the
// kube-apiserver's /containerLogs/<namespace>/<pod>/<container> requests
// as a kubelet does, from a local file: a pod's "container" is a real
// Spark driver on this machine and its log is that driver's own log file.
// Everything in front of it is real: the API server's pods/log (which
// finds this server through the pod's spec.nodeName and the Node's
// address and kubelet port, authenticates to it with a client certificate
// and checks its serving certificate), RBAC, and the gateway.
//
// It honours tailLines, limitBytes and follow as the kubelet does
// (timestamps are not added: the driver's log lines carry their own).
type StandInKubelet struct {
	Port int
	// CAFile signs the serving certificate (kube-apiserver
	// --kubelet-certificate-authority); ClientCert and ClientKey are what
	// the API server presents (--kubelet-client-certificate/-key), the
	// only client this server accepts.
	CAFile, ClientCert, ClientKey string

	srv   *http.Server
	mu    sync.Mutex
	files map[string]string // "<ns>/<pod>/<container>" → log file
	asked []string          // request URIs, in order
}

// StartStandInKubelet starts the stand-in on a free loopback port, with
// its certificates in dir.
func StartStandInKubelet(dir string) (*StandInKubelet, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	serving, servingKey, _, err := writeTestCert(dir)
	if err != nil {
		return nil, err
	}
	k := &StandInKubelet{CAFile: serving, files: map[string]string{}}
	var clientPool *x509.CertPool
	if k.ClientCert, k.ClientKey, clientPool, err = writeClientCert(dir, "kube-apiserver-kubelet-client"); err != nil {
		return nil, err
	}
	cert, err := tls.LoadX509KeyPair(serving, servingKey)
	if err != nil {
		return nil, fmt.Errorf("loading the stand-in kubelet's certificate: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	k.Port = ln.Addr().(*net.TCPAddr).Port
	k.srv = &http.Server{
		Handler:           http.HandlerFunc(k.serve),
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{
			Certificates: []tls.Certificate{cert},
			ClientAuth:   tls.RequireAndVerifyClientCert,
			ClientCAs:    clientPool,
			MinVersion:   tls.VersionTLS12,
		},
	}
	go func() { _ = k.srv.ServeTLS(ln, "", "") }()
	return k, nil
}

// Serve makes the log of ns/pod/container the file path.
func (k *StandInKubelet) Serve(ns, pod, container, path string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.files[ns+"/"+pod+"/"+container] = path
}

// Asked returns the request URIs the stand-in has answered.
func (k *StandInKubelet) Asked() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string(nil), k.asked...)
}

// Stop closes the server.
func (k *StandInKubelet) Stop() { _ = k.srv.Close() }

// APIServerArgs are the kube-apiserver flags that make it trust this
// kubelet and authenticate to it.
func (k *StandInKubelet) APIServerArgs() []string {
	return []string{
		"--kubelet-certificate-authority=" + k.CAFile,
		"--kubelet-client-certificate=" + k.ClientCert,
		"--kubelet-client-key=" + k.ClientKey,
		"--kubelet-preferred-address-types=InternalIP",
	}
}

func (k *StandInKubelet) serve(w http.ResponseWriter, r *http.Request) {
	k.mu.Lock()
	k.asked = append(k.asked, r.URL.RequestURI())
	k.mu.Unlock()
	rest, ok := strings.CutPrefix(r.URL.Path, "/containerLogs/")
	if !ok || r.Method != http.MethodGet {
		http.NotFound(w, r)
		return
	}
	k.mu.Lock()
	path, ok := k.files[rest]
	k.mu.Unlock()
	if !ok {
		http.Error(w, "container not found ("+rest+")", http.StatusNotFound)
		return
	}
	q := r.URL.Query()
	tail, _ := strconv.ParseInt(q.Get("tailLines"), 10, 64)
	limit, _ := strconv.ParseInt(q.Get("limitBytes"), 10, 64)
	follow := q.Get("follow") == "true"
	f, err := os.Open(path)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer f.Close()
	start := int64(0)
	if q.Has("tailLines") {
		if start, err = tailStart(f, tail); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	sent := int64(0)
	copyOut := func() bool {
		var src io.Reader = f
		if limit > 0 {
			src = io.LimitReader(f, limit-sent)
		}
		n, err := io.Copy(w, src)
		sent += n
		if n > 0 {
			_ = http.NewResponseController(w).Flush()
		}
		return err == nil && (limit <= 0 || sent < limit)
	}
	if !copyOut() || !follow {
		return
	}
	// Follow: what the file gains, as it comes, until the client goes.
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
			if !copyOut() {
				return
			}
		}
	}
}

// tailStart finds where the last n lines of f begin.
func tailStart(f *os.File, n int64) (int64, error) {
	if n <= 0 {
		st, err := f.Stat()
		if err != nil {
			return 0, err
		}
		return st.Size(), nil
	}
	var ends []int64 // offsets just after each newline
	br := bufio.NewReader(f)
	off := int64(0)
	for {
		b, err := br.ReadBytes('\n')
		off += int64(len(b))
		if len(b) > 0 && bytes.HasSuffix(b, []byte("\n")) {
			ends = append(ends, off)
		}
		if err != nil {
			break
		}
	}
	// A last line without its newline counts as a line.
	lines := ends
	if len(ends) == 0 || ends[len(ends)-1] != off {
		lines = append(lines, off)
	}
	if int64(len(lines)) <= n {
		return 0, nil
	}
	return lines[int64(len(lines))-n-1], nil
}

// writeClientCert writes a self-signed client certificate (its own CA)
// and its key, and returns a pool that trusts it.
func writeClientCert(dir, cn string) (certFile, keyFile string, pool *x509.CertPool, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return "", "", nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return "", "", nil, err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", "", nil, err
	}
	certFile, keyFile = filepath.Join(dir, "client-cert.pem"), filepath.Join(dir, "client-key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return "", "", nil, err
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		return "", "", nil, err
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool, nil
}

// CreateNode registers the stand-in as a Node: its InternalIP 127.0.0.1
// and its kubelet port, which is where the API server sends pods/log
// requests for pods whose spec.nodeName names it.
func (k *StandInKubelet) CreateNode(ctx context.Context, api *KubeAPI, name string) error {
	nodes := api.Client.CoreV1().Nodes()
	if _, err := nodes.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating node %s: %w", name, err)
	}
	status := fmt.Sprintf(`{"status":{"addresses":[{"type":"InternalIP","address":"127.0.0.1"}],"daemonEndpoints":{"kubeletEndpoint":{"Port":%d}}}}`, k.Port)
	if _, err := nodes.Patch(ctx, name, types.MergePatchType, []byte(status), metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("patching node %s's status: %w", name, err)
	}
	return nil
}
