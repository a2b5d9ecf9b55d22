package proxy

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/sparkgate/sparkgate/proxy/discovery"
)

// Test app ids.
const (
	appLive     = "app-20240101000000-0001" // live, owner alice, view bob
	appDenied   = "app-20240101000000-0002" // live, owner carol
	appHistory  = "app-20240101000000-0003" // ended, on History Server "main", attempt 1
	appWaiting  = "app-20240101000000-0004" // ended, no History Server yet
	appDead     = "app-20240101000000-0005" // "live", driver gone
	appYarn     = "application_1700000000000_0001"
	sessionName = CookiePrefix + "_session"
)

// fakeAuthn signs in whoever the gateway session cookie names:
// "user|group|group".
type fakeAuthn struct{}

func (fakeAuthn) Authenticate(r *http.Request) (Identity, bool, error) {
	c, err := r.Cookie(sessionName)
	if err != nil || c.Value == "" {
		return Identity{}, false, nil
	}
	if c.Value == "broken" {
		return Identity{}, false, fmt.Errorf("session store down")
	}
	parts := strings.Split(c.Value, "|")
	return Identity{User: parts[0], Groups: parts[1:], Method: "session"}, true, nil
}

func (fakeAuthn) Challenge(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Location", "/oauth2/start?rd="+url.QueryEscape(r.URL.RequestURI()))
	w.WriteHeader(http.StatusFound)
}

// fakeAuthz allows the owner and the users in spark.ui.view.acls (or
// spark.modify.acls for Modify), from the History Server's copy for
// history requests.
type fakeAuthz struct{}

func (fakeAuthz) Authorize(id Identity, app *discovery.App, hist *discovery.HistoryRef, action Action) Verdict {
	props := app.ACLProps
	if hist != nil {
		props = hist.ACLProps
	}
	if id.User == app.User {
		return Verdict{Allow: true, Reasons: []string{"owner"}}
	}
	key := "spark.ui.view.acls"
	if action == Modify {
		key = "spark.modify.acls"
	}
	for _, u := range strings.Split(props[key], ",") {
		if u == id.User {
			return Verdict{Allow: true, Reasons: []string{"listed in " + key}}
		}
	}
	return Verdict{Reasons: []string{id.User + " is not the owner " + app.User, id.User + " is not in " + key}, Grant: key + " / " + key + ".groups",
		Ask: []string{"the app's owner: " + app.User}}
}

// seen is one request as an upstream received it.
type seen struct {
	Method, Path, RawPath, RawQuery string
	Header                          http.Header
}

// backend is a fake Spark driver or History Server that records what it
// receives.
type backend struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []seen
}

const jobsPage = `<!DOCTYPE html><html><head><title>Spark Jobs</title></head><body>
<table><tr><td>
<a href="/app/x/jobs/job/kill/?id=7" onclick="if (window.confirm('Are you sure you want to kill job 7 ?')) { this.parentNode.submit(); return true; } else { return false; }" class="kill-link">(kill)</a>
<a href="/app/x/jobs/job/?id=7" class="name-link">count at Main.scala:12</a>
</td></tr></table></body></html>`

func newBackend(t testing.TB) *backend {
	b := &backend{}
	b.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		b.reqs = append(b.reqs, seen{r.Method, r.URL.Path, r.URL.RawPath, r.URL.RawQuery, r.Header.Clone()})
		b.mu.Unlock()
		switch p := r.URL.Path; {
		case p == "/":
			// Spark's redirect: absolute, from the Host header, no prefix.
			w.Header().Set("Location", "http://"+r.Host+"/jobs/")
			w.WriteHeader(http.StatusFound)
		case p == "/jobs/":
			w.Header().Set("Content-Type", "text/html;charset=utf-8")
			w.Header().Set("X-Frame-Options", "SAMEORIGIN")
			if r.URL.Query().Get("gz") == "1" && strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
				w.Header().Set("Content-Encoding", "gzip")
				zw := gzip.NewWriter(w)
				_, _ = io.WriteString(zw, jobsPage)
				_ = zw.Close()
				return
			}
			_, _ = io.WriteString(w, jobsPage)
		case p == "/setcookie":
			// A hostile or careless driver tries to plant the gateway's session.
			http.SetCookie(w, &http.Cookie{Name: "_sparkgate_session", Value: "planted", Path: "/"})
			http.SetCookie(w, &http.Cookie{Name: "JSESSIONID", Value: "x", Path: "/"})
			_, _ = io.WriteString(w, "cookies")
		case strings.HasSuffix(p, "/away/"):
			// A YARN ResourceManager's proxy once the app has finished.
			w.Header().Set("Location", "http://rm.internal:8088/cluster/app/application_1700000000000_0001")
			w.WriteHeader(http.StatusFound)
		case p == "/big/":
			// A jobs page with many jobs: worth compressing.
			w.Header().Set("Content-Type", "text/html;charset=utf-8")
			_, _ = io.WriteString(w, strings.Repeat(jobsPage, 40))
		case p == "/slow":
			<-r.Context().Done()
		case strings.HasSuffix(p, "/reloading/"):
			// A History Server loading an app: a redirect to the same URL
			// while it loads (the first two asks).
			n := b.count(p)
			if n <= 2 {
				w.Header().Set("Location", "http://"+r.Host+r.URL.RequestURI())
				w.WriteHeader(http.StatusFound)
				return
			}
			_, _ = io.WriteString(w, "loaded "+p)
		case strings.HasSuffix(p, "/loading500/"), strings.HasSuffix(p, "/always500/"):
			// A History Server loading an app: 500 to the first ask
			// (loadRetry), or to every ask.
			n := b.count(p)
			if n == 1 || strings.HasSuffix(p, "/always500/") {
				http.Error(w, "java.lang.NullPointerException", http.StatusInternalServerError)
				return
			}
			_, _ = io.WriteString(w, "loaded "+p)
		case p == "/api/v1/applications":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `[{"id":"`+appLive+`","name":"etl","attempts":[]}]`)
		case strings.HasSuffix(p, "/kill/") || strings.HasSuffix(p, "/kill"):
			w.Header().Set("Location", "http://"+r.Host+"/jobs/")
			w.WriteHeader(http.StatusFound)
		default:
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, "upstream "+p)
		}
	}))
	t.Cleanup(b.Close)
	return b
}

