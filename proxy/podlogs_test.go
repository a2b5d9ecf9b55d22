package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sparkgate/sparkgate/proxy/discovery"
)

const appKube = "spark-0123456789abcdef0123456789abcdef" // live, owner alice, view bob

// fakePods stands for discovery's Kubernetes source: pods by app, logs by
// "<pod>/<container>". Like a misbehaving API server it ignores
// LimitBytes, so the gateway's own bound is what the tests see.
type fakePods struct {
	mu      sync.Mutex
	pods    map[string][]discovery.Pod
	logs    map[string]string
	err     error
	asked   []discovery.PodLogOptions
	askedOf []string
	// follow, when set, is held open after the text until it is closed.
	follow chan struct{}
}

func (f *fakePods) AppPods(appID string) []discovery.Pod { return f.pods[appID] }

func (f *fakePods) PodLog(ctx context.Context, p discovery.Pod, o discovery.PodLogOptions) (io.ReadCloser, error) {
	f.mu.Lock()
	f.asked = append(f.asked, o)
	f.askedOf = append(f.askedOf, p.Namespace+"/"+p.Name)
	f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	text := f.logs[p.Name+"/"+o.Container]
	if o.TailLines > 0 {
		lines := strings.SplitAfter(text, "\n")
		text = strings.Join(lines[max(0, len(lines)-int(o.TailLines)-1):], "")
	}
	if !o.Follow || f.follow == nil {
		return io.NopCloser(strings.NewReader(text)), nil
	}
	pr, pw := io.Pipe()
	go func() {
		_, _ = io.WriteString(pw, text)
		select {
		case <-f.follow:
			_, _ = io.WriteString(pw, "after the wait\n")
			_ = pw.Close()
		case <-ctx.Done():
			pw.CloseWithError(ctx.Err())
		}
	}()
	return pr, nil
}

func (f *fakePods) calls() ([]discovery.PodLogOptions, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]discovery.PodLogOptions(nil), f.asked...), append([]string(nil), f.askedOf...)
}

// podLogHarness adds a live Kubernetes app whose driver lists executors
// driver, 1 and 2 (Spark on Kubernetes leaves executorLogs empty), and
// pods: its driver pod and executor 1's pod in namespace spark, and a pod
// of another app.
func podLogHarness(t *testing.T, f *fakePods) *harness {
	t.Helper()
	f.pods = map[string][]discovery.Pod{
		appKube: {
			{Namespace: "spark", Name: "pi-driver", ExecID: "driver", Containers: []string{"spark-kubernetes-driver"}, Phase: "Running"},
			{Namespace: "spark", Name: "pi-exec-1", ExecID: "1", Containers: []string{"spark-kubernetes-executor", "sidecar"}, Phase: "Running"},
		},
		appDenied: {{Namespace: "spark", Name: "payroll-driver", ExecID: "driver", Containers: []string{"spark-kubernetes-driver"}}},
	}
	driver := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		// Like a hostile driver, it answers for any app id.
		if !strings.HasPrefix(r.URL.Path, "/api/v1/applications/") || !strings.HasSuffix(r.URL.Path, "/allexecutors") {
			http.NotFound(rw, r)
			return
		}
		rw.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(rw, `[{"id":"driver","executorLogs":{}},{"id":"1","executorLogs":{}},{"id":"2","executorLogs":{"stdout":"http://10.0.0.9:1/x"}}]`)
	}))
	t.Cleanup(driver.Close)
	h := newHarness(t, func(o *Options) { o.Pods = f })
	du, _ := url.Parse(driver.URL)
	apps := append(h.reg.Load().Apps(), &discovery.App{ID: appKube, Name: "pi", User: "alice", StartTime: time.Now(),
		State: discovery.Running, UIURL: du, Source: "kubernetes:spark/pi-driver", ACLProps: map[string]string{"spark.ui.view.acls": "bob"}})
	h.reg.Store(discovery.NewSnapshot(apps))
	return h
}

