package discovery

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
)

// kubeSource lists running driver pods through the API server with plain
// HTTP (no client library): GET /api/v1/[namespaces/<ns>/]pods with the
// label selector; the candidate is http://<podIP>:<container port named
// spark-ui>.
type kubeSource struct {
	cfg  KubernetesSource
	base *url.URL
	c    *client
}

func newKubeSource(cfg KubernetesSource) (*kubeSource, error) {
	base, err := parseRootURL(cfg.APIServer)
	if err != nil {
		return nil, fmt.Errorf("kubernetes api server: %w", err)
	}
	tr := newTransport()
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		switch {
		case err == nil:
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("kubernetes ca_file %s: no certificates", cfg.CAFile)
			}
			tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		case errors.Is(err, os.ErrNotExist) && base.Scheme == "http":
			// Plain HTTP (kubectl proxy, tests): no CA needed.
		default:
			return nil, fmt.Errorf("kubernetes ca_file: %w", err)
		}
	}
	return &kubeSource{cfg: cfg, base: base, c: newClient(&bearerTransport{file: cfg.TokenFile, next: tr})}, nil
}

func (k *kubeSource) name() string { return "kubernetes" }

// podList is the part of a v1 PodList discovery reads.
type podList struct {
	Items []struct {
		Metadata struct {
			Name      string            `json:"name"`
			Namespace string            `json:"namespace"`
			Labels    map[string]string `json:"labels"`
		} `json:"metadata"`
		Spec struct {
			Containers []struct {
				Ports []struct {
					Name          string `json:"name"`
					ContainerPort int    `json:"containerPort"`
				} `json:"ports"`
			} `json:"containers"`
		} `json:"spec"`
		Status struct {
			Phase string `json:"phase"`
			PodIP string `json:"podIP"`
		} `json:"status"`
	} `json:"items"`
}

func (k *kubeSource) candidates(ctx context.Context) ([]candidate, error) {
	paths := []string{"api/v1/pods"}
	if len(k.cfg.Namespaces) > 0 {
		paths = paths[:0]
		for _, ns := range k.cfg.Namespaces {
			paths = append(paths, "api/v1/namespaces/"+url.PathEscape(ns)+"/pods")
		}
	}
	q := url.Values{"labelSelector": {k.cfg.LabelSelector}, "fieldSelector": {"status.phase=Running"}}.Encode()
	var out []candidate
	var errs []error
	for _, p := range paths {
		var pods podList
		if err := k.c.getJSON(ctx, k.base, p+"?"+q, listBodyMax, &pods); err != nil {
			errs = append(errs, fmt.Errorf("listing pods (%s): %w", p, err))
			continue
		}
		for _, pod := range pods.Items {
			if pod.Status.Phase != "Running" || net.ParseIP(pod.Status.PodIP) == nil {
				continue
			}
			port := 0
			for _, c := range pod.Spec.Containers {
				for _, cp := range c.Ports {
					if cp.Name == "spark-ui" && cp.ContainerPort > 0 && cp.ContainerPort < 65536 {
						port = cp.ContainerPort
					}
				}
			}
			if port == 0 {
				continue
			}
			out = append(out, candidate{
				url:    &url.URL{Scheme: "http", Host: net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(port))},
				source: "kubernetes:" + pod.Metadata.Namespace + "/" + pod.Metadata.Name,
			})
		}
	}
	return out, errors.Join(errs...)
}

// bearerTransport adds the service-account token, read from its file on
// each request because projected tokens are rotated by the kubelet.
type bearerTransport struct {
	file string
	next http.RoundTripper
}

func (b *bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	tok, err := os.ReadFile(b.file)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("reading token file: %w", err)
	}
	if t := strings.TrimSpace(string(tok)); t != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+t)
	}
	return b.next.RoundTrip(r)
}
