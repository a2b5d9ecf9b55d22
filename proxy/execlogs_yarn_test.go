package proxy

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sparkgate/sparkgate/proxy/discovery"
)

const (
	appYarnLogs   = "application_1700000000000_0002"
	containerLogs = "container_e01_1700000000000_0002_01_000002"
)

// fakeNodeManager answers /ws/v1/node/containers/<id>/logs/<type> as a
// Hadoop 3 NodeManager does for a local log: header lines naming the node,
// the contents (first or last |size| bytes), a trailer.
func fakeNodeManager(t *testing.T, logs map[string]string) (*httptest.Server, *[]string) {
	t.Helper()
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.URL.RequestURI())
		mu.Unlock()
		rest, ok := strings.CutPrefix(r.URL.Path, "/ws/v1/node/containers/")
		parts := strings.Split(rest, "/")
		text, found := logs[strings.Join(parts, "/")]
		if !ok || len(parts) != 3 || parts[1] != "logs" || !found {
			http.NotFound(w, r)
			return
		}
		out := text
		if s := r.URL.Query().Get("size"); s != "" {
			n, _ := strconv.Atoi(s)
			switch {
			case n < 0 && -n < len(text):
				out = text[len(text)+n:]
			case n > 0 && n < len(text):
				out = text[:n]
			}
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = fmt.Fprintf(w, "Container: %s on secret-node.internal:8041\nLogAggregationType: LOCAL\n====================\nLogType:%s\nLogLastModifiedTime:Tue Dec 01 12:00:00 +0000 2026\nLogLength:%d\nLogContents:\n%s\nEnd of LogType:%s\n*****\n",
			parts[0], parts[2], len(text), out, parts[2])
	}))
	t.Cleanup(srv.Close)
	return srv, &seen
}

func yarnLogHarness(t *testing.T, nm *httptest.Server, listed bool, logURL string) *harness {
	t.Helper()
	rm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		nodes := `[]`
		if listed {
			nodes = `[{"id":"n:1","nodeHTTPAddress":"` + strings.TrimPrefix(nm.URL, "http://") + `","state":"RUNNING"}]`
		}
		_, _ = fmt.Fprintf(w, `{"nodes":{"node":%s}}`, nodes)
	}))
	t.Cleanup(rm.Close)
	driver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `[{"id":"1","executorLogs":{"stdout":%q,"stderr":%q}}]`, logURL, strings.Replace(logURL, "/stdout", "/stderr", 1))
	}))
	t.Cleanup(driver.Close)
	ru, _ := url.Parse(rm.URL)
	h := newHarness(t, func(o *Options) { o.ResourceManagers = []*url.URL{ru} })
	du, _ := url.Parse(driver.URL)
	apps := append(h.reg.Load().Apps(), &discovery.App{ID: appYarnLogs, Name: "y", User: "alice", StartTime: time.Now(),
		State: discovery.Running, UIURL: du, ProxyBase: "/proxy/" + appYarnLogs, Source: "yarn"})
	h.reg.Store(discovery.NewSnapshot(apps))
	return h
}