func TestPodLogPage(t *testing.T) {
	t.Parallel()
	f := &fakePods{logs: map[string]string{
		"pi-driver/spark-kubernetes-driver": "INFO Utils: Successfully started service 'SparkUI'\n<script>alert(1)</script>\nlast line\n",
		"pi-exec-1/sidecar":                 "sidecar says hi\n",
	}}
	h := podLogHarness(t, f)
	base := "/app/" + appKube + "/_/logs/pod/pi-driver"
	resp, body := h.do(t, "GET", base, "bob", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %d\n%s", base, resp.StatusCode, body)
	}
	for _, want := range []string{"Successfully started service &#39;SparkUI&#39;", "&lt;script&gt;alert(1)&lt;/script&gt;", "last line",
		`href="` + base + `/raw"`, `href="` + base + `?follow=1"`, `href="` + base + `?lines=0"`, "the driver", "spark-kubernetes-driver"} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "<script>alert") {
		t.Error("log text reached the page unescaped")
	}
	if got := resp.Header.Get("Content-Security-Policy"); got == "" {
		t.Error("the page has no Content-Security-Policy")
	}
	opts, of := f.calls()
	if len(opts) != 1 || of[0] != "spark/pi-driver" || opts[0].Container != "spark-kubernetes-driver" ||
		opts[0].TailLines != podLogPageLines || opts[0].LimitBytes != podLogPageMax+1 || opts[0].Follow {
		t.Errorf("asked %v of %v; want the driver container's last %d lines, at most %d bytes", opts, of, podLogPageLines, podLogPageMax+1)
	}

	// Another container of a pod: listed, and asked for by name.
	resp, body = h.do(t, "GET", "/app/"+appKube+"/_/logs/pod/pi-exec-1?container=sidecar&timestamps=1&lines=0", "bob", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "sidecar says hi") || !strings.Contains(body, "executor 1") ||
		!strings.Contains(body, `href="/app/`+appKube+`/_/logs/pod/pi-exec-1?container=sidecar"`) {
		t.Errorf("GET sidecar log = %d\n%s", resp.StatusCode, body)
	}
	opts, _ = f.calls()
	if o := opts[len(opts)-1]; o.Container != "sidecar" || !o.Timestamps || o.TailLines != 0 {
		t.Errorf("asked %+v; want the sidecar's whole log with timestamps", o)
	}
	before := len(opts)
	for _, bad := range []string{"?container=nope", "?lines=-1", "?limitBytes=0"} {
		if resp, _ := h.do(t, "GET", "/app/"+appKube+"/_/logs/pod/pi-exec-1"+bad, "bob", nil); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("GET %s = %d; want 400", bad, resp.StatusCode)
		}
	}
	if opts, _ = f.calls(); len(opts) != before {
		t.Errorf("a refused query reached the API server: %v", opts[before:])
	}
}

// TestPodLogOwnership: only pods the Kubernetes source holds with the
// app's id are served, to users who may view the app.
func TestPodLogOwnership(t *testing.T) {
	t.Parallel()
	f := &fakePods{logs: map[string]string{"payroll-driver/spark-kubernetes-driver": "secret\n"}}
	h := podLogHarness(t, f)
	for _, p := range []string{
		"/app/" + appKube + "/_/logs/pod/payroll-driver", // another app's pod
		"/app/" + appKube + "/_/logs/pod/nonexistent",
		"/app/" + appKube + "/_/logs/pod/Pi-Driver",
		"/app/" + appKube + "/_/logs/pod/pi-driver/other",
		"/app/" + appKube + "/_/logs/pod/a..b",
		"/app/" + appKube + "/_/logs/pod/",
	} {
		resp, body := h.do(t, "GET", p, "bob", nil)
		if resp.StatusCode != http.StatusNotFound || strings.Contains(body, "secret") {
			t.Errorf("GET %s = %d; want 404\n%s", p, resp.StatusCode, body)
		}
	}
	// A user who may not view the app is refused as on its pages.
	app, _ := h.do(t, "GET", "/app/"+appKube+"/jobs/", "carol", nil)
	resp, body := h.do(t, "GET", "/app/"+appKube+"/_/logs/pod/pi-driver/raw", "carol", nil)
	if resp.StatusCode != app.StatusCode || resp.StatusCode/100 != 4 {
		t.Errorf("carol GET the driver's log = %d; want %d as for the app's page\n%s", resp.StatusCode, app.StatusCode, body)
	}
	if resp, _ := h.do(t, "POST", "/app/"+appKube+"/_/logs/pod/pi-driver", "bob", nil); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST = %d; want 405", resp.StatusCode)
	}
	if opts, of := f.calls(); len(opts) != 0 {
		t.Errorf("the API server was asked for %v", of)
	}
	// Without a Kubernetes source nothing is a pod.
	h2 := newHarness(t, nil)
	if resp, _ := h2.do(t, "GET", "/app/"+appLive+"/_/logs/pod/pi-driver", "bob", nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET a pod log without a Kubernetes source = %d; want 404", resp.StatusCode)
	}
}

