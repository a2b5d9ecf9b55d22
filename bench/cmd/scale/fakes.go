package main

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The fakes answer like Spark 3.5.9 does: its Jackson pretty printer
// (" : ", two-space indents), its attempt fields, its environment's
// [name, value] pairs. Every third app grants viewer view access.

// viewer is the user the gateway signs in (local mode: the OS user).
var viewer = "alice"

// appJSON is one app as Spark's /api/v1/applications lists it.
func appJSON(b *bytes.Buffer, id, name, user string, start, end time.Time, completed bool) {
	endS, endE, dur := "1969-12-31T23:59:59.999GMT", int64(-1), int64(0)
	if completed {
		endS, endE, dur = sparkTime(end), end.UnixMilli(), end.Sub(start).Milliseconds()
	}
	last := start
	if completed {
		last = end
	}
	fmt.Fprintf(b, `{
  "id" : %q,
  "name" : %q,
  "attempts" : [ {
    "startTime" : %q,
    "endTime" : %q,
    "lastUpdated" : %q,
    "duration" : %d,
    "sparkUser" : %q,
    "completed" : %t,
    "appSparkVersion" : "3.5.9",
    "startTimeEpoch" : %d,
    "endTimeEpoch" : %d,
    "lastUpdatedEpoch" : %d
  } ]
}`, id, name, sparkTime(start), endS, sparkTime(last), dur, user, completed, start.UnixMilli(), endE, last.UnixMilli())
}

func sparkTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000GMT") }

// envJSON is an app's /environment answer with its ACL properties.
func envJSON(id, user string, alice bool) []byte {
	view := "carol"
	if alice {
		view = viewer + ",carol"
	}
	return fmt.Appendf(nil, `{
  "runtime" : {"javaVersion" : "17.0.12", "javaHome" : "/usr/lib/jvm/java-17", "scalaVersion" : "version 2.12.18"},
  "sparkProperties" : [ [ "spark.acls.enable", "true" ], [ "spark.app.id", %q ], [ "spark.app.name", "scale" ], [ "spark.master", "local[2]" ], [ "spark.ui.view.acls", %q ], [ "spark.user", %q ] ],
  "hadoopProperties" : [ ],
  "systemProperties" : [ [ "user.name", %q ] ],
  "metricsProperties" : [ ],
  "classpathEntries" : [ ],
  "resourceProfiles" : [ ]
}`, id, view, user, user)
}

// driverEnvJSON is a live driver's /environment answer, sized like a real
// Spark 3.5.9 driver's (about 100 KB: its Hadoop properties and classpath,
// which discovery reads past) around the ACL properties of envJSON.
func driverEnvJSON(id, user string, alice bool) []byte {
	small := envJSON(id, user, alice)
	cut := bytes.Index(small, []byte(`,
  "hadoopProperties"`))
	return append(append(small[:cut:cut], envPadding...), '\n', '}')
}

// envPadding is the rest of a real driver's environment after its Spark
// properties (the sizes of a captured 3.5.9 driver's).
var envPadding = func() []byte {
	var b bytes.Buffer
	pairs := func(name string, n int, kv func(i int) (string, string)) {
		fmt.Fprintf(&b, ",\n  %q : [ ", name)
		for i := range n {
			if i > 0 {
				b.WriteString(", ")
			}
			k, v := kv(i)
			fmt.Fprintf(&b, "[ %q, %q ]", k, v)
		}
		b.WriteString(" ]")
	}
	pairs("hadoopProperties", 964, func(i int) (string, string) {
		return fmt.Sprintf("fs.s3a.bucket.property.number.%04d", i), fmt.Sprintf("value-%d-of-a-hadoop-setting", i)
	})
	pairs("systemProperties", 48, func(i int) (string, string) {
		return fmt.Sprintf("java.vm.property.%02d", i), "/usr/lib/jvm/java-17-openjdk-amd64/lib"
	})
	pairs("metricsProperties", 4, func(i int) (string, string) {
		return fmt.Sprintf("*.sink.servlet.%d", i), "org.apache.spark.metrics.sink.MetricsServlet"
	})
	pairs("classpathEntries", 253, func(i int) (string, string) {
		return fmt.Sprintf("/opt/spark-3.5.9/jars/library-number-%03d_2.12-3.5.9.jar", i), "System Classpath"
	})
	b.WriteString(`,
  "resourceProfiles" : [ ]`)
	return b.Bytes()
}()

// history is a fake History Server listing n finished apps, and one more
// added by add (a just-finished app) whose first listing and first
// environment read it times.
type history struct {
	mu    sync.Mutex
	list  []byte
	users map[string]string
	extra string
	// listedAt is when a list holding extra was first served; envAt when
	// its environment was first read.
	listedAt, envAt time.Time
	// ends[k] is the end (Unix ms) of the list's k-th app, newest first,
	// and cuts[k] where its entry ends in list: a list since a date
	// (minEndDate) is a prefix of the whole one.
	ends []int64
	cuts []int
	// listHits counts the whole lists served, partHits the parts.
	listHits, partHits atomic.Int64
	envHits            atomic.Int64
}

