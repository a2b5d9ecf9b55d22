package proxy

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
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

const appStandalone = "app-20261201120000-0007" // live, owner alice, view bob

// fakeWorker answers /log as a standalone worker's LogPage.renderLog does,
// over in-memory logs of appStandalone, and records the queries it gets.
type fakeWorker struct {
	*httptest.Server
	mu      sync.Mutex
	queries []url.Values
	logs    map[string]string // "<exec>/<type>" → text
}

func newFakeWorker(t *testing.T, logs map[string]string) *fakeWorker {
	t.Helper()
	w := &fakeWorker{logs: logs}
	w.Server = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		w.mu.Lock()
		w.queries = append(w.queries, q)
		w.mu.Unlock()
		if r.URL.Path != "/log/" {
			http.NotFound(rw, r)
			return
		}
		text, ok := w.logs[q.Get("executorId")+"/"+q.Get("logType")]
		if !ok || q.Get("appId") != appStandalone {
			_, _ = fmt.Fprintf(rw, "==== Bytes 0-0 of 0 of /secret/work/%s/%s/%s ====\nError getting logs due to exception: no such file /secret/work", q.Get("appId"), q.Get("executorId"), q.Get("logType"))
			return
		}
		n := int64(len(text))
		length, _ := strconv.ParseInt(q.Get("byteLength"), 10, 64)
		start := n - length
		if o := q.Get("offset"); o != "" {
			start, _ = strconv.ParseInt(o, 10, 64)
		}
		start = max(0, min(start, n))
		end := min(start+length, n)
		rw.Header().Set("Content-Type", "text/plain;charset=utf-8")
		_, _ = fmt.Fprintf(rw, "==== Bytes %d-%d of %d of /secret/work/%s/%s/%s ====\n%s", start, end, n,
			appStandalone, q.Get("executorId"), q.Get("logType"), text[start:end])
	}))
	t.Cleanup(w.Close)
	return w
}

func (w *fakeWorker) seen() []url.Values {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]url.Values(nil), w.queries...)
}

// execLogHarness adds a live standalone app whose driver lists executor 0
// on worker, a master that lists worker (when listed), and a second
// worker no master lists.
func execLogHarness(t *testing.T, worker *fakeWorker, listed bool, logURL func(exec, typ string) string) *harness {
	t.Helper()
	master := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/json/" {
			http.NotFound(rw, r)
			return
		}
		ws := `[]`
		if listed {
			ws = `[{"id":"worker-1","webuiaddress":"` + worker.URL + `","state":"ALIVE"}]`
		}
		_, _ = fmt.Fprintf(rw, `{"url":"spark://m:7077","workers":%s,"activeapps":[]}`, ws)
	}))
	t.Cleanup(master.Close)
	driver := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/applications/" + appStandalone + "/allexecutors", "/api/v1/applications/" + appStandalone + "/executors":
			rw.Header().Set("Content-Type", "application/json")
			_, _ = fmt.Fprintf(rw, `[ {"id":"driver","hostPort":"127.0.0.1:1","executorLogs":{}},
{"id":"0","hostPort":"127.0.0.1:2","isActive":true,"executorLogs":{"stdout":%q,"stderr":%q},"attributes":{}} ]`,
				logURL("0", "stdout"), logURL("0", "stderr"))
		default:
			http.NotFound(rw, r)
		}
	}))
	t.Cleanup(driver.Close)
	mu, _ := url.Parse(master.URL)
	h := newHarness(t, func(o *Options) { o.StandaloneMasters = []*url.URL{mu} })
	du, _ := url.Parse(driver.URL)
	apps := append(h.reg.Load().Apps(), &discovery.App{ID: appStandalone, Name: "sa", User: "alice", StartTime: time.Now(),
		State: discovery.Running, UIURL: du, Source: "master:" + master.URL, ACLProps: map[string]string{"spark.ui.view.acls": "bob"}})
	h.reg.Store(discovery.NewSnapshot(apps))
	return h
}

func sparkLogURL(worker string) func(exec, typ string) string {
	return func(exec, typ string) string {
		return worker + "/logPage/?appId=" + appStandalone + "&executorId=" + exec + "&logType=" + typ
	}
}