// TestPodLogCap: a page holds at most the bytes asked for (the cap at
// most) whatever the API server sends, and says it was cut; the download
// holds the whole log.
func TestPodLogCap(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("0123456789abcdef\n", 200) // 3400 bytes
	f := &fakePods{logs: map[string]string{"pi-driver/spark-kubernetes-driver": long}}
	h := podLogHarness(t, f)
	base := "/app/" + appKube + "/_/logs/pod/pi-driver"
	resp, body := h.do(t, "GET", base+"?lines=0&limitBytes=1000", "bob", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET = %d", resp.StatusCode)
	}
	text := between(body, `<pre class="log">`, `</pre>`)
	if got := strings.Count(text, "0123456789abcdef"); !strings.HasPrefix(text, long[:1000]) || got != 1000/17 {
		t.Errorf("page text holds %d lines; want the first 1000 bytes:\n%.200s", got, text)
	}
	if !strings.Contains(text, "cut at 1000 bytes") {
		t.Errorf("page does not say it was cut:\n%s", text[len(text)-200:])
	}
	if opts, _ := f.calls(); opts[0].LimitBytes != 1001 {
		t.Errorf("asked LimitBytes %d; want 1001", opts[0].LimitBytes)
	}
	// A page never asks for more than the cap.
	_, _ = h.do(t, "GET", base+"?limitBytes=99999999999", "bob", nil)
	if opts, _ := f.calls(); opts[1].LimitBytes != podLogPageMax+1 {
		t.Errorf("asked LimitBytes %d; want the cap %d", opts[1].LimitBytes, podLogPageMax+1)
	}
	// A log within the limit is not cut.
	_, body = h.do(t, "GET", base+"?lines=0&limitBytes=3400", "bob", nil)
	if strings.Contains(body, "cut at") || !strings.Contains(body, long) {
		t.Errorf("a log of exactly the limit was cut or shortened")
	}

	resp, body = h.do(t, "GET", base+"/raw?follow=1", "bob", nil)
	if resp.StatusCode != http.StatusOK || body != long {
		t.Errorf("GET raw = %d, %d bytes; want the whole log", resp.StatusCode, len(body))
	}
	if ct, cd := resp.Header.Get("Content-Type"), resp.Header.Get("Content-Disposition"); ct != "text/plain; charset=utf-8" ||
		cd != `attachment; filename="`+appKube+`_pi-driver_spark-kubernetes-driver.log"` || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("download headers: Content-Type %q, Content-Disposition %q", ct, cd)
	}
	opts, _ := f.calls()
	if o := opts[len(opts)-1]; o.Follow || o.TailLines != 0 || o.LimitBytes != podLogDownloadMax+1 {
		t.Errorf("download asked %+v; want the whole log up to the cap, no follow", o)
	}
	resp, body = h.do(t, "GET", base+"/raw?limitBytes=17", "bob", nil)
	if resp.StatusCode != http.StatusOK || body != "0123456789abcdef\n" {
		t.Errorf("GET raw?limitBytes=17 = %d %q", resp.StatusCode, body)
	}
}

// TestPodLogFollow: a followed log reaches the browser as it comes, before
// the stream ends.
func TestPodLogFollow(t *testing.T) {
	t.Parallel()
	f := &fakePods{logs: map[string]string{"pi-driver/spark-kubernetes-driver": "first line\n"}, follow: make(chan struct{})}
	h := podLogHarness(t, f)
	req, _ := http.NewRequest("GET", h.gw.URL+"/app/"+appKube+"/_/logs/pod/pi-driver?follow=1", nil)
	req.AddCookie(&http.Cookie{Name: sessionName, Value: "bob"})
	resp, err := h.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	var seen strings.Builder
	for !strings.Contains(seen.String(), "first line") {
		line, err := br.ReadString('\n')
		seen.WriteString(line)
		if err != nil {
			t.Fatalf("the followed page ended or failed (%v) before its first line arrived:\n%s", err, seen.String())
		}
	}
	// The first line came while the stream was still open.
	close(f.follow)
	rest, _ := io.ReadAll(br)
	if !strings.Contains(string(rest), "after the wait") || !strings.Contains(seen.String(), "following") {
		t.Errorf("followed page:\n%s%s", seen.String(), rest)
	}
	if opts, _ := f.calls(); !opts[0].Follow {
		t.Errorf("asked %+v; want follow", opts[0])
	}
}

