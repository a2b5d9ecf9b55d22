package discovery

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"
)

func BenchmarkRegistryLookup(b *testing.B) {
	apps := make([]*App, 1000)
	for i := range apps {
		apps[i] = &App{ID: fmt.Sprintf("app-20240501123456-%04d", i), StartTime: time.Unix(int64(i), 0)}
	}
	reg := NewRegistry()
	reg.Store(NewSnapshot(apps))
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := reg.Lookup("app-20240501123456-0500"); !ok {
			b.Fatal("not found")
		}
	}
}

func BenchmarkParseLine(b *testing.B) {
	lines := []string{
		"26/11/29 13:57:10 INFO SparkEnv: Registering MapOutputTracker",
		"26/11/29 13:57:10 INFO Utils: Successfully started service 'SparkUI' on port 36551.",
		`{"ts":"2026-11-29T13:57:16.953Z","level":"INFO","msg":"Successfully started service 'SparkUI' on port 34809.","logger":"Utils"}`,
		"26/11/29 13:57:14 INFO DAGScheduler: Job 0 finished: count at <stdin>:1, took 0.5 s",
	}
	for _, l := range lines {
		b.Run(fmt.Sprintf("%.30s", l), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ParseLine(l)
			}
		})
	}
}

// benchDiscoverer is a Discoverer holding hist History Server apps and live
// running apps, as after the first rounds at that scale.
func benchDiscoverer(hist, live int) *Discoverer {
	d := New(Config{History: []HistorySource{{Name: "hs", URL: "http://127.0.0.1:1"}}}, NewRegistry(), nil)
	list := make([]historyApp, hist)
	for i := range list {
		id := fmt.Sprintf("application_1764000000000_%05d", i)
		list[i] = historyApp{ID: id, Name: "n", User: "u", Start: time.Unix(int64(i), 0),
			Ref: HistoryRef{Server: "hs", Attempts: []string{""}, Completed: true, User: "u", ACLProps: map[string]string{}}}
	}
	d.histApps["hs"] = list
	d.reconcileHistory()
	for i := range live {
		id := fmt.Sprintf("app-20261201100000-%04d", i)
		d.apps[id] = &liveApp{app: App{ID: id, State: Running, StartTime: time.Unix(int64(i), 0)}}
	}
	return d
}

// BenchmarkPublish is one snapshot of 10,000 History Server apps and 500
// live ones.
func BenchmarkPublish(b *testing.B) {
	d := benchDiscoverer(10000, 500)
	b.ReportAllocs()
	for b.Loop() {
		d.publish()
	}
}

// BenchmarkVerifyBurst verifies 100 drivers found together and reads their
// environments, through the bounded client as discovery does (fresh
// connections each time, as for drivers never seen); the drivers answer
// from memory in the same process, so the time includes theirs.
func BenchmarkVerifyBurst(b *testing.B) {
	const n = 100
	var urls []*url.URL
	for i := range n {
		id := fmt.Sprintf("app-20261201100000-%04d", i)
		apps := []byte(fmt.Sprintf(`[ {"id" : %q, "name" : "demo", "attempts" : [ {"startTimeEpoch" : 1714566896789, "endTimeEpoch" : -1, "lastUpdatedEpoch" : 1714566896789, "sparkUser" : "alice", "completed" : false, "appSparkVersion" : "3.5.9"} ] } ]`, id))
		env := benchEnvironment(id)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			switch r.URL.Path {
			case "/api/v1/applications":
				_, _ = w.Write(apps)
			case "/api/v1/applications/" + id + "/environment":
				_, _ = w.Write(env)
			default:
				http.NotFound(w, r)
			}
		}))
		b.Cleanup(srv.Close)
		u, _ := url.Parse(srv.URL)
		urls = append(urls, u)
	}
	b.ReportAllocs()
	for b.Loop() {
		c := newClient(nil)
		var wg sync.WaitGroup
		for _, u := range urls {
			wg.Go(func() {
				info, err := c.verify(context.Background(), u)
				if err == nil {
					_, _, err = c.driverEnv(context.Background(), u, info.ID)
				}
				if err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
		c.hc.CloseIdleConnections()
	}
	b.ReportMetric(float64(b.Elapsed())/float64(b.N)/n/1e3, "µs/driver")
}

// BenchmarkEnvironmentProps decodes a real-sized driver environment (about
// 100 KB) into the ACL properties and proxy base: decodeEnvironment, and
// beside it the whole document through encoding/json as before.
func BenchmarkEnvironmentProps(b *testing.B) {
	env := benchEnvironment("app-20261201100000-0001")
	for _, bc := range []struct {
		name string
		f    func([]byte) (map[string]string, string, error)
	}{{"scan", decodeEnvironment}, {"encoding-json", decodeEnvironmentReference}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(env)))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := bc.f(env); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