func (b *backend) requests() []seen {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]seen(nil), b.reqs...)
}

// count returns how many requests for path the backend received.
func (b *backend) count(path string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, q := range b.reqs {
		if q.Path == path {
			n++
		}
	}
	return n
}

func (b *backend) last(t testing.TB) seen {
	t.Helper()
	rs := b.requests()
	if len(rs) == 0 {
		t.Fatal("backend received no request")
	}
	return rs[len(rs)-1]
}

func (b *backend) url() *url.URL {
	u, _ := url.Parse(b.URL)
	return u
}

type harness struct {
	srv      *Server
	gw       *httptest.Server
	drv, hs  *backend
	reg      *discovery.Registry
	suspects chan string
	logs     *observer.ObservedLogs
	audit    *observer.ObservedLogs
	client   *http.Client
}

func newHarness(t testing.TB, mod func(*Options)) *harness {
	t.Helper()
	h := &harness{drv: newBackend(t), hs: newBackend(t), reg: discovery.NewRegistry(), suspects: make(chan string, 16)}
	// A closed listener: connecting is refused.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadURL, _ := url.Parse("http://" + ln.Addr().String())
	_ = ln.Close()

	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	hsRef := discovery.HistoryRef{Server: "main", BaseURL: h.hs.url(), Attempts: []string{"1"}, Completed: true,
		ACLProps: map[string]string{"spark.ui.view.acls": "bob"}}
	h.reg.Store(discovery.NewSnapshot([]*discovery.App{
		{ID: appLive, Name: "etl", User: "alice", SparkVersion: "3.5.9", StartTime: start, State: discovery.Running,
			UIURL: h.drv.url(), Source: "static", ACLProps: map[string]string{"spark.ui.view.acls": "bob", "spark.modify.acls": "bob"}},
		{ID: appDenied, Name: "payroll", User: "carol", SparkVersion: "4.0.5", StartTime: start.Add(time.Hour), State: discovery.Running,
			UIURL: h.drv.url(), Source: "probe:127.0.0.1:4041"},
		{ID: appHistory, Name: "nightly", User: "alice", SparkVersion: "3.5.9", StartTime: start.Add(-time.Hour),
			EndTime: start.Add(-30 * time.Minute), State: discovery.Ended, Source: "history:main", History: []discovery.HistoryRef{hsRef}},
		{ID: appWaiting, Name: "adhoc", User: "alice", StartTime: start.Add(-2 * time.Hour), EndTime: start.Add(-time.Hour), State: discovery.Ended, Source: "static"},
		{ID: appDead, Name: "gone", User: "alice", StartTime: start.Add(-3 * time.Hour), State: discovery.Running, UIURL: deadURL, Source: "static"},
		{ID: appYarn, Name: "yarn-app", User: "alice", StartTime: start.Add(-4 * time.Hour), State: discovery.Running, UIURL: h.drv.url(),
			ProxyBase: "/proxy/" + appYarn, Source: "yarn"},
	}))
	core, logs := observer.New(zap.DebugLevel)
	acore, audit := observer.New(zap.DebugLevel)
	h.logs, h.audit = logs, audit
	cfg := DefaultConfig()
	cfg.ResponseHeaderTimeout = 500 * time.Millisecond
	o := Options{
		Config:         cfg,
		Registry:       h.reg,
		Authn:          fakeAuthn{},
		Authz:          fakeAuthz{},
		HistoryServers: map[string]*url.URL{"main": h.hs.url()},
		Suspect:        func(id string) { h.suspects <- id },
		Sources:        []string{"driver logs /var/log/spark/*.log"},
		Logger:         zap.New(core),
		Audit:          zap.New(acore),
	}
	if mod != nil {
		mod(&o)
	}
	h.srv, err = New(o)
	if err != nil {
		t.Fatal(err)
	}
	h.gw = httptest.NewServer(Middleware(h.srv, o.Logger, nil))
	t.Cleanup(h.gw.Close)
	h.client = &http.Client{
		Timeout:       20 * time.Second, // a hang fails the test instead of the suite
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return h
}

// do sends a request as user ("" for no session) and returns the response
// with its body read.
func (h *harness) do(t testing.TB, method, path, user string, hdr http.Header) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, h.gw.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if user != "" {
		req.AddCookie(&http.Cookie{Name: sessionName, Value: user})
	}
	resp, err := h.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, path, err)
	}
	return resp, string(body)
}

// raw sends a request line byte for byte (no client-side cleaning).
func (h *harness) raw(t testing.TB, method, target, user string) (*http.Response, string) {
	t.Helper()
	c, err := net.Dial("tcp", h.gw.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: gw.test\r\nCookie: %s=%s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", method, target, sessionName, user)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

func decodeJSON(t testing.TB, body string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("decoding %q: %v", body, err)
	}
}
