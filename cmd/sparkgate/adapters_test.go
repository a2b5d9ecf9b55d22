package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sparkgate/sparkgate/policy"
	"github.com/sparkgate/sparkgate/proxy"
	"github.com/sparkgate/sparkgate/proxy/discovery"
)

func testAuthorizer() *authorizer {
	return newAuthorizer(policy.Config{Admins: []string{"root"}, WhenACLsOff: policy.ModeOpen, CacheSize: 16, CacheTTL: time.Minute},
		map[string]policy.HistoryRules{"hs": {Name: "hs", Enabled: true}})
}

// TestAuthorizeUnknownACLsIsNotYet: while an app's ACLs are unread, its
// owner and the admins get in and everyone else is told "not yet", with no
// reasons drawn from lists that were never read.
func TestAuthorizeUnknownACLsIsNotYet(t *testing.T) {
	z := testAuthorizer()
	liveApp := &discovery.App{ID: "local-1", User: "dave", State: discovery.Running}
	hist := &discovery.HistoryRef{Server: "hs", User: "dave"}
	finished := &discovery.App{ID: "app-1", User: "dave", State: discovery.Ended, History: []discovery.HistoryRef{*hist}}
	for _, tc := range []struct {
		name string
		app  *discovery.App
		hist *discovery.HistoryRef
		user string
		want proxy.Verdict
	}{
		{"live owner", liveApp, nil, "dave", proxy.Verdict{Allow: true}},
		{"live admin", liveApp, nil, "root", proxy.Verdict{Allow: true}},
		{"live other", liveApp, nil, "carol", proxy.Verdict{Pending: true}},
		{"history owner", finished, hist, "dave", proxy.Verdict{Allow: true}},
		{"history other", finished, hist, "carol", proxy.Verdict{Pending: true}},
	} {
		v := z.Authorize(proxy.Identity{User: tc.user}, tc.app, tc.hist, proxy.View)
		if v.Allow != tc.want.Allow || v.Pending != tc.want.Pending || (v.Pending && len(v.Reasons) > 0) {
			t.Errorf("%s: Authorize(%s) = %+v; want allow=%t pending=%t and no reasons when pending", tc.name, tc.user, v, tc.want.Allow, tc.want.Pending)
		}
	}
}

// TestAuthorizeHistoryUsesHistoryOwner: a finished app is judged with the
// History Server's sparkUser, whatever a live driver claimed (issue 10's
// takeover: alice's claim of dave's app must not make her its owner).
func TestAuthorizeHistoryUsesHistoryOwner(t *testing.T) {
	z := testAuthorizer()
	hist := &discovery.HistoryRef{Server: "hs", User: "dave", ACLProps: map[string]string{"spark.acls.enable": "true"}}
	claimed := &discovery.App{ID: "app-1", User: "alice", State: discovery.Ended, History: []discovery.HistoryRef{*hist}}
	if v := z.Authorize(proxy.Identity{User: "alice"}, claimed, hist, proxy.View); v.Allow || v.Pending {
		t.Errorf("alice on dave's finished app = %+v; want a denial", v)
	}
	if v := z.Authorize(proxy.Identity{User: "dave"}, claimed, hist, proxy.View); !v.Allow {
		t.Errorf("dave on his finished app = %+v; want allowed", v)
	}
}