// TestPodLogErrors: the API server's refusals become pages that say what
// to do.
func TestPodLogErrors(t *testing.T) {
	t.Parallel()
	gr := schema.GroupResource{Resource: "pods/log"}
	for _, c := range []struct {
		err  error
		want int
		says string
	}{
		{apierrors.NewForbidden(gr, "pi-driver", nil), http.StatusBadGateway, "pods/log"},
		{apierrors.NewNotFound(gr, "pi-driver"), http.StatusNotFound, "no log"},
		{apierrors.NewBadRequest("container spark-kubernetes-driver is waiting to start"), http.StatusNotFound, "waiting to start"},
		{io.ErrUnexpectedEOF, http.StatusBadGateway, "did not answer"},
	} {
		f := &fakePods{err: c.err}
		h := podLogHarness(t, f)
		resp, body := h.do(t, "GET", "/app/"+appKube+"/_/logs/pod/pi-driver", "bob", nil)
		if resp.StatusCode != c.want || !strings.Contains(body, c.says) {
			t.Errorf("%v: GET = %d; want %d saying %q\n%s", c.err, resp.StatusCode, c.want, c.says, body)
		}
	}
}

// TestPodLogLinks: the Executors tab's REST answer links each executor
// with a pod to its pod's log.
func TestPodLogLinks(t *testing.T) {
	t.Parallel()
	h := podLogHarness(t, &fakePods{})
	resp, body := h.do(t, "GET", "/app/"+appKube+"/api/v1/applications/"+appKube+"/allexecutors", "bob", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET allexecutors = %d\n%s", resp.StatusCode, body)
	}
	var execs []struct {
		ID   string            `json:"id"`
		Logs map[string]string `json:"executorLogs"`
	}
	if err := json.Unmarshal([]byte(body), &execs); err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]string{
		"driver": {"log": "/app/" + appKube + "/_/logs/pod/pi-driver"},
		"1":      {"log": "/app/" + appKube + "/_/logs/pod/pi-exec-1"},
		"2":      {"stdout": "/app/" + appKube + "/_/logs/2/stdout"},
	}
	for _, e := range execs {
		if w := want[e.ID]; len(w) != len(e.Logs) || !mapsEqual(w, e.Logs) {
			t.Errorf("executor %s logs = %v; want %v", e.ID, e.Logs, w)
		}
	}
	if len(execs) != 3 {
		t.Errorf("executors = %v", execs)
	}

	// Asked for another app's list, the driver's answer is still its own
	// app's: its links, never the other app's pods.
	resp, body = h.do(t, "GET", "/app/"+appKube+"/api/v1/applications/"+appDenied+"/allexecutors", "bob", nil)
	if resp.StatusCode != http.StatusOK || strings.Contains(body, "payroll") || strings.Contains(body, appDenied) ||
		!strings.Contains(body, "/app/"+appKube+"/_/logs/pod/pi-driver") {
		t.Errorf("another app's executors through this app's driver = %d %s; want this app's links only", resp.StatusCode, body)
	}
}

func mapsEqual(a, b map[string]string) bool {
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return len(a) == len(b)
}

func between(s, from, to string) string {
	_, after, _ := strings.Cut(s, from)
	before, _, _ := strings.Cut(after, to)
	return before
}

// TestPodLogFollowCap: a followed page that reaches its cap ends there,
// without waiting for the log to go on.
func TestPodLogFollowCap(t *testing.T) {
	t.Parallel()
	f := &fakePods{logs: map[string]string{"pi-driver/spark-kubernetes-driver": "0123456789\n"}, follow: make(chan struct{})}
	defer close(f.follow)
	h := podLogHarness(t, f)
	resp, body := h.do(t, "GET", "/app/"+appKube+"/_/logs/pod/pi-driver?follow=1&limitBytes=11", "bob", nil)
	if text := between(body, `<pre class="log">`, `</pre>`); resp.StatusCode != http.StatusOK || !strings.HasPrefix(text, "0123456789\n") || !strings.Contains(text, "cut at 11 bytes") {
		t.Errorf("GET = %d\n%s", resp.StatusCode, body)
	}
}