func TestContainerLogPage(t *testing.T) {
	text := strings.Repeat("x", 200) + "\n<b>last</b> line\n"
	nm, seen := fakeNodeManager(t, map[string]string{containerLogs + "/logs/stdout": text})
	claim := nm.URL + "/node/containerlogs/" + containerLogs + "/alice/stdout?start=-4096"
	h := yarnLogHarness(t, nm, true, claim)
	base := "/app/" + appYarnLogs + "/_/logs/1/stdout"
	resp, body := h.do(t, "GET", base+"?byteLength=30", "alice", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %d\n%s", base, resp.StatusCode, body)
	}
	if !strings.Contains(body, "xx\n&lt;b&gt;last&lt;/b&gt; line\n</pre>") || strings.Contains(body, "secret-node") || strings.Contains(body, "End of LogType") {
		t.Errorf("page = %s; want the last 30 bytes escaped, no NodeManager header or trailer", body)
	}
	if !strings.Contains(body, fmt.Sprintf("bytes %d–%d of %d", len(text)-30, len(text), len(text))) {
		t.Errorf("page does not give the range of the last 30 bytes")
	}
	if got, want := (*seen)[0], "/ws/v1/node/containers/"+containerLogs+"/logs/stdout?size=-30"; got != want {
		t.Errorf("NodeManager got %s; want %s", got, want)
	}
	resp, body = h.do(t, "GET", base+"/raw", "alice", nil)
	if resp.StatusCode != http.StatusOK || body != text {
		t.Errorf("download = %d, %q; want the whole log", resp.StatusCode, body)
	}
	if resp, _ := h.do(t, "GET", base+"?offset=5", "alice", nil); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("GET ?offset=5 = %d; want 400 (a NodeManager has no offsets)", resp.StatusCode)
	}
	// The REST answer's links lead to the gateway, on /proxy/ as on /app/.
	resp, body = h.do(t, "GET", "/proxy/"+appYarnLogs+"/api/v1/applications/"+appYarnLogs+"/allexecutors", "alice", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"stdout":"/app/`+appYarnLogs+`/_/logs/1/stdout"`) || strings.Contains(body, "containerlogs") {
		t.Errorf("allexecutors = %d %s; want gateway links", resp.StatusCode, body)
	}
}

// An executor's stdout on YARN is usually empty: a NodeManager answers
// its header with LogLength:0 (TestYARN meets it on Hadoop 3.3.4).
func TestContainerLogEmpty(t *testing.T) {
	nm, _ := fakeNodeManager(t, map[string]string{containerLogs + "/logs/stdout": ""})
	h := yarnLogHarness(t, nm, true, nm.URL+"/node/containerlogs/"+containerLogs+"/alice/stdout?start=-4096")
	base := "/app/" + appYarnLogs + "/_/logs/1/stdout"
	resp, body := h.do(t, "GET", base, "alice", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "bytes 0–0 of 0") || !strings.Contains(body, `<pre class="log"></pre>`) {
		t.Errorf("GET %s = %d; want an empty page of bytes 0–0 of 0\n%s", base, resp.StatusCode, body)
	}
	if resp, body := h.do(t, "GET", base+"/raw", "alice", nil); resp.StatusCode != http.StatusOK || body != "" {
		t.Errorf("download = %d, %q; want 200 and nothing", resp.StatusCode, body)
	}
}

func TestContainerLogNoOpenProxy(t *testing.T) {
	nm, seen := fakeNodeManager(t, map[string]string{containerLogs + "/logs/stdout": "x\n"})
	for _, tc := range []struct {
		name   string
		listed bool
		claim  string
	}{
		{"node not listed", false, nm.URL + "/node/containerlogs/" + containerLogs + "/alice/stdout?start=-4096"},
		{"other app's container", true, nm.URL + "/node/containerlogs/container_1700000000000_0003_01_000002/alice/stdout"},
		{"other cluster", true, nm.URL + "/node/containerlogs/container_1800000000000_0002_01_000002/alice/stdout"},
		{"other type", true, nm.URL + "/node/containerlogs/" + containerLogs + "/alice/syslog"},
		{"other path", true, nm.URL + "/ws/v1/node/containers/" + containerLogs + "/logs/stdout"},
		{"dot segment", true, nm.URL + "/node/containerlogs/" + containerLogs + "/../stdout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := yarnLogHarness(t, nm, tc.listed, tc.claim)
			before := len(*seen)
			resp, body := h.do(t, "GET", "/app/"+appYarnLogs+"/_/logs/1/stdout", "alice", nil)
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("GET = %d; want 404\n%s", resp.StatusCode, body)
			}
			if len(*seen) != before {
				t.Errorf("NodeManager asked %v; want nothing", (*seen)[before:])
			}
		})
	}
}

// TestContainerLogOfOtherAttempt: a History Server app of attempts 2
// (open to dave), 1 and "01" (which YARN never numbers so). An event log
// anyone may have written can name any container, so an executor's log
// needs view on every attempt: dave gets none. For alice, who may view
// them all, a list that names another attempt's container is refused, and
// asked for attempt 1 (the link its own Executors tab has), the log is
// read as attempt 1's.
func TestContainerLogOfOtherAttempt(t *testing.T) {
	const first = "container_e01_1700000000000_0002_01_000002"
	nm, seen := fakeNodeManager(t, map[string]string{first + "/logs/stdout": "attempt one\n"})
	rm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = fmt.Fprintf(w, `{"nodes":{"node":[{"id":"n:1","nodeHTTPAddress":%q,"state":"RUNNING"}]}}`, strings.TrimPrefix(nm.URL, "http://"))
	}))
	t.Cleanup(rm.Close)
	claim := nm.URL + "/node/containerlogs/" + first + "/alice/stdout"
	var mu sync.Mutex
	var lists []string
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		lists = append(lists, r.URL.Path)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `[{"id":"1","executorLogs":{"stdout":%q}}]`, claim)
	}))
	t.Cleanup(hs.Close)
	hu, _ := url.Parse(hs.URL)
	ru, _ := url.Parse(rm.URL)
	h := newHarness(t, func(o *Options) {
		o.ResourceManagers = []*url.URL{ru}
		o.HistoryServers = map[string]*url.URL{"yh": hu}
	})
	ref := discovery.HistoryRef{Server: "yh", BaseURL: hu, Attempts: []string{"2", "1", "01"}, Completed: true,
		User: "alice", ACLProps: map[string]string{"spark.ui.view.acls": "dave"},
		Older: []discovery.HistoryAttempt{{ID: "1", User: "alice", Completed: true, ACLProps: map[string]string{}},
			{ID: "01", User: "alice", Completed: true, ACLProps: map[string]string{"spark.ui.view.acls": "dave"}}}}
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	h.reg.Store(discovery.NewSnapshot([]*discovery.App{{ID: appYarnLogs, Name: "y", User: "alice", StartTime: start,
		EndTime: start.Add(time.Hour), State: discovery.Ended, Source: "history:yh", History: []discovery.HistoryRef{ref}}}))
	base := "/app/" + appYarnLogs + "/_/logs/1/stdout"
	for _, tc := range []struct {
		path, user string
		want       int
		list       string // the executors list read, "" for none
	}{
		{base, "dave", http.StatusNotFound, ""},
		{base + "?attempt=01", "dave", http.StatusNotFound, ""},
		{base + "?attempt=1", "dave", http.StatusNotFound, ""},
		{base, "alice", http.StatusNotFound, "/api/v1/applications/" + appYarnLogs + "/2/allexecutors"},
		{base + "?attempt=01", "alice", http.StatusNotFound, "/api/v1/applications/" + appYarnLogs + "/01/allexecutors"},
		{base + "?attempt=1", "alice", http.StatusOK, "/api/v1/applications/" + appYarnLogs + "/1/allexecutors"},
		{base + "?attempt=x", "alice", http.StatusBadRequest, ""},
	} {
		mu.Lock()
		before := len(lists)
		mu.Unlock()
		nmBefore := len(*seen)
		resp, body := h.do(t, "GET", tc.path, tc.user, nil)
		if resp.StatusCode != tc.want {
			t.Errorf("%s as %s = %d; want %d\n%.300s", tc.path, tc.user, resp.StatusCode, tc.want, body)
		}
		mu.Lock()
		got := lists[before:]
		mu.Unlock()
		if tc.list == "" && len(got) > 0 || tc.list != "" && (len(got) != 1 || got[0] != tc.list) {
			t.Errorf("%s as %s read executors lists %v; want %q", tc.path, tc.user, got, tc.list)
		}
		if served := len(*seen) > nmBefore; served != (tc.want == http.StatusOK) {
			t.Errorf("%s as %s: NodeManager asked %t", tc.path, tc.user, served)
		}
		if tc.want == http.StatusOK {
			if !strings.Contains(body, "attempt one") || !strings.Contains(body, `href="`+base+`?attempt=1&amp;follow=1"`) {
				t.Errorf("attempt 1's log page lacks the log or links without its attempt:\n%.2000s", body)
			}
			// Back to the Executors tab of the attempt read, not the newest's.
			if back := `href="/history/` + appYarnLogs + `/1/executors/"`; !strings.Contains(body, back) {
				t.Errorf("attempt 1's log page does not link back with %s:\n%.2000s", back, body)
			}
		}
	}
	// Attempt 1's Executors tab links its logs with the attempt.
	resp, body := h.do(t, "GET", "/hs/yh/api/v1/applications/"+appYarnLogs+"/1/allexecutors", "alice", nil)
	if want := `"stdout":"` + base + `?attempt=1"`; resp.StatusCode != http.StatusOK || !strings.Contains(body, want) {
		t.Errorf("attempt 1's executors list = %d %s; want %s", resp.StatusCode, body, want)
	}
}

// TestContainerLogForgedEventLog: the ResourceManager named a running app
// of alice's, whose driver lets bob view it; a History Server lists the id
// with one attempt whose event log (anyone may write one) lets everyone
// in. Its executors' logs need view under the driver's ACLs too: mallory,
// let in by the event log alone, gets none, for the attempt or without
// one, live and after the app has ended; bob gets the attempt's log.
func TestContainerLogForgedEventLog(t *testing.T) {
	const container = "container_e01_1700000000000_0002_01_000002"
	nm, seen := fakeNodeManager(t, map[string]string{container + "/logs/stdout": "alice's secret\n"})
	rm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = fmt.Fprintf(w, `{"nodes":{"node":[{"id":"n:1","nodeHTTPAddress":%q,"state":"RUNNING"}]}}`, strings.TrimPrefix(nm.URL, "http://"))
	}))
	t.Cleanup(rm.Close)
	claim := nm.URL + "/node/containerlogs/" + container + "/alice/stdout"
	list := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `[{"id":"1","executorLogs":{"stdout":%q}}]`, claim)
	}
	hs := httptest.NewServer(http.HandlerFunc(list))
	t.Cleanup(hs.Close)
	driver := httptest.NewServer(http.HandlerFunc(list))
	t.Cleanup(driver.Close)
	hu, _ := url.Parse(hs.URL)
	ru, _ := url.Parse(rm.URL)
	du, _ := url.Parse(driver.URL)
	h := newHarness(t, func(o *Options) {
		o.ResourceManagers = []*url.URL{ru}
		o.HistoryServers = map[string]*url.URL{"yh": hu}
	})
	forged := discovery.HistoryRef{Server: "yh", BaseURL: hu, Attempts: []string{"1"}, Completed: false,
		User: "alice", ACLProps: map[string]string{"spark.ui.view.acls": "mallory,bob"}}
	app := discovery.App{ID: appYarnLogs, Name: "y", User: "alice", StartTime: time.Now(), State: discovery.Running,
		UIURL: du, Source: "yarn", ACLProps: map[string]string{"spark.ui.view.acls": "bob"},
		History: []discovery.HistoryRef{forged}}
	// Ended, as discovery publishes it: the History Server's record, with
	// the driver the ResourceManager named beside it.
	ended := discovery.App{ID: appYarnLogs, Name: "y", User: "alice", StartTime: app.StartTime, EndTime: time.Now(),
		State: discovery.Ended, Source: "history:yh", ACLProps: forged.ACLProps, History: []discovery.HistoryRef{forged},
		Driver: &discovery.DriverRecord{Source: "yarn", User: "alice", ACLProps: app.ACLProps}}
	unread := app
	unread.ACLProps = nil
	base := "/app/" + appYarnLogs + "/_/logs/1/stdout"
	for _, c := range []struct {
		name string
		app  discovery.App
		// mallory is what mallory gets: 404 where the driver's lists say
		// no; while they are unread the harness's authorizer says no too
		// (the gateway's says "not yet": TestAuthorizeUnknownACLsIsNotYet).
		mallory int
	}{
		{"running", app, http.StatusNotFound},
		{"ended", ended, http.StatusNotFound},
		{"running, its lists unread", unread, http.StatusNotFound},
	} {
		a := c.app
		h.reg.Store(discovery.NewSnapshot([]*discovery.App{&a}))
		for _, tc := range []struct {
			path, user string
			want       int
		}{
			{base + "?attempt=1", "mallory", c.mallory},
			{base, "mallory", c.mallory},
			{base + "?attempt=1", "bob", http.StatusOK},
		} {
			if c.app.ACLProps == nil && tc.user == "bob" {
				continue // bob's lists are unread too
			}
			before := len(*seen)
			resp, body := h.do(t, "GET", tc.path, tc.user, nil)
			if resp.StatusCode != tc.want {
				t.Errorf("%s: %s as %s = %d; want %d\n%.300s", c.name, tc.path, tc.user, resp.StatusCode, tc.want, body)
			}
			if asked := len(*seen) > before; asked != (tc.want == http.StatusOK) {
				t.Errorf("%s: %s as %s: NodeManager asked %t", c.name, tc.path, tc.user, asked)
			}
		}
	}
}
