package discovery

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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
		Start: info.Start, // checked below
		tries: 4,          // three placeholders, then the app
	}
	if diff := cmp.Diff(want, info, cmp.AllowUnexported(driverInfo{})); diff != "" {
		t.Errorf("verify() (-want +got):\n%s", diff)
	}
	if info.Start.UnixMilli() != 1714566896789 {
		t.Errorf("Start = %v; want epoch ms 1714566896789", info.Start)
	}
	// verify reads the app list only; the environment is read apart.
	if got := d.envHits.Load(); got != 0 {
		t.Errorf("verify() read the environment %d times; want 0", got)
	}
	acl, pb, err := c.driverEnv(context.Background(), d.url(), info.ID)
	wantACL := map[string]string{"spark.acls.enable": "true", "spark.ui.view.acls": "alice,bob"}
	if err != nil || pb != "/sys" || !cmp.Equal(acl, wantACL) {
		t.Errorf("driverEnv() = %v, %q, %v; want %v, /sys", acl, pb, err, wantACL)
	}
	// spark.ui.proxyBase in sparkProperties wins over systemProperties.
	d.props = append(d.props, []string{"spark.ui.proxyBase", "/proxy/local-1714566896789/"})
	_, pb, err = c.driverEnv(context.Background(), d.url(), info.ID)
	if err != nil || pb != "/proxy/local-1714566896789" {
		t.Errorf("driverEnv() ProxyBase = %q, %v; want /proxy/local-1714566896789", pb, err)
	}
	// Another id's environment is not this driver's: 404, an error.
	if acl, _, err := c.driverEnv(context.Background(), d.url(), "local-2"); err == nil {
		t.Errorf("driverEnv(local-2) = %v, nil; want an error", acl)
	}
}

