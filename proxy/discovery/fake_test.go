package discovery

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// fakeDriver answers like a Spark driver UI (ApplicationInfo JSON shapes of
// 3.5/4.0, the "starting up" placeholder, the environment endpoint).
type fakeDriver struct {
	srv      *httptest.Server
	mu       sync.Mutex
	id       string
	user     string // sparkUser, "alice" unless set
	starting int    // placeholder answers left
	props    [][]string
	hits     atomic.Int64
	// envGate, when set, holds every environment request until it is
	// closed; envFail makes the environment answer 500.
	envGate chan struct{}
	envFail bool
	// appsGate, when set, holds every app list request until it is closed.
	appsGate chan struct{}
	envHits  atomic.Int64
	inflight atomic.Int64
	maxIn    atomic.Int64 // most requests in flight at once
}

func newFakeDriver(t *testing.T, id string) *fakeDriver {
	t.Helper()
	d := &fakeDriver{id: id, user: "alice", props: [][]string{
		{"spark.acls.enable", "true"},
		{"spark.app.name", "demo"},
		{"spark.ui.view.acls", "alice,bob"},
	}}
	d.srv = httptest.NewServer(http.HandlerFunc(d.serve))
	t.Cleanup(d.srv.Close)
	return d
}

func (d *fakeDriver) url() *url.URL { u, _ := url.Parse(d.srv.URL); return u }

func (d *fakeDriver) setID(id string) { d.mu.Lock(); d.id = id; d.mu.Unlock() }

// claim makes the driver report id with user as its owner from now on.
func (d *fakeDriver) claim(id, user string) { d.mu.Lock(); d.id, d.user = id, user; d.mu.Unlock() }

// setEnv changes how the environment endpoint answers from now on.
func (d *fakeDriver) setEnv(gate chan struct{}, fail bool) {
	d.mu.Lock()
	d.envGate, d.envFail = gate, fail
	d.mu.Unlock()
}

func (d *fakeDriver) serve(w http.ResponseWriter, r *http.Request) {
	d.hits.Add(1)
	n := d.inflight.Add(1)
	defer d.inflight.Add(-1)
	for {
		if m := d.maxIn.Load(); n <= m || d.maxIn.CompareAndSwap(m, n) {
			break
		}
	}
	d.mu.Lock()
	id, user, starting := d.id, d.user, d.starting
	if starting > 0 {
		d.starting--
	}
	props, gate, fail, appsGate := d.props, d.envGate, d.envFail, d.appsGate
	d.mu.Unlock()
	if starting > 0 {
		w.Header().Set("Content-Type", "text/html;charset=utf-8")
		fmt.Fprint(w, "Spark is starting up. Please wait a while until it's ready.")
		return
	}
	switch r.URL.Path {
	case "/api/v1/applications":
		if appsGate != nil {
			select {
			case <-appsGate:
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `[ {
  "id" : %q,
  "name" : "demo",
  "attempts" : [ {
    "startTime" : "2024-05-01T12:34:56.789GMT",
    "endTime" : "1969-12-31T23:59:59.999GMT",
    "lastUpdated" : "2024-05-01T12:34:56.789GMT",
    "duration" : 1234,
    "sparkUser" : %q,
    "completed" : false,
    "appSparkVersion" : "3.5.9",
    "startTimeEpoch" : 1714566896789,
    "endTimeEpoch" : -1,
    "lastUpdatedEpoch" : 1714566896789
  } ]
} ]`, id, user)
	case "/api/v1/applications/" + id + "/environment":
		d.envHits.Add(1)
		if gate != nil {
			select {
			case <-gate:
			case <-r.Context().Done():
				return
			}
		}
		if fail {
			http.Error(w, "server error", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		var b strings.Builder
		b.WriteString(`{"runtime":{"javaVersion":"17"},"sparkProperties":[`)
		for i, kv := range props {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "[%q,%q]", kv[0], kv[1])
		}
		b.WriteString(`],"systemProperties":[["user.name","alice"],["spark.ui.proxyBase","/sys"]],"hadoopProperties":[],"metricsProperties":[],"classpathEntries":[]}`)
		fmt.Fprint(w, b.String())
	default:
		http.Error(w, "no such app: "+id, http.StatusNotFound)
	}
}