// TestAuthorizeEndedAppByHistoryRules: an app whose driver has ended and
// that no History Server lists yet is judged as the History Servers will
// judge it, so a History Server admin is not told "no" seconds before the
// server lets them in, and the app's own lists still count. Which server
// will list it is not known: a user only some of them would let in is told
// "not yet", not let in by the rules of a server that may never list it.
func TestAuthorizeEndedAppByHistoryRules(t *testing.T) {
	z := newAuthorizer(policy.Config{CacheSize: 16, CacheTTL: time.Minute}, map[string]policy.HistoryRules{
		"b": {Name: "b", Enabled: true, AdminGroups: []string{"all-hs-admins"}},
		"a": {Name: "a", Enabled: true, AdminGroups: []string{"hs-admins", "all-hs-admins"}},
	})
	props := map[string]string{"spark.acls.enable": "true", "spark.ui.view.acls.groups": "analysts", "spark.eventLog.enabled": "true"}
	ended := &discovery.App{ID: "app-1", User: "dave", State: discovery.Ended, ACLProps: props}
	// Without an event log no History Server will ever list it: its own
	// rules stand (spark.eventLog.enabled is false by default).
	noLog := &discovery.App{ID: "app-3", User: "dave", State: discovery.Ended,
		ACLProps: map[string]string{"spark.acls.enable": "true", "spark.ui.view.acls.groups": "analysts"}}
	live := &discovery.App{ID: "app-2", User: "dave", State: discovery.Running, ACLProps: props,
		UIURL: &url.URL{Scheme: "http", Host: "127.0.0.1:4040"}}
	const (
		deny = iota
		allow
		notYet
	)
	for _, tc := range []struct {
		name   string
		app    *discovery.App
		user   string
		groups []string
		want   int
	}{
		{"ended, admin group of every History Server", ended, "carol", []string{"all-hs-admins"}, allow},
		{"ended, admin group of one History Server", ended, "carol", []string{"hs-admins"}, notYet},
		{"live, History Server admin group", live, "carol", []string{"all-hs-admins"}, deny},
		{"ended, in the app's view group", ended, "alice", []string{"analysts"}, allow},
		{"ended, owner", ended, "dave", nil, allow},
		{"ended, nobody", ended, "eve", []string{"other"}, deny},
		{"ended without an event log, History Server admin group", noLog, "carol", []string{"all-hs-admins"}, deny},
		{"ended without an event log, in the app's view group", noLog, "alice", []string{"analysts"}, allow},
	} {
		v := z.Authorize(proxy.Identity{User: tc.user, Groups: tc.groups}, tc.app, nil, proxy.View)
		if v.Allow != (tc.want == allow) || v.Pending != (tc.want == notYet) {
			t.Errorf("%s: Authorize(%s) = %+v; want %s", tc.name, tc.user, v, [...]string{"denied", "allowed", "not yet"}[tc.want])
		}
		if tc.want == deny && len(v.Reasons) == 0 {
			t.Errorf("%s: a denial without reasons", tc.name)
		}
	}
	// Without History Servers an ended app keeps its live rules.
	noHS := newAuthorizer(policy.Config{CacheSize: 16, CacheTTL: time.Minute}, nil)
	if v := noHS.Authorize(proxy.Identity{User: "carol", Groups: []string{"all-hs-admins"}}, ended, nil, proxy.View); v.Allow {
		t.Errorf("no History Server: carol on an ended app = %+v; want the live rules' denial", v)
	}
}

// TestEndedAppNotListedByAnOpenServersRules, through the gateway: dave's
// app ran with ACLs on, only dave may view it, and its event log goes to
// the directory History Server "private" (ACLs on) reads. The gateway also
// knows "public" (ACLs off, Spark's default), which never lists it. Once
// the driver has ended and before "private" lists the app (its scan
// interval, a slow scan, the server down, or never), Spark shows it to no
// one but dave: the merged list and the index do not show it, its name and
// owner, to eve, whom only "public" would let in; dave sees it.
func TestEndedAppNotListedByAnOpenServersRules(t *testing.T) {
	z := newAuthorizer(policy.Config{CacheSize: 16, CacheTTL: time.Minute}, map[string]policy.HistoryRules{
		"private": {Name: "private", Enabled: true},
		"public":  {Name: "public", Enabled: false},
	})
	props := map[string]string{"spark.acls.enable": "true", "spark.eventLog.enabled": "true"}
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	const appID = "app-20240101000000-0042"
	reg := discovery.NewRegistry()
	reg.Store(discovery.NewSnapshot([]*discovery.App{{ID: appID, Name: "payroll-secret", User: "dave",
		StartTime: start, EndTime: start.Add(time.Hour), State: discovery.Ended,
		Source: "probe:10.0.0.5:4040", ACLProps: props}}))
	hu, _ := url.Parse("http://127.0.0.1:1")
	p, err := proxy.New(proxy.Options{Config: proxy.DefaultConfig(), Registry: reg, Authn: headerAuthn{}, Authz: z,
		HistoryServers: map[string]*url.URL{"private": hu, "public": hu}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		user string
		want bool
	}{{"eve", false}, {"dave", true}} {
		for _, path := range []string{"/api/v1/applications", "/?format=json"} {
			req := httptest.NewRequest(http.MethodGet, path, nil)
			req.Header.Set("X-Test-User", tc.user)
			rec := httptest.NewRecorder()
			p.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				t.Fatalf("%s %s: %d %s", tc.user, path, rec.Code, rec.Body)
			}
			if got := strings.Contains(rec.Body.String(), appID); got != tc.want {
				t.Errorf("%s %s: dave's ended app listed = %t; want %t:\n%s", tc.user, path, got, tc.want, rec.Body)
			}
		}
	}
}