func TestVerifyRejects(t *testing.T) {
	t.Parallel()
	serve := func(body, ct string, status int) *url.URL {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
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

// TestRetryDelay pins the period between tries of a UI that is starting
// up: steady and short for the first seconds of the window, so that the app
// is routable soon after its API answers, then capped so that a stuck
// placeholder costs little.
func TestRetryDelay(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	tests := []struct {
		elapsed time.Duration
		want    time.Duration
	}{
		{0, 40 * ms}, {40 * ms, 40 * ms}, {1900 * ms, 40 * ms}, {4999 * ms, 40 * ms},
		{5 * time.Second, 250 * ms}, {time.Minute, 250 * ms}, {-ms, 250 * ms},
	}
	for _, tt := range tests {
		t.Run(tt.elapsed.String(), func(t *testing.T) {
			if got := retryDelay(tt.elapsed); got != tt.want {
				t.Errorf("retryDelay(%v) = %v; want %v", tt.elapsed, got, tt.want)
			}
		})
	}
	// Never slower than the cap, never shorter later on: the worst wait
	// after a driver's API starts answering is retryCap.
	prev := retryDelay(0)
	for e := time.Duration(0); e < 2*startFast; e += 10 * ms {
		if d := retryDelay(e); d < prev || d > retryCap {
			t.Errorf("retryDelay(%v) = %v after %v; want non-decreasing and <= %v", e, d, prev, retryCap)
		}
		prev = retryDelay(e)
	}
}

// TestVerifyRetriesPlaceholder checks that verify keeps asking while the UI
// shows its placeholder, one request at a time, and stops at the first
// real answer.
func TestVerifyRetriesPlaceholder(t *testing.T) {
	t.Parallel()
	d := newFakeDriver(t, "local-1714566896789")
	const placeholders = 7
	d.starting = placeholders
	info, err := newClient(nil).verify(context.Background(), d.url())
	if err != nil || info.ID != "local-1714566896789" {
		t.Fatalf("verify() = %q, %v; want local-1714566896789", info.ID, err)
	}
	// Every placeholder answer, then the app list.
	if got, want := d.hits.Load(), int64(placeholders+1); got != want {
		t.Errorf("driver saw %d requests; want %d", got, want)
	}
	if got := d.maxIn.Load(); got != 1 {
		t.Errorf("driver saw %d requests in flight at once; want 1", got)
	}
}

// TestVerifyStartupAnswers replays what real drivers answered between the
// SparkUI port line and a working API: the placeholder, Jetty's 404 (a JSON
// object when the request accepts JSON), and a first API request that hangs
// while the JAX-RS servlet initialises. Each must lead to a retry, not to a
// rejected candidate.
func TestVerifyStartupAnswers(t *testing.T) {
	t.Parallel()
	const app = `[{"id":"local-1714566896789","name":"demo","attempts":[{"sparkUser":"alice","startTimeEpoch":1714566896789}]}]`
	jetty404 := `{"url":"/api/v1/applications","status":"404","message":"Not Found","servlet":"org.sparkproject.jetty.servlet.ServletHandler$Default404Servlet-1"}`
	type answer struct {
		status int
		ct     string
		body   string
		hang   bool
		loc    string
	}
	placeholder := answer{200, "text/html;charset=utf-8", "Spark is starting up. Please wait a while until it's ready.", false, ""}
	tests := []struct {
		name    string
		answers []answer // then the app list
		wantErr bool
		wantHit int64
	}{
		{"placeholder then json 404", []answer{placeholder, {404, "application/json", jetty404, false, ""}}, false, 3},
		{"html 404", []answer{{404, "text/html;charset=iso-8859-1", "<html><body>Error 404 Not Found</body></html>", false, ""}}, false, 2},
		{"root redirect before the API", []answer{{302, "", "", false, "http://127.0.0.1:4040/jobs/"}}, false, 2},
		{"another redirect", []answer{{302, "", "", false, "http://rm.internal:8088/proxy/application_1_1/"}}, true, 1},
		{"placeholder then a hang", []answer{placeholder, {hang: true}, {hang: true}, {hang: true}}, false, 5},
		{"hangs without placeholder, few times", []answer{{hang: true}, {hang: true}}, false, 3},
		{"hangs without placeholder, too often", []answer{{hang: true}, {hang: true}, {hang: true}, {hang: true}}, true, 3},
		{"json array 404", []answer{{404, "application/json", `[]`, false, ""}}, true, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var hits atomic.Int64
			release := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n := int(hits.Add(1)) - 1
				if r.URL.Path != "/api/v1/applications" {
					http.NotFound(w, r) // verify never asks for anything else
					return
				}
				if n < len(tt.answers) {
					a := tt.answers[n]
					if a.hang {
						select {
						case <-release:
						case <-r.Context().Done():
						}
						return
					}
					w.Header().Set("Content-Type", a.ct)
					if a.loc != "" {
						w.Header().Set("Location", a.loc)
					}
					w.WriteHeader(a.status)
					fmt.Fprint(w, a.body)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, app)
			}))
			t.Cleanup(srv.Close)
			t.Cleanup(func() { close(release) })
			tr := newTransport()
			tr.ResponseHeaderTimeout = 50 * time.Millisecond
			u, _ := url.Parse(srv.URL)
			info, err := newClient(tr).verify(context.Background(), u)
			if (err != nil) != tt.wantErr {
				t.Fatalf("verify() = %q, %v; want error %v", info.ID, err, tt.wantErr)
			}
			if !tt.wantErr && info.ID != "local-1714566896789" {
				t.Errorf("verify() ID = %q; want local-1714566896789", info.ID)
			}
			// App-list requests made: verify reads no environment.
			if got := hits.Load(); got != tt.wantHit {
				t.Errorf("driver saw %d requests; want %d app-list requests", got, tt.wantHit)
			}
		})
	}
}

// TestTransportKeepsOneConnectionPerDriver checks the liveness checks'
// transport against more drivers than net/http's default idle pool (100):
// asked in turn, round after round, each driver is dialled once.
func TestTransportKeepsOneConnectionPerDriver(t *testing.T) {
	const drivers = 150
	dials := make([]atomic.Int32, drivers)
	urls := make([]string, drivers)
	for i := range drivers {
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte("[]"))
		}))
		srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				dials[i].Add(1)
			}
		}
		srv.Start()
		t.Cleanup(srv.Close)
		urls[i] = srv.URL
	}
	tr := newTransport()
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr}
	for range 3 {
		for _, u := range urls {
			resp, err := hc.Get(u)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
	}
	for i := range dials {
		if n := dials[i].Load(); n != 1 {
			t.Errorf("driver %d was dialled %d times in 3 rounds; want 1", i, n)
		}
	}
}