func histID(i int) string { return fmt.Sprintf("application_1764000000000_%05d", i) }

func newHistory(n int) *history {
	h := &history{users: make(map[string]string, n+1)}
	h.render(n, "")
	return h
}

func (h *history) render(n int, extra string) {
	var b bytes.Buffer
	b.WriteString("[ ")
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	write := func(i int, id string) {
		if b.Len() > 2 {
			b.WriteString(", ")
		}
		user := fmt.Sprintf("user%03d", i%100)
		start := base.Add(time.Duration(i) * time.Minute)
		appJSON(&b, id, fmt.Sprintf("nightly-etl-%d", i%37), user, start, start.Add(7*time.Minute), true)
		h.users[id] = user
		h.ends = append(h.ends, start.Add(7*time.Minute).UnixMilli())
		h.cuts = append(h.cuts, b.Len())
	}
	h.ends, h.cuts = h.ends[:0], h.cuts[:0]
	if extra != "" {
		write(n, extra) // Spark lists the newest first
	}
	for i := n - 1; i >= 0; i-- {
		write(i, histID(i))
	}
	b.WriteString(" ]")
	h.list = b.Bytes()
	h.extra = extra
}

// add lists one more finished app, as a History Server does when an event
// log completes.
func (h *history) add(n int, id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.render(n, id)
}

func (h *history) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	w.Header().Set("Content-Type", "application/json")
	if p == "/api/v1/applications" {
		h.mu.Lock()
		list, tail := h.list, []byte(nil)
		if q := r.URL.Query().Get("minEndDate"); q != "" {
			// As Spark's ApplicationListResource: the apps that ended
			// at or after the date (none runs here).
			since, err := time.Parse("2006-01-02T15:04:05.000MST", q)
			if err != nil {
				h.mu.Unlock()
				http.Error(w, "Couldn't parse date: "+q, http.StatusBadRequest)
				return
			}
			k := sort.Search(len(h.ends), func(k int) bool { return h.ends[k] < since.UnixMilli() })
			list, tail = []byte("[ "), []byte(" ]")
			if k > 0 {
				list = h.list[:h.cuts[k-1]]
			}
			h.partHits.Add(1)
		} else {
			h.listHits.Add(1)
		}
		if h.extra != "" && h.listedAt.IsZero() && (tail == nil || len(list) > 2) {
			h.listedAt = time.Now()
		}
		h.mu.Unlock()
		_, _ = w.Write(list)
		_, _ = w.Write(tail)
		return
	}
	if id, ok := strings.CutSuffix(strings.TrimPrefix(p, "/api/v1/applications/"), "/environment"); ok && !strings.Contains(id, "/") {
		h.envHits.Add(1)
		h.mu.Lock()
		user, known := h.users[id]
		if known && id == h.extra && h.envAt.IsZero() {
			h.envAt = time.Now()
		}
		h.mu.Unlock()
		if !known {
			http.NotFound(w, r)
			return
		}
		var n int
		_, _ = fmt.Sscanf(id[len(id)-5:], "%d", &n)
		_, _ = w.Write(envJSON(id, user, n%3 == 0))
		return
	}
	// Any other REST answer of a known app: an empty list.
	if id, _, ok := strings.Cut(strings.TrimPrefix(p, "/api/v1/applications/"), "/"); ok {
		h.mu.Lock()
		_, known := h.users[id]
		h.mu.Unlock()
		if known {
			_, _ = w.Write([]byte("[ ]"))
			return
		}
	}
	http.NotFound(w, r)
}

// driver is one fake live driver UI.
type driver struct {
	id, user  string
	apps, env []byte
}

func driverID(i int) string { return fmt.Sprintf("app-20261201100000-%04d", i) }

func newDriver(i int, started time.Time) *driver {
	d := &driver{id: driverID(i), user: fmt.Sprintf("user%03d", i%100)}
	var b bytes.Buffer
	b.WriteString("[ ")
	appJSON(&b, d.id, fmt.Sprintf("streaming-%d", i%23), d.user, started, time.Time{}, false)
	b.WriteString(" ]")
	d.apps = b.Bytes()
	d.env = driverEnvJSON(d.id, d.user, i%3 == 0)
	return d
}

const driverPage = `<!DOCTYPE html><html><head><title>Spark Jobs</title></head><body><h3>Spark Jobs</h3><p>No jobs.</p></body></html>`

func (d *driver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/api/v1/applications":
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(d.apps)
	case "/api/v1/applications/" + d.id + "/environment":
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(d.env)
	case "/", "/jobs/":
		w.Header().Set("Content-Type", "text/html;charset=utf-8")
		_, _ = w.Write([]byte(driverPage))
	default:
		http.NotFound(w, r)
	}
}

// serve serves h on a fresh loopback port and returns its URL.
func serve(h http.Handler, servers *[]*http.Server) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("listening: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: time.Minute}
	*servers = append(*servers, srv)
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), nil
}