// TestAuthorizeEndedUnreadACLs: an ended app whose environment was never
// read, that no History Server lists, beside a History Server with ACLs
// off (Spark's default), under which everyone may view whatever it lists:
// whether it will list this app is unknown, so only the owner gets in and
// everyone else is told "not yet", not let in (which listed the app, its
// name and owner, to everyone for as long as it is remembered).
func TestAuthorizeEndedUnreadACLs(t *testing.T) {
	z := newAuthorizer(policy.Config{CacheSize: 16, CacheTTL: time.Minute},
		map[string]policy.HistoryRules{"hs": {Name: "hs", Enabled: false}})
	ended := &discovery.App{ID: "app-1", Name: "payroll", User: "dave", State: discovery.Ended}
	if v := z.Authorize(proxy.Identity{User: "eve"}, ended, nil, proxy.View); v.Allow || !v.Pending {
		t.Errorf("eve on dave's ended app of unread ACLs = %+v; want not yet", v)
	}
	if v := z.Authorize(proxy.Identity{User: "dave"}, ended, nil, proxy.View); !v.Allow {
		t.Errorf("dave on his own ended app of unread ACLs = %+v; want allowed", v)
	}
}

// headerAuthn signs in whoever X-Test-User names.
type headerAuthn struct{}

func (headerAuthn) Authenticate(r *http.Request) (proxy.Identity, bool, error) {
	u := r.Header.Get("X-Test-User")
	return proxy.Identity{User: u, Groups: r.Header.Values("X-Test-Group"), Method: "session"}, u != "", nil
}
func (headerAuthn) Challenge(w http.ResponseWriter, _ *http.Request) {
	w.WriteHeader(http.StatusUnauthorized)
}