// TestPodLogStreamsPerUser: a user holds at most podLogStreamsPerUser pod
// logs open at once (each a stream of the API server's); the next gets
// 429 with Retry-After and the API server is not asked, while other users
// read theirs. A stream that ends gives its slot back.
func TestPodLogStreamsPerUser(t *testing.T) {
	t.Parallel()
	f := &fakePods{logs: map[string]string{"pi-driver/spark-kubernetes-driver": "first line\n"}, follow: make(chan struct{})}
	defer close(f.follow)
	h := podLogHarness(t, f)
	follow := func(user string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("GET", h.gw.URL+"/app/"+appKube+"/_/logs/pod/pi-driver?follow=1", nil)
		req.AddCookie(&http.Cookie{Name: sessionName, Value: user})
		resp, err := h.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	var open []*http.Response
	defer func() {
		for _, r := range open {
			_ = r.Body.Close()
		}
	}()
	for i := range podLogStreamsPerUser {
		resp := follow("bob")
		open = append(open, resp)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("bob's stream %d: %d", i+1, resp.StatusCode)
		}
	}
	asked, _ := f.calls()
	over := follow("bob")
	body, _ := io.ReadAll(over.Body)
	_ = over.Body.Close()
	if over.StatusCode != http.StatusTooManyRequests || over.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "pod logs") {
		t.Errorf("bob's stream %d: %d, Retry-After %q\n%s", podLogStreamsPerUser+1, over.StatusCode, over.Header.Get("Retry-After"), body)
	}
	if now, _ := f.calls(); len(now) != len(asked) {
		t.Errorf("the API server was asked for the refused stream")
	}
	// The owner is not held back by bob's streams; a download counts too.
	if resp, _ := h.do(t, "GET", "/app/"+appKube+"/_/logs/pod/pi-driver/raw", "alice", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("alice's download: %d", resp.StatusCode)
	}
	// Bob closes one: the gateway's handler ends and gives its slot back.
	_ = open[0].Body.Close()
	open = open[1:]
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp := follow("bob")
		if resp.StatusCode == http.StatusOK {
			open = append(open, resp)
			break
		}
		_ = resp.Body.Close()
		if time.Now().After(deadline) {
			t.Fatalf("bob closed a stream; a new one still gets %d", resp.StatusCode)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// FuzzParsePodLogPath: what the path parser accepts is one pod name that
// cannot climb out of the API server's pod path.
func FuzzParsePodLogPath(f *testing.F) {
	for _, s := range []string{"/_/logs/pod/pi-driver", "/_/logs/pod/pi-driver/raw", "/_/logs/pod/a..b", "/_/logs/pod/%2e%2e", "/_/logs/pod//raw", "/_/logs/pod/a/b/c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		q, ok := parsePodLogPath(p)
		if !ok {
			return
		}
		if q.pod == "" || len(q.pod) > 253 || strings.ContainsAny(q.pod, "/%?#\\") || strings.Contains(q.pod, "..") || !validPodName(q.pod) {
			t.Errorf("parsePodLogPath(%q) = %+v", p, q)
		}
		if want := podLogPrefix + q.pod; p != want && p != want+"/raw" {
			t.Errorf("parsePodLogPath(%q) = %+v; not the path it was given", p, q)
		}
	})
}

// TestPodLogForgedEventLog: an app the Kubernetes source found, ended, that
// a History Server lists with an event log (anyone may write one) letting
// mallory in. Its pods' logs need view under its driver's ACLs too: bob,
// whom the driver let in, reads the driver pod's log; mallory gets 404
// and the API server is not asked.
func TestPodLogForgedEventLog(t *testing.T) {
	t.Parallel()
	f := &fakePods{logs: map[string]string{"pi-driver/spark-kubernetes-driver": "alice's secret\n"}}
	h := podLogHarness(t, f)
	var apps []*discovery.App
	for _, a := range h.reg.Load().Apps() {
		if a.ID == appKube {
			// As discovery publishes it once ended and listed: the History
			// Server's record, the driver the Kubernetes source found beside it.
			forged := map[string]string{"spark.ui.view.acls": "mallory,bob"}
			a = &discovery.App{ID: a.ID, Name: a.Name, User: "alice", StartTime: a.StartTime, EndTime: time.Now(),
				State: discovery.Ended, Source: "history:main", ACLProps: forged,
				History: []discovery.HistoryRef{{Server: "main", BaseURL: h.hs.url(), Completed: true, User: "alice", ACLProps: forged}},
				Driver:  &discovery.DriverRecord{Source: a.Source, User: a.User, ACLProps: a.ACLProps}}
		}
		apps = append(apps, a)
	}
	h.reg.Store(discovery.NewSnapshot(apps))
	path := "/app/" + appKube + "/_/logs/pod/pi-driver"
	if resp, body := h.do(t, "GET", path, "mallory", nil); resp.StatusCode != http.StatusNotFound || strings.Contains(body, "secret") {
		t.Errorf("mallory, let in by the event log only: %d; want 404\n%.300s", resp.StatusCode, body)
	}
	if opts, _ := f.calls(); len(opts) != 0 {
		t.Errorf("the API server was asked %v for mallory", opts)
	}
	if resp, body := h.do(t, "GET", path, "bob", nil); resp.StatusCode != http.StatusOK || !strings.Contains(body, "secret") {
		t.Errorf("bob, let in by both: %d; want 200 with the log\n%.300s", resp.StatusCode, body)
	}
}
