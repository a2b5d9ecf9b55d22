package discovery

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestVerify(t *testing.T) {
	t.Parallel()
	d := newFakeDriver(t, "local-1714566896789")
	d.starting = 3 // the placeholder three times, then the API
	c := newClient(nil)
	info, err := c.verify(context.Background(), d.url())
	if err != nil {
		t.Fatalf("verify() error = %v", err)
	}
	want := driverInfo{
		ID: "local-1714566896789", Name: "demo", User: "alice", SparkVersion: "3.5.9",
		Start:     info.Start, // checked below
		ACLProps:  map[string]string{"spark.acls.enable": "true", "spark.ui.view.acls": "alice,bob"},
		ProxyBase: "/sys",
	}
	if diff := cmp.Diff(want, info, cmp.AllowUnexported(driverInfo{})); diff != "" {
		t.Errorf("verify() (-want +got):\n%s", diff)
	}
	if info.Start.UnixMilli() != 1714566896789 {
		t.Errorf("Start = %v; want epoch ms 1714566896789", info.Start)
	}
	// spark.ui.proxyBase in sparkProperties wins over systemProperties.
	d.props = append(d.props, []string{"spark.ui.proxyBase", "/proxy/local-1714566896789/"})
	info, err = c.verify(context.Background(), d.url())
	if err != nil || info.ProxyBase != "/proxy/local-1714566896789" {
		t.Errorf("verify() ProxyBase = %q, %v; want /proxy/local-1714566896789", info.ProxyBase, err)
	}
}

func TestVerifyRejects(t *testing.T) {
	t.Parallel()
	serve := func(body, ct string, status int) *url.URL {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ct)
			w.WriteHeader(status)
			w.Write([]byte(body))
		}))
		t.Cleanup(s.Close)
		u, _ := url.Parse(s.URL)
		return u
	}
	two := `[{"id":"a","name":"x","attempts":[{}]},{"id":"b","name":"y","attempts":[{}]}]`
	tests := []struct {
		name string
		u    *url.URL
		want error
	}{
		{"history server (two apps)", serve(two, "application/json", 200), errNotDriver},
		{"empty list", serve(`[]`, "application/json", 200), errNotDriver},
		{"403", serve(`user "x" is not authorized`, "text/plain", 403), errNotDriver},
		{"bad id", serve(`[{"id":"../x","attempts":[{}]}]`, "application/json", 200), errNotDriver},
	}
	c := newClient(nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.verify(context.Background(), tt.u)
			if !errors.Is(err, tt.want) {
				t.Errorf("verify(%s) error = %v; want %v", tt.name, err, tt.want)
			}
		})
	}
	// A closed port: unreachable, refused.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close()
	_, err := c.verify(context.Background(), &url.URL{Scheme: "http", Host: addr})
	var ue *unreachableError
	if !errors.As(err, &ue) || !ue.refused {
		t.Errorf("verify(closed port) error = %v; want refused unreachableError", err)
	}
}