// TestHugeHeadersRefused: whatever answers a probe gets no more header
// bytes buffered than Jetty ever sends; an answer within the bound reads.
func TestHugeHeadersRefused(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := 4 << 10
		if r.URL.Path == "/huge" {
			n = 64 << 10
		}
		w.Header().Set("X-Filler", strings.Repeat("a", n))
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	defer srv.Close()
	c := newClient(nil)
	if body, _, err := c.getBody(context.Background(), mustURL(t, srv.URL), "/fine", 1<<10); err != nil || string(body) != `{"ok":true}` {
		t.Errorf("4 KiB of headers: %v, %q; want the answer", err, body)
	}
	if _, _, err := c.getBody(context.Background(), mustURL(t, srv.URL), "/huge", 1<<10); err == nil {
		t.Error("64 KiB of headers were read")
	}
}

// TestDriverListBoundedInObjects: a driver's app list is read at every
// check of every driver, 32 at once. Its bytes are bounded (driverBodyMax),
// and what they decode to must be too: a list of one app with 350,000
// empty attempts ("{}" each, a whole apiAttempt once decoded) cost a check
// 165 MiB. Such a list is refused before it is decoded; one app of a few
// attempts, whatever its strings hold, reads.
// Not parallel: it counts the process's allocations.
func TestDriverListBoundedInObjects(t *testing.T) {
	var flood strings.Builder
	flood.WriteString(`[{"id":"app-20240101000000-0777","name":"bait","attempts":[{"sparkUser":"mallory"}`)
	for flood.Len() < driverBodyMax-16 {
		flood.WriteString(",{}")
	}
	flood.WriteString("]}]")
	braces := strings.Repeat(`{[\"`, 1000)
	fine := `[{"id":"application_1700000000000_0001","name":"` + braces + `","attempts":[{"attemptId":"2","sparkUser":"alice"},{"attemptId":"1","sparkUser":"alice"}]}]`
	body := map[string]string{"/flood/": flood.String(), "/fine/": fine}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, body[strings.TrimSuffix(r.URL.Path, "api/v1/applications")])
	}))
	defer srv.Close()
	c := newClient(nil)

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	app, err := c.driverApp(context.Background(), mustURL(t, srv.URL+"/flood/"))
	runtime.ReadMemStats(&after)
	if !errors.Is(err, errNotDriver) {
		t.Errorf("a list of one app with %d attempts: %q (%d attempts), %v; want errNotDriver", (flood.Len()-80)/3, app.ID, len(app.Attempts), err)
	}
	// The body itself, read twice over at most (the read buffer, the
	// client's), and nothing in proportion to its objects.
	if got := after.TotalAlloc - before.TotalAlloc; got > 8*driverBodyMax {
		t.Errorf("refusing a %d-byte list allocated %d MiB; want no more than a few times its size", flood.Len(), got>>20)
	}
	app, err = c.driverApp(context.Background(), mustURL(t, srv.URL+"/fine/"))
	if err != nil || app.Name != strings.ReplaceAll(braces, `\"`, `"`) || len(app.Attempts) != 2 || attemptUser(app) != "alice" {
		t.Errorf("one app of two attempts, braces in its name: %.40q, %d attempts, %v; want it read", app.Name, len(app.Attempts), err)
	}
	for in, want := range map[string]int{`[]`: 1, `[{"a":"{[\"}"},{"b":[1,[2]]}]`: 5, `"[{"`: 0, `{"\\":"{"}`: 1} {
		if got := jsonContainers([]byte(in)); got != want {
			t.Errorf("jsonContainers(%s) = %d; want %d", in, got, want)
		}
	}
}