func TestExecLogPage(t *testing.T) {
	w := newFakeWorker(t, map[string]string{"0/stdout": "line one\n<script>alert(1)</script>\nlast line\n", "0/stderr": "warn\n"})
	h := execLogHarness(t, w, true, sparkLogURL(w.URL))
	base := "/app/" + appStandalone + "/_/logs/0/stdout"
	// The client's own parameters other than offset and byteLength never
	// reach the worker (4.x workers serve their daemon log for "self").
	resp, body := h.do(t, "GET", base+"?self=1&appId=other&executorId=1&logType=out", "bob", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %d; want 200\n%s", base, resp.StatusCode, body)
	}
	if !strings.Contains(body, "line one\n&lt;script&gt;alert(1)&lt;/script&gt;\nlast line") {
		t.Errorf("page does not hold the escaped log text:\n%s", body)
	}
	for _, leak := range []string{w.Listener.Addr().String(), "/secret/work", "<script>alert"} {
		if strings.Contains(body, leak) {
			t.Errorf("page contains %q", leak)
		}
	}
	if !strings.Contains(body, `href="`+base+`/raw"`) {
		t.Errorf("page has no download link:\n%s", body)
	}
	qs := w.seen()
	if len(qs) != 1 {
		t.Fatalf("worker got %d requests; want 1", len(qs))
	}
	want := url.Values{"appId": {appStandalone}, "executorId": {"0"}, "logType": {"stdout"}, "byteLength": {strconv.Itoa(execLogPageDefault)}}
	if got := qs[0].Encode(); got != want.Encode() {
		t.Errorf("worker query = %s; want %s", got, want.Encode())
	}

	// A byte range passes through, the page size capped.
	resp, body = h.do(t, "GET", base+"?offset=9&byteLength=999999999", "alice", nil)
	if resp.StatusCode != http.StatusOK || strings.Contains(body, "line one") || !strings.Contains(body, "last line") {
		t.Errorf("GET ?offset=9 = %d; want 200 from byte 9:\n%s", resp.StatusCode, body)
	}
	qs = w.seen()
	if q := qs[len(qs)-1]; q.Get("offset") != "9" || q.Get("byteLength") != strconv.Itoa(execLogPageMax) {
		t.Errorf("worker query = %s; want offset 9 and byteLength %d", q.Encode(), execLogPageMax)
	}
	if !strings.Contains(body, "earlier</a>") {
		t.Errorf("a page from byte 9 has no link to earlier bytes")
	}
}

// A user who may not view the app gets the same answer as for the app's
// pages, and the worker is not asked.
func TestExecLogACL(t *testing.T) {
	w := newFakeWorker(t, map[string]string{"0/stdout": "secret\n"})
	h := execLogHarness(t, w, true, sparkLogURL(w.URL))
	for _, p := range []string{"/_/logs/0/stdout", "/_/logs/0/stdout/raw"} {
		app, appBody := h.do(t, "GET", "/app/"+appStandalone+"/jobs/", "carol", nil)
		resp, body := h.do(t, "GET", "/app/"+appStandalone+p, "carol", nil)
		if resp.StatusCode != app.StatusCode || resp.StatusCode != http.StatusNotFound || strings.Contains(body, "secret") {
			t.Errorf("carol GET %s = %d; want %d as for the app's page", p, resp.StatusCode, app.StatusCode)
		}
		_ = appBody
		resp, _ = h.do(t, "GET", "/app/"+appStandalone+p, "", nil)
		if resp.StatusCode != http.StatusFound {
			t.Errorf("anonymous GET %s = %d; want the sign-in redirect", p, resp.StatusCode)
		}
		resp, _ = h.do(t, "POST", "/app/"+appStandalone+p, "alice", nil)
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("POST %s = %d; want 405", p, resp.StatusCode)
		}
	}
	if n := len(w.seen()); n != 0 {
		t.Errorf("worker got %d requests; want none", n)
	}
}

// The worker's address is the driver's claim: it is used only for this
// app's executor, on a worker a master lists.
func TestExecLogNoOpenProxy(t *testing.T) {
	w := newFakeWorker(t, map[string]string{"0/stdout": "x\n"})
	tests := []struct {
		name   string
		listed bool
		url    func(exec, typ string) string
	}{
		{"worker not listed", false, sparkLogURL(w.URL)},
		{"other app", true, func(e, ty string) string {
			return w.URL + "/logPage/?appId=app-20261201120000-0099&executorId=" + e + "&logType=" + ty
		}},
		{"other executor", true, func(_, ty string) string {
			return w.URL + "/logPage/?appId=" + appStandalone + "&executorId=1&logType=" + ty
		}},
		{"other path", true, func(e, ty string) string {
			return w.URL + "/log?appId=" + appStandalone + "&executorId=" + e + "&logType=" + ty
		}},
		{"daemon log", true, func(e, ty string) string {
			return w.URL + "/logPage/?appId=" + appStandalone + "&executorId=" + e + "&logType=" + ty + "&self"
		}},
		{"repeated id", true, func(e, ty string) string {
			return sparkLogURL(w.URL)(e, ty) + "&appId=" + appStandalone
		}},
		{"NodeManager", true, func(_, ty string) string {
			return "http://nm.internal:8042/node/containerlogs/container_1_0001_01_000002/alice/" + ty + "?start=-4096"
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := execLogHarness(t, w, tc.listed, tc.url)
			before := len(w.seen())
			resp, body := h.do(t, "GET", "/app/"+appStandalone+"/_/logs/0/stdout", "alice", nil)
			if resp.StatusCode != http.StatusNotFound || !strings.Contains(body, "not") {
				t.Errorf("GET = %d; want 404 (not served)\n%s", resp.StatusCode, body)
			}
			if n := len(w.seen()); n != before {
				t.Errorf("worker got %d requests; want none", n-before)
			}
		})
	}
}

