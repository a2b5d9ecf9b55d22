package discovery

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// loadServer is a History Server listing n finished apps and a
// ResourceManager listing n apps (none of them a running ApplicationMaster,
// so none is a candidate), counting the requests each kind of endpoint gets.
type loadServer struct {
	srv                *httptest.Server
	lists, envs, rmGet atomic.Int64
}

func newLoadServer(t *testing.T, n int) *loadServer {
	t.Helper()
	var hs, rm bytes.Buffer
	hs.WriteString("[")
	rm.WriteString(`{"apps":{"app":[`)
	for i := range n {
		if i > 0 {
			hs.WriteString(",")
			rm.WriteString(",")
		}
		fmt.Fprintf(&hs, `{"id":"application_1_%05d","name":"n","attempts":[{"attemptId":"1","startTimeEpoch":%d,"endTimeEpoch":%d,"lastUpdatedEpoch":%d,"sparkUser":"u%d","completed":true}]}`, i, 1000+i, 2000+i, 2000+i, i%7)
		fmt.Fprintf(&rm, `{"id":"application_2_%05d","state":"RUNNING","trackingUI":"History","trackingUrl":""}`, i)
	}
	hs.WriteString("]")
	rm.WriteString("]}}")
	l := &loadServer{}
	l.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/api/v1/applications":
			l.lists.Add(1)
			_, _ = w.Write(hs.Bytes())
		case strings.HasSuffix(r.URL.Path, "/environment"):
			l.envs.Add(1)
			fmt.Fprint(w, `{"sparkProperties":[["spark.acls.enable","true"]]}`)
		case r.URL.Path == "/ws/v1/cluster/apps":
			l.rmGet.Add(1)
			_, _ = w.Write(rm.Bytes())
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(l.srv.Close)
	return l
}

// TestDiscoveryLoadFlat: once every finished app's ACLs are read, a
// History Server and a ResourceManager each get one list request per
// interval and nothing else, with 10 apps as with 1,000: discovery's load on
// them does not grow with the number of unchanged apps. The figures are
// logged per minute at the default interval (one replica; N replicas make N
// times as many).
func TestDiscoveryLoadFlat(t *testing.T) {
	t.Parallel()
	const interval = 100 * time.Millisecond
	for _, n := range []int{10, 1000} {
		l := newLoadServer(t, n)
		d, _ := startDiscoverer(t, Config{
			Interval: interval,
			History:  []HistorySource{{Name: "hs", URL: l.srv.URL}},
			YARN:     []URLSource{{URL: l.srv.URL}},
		})
		// Reading a backlog of environments takes a while under -race on a
		// busy machine; the deadline only bounds a failing test.
		for deadline := time.Now().Add(2 * time.Minute); !d.Ready() || l.envs.Load() < int64(n); {
			if time.Now().After(deadline) {
				t.Fatalf("%d apps: %d environments read after 2 minutes", n, l.envs.Load())
			}
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(2 * interval) // the poll that read the last ones ends
		lists0, envs0, rm0 := l.lists.Load(), l.envs.Load(), l.rmGet.Load()
		start := time.Now()
		time.Sleep(20 * interval)
		rounds := float64(time.Since(start)) / float64(interval)
		lists, envs, rm := l.lists.Load()-lists0, l.envs.Load()-envs0, l.rmGet.Load()-rm0
		if envs != 0 {
			t.Errorf("%d apps: %d environment reads with nothing changing; want 0", n, envs)
		}
		if float64(lists) > rounds+1 || float64(rm) > rounds+1 {
			t.Errorf("%d apps: %d list and %d RM requests in %.1f intervals; want one each per interval", n, lists, rm, rounds)
		}
		perMin := float64(time.Minute) / float64(DefaultInterval) / rounds
		t.Logf("%d apps, nothing changing: History Server %.1f requests per minute (%.1f lists, %.1f environments), ResourceManager %.1f per minute, at the default %s interval",
			n, float64(lists+envs)*perMin, float64(lists)*perMin, float64(envs)*perMin, float64(rm)*perMin, DefaultInterval)
	}
}

// BenchmarkHistoryPoll is one History Server poll of 10,000 finished apps
// whose ACLs are already read: the list unchanged, and with one app added.
func BenchmarkHistoryPoll(b *testing.B) {
	for _, name := range []string{"unchanged", "one-new"} {
		b.Run(name, func(b *testing.B) {
			var mu sync.Mutex
			var list []byte
			render := func(n int) {
				var buf bytes.Buffer
				buf.WriteString("[")
				for i := range n {
					if i > 0 {
						buf.WriteString(",")
					}
					fmt.Fprintf(&buf, `{"id":"application_1_%05d","name":"nightly-etl","attempts":[{"attemptId":"1","startTime":"2026-11-01T00:00:00.000GMT","endTime":"2026-11-01T00:07:00.000GMT","lastUpdated":"2026-11-01T00:07:00.000GMT","duration":420000,"sparkUser":"u%d","completed":true,"appSparkVersion":"3.5.9","startTimeEpoch":%d,"endTimeEpoch":%d,"lastUpdatedEpoch":%d}]}`, i, i%7, 1000+i, 2000+i, 2000+i)
				}
				buf.WriteString("]")
				mu.Lock()
				list = buf.Bytes()
				mu.Unlock()
			}
			render(10000)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/api/v1/applications" {
					mu.Lock()
					l := list
					mu.Unlock()
					_, _ = w.Write(l)
					return
				}
				fmt.Fprint(w, `{"sparkProperties":[["spark.acls.enable","true"]]}`)
			}))
			defer srv.Close()
			h, err := newHistorySource(HistorySource{Name: "hs", URL: srv.URL}, newClient(nil), DefaultInterval)
			if err != nil {
				b.Fatal(err)
			}
			for h.owed || h.last == nil { // read every environment first
				if _, _, err := h.poll(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			n := 10000
			b.ReportAllocs()
			for b.Loop() {
				if name == "one-new" {
					b.StopTimer()
					n++
					render(n)
					b.StartTimer()
				}
				if _, _, err := h.poll(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// FuzzSplitArray: wherever encoding/json reads a JSON array, splitArray
// gives the same elements, byte for byte.
func FuzzSplitArray(f *testing.F) {
	for _, s := range []string{`[]`, ` [ ] `, `[1]`, `[1, "a,]\"", {"b":[1,2,{"c":"}"}]}, null ]`, `[[],[[]],{}]`, `["\\"]`, `[1,]`, `[,]`, `{"a":1}`, `[1 2]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want []json.RawMessage
		if json.Unmarshal(b, &want) != nil || want == nil {
			return
		}
		got, err := splitArray(b)
		if err != nil {
			t.Fatalf("splitArray(%q) = %v; encoding/json reads %d elements", b, err, len(want))
		}
		if len(got) != len(want) {
			t.Fatalf("splitArray(%q) = %d elements; want %d", b, len(got), len(want))
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("splitArray(%q)[%d] = %q; want %q", b, i, got[i], want[i])
			}
		}
	})
}