// TestDriverRecordJudgedByItsOwnLists, with the gateway's authorizer: a
// ResourceManager named alice's app (bob in its view list, event log on);
// it ended, and History Server "open" (ACLs off) lists an event log under
// its id that anyone could have written. A container log needs the
// driver's own lists too, as they were while it ran, not any History
// Server's rules: mallory, let in by "open" alone, and carol, an admin of
// History Server "secure", get none; bob reads it.
func TestDriverRecordJudgedByItsOwnLists(t *testing.T) {
	const appID = "application_1700000000000_0002"
	const container = "container_e01_1700000000000_0002_01_000002"
	nm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/ws/v1/node/containers/"+container+"/logs/stdout" {
			http.NotFound(w, r)
			return
		}
		_, _ = fmt.Fprintf(w, "Container: %s on n:8041\nLogType:stdout\nLogLength:15\nLogContents:\nalice's secret\n\nEnd of LogType:stdout\n", container)
	}))
	t.Cleanup(nm.Close)
	rm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = fmt.Fprintf(w, `{"nodes":{"node":[{"id":"n:1","nodeHTTPAddress":%q,"state":"RUNNING"}]}}`, strings.TrimPrefix(nm.URL, "http://"))
	}))
	t.Cleanup(rm.Close)
	claim := nm.URL + "/node/containerlogs/" + container + "/alice/stdout"
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = fmt.Fprintf(w, `[{"id":"1","executorLogs":{"stdout":%q}}]`, claim)
	}))
	t.Cleanup(hs.Close)
	hu, _ := url.Parse(hs.URL)
	ru, _ := url.Parse(rm.URL)
	forged := discovery.HistoryRef{Server: "open", BaseURL: hu, Attempts: []string{"1"}, Completed: true,
		User: "mallory", ACLProps: map[string]string{}}
	reg := discovery.NewRegistry()
	reg.Store(discovery.NewSnapshot([]*discovery.App{{ID: appID, Name: "y", User: "mallory", State: discovery.Ended,
		EndTime: time.Now(), Source: "history:open", ACLProps: forged.ACLProps, History: []discovery.HistoryRef{forged},
		Driver: &discovery.DriverRecord{Source: "yarn:rm", UIURL: &url.URL{Scheme: "http", Host: "10.0.0.7:4040"}, User: "alice",
			ACLProps: map[string]string{"spark.acls.enable": "true", "spark.ui.view.acls": "bob", "spark.eventLog.enabled": "true"}}}}))
	z := newAuthorizer(policy.Config{CacheSize: 16, CacheTTL: time.Minute}, map[string]policy.HistoryRules{
		"open":   {Name: "open", Enabled: false},
		"secure": {Name: "secure", Enabled: true, AdminGroups: []string{"hs-admins"}},
	})
	p, err := proxy.New(proxy.Options{Config: proxy.DefaultConfig(), Registry: reg, Authn: headerAuthn{}, Authz: z,
		HistoryServers: map[string]*url.URL{"open": hu, "secure": hu}, ResourceManagers: []*url.URL{ru}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		user, group string
		want        bool
	}{{"mallory", "", false}, {"carol", "hs-admins", false}, {"bob", "", true}} {
		req := httptest.NewRequest(http.MethodGet, "/app/"+appID+"/_/logs/1/stdout?attempt=1", nil)
		req.Header.Set("X-Test-User", tc.user)
		if tc.group != "" {
			req.Header.Set("X-Test-Group", tc.group)
		}
		rec := httptest.NewRecorder()
		p.ServeHTTP(rec, req)
		if got := rec.Code == http.StatusOK && strings.Contains(rec.Body.String(), "s secret"); got != tc.want {
			t.Errorf("%s: the log served = %t (%d); want %t", tc.user, got, rec.Code, tc.want)
		}
	}
}

// TestWritesEventLogReadsBooleansAsSpark: spark.eventLog.enabled is read
// as Spark's ConfigBuilder reads a boolean, after Java's trim: " true"
// turns event logs on in Spark, so an ended app with that value is judged
// by the rules of the History Servers that may list it, not by its own
// (ACLs off would let everyone in until a server lists it).
func TestWritesEventLogReadsBooleansAsSpark(t *testing.T) {
	for _, tc := range []struct {
		props map[string]string
		want  bool
	}{
		{nil, true}, // not read yet
		{map[string]string{}, false},
		{map[string]string{"spark.eventLog.enabled": "true"}, true},
		{map[string]string{"spark.eventLog.enabled": " TRUE\t"}, true},
		{map[string]string{"spark.eventLog.enabled": "\ntrue "}, true},
		{map[string]string{"spark.eventLog.enabled": "false"}, false},
		{map[string]string{"spark.eventLog.enabled": " False "}, false},
		{map[string]string{"spark.eventLog.enabled": "yes"}, true}, // Spark refuses to start: assume the stricter
	} {
		if got := writesEventLog(tc.props); got != tc.want {
			t.Errorf("writesEventLog(%q) = %v, want %v", tc.props, got, tc.want)
		}
	}
}