func TestExecLogDownload(t *testing.T) {
	var sb strings.Builder
	for i := 0; sb.Len() < 2*execLogChunk+execLogChunk/2; i++ {
		fmt.Fprintf(&sb, "%08d log line of executor 0\n", i)
	}
	text := sb.String()
	w := newFakeWorker(t, map[string]string{"0/stderr": text})
	h := execLogHarness(t, w, true, sparkLogURL(w.URL))
	resp, body := h.do(t, "GET", "/app/"+appStandalone+"/_/logs/0/stderr/raw", "alice", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET raw = %d; want 200\n%.500s", resp.StatusCode, body)
	}
	if body != text {
		t.Errorf("download is %d bytes; want the whole log, %d bytes", len(body), len(text))
	}
	if cd := resp.Header.Get("Content-Disposition"); !strings.HasPrefix(cd, "attachment;") {
		t.Errorf("Content-Disposition = %q; want an attachment", cd)
	}
	if n := len(w.seen()); n != 3 {
		t.Errorf("worker got %d requests; want 3 chunks of %d", n, execLogChunk)
	}
	// A worker that cannot read the log: an error page, not its message.
	resp, body = h.do(t, "GET", "/app/"+appStandalone+"/_/logs/0/stdout/raw", "alice", nil)
	if resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusBadGateway || strings.Contains(body, "/secret") {
		t.Errorf("GET raw of a missing log = %d; want an error without the worker's paths\n%s", resp.StatusCode, body)
	}
}

// The Executors tab's links, from the REST answer, lead to the gateway.
func TestExecutorLogLinksRewritten(t *testing.T) {
	w := newFakeWorker(t, nil)
	h := execLogHarness(t, w, true, sparkLogURL(w.URL))
	for _, p := range []string{
		"/app/" + appStandalone + "/api/v1/applications/" + appStandalone + "/allexecutors",
		"/app/" + appStandalone + "/api/v1/applications/" + appStandalone + "/executors",
		"/api/v1/applications/" + appStandalone + "/allexecutors",
	} {
		resp, body := h.do(t, "GET", p, "alice", nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s = %d\n%s", p, resp.StatusCode, body)
		}
		var execs []struct {
			ID       string            `json:"id"`
			HostPort string            `json:"hostPort"`
			Active   bool              `json:"isActive"`
			Logs     map[string]string `json:"executorLogs"`
		}
		decodeJSON(t, body, &execs)
		if len(execs) != 2 || execs[1].ID != "0" || !execs[1].Active || execs[1].HostPort != "127.0.0.1:2" {
			t.Fatalf("GET %s = %s; want both executors, other fields kept", p, body)
		}
		want := map[string]string{
			"stdout": "/app/" + appStandalone + "/_/logs/0/stdout",
			"stderr": "/app/" + appStandalone + "/_/logs/0/stderr",
		}
		if fmt.Sprint(execs[1].Logs) != fmt.Sprint(want) || len(execs[0].Logs) != 0 {
			t.Errorf("GET %s executorLogs = %v, %v; want {} and %v", p, execs[0].Logs, execs[1].Logs, want)
		}
		if strings.Contains(body, w.Listener.Addr().String()) {
			t.Errorf("GET %s names the worker: %s", p, body)
		}
	}
}

func TestParseExecLogPath(t *testing.T) {
	tests := []struct {
		in   string
		want execLogReq
		ok   bool
	}{
		{"/_/logs/0/stdout", execLogReq{exec: "0", typ: "stdout"}, true},
		{"/_/logs/12/stderr/raw", execLogReq{exec: "12", typ: "stderr", raw: true}, true},
		{"/_/logs/driver/stdout", execLogReq{exec: "driver", typ: "stdout"}, true},
		{"/_/logs/0/stdout/", execLogReq{}, false},
		{"/_/logs/../stdout", execLogReq{}, false},
		{"/_/logs/0.1/stdout", execLogReq{}, false},
		{"/_/logs/0/std out", execLogReq{}, false},
		{"/_/logs/0/stdout/raw/x", execLogReq{}, false},
		{"/_/logs/0", execLogReq{}, false},
		{"/_/diagnosis", execLogReq{}, false},
	}
	for _, tc := range tests {
		got, ok := parseExecLogPath(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseExecLogPath(%q) = %+v, %v; want %+v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestExecutorsListApp(t *testing.T) {
	tests := []struct {
		in, id, attempt string
		ok              bool
	}{
		{"/api/v1/applications/app-20261201120000-0007/allexecutors", "app-20261201120000-0007", "", true},
		{"/api/v1/applications/app-20261201120000-0007/1/executors", "app-20261201120000-0007", "1", true},
		{"/api/v1/applications/app-20261201120000-0007/x/executors", "app-20261201120000-0007", "", true},
		{"/api/v1/applications/app-20261201120000-0007/executors/0/threads", "", "", false},
		{"/api/v1/applications/app-20261201120000-0007/jobs", "", "", false},
		{"/executors/", "", "", false},
	}
	for _, tc := range tests {
		id, attempt, ok := executorsListApp(tc.in)
		if id != tc.id || attempt != tc.attempt || ok != tc.ok {
			t.Errorf("executorsListApp(%q) = %q, %q, %v; want %q, %q, %v", tc.in, id, attempt, ok, tc.id, tc.attempt, tc.ok)
		}
	}
}

// TestExecutorEntryBounded: the executors list is rewritten one executor at
// a time, each read whole; an entry past maxExecutorEntry ends the answer
// rather than be held (here 8 MiB from 8 KiB of gzip).
func TestExecutorEntryBounded(t *testing.T) {
	h := newHarness(t, nil)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = io.WriteString(zw, `[{"id":"1","executorLogs":{},"x":"`+strings.Repeat("a", 8<<20)+`"},{"id":"2"}]`)
	_ = zw.Close()
	d := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "gzip")
		_, _ = w.Write(gz.Bytes())
	}))
	t.Cleanup(d.Close)
	u, _ := url.Parse(d.URL)
	h.reg.Store(discovery.NewSnapshot([]*discovery.App{{ID: appLive, Name: "etl", User: "alice",
		State: discovery.Running, UIURL: u, Source: "static"}}))

	req, err := http.NewRequest(http.MethodGet, h.gw.URL+"/app/"+appLive+"/api/v1/applications/"+appLive+"/executors", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.AddCookie(&http.Cookie{Name: sessionName, Value: "alice"})
	resp, err := h.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil || len(body) > maxExecutorEntry {
		t.Errorf("an 8 MiB executor entry: read %d bytes, error %v; want the answer cut short", len(body), err)
	}
}

// TestExecLogNeedsNamedApp: a driver that a probe, a log line or a static
// entry found says what it likes about its id, owner and ACLs; the logs
// under that id on the workers may be another user's app's. Its executor
// logs are not served (404, neither the driver's executors list nor the
// worker asked), even to a user its own ACLs let in; the same app as a
// master names it is served.
func TestExecLogNeedsNamedApp(t *testing.T) {
	w := newFakeWorker(t, map[string]string{"0/stdout": "alice's secret\n"})
	h := execLogHarness(t, w, true, sparkLogURL(w.URL))
	named := h.reg.Load().Apps()
	for _, source := range []string{"probe:10.0.0.9:4040", "log:/var/log/spark/x.log", "static", "kubernetes:team/drv"} {
		var apps []*discovery.App
		for _, a := range named {
			if a.ID == appStandalone {
				cp := *a
				cp.Source = source
				cp.ACLProps = map[string]string{"spark.ui.view.acls": "mallory"} // the claimant's own environment
				a = &cp
			}
			apps = append(apps, a)
		}
		h.reg.Store(discovery.NewSnapshot(apps))
		resp, body := h.do(t, "GET", "/app/"+appStandalone+"/_/logs/0/stdout", "mallory", nil)
		if resp.StatusCode != http.StatusNotFound || strings.Contains(body, "secret") {
			t.Errorf("found by %s: mallory's log request = %d; want 404 without the log\n%.500s", source, resp.StatusCode, body)
		}
		if qs := w.seen(); len(qs) != 0 {
			t.Errorf("found by %s: the worker was asked %v", source, qs)
		}
	}
	h.reg.Store(discovery.NewSnapshot(named))
	if resp, body := h.do(t, "GET", "/app/"+appStandalone+"/_/logs/0/stdout", "bob", nil); resp.StatusCode != http.StatusOK || !strings.Contains(body, "secret") {
		t.Errorf("named by its master: bob's log request = %d; want 200 with the log\n%.500s", resp.StatusCode, body)
	}
}
