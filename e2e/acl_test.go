//go:build e2e

package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// aclApp is one Spark app of TestACL with its ACL settings.
type aclApp struct {
	Key     string
	Rule    string // the settings, for the matrix
	Confs   map[string]string
	History bool // stopped before the gateway starts; served by the History Server

	ID     string
	Driver *Driver
	Owner  string
}

func aclApps() []*aclApp {
	on := func(kv ...string) map[string]string {
		m := map[string]string{"spark.acls.enable": "true"}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	return []*aclApp{
		{Key: "A", Rule: "acls off", Confs: map[string]string{}},
		{Key: "B", Rule: "view.acls=alice", Confs: on("spark.ui.view.acls", "alice")},
		{Key: "C", Rule: "view.acls.groups=eng modify.acls=bob", Confs: on("spark.ui.view.acls.groups", "eng", "spark.modify.acls", "bob")},
		{Key: "D", Rule: "admin.acls.groups=spark-admins", Confs: on("spark.admin.acls.groups", "spark-admins")},
		{Key: "E", Rule: "view.acls=*", Confs: on("spark.ui.view.acls", "*")},
		{Key: "G", Rule: "view.acls.groups=analysts", Confs: on("spark.ui.view.acls.groups", "analysts")},
		{Key: "F", Rule: "history, view.acls=dave", Confs: on("spark.ui.view.acls", "dave"), History: true},
	}
}

// aclUser is a test identity with the groups e2e/oidc/server.mjs gives it.
type aclUser struct {
	Name   string
	Groups []string
	Bearer bool // a client_credentials JWT instead of a browser session
}

var aclUsers = []aclUser{
	{Name: "alice", Groups: []string{"analysts"}},
	{Name: "bob", Groups: []string{"eng"}},
	{Name: "carol", Groups: []string{"spark-admins"}},
	{Name: "dave"},
	{Name: "svc-reporter", Groups: []string{"analysts"}, Bearer: true},
}

// History Server settings of TestACL, mirrored in the gateway's history source.
var aclHistoryAdminGroups = []string{"spark-admins"}

const aclSecret = "e2e-client-secret-not-secret"

// aclEnv is what TestACL's subtests share for one Spark version.
type aclEnv struct {
	home    SparkHome
	root    string // the repository, for drivers started by subtests
	dir     string
	op      *OIDCProvider
	hs      *HistoryServer
	gw      *Gateway
	apps    []*aclApp
	rec     *Recorder
	clients map[string]*http.Client
	token   string
	// expect[user][app key] is whether the user may view the app.
	expect map[string]map[string]bool
	// gwBin and gwOpts start the "why not" gateway: the same config with
	// proxy.reveal_denied on, on revealPort (registered with the provider).
	gwBin      string
	gwOpts     GatewayOptions
	revealPort int
}

// TestACL starts real Spark drivers with different ACLs, a History Server
// with ACLs on, the real OIDC provider and the gateway, and checks that
// through the gateway every user sees exactly what Spark itself would let
// them see.
func TestACL(t *testing.T) {
	s := newSuite(t)
	s.requireGateway(t)
	homes := s.sparkHomes(t)
	matrixFile := filepath.Join(s.outDir, "acl-matrix.txt")
	_ = os.Remove(matrixFile)
	for _, home := range homes {
		t.Run(home.Version, func(t *testing.T) {
			e := s.startACL(t, home)
			t.Run("matrix", func(t *testing.T) { e.checkMatrix(t, matrixFile) })
			t.Run("browser", e.checkBrowser)
			t.Run("bearer", e.checkBearer)
			t.Run("forged identity", e.checkForged)
			t.Run("doAs", e.checkDoAs)
			t.Run("recorded upstream", e.checkRecorded)
			t.Run("return URLs", e.checkReturnURLs)
			t.Run("prometheus", e.checkPrometheus)
			t.Run("why not", e.checkWhyNot)
			t.Run("started", e.checkStarted)
			t.Run("attempts", e.checkAttempts)
			t.Run("finished", e.checkFinished) // stops apps: last
		})
	}
}

// startACL starts everything for one Spark version.
func (s *suite) startACL(t *testing.T, home SparkHome) *aclEnv {
	ctx := ctxFor(t, 4*time.Minute)
	dir := s.freshDir(t, "acl-"+home.Version)
	events, logs, work := filepath.Join(dir, "events"), filepath.Join(dir, "driver-logs"), filepath.Join(dir, "work")
	for _, d := range []string{events, logs, work} {
		if err := mkdir(d); err != nil {
			t.Fatal(err)
		}
	}
	e := &aclEnv{home: home, root: s.root, dir: dir, apps: aclApps(), clients: map[string]*http.Client{}}
	gwPort, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	gwURL := fmt.Sprintf("http://127.0.0.1:%d", gwPort)
	if e.revealPort, err = FreePort(); err != nil {
		t.Fatal(err)
	}
	revealURL := fmt.Sprintf("http://127.0.0.1:%d", e.revealPort)
	t0 := time.Now()

	// The drivers start while the History Server and the provider do.
	var wg sync.WaitGroup
	errs := make([]error, len(e.apps))
	ids := &uniqueIDs{taken: map[string]bool{}}
	for i, a := range e.apps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := startUniqueDriver(ctx, ids, func() (*Driver, error) {
				// A fresh log each try: StartDriver waits for lines in it.
				_ = os.Remove(filepath.Join(logs, "acl-"+a.Key+".log"))
				confs := maps.Clone(a.Confs)
				maps.Copy(confs, prometheusConfs) // for the prometheus subtest
				return StartDriver(ctx, s.root, home, DriverOptions{
					Name: "acl-" + a.Key, EventDir: events, LogDir: logs, WorkDir: work, Confs: confs, Light: true,
				})
			})
			if err == nil {
				a.Driver, a.ID = d, d.AppID
				err = d.WaitReady(ctx)
			}
			errs[i] = err
		}()
	}
	t.Cleanup(func() {
		for _, a := range e.apps {
			if a.Driver != nil {
				a.Driver.Kill()
			}
		}
	})
	e.op, err = StartOIDC(ctx, s.root, dir, aclSecret, []string{gwURL + "/oauth2/callback", revealURL + "/oauth2/callback"}, []string{gwURL + "/", revealURL + "/"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.op.Stop() })
	e.hs, err = StartHistoryServer(ctx, s.root, home, events, filepath.Join(dir, "history"), map[string]string{
		"spark.history.ui.acls.enable":       "true",
		"spark.history.ui.admin.acls.groups": strings.Join(aclHistoryAdminGroups, ","),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.hs.Stop() })
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d drivers, History Server and provider up after %v", len(e.apps), time.Since(t0).Round(time.Millisecond))
	for _, a := range e.apps {
		owner, err := driverOwner(ctx, a.Driver)
		if err != nil {
			t.Fatal(err)
		}
		a.Owner = owner
		if a.History {
			if err := a.Driver.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			if err := e.hs.WaitApp(ctx, a.ID, true); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("history app listed by the History Server after %v", time.Since(t0).Round(time.Millisecond))

	e.rec = StartRecorder("app-recorder-0001", "recorder-owner", map[string]string{
		"spark.acls.enable": "true", "spark.ui.view.acls": "alice", "spark.ui.view.acls.groups": "analysts",
	})
	t.Cleanup(e.rec.Close)

	e.gwBin = s.gwBin
	e.gwOpts = GatewayOptions{
		Port:               gwPort,
		LogGlobs:           []string{filepath.Join(logs, "*.log")},
		HistoryURL:         e.hs.URL,
		HistoryACLs:        true,
		HistoryAdminGroups: aclHistoryAdminGroups,
		Static:             []string{e.rec.URL},
		Auth: map[string]any{
			"mode":    "oidc",
			"oidc":    map[string]any{"issuer": e.op.Issuer, "client_id": "sparkgate", "audiences": []string{"sparkgate"}},
			"session": map[string]any{"keys": []string{base64.StdEncoding.EncodeToString([]byte("acl-e2e-session-key-0123456789abcdef"))}},
		},
		// "ops" is a gateway admin, used only to wait until every app is listed.
		Policy: map[string]any{"admins": []string{"ops"}},
		Env:    []string{"SPARKGATE_OIDC_CLIENT_SECRET=" + aclSecret},
	}
	e.gw, err = StartGateway(ctx, s.gwBin, dir, e.gwOpts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.gw.Stop)

	ops, err := SignIn(ctx, e.gw.URL, "ops")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.waitAllListed(ctx, ops); err != nil {
		t.Fatal(err)
	}
	t.Logf("gateway lists every app after %v", time.Since(t0).Round(time.Millisecond))
	for _, u := range aclUsers {
		if u.Bearer {
			continue
		}
		c, err := SignIn(ctx, e.gw.URL, u.Name)
		if err != nil {
			t.Fatal(err)
		}
		e.clients[u.Name] = c
	}
	e.token, err = e.op.ClientCredentialsToken(ctx)
	if err != nil {
		t.Fatal(err)
	}
	e.clients["svc-reporter"] = &http.Client{Timeout: 60 * time.Second, Transport: bearer{e.token},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return e
}

// driverOwner reads sparkUser from the driver's own app list.
func driverOwner(ctx context.Context, d *Driver) (string, error) {
	var apps []GatewayApp
	a, err := Get(ctx, http.DefaultClient, d.UIURL()+"/api/v1/applications", nil)
	if err != nil {
		return "", err
	}
	if err := json.Unmarshal(a.Body, &apps); err != nil {
		return "", fmt.Errorf("driver %s app list: %w (%.200s)", d.Opts.Name, err, a.Body)
	}
	if len(apps) != 1 || len(apps[0].Attempts) == 0 {
		return "", fmt.Errorf("driver %s app list is not one app with an attempt: %.200s", d.Opts.Name, a.Body)
	}
	return apps[0].Attempts[0].SparkUser, nil
}

// waitAllListed waits until the gateway lists every app (the history one
// completed) and the recorder.
func (e *aclEnv) waitAllListed(ctx context.Context, c *http.Client) error {
	for {
		apps, err := e.gw.Apps(ctx, c)
		seen := map[string]bool{}
		for _, a := range apps {
			seen[a.ID] = len(a.Attempts) > 0 && a.Attempts[0].Completed
		}
		missing := []string{}
		for _, a := range e.apps {
			if done, ok := seen[a.ID]; !ok || done != a.History {
				missing = append(missing, a.Key+"="+a.ID)
			}
		}
		if _, ok := seen[e.rec.AppID]; !ok {
			missing = append(missing, "recorder")
		}
		if len(missing) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("gateway never listed %v (last error: %s): %w", missing, lastErr(err), ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// matrixRow is one user × app line of the matrix.
type matrixRow struct {
	user, app, rule, source string
	want                    bool
	got                     [4]string // page, rest, index, list
}

// checkMatrix asks Spark (driver or History Server, with ?doAs=) who may
// view each app, then asks the gateway as each user.
func (e *aclEnv) checkMatrix(t *testing.T, matrixFile string) {
	ctx := ctxFor(t, 3*time.Minute)
	e.expect = map[string]map[string]bool{}
	var rows []matrixRow
	for _, u := range aclUsers {
		e.expect[u.Name] = map[string]bool{}
		c := e.clients[u.Name]
		index, err := Get(ctx, c, e.gw.URL+"/", nil)
		if err != nil || index.Status != http.StatusOK {
			t.Fatalf("index as %s: %v %d", u.Name, err, index.Status)
		}
		listed, err := e.gw.Apps(ctx, c)
		if err != nil {
			t.Fatalf("app list as %s: %v", u.Name, err)
		}
		for _, a := range e.apps {
			want, source, err := e.expectation(ctx, a, u)
			if err != nil {
				t.Fatal(err)
			}
			e.expect[u.Name][a.Key] = want
			row := matrixRow{user: u.Name, app: a.Key, rule: a.Rule, source: source, want: want}
			page, err := e.getInGateway(ctx, c, "/app/"+a.ID+"/jobs/")
			if err != nil {
				t.Fatal(err)
			}
			rest, err := Get(ctx, c, e.gw.URL+"/api/v1/applications/"+a.ID+"/jobs", nil)
			if err != nil {
				t.Fatal(err)
			}
			if rest.Verdict() == "deny" && !rest.JSONError() {
				t.Errorf("%s: REST denial for %s is not a JSON error: %s %.200s", u.Name, a.Key, rest.ContentType, rest.Body)
			}
			row.got[0], row.got[1] = page.Verdict(), rest.Verdict()
			row.got[2] = presence(strings.Contains(string(index.Body), "<code>"+a.ID+"</code>"))
			row.got[3] = presence(slices.ContainsFunc(listed, func(g GatewayApp) bool { return g.ID == a.ID }))
			rows = append(rows, row)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Spark %s: apps %s\n", e.home.Version, e.appIDs())
	fmt.Fprintf(&b, "%-13s %-3s %-37s %-6s %-44s %-6s %-6s %-6s %-6s\n", "user", "app", "app ACLs", "expect", "source of expectation", "page", "rest", "index", "list")
	for _, r := range rows {
		want := verdictWord(r.want)
		wantIdx := presence(r.want)
		mark := func(got, want string) string {
			if got != want {
				return got + "≠"
			}
			return got
		}
		fmt.Fprintf(&b, "%-13s %-3s %-37s %-6s %-44s %-6s %-6s %-6s %-6s\n", r.user, r.app, r.rule, want, r.source,
			mark(r.got[0], want), mark(r.got[1], want), mark(r.got[2], wantIdx), mark(r.got[3], wantIdx))
		for i, act := range []string{"page /app/<id>/jobs/", "REST /api/v1/applications/<id>/jobs", "index page", "JSON app list"} {
			w := want
			if i >= 2 {
				w = wantIdx
			}
			if r.got[i] != w {
				t.Errorf("%s on app %s (%s), %s: gateway %s; want %s (from %s)", r.user, r.app, r.rule, act, r.got[i], w, r.source)
			}
		}
	}
	t.Log("\n" + b.String())
	f, err := os.OpenFile(matrixFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err == nil {
		fmt.Fprintln(f, b.String())
		f.Close()
	}
}

func (e *aclEnv) appIDs() string {
	var parts []string
	for _, a := range e.apps {
		parts = append(parts, a.Key+"="+a.ID)
	}
	return strings.Join(parts, " ")
}

func presence(b bool) string {
	if b {
		return "listed"
	}
	return "absent"
}

func verdictWord(b bool) string {
	if b {
		return "allow"
	}
	return "deny"
}

// expectation says whether u may view a, and where that comes from. Spark
// is asked with ?doAs=u (a driver, or the History Server for a finished
// app): both its REST environment endpoint and a UI page must agree. Spark
// finds groups with `id -Gn`, and these users do not exist on this
// machine, so Spark judges them with no groups. The written semantics
// (aclRule, from spark-ui-facts.md section 5) must agree with Spark's
// answer when given no groups; when the user's provider groups change the
// outcome, the written semantics with the groups are the expectation.
func (e *aclEnv) expectation(ctx context.Context, a *aclApp, u aclUser) (bool, string, error) {
	var rule aclRule
	var rest, page bool
	var err error
	who := "driver"
	if a.History {
		who = "History Server"
		rule = historyRule(true, nil, aclHistoryAdminGroups, a.Confs, a.Owner)
		rest, page, err = SparkDoAs(ctx, e.hs.URL, e.hs.URL+"/history/"+a.ID+"/jobs/", a.ID, u.Name)
	} else {
		rule = liveRule(a.Confs, a.Owner)
		rest, page, err = SparkDoAs(ctx, a.Driver.UIURL(), a.Driver.UIURL()+"/jobs/", a.ID, u.Name)
	}
	if err != nil {
		return false, "", fmt.Errorf("asking the %s of %s as %s: %w", who, a.Key, u.Name, err)
	}
	if rest != page {
		return false, "", fmt.Errorf("the %s of %s answers doAs=%s differently: REST %v, page %v", who, a.Key, u.Name, rest, page)
	}
	if plain := rule.mayView(u.Name, nil); plain != rest {
		return false, "", fmt.Errorf("the %s of %s says %s for doAs=%s, the written semantics without groups say %s: the test's model of Spark is wrong",
			who, a.Key, verdictWord(rest), u.Name, verdictWord(plain))
	}
	withGroups := rule.mayView(u.Name, u.Groups)
	if withGroups == rest {
		return rest, who + " doAs", nil
	}
	return withGroups, fmt.Sprintf("semantics, groups %v (%s doAs: %s)", u.Groups, who, verdictWord(rest)), nil
}

// getInGateway GETs a gateway path with c, following redirects that stay
// in the gateway and do not lead to sign-in (a finished app's pages may
// move to /history/...), as many as a browser follows: a History Server
// that has just listed an app redirects its pages to themselves while it
// loads the app (seen on 4.3.0, three times in a row).
func (e *aclEnv) getInGateway(ctx context.Context, c *http.Client, path string) (Answer, error) {
	u := e.gw.URL + path
	for hop := 0; hop < 20; hop++ {
		a, err := Get(ctx, c, u, nil)
		if err != nil {
			return a, err
		}
		if a.Status/100 != 3 || a.Location == "" || strings.Contains(a.Location, "/oauth2/") {
			return a, nil
		}
		base, _ := url.Parse(u)
		next, err := base.Parse(a.Location)
		if err != nil || next.Host != base.Host {
			return a, nil
		}
		u = next.String()
	}
	return Answer{}, fmt.Errorf("too many redirects from %s", path)
}

func (e *aclEnv) app(key string) *aclApp {
	for _, a := range e.apps {
		if a.Key == key {
			return a
		}
	}
	panic("no app " + key)
}

// visibleIDs is what user may view according to the matrix's expectations,
// plus the recorder when its written rule lets the user in.
func (e *aclEnv) visibleIDs(t *testing.T, u aclUser) []string {
	if e.expect == nil {
		t.Skip("the matrix did not run")
	}
	var ids []string
	for _, a := range e.apps {
		if e.expect[u.Name][a.Key] {
			ids = append(ids, a.ID)
		}
	}
	rec := liveRule(map[string]string{"spark.acls.enable": "true", "spark.ui.view.acls": "alice", "spark.ui.view.acls.groups": "analysts"}, "recorder-owner")
	if rec.mayView(u.Name, u.Groups) {
		ids = append(ids, e.rec.AppID)
	}
	sort.Strings(ids)
	return ids
}

// checkBrowser signs in with Chromium through the provider's login form,
// starting from a deep link, and reads the index rows from the DOM.
func (e *aclEnv) checkBrowser(t *testing.T) {
	ctx := ctxFor(t, 2*time.Minute)
	for _, u := range []aclUser{aclUsers[0], aclUsers[3]} { // alice, dave
		t.Run(u.Name, func(t *testing.T) {
			want := e.visibleIDs(t, u)
			b, err := NewBrowser(ctx, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			deep := e.gw.URL + "/app/" + e.app("B").ID + "/stages/?x=1"
			final, err := b.Login(deep, e.op.Issuer, u.Name, 60*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if final != deep {
				t.Errorf("%s: after sign-in the browser is at %s; want %s", u.Name, final, deep)
			}
			text, _ := b.Text()
			mayB := e.expect[u.Name]["B"]
			if mayB && !strings.Contains(text, "Stages for All Jobs") {
				t.Errorf("%s: deep link page is not Spark's stages page: %.300q", u.Name, text)
			}
			if !mayB && strings.Contains(text, "Stages for All Jobs") {
				t.Errorf("%s may not view B but sees its stages page", u.Name)
			}
			ids, err := b.IndexAppIDs(e.gw.URL+"/", 30*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			sort.Strings(ids)
			if !slices.Equal(ids, want) {
				t.Errorf("%s: index rows %v; want %v", u.Name, ids, want)
			}
			t.Logf("%s: landed on %s; index rows %v", u.Name, final, ids)
			if u.Name != "alice" {
				return
			}
			// Already signed in: /oauth2/login?rd= returns at once; an
			// unsafe return URL must end on the gateway, in a real browser.
			for _, rd := range unsafeReturnURLs {
				loc, err := b.GoAndLocate(e.gw.URL+"/oauth2/login?rd="+rd, 20*time.Second)
				if err != nil {
					t.Errorf("rd=%s: %v", rd, err)
					continue
				}
				if !strings.HasPrefix(loc, e.gw.URL+"/") {
					t.Errorf("Chromium signed in as alice, /oauth2/login?rd=%s ended at %s; want the gateway", rd, loc)
				}
			}
		})
	}
}

// checkWhyNot starts a second gateway, the same but with
// proxy.reveal_denied, and has Chromium, signed in as dave through the
// provider, open a deep link into app B (view.acls=alice): the 403 page
// says in plain words why (the lists checked, dave and his groups) and
// who to ask (B's owner), and names neither B nor its other viewers. The
// index shows dave no row for B: rows are the apps the user may open.
func (e *aclEnv) checkWhyNot(t *testing.T) {
	ctx := ctxFor(t, 3*time.Minute)
	dir := filepath.Join(e.dir, "reveal")
	if err := mkdir(dir); err != nil {
		t.Fatal(err)
	}
	opts := e.gwOpts
	opts.Port = e.revealPort
	opts.Proxy = map[string]any{"kill": "deny", "reveal_denied": true}
	gw, err := StartGateway(ctx, e.gwBin, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Stop()
	b, err := NewBrowser(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	app := e.app("B")
	deep := gw.URL + "/app/" + app.ID + "/stages/?x=1"
	if _, err := b.Login(deep, e.op.Issuer, "dave", 60*time.Second); err != nil {
		t.Fatal(err)
	}
	// Until the new gateway has read B's ACLs its answer is the
	// self-refreshing "not read yet" page.
	var text string
	for {
		text, _ = b.Text()
		if strings.Contains(text, "Access denied") || ctx.Err() != nil {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	for _, w := range []string{
		"403", "Access denied", "dave may not view application " + app.ID,
		"Why", "spark.acls.enable is true", `User "dave" is not the owner and is not listed in spark.admin.acls or spark.ui.view.acls.`,
		"How to get access", "spark.ui.view.acls / spark.ui.view.acls.groups",
		"Who to ask", "the app's owner: " + app.Owner, "the gateway's admins (policy.admins): ops",
	} {
		if !strings.Contains(text, w) {
			t.Errorf("403 page for dave on B lacks %q:\n%s", w, text)
		}
	}
	if strings.Contains(text, "alice") || strings.Contains(text, "acl-B") {
		t.Errorf("403 page names B's viewers or its name:\n%s", text)
	}
	_, png, err := b.Shot(deep)
	if err == nil {
		err = os.WriteFile(filepath.Join(e.dir, "..", "why-not-"+e.home.Version+".png"), png, 0o644)
	}
	if err != nil {
		t.Error(err)
	}
	ids, err := b.IndexAppIDs(gw.URL+"/", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(ids, app.ID) {
		t.Errorf("dave's index rows %v show B (%s), which he may not open", ids, app.ID)
	}
	t.Logf("dave on B: 403 page:\n%s", text)
}

// unsafeReturnURLs are rd values that must never send a browser off-site
// (as written in the query string).
var unsafeReturnURLs = []string{
	"//evil.example", `/\evil.example`, "https://evil.example", "/%2F%2Fevil.example", "%09//evil.example",
	"%2F%2Fevil.example", "/%5Cevil.example", "https:evil.example", "/%09/evil.example", "%2F%5Cevil.example",
}

// checkBearer uses the provider's client_credentials JWT (svc-reporter,
// group analysts) as a bearer.
func (e *aclEnv) checkBearer(t *testing.T) {
	ctx := ctxFor(t, time.Minute)
	c := e.clients["svc-reporter"]
	g, b := e.app("G"), e.app("B")
	ok, err := Get(ctx, c, e.gw.URL+"/api/v1/applications/"+g.ID+"/jobs", nil)
	if err != nil {
		t.Fatal(err)
	}
	if ok.Status != http.StatusOK || !strings.HasPrefix(ok.ContentType, "application/json") || !strings.Contains(string(ok.Body), `"jobId"`) {
		t.Errorf("bearer GET jobs of G (view.acls.groups=analysts) = %d %s %.200s; want 200 with Spark's jobs JSON", ok.Status, ok.ContentType, ok.Body)
	}
	no, err := Get(ctx, c, e.gw.URL+"/api/v1/applications/"+b.ID+"/jobs", nil)
	if err != nil {
		t.Fatal(err)
	}
	if no.Verdict() != "deny" || !no.JSONError() {
		t.Errorf("bearer GET jobs of B (view.acls=alice) = %d %s %.200s; want a JSON denial", no.Status, no.ContentType, no.Body)
	}
	parts := strings.Split(e.token, ".")
	if len(parts) != 3 {
		t.Fatalf("token is not a JWT")
	}
	sig := []byte(parts[2])
	// A different base64url character in the middle: every bit of it counts.
	if sig[len(sig)/2] == 'A' {
		sig[len(sig)/2] = 'B'
	} else {
		sig[len(sig)/2] = 'A'
	}
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	forgedPayload := strings.Replace(string(payload), `"svc-reporter"`, `"alice"`, 1)
	for name, tok := range map[string]string{
		"tampered signature":                       parts[0] + "." + parts[1] + "." + string(sig),
		"payload changed to alice, signature kept": parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(forgedPayload)) + "." + parts[2],
		"no signature":                             parts[0] + "." + parts[1] + ".",
	} {
		bad := &http.Client{Timeout: 30 * time.Second, Transport: bearer{tok}}
		a, err := Get(ctx, bad, e.gw.URL+"/api/v1/applications/"+g.ID+"/jobs", nil)
		if err != nil {
			t.Fatal(err)
		}
		if a.Status != http.StatusUnauthorized || !a.JSONError() {
			t.Errorf("bearer with %s = %d %s %.200s; want a 401 JSON error", name, a.Status, a.ContentType, a.Body)
		}
	}
}

// forgedHeaders claim an identity in every way some proxy or filter might
// trust.
func forgedHeaders(user string) http.Header {
	return http.Header{
		"X-Forwarded-User":               {user},
		"X-Forwarded-Email":              {user + "@example.test"},
		"X-Forwarded-Groups":             {"spark-admins,analysts,eng"},
		"X-Forwarded-Preferred-Username": {user},
		"X-Remote-User":                  {user},
		"Remote-User":                    {user},
		"X-Auth-Request-User":            {user},
		"X-Auth-Request-Email":           {user + "@example.test"},
	}
}

// checkForged sends identity headers naming a user who may view B, as
// dave (who may not) and without signing in.
func (e *aclEnv) checkForged(t *testing.T) {
	ctx := ctxFor(t, time.Minute)
	b := e.app("B")
	dave := e.clients["dave"]
	anon := NoRedirectClient(nil)
	all := forgedHeaders("alice")
	for name := range all {
		one := http.Header{name: all[name]}
		for _, p := range []string{"/app/" + b.ID + "/jobs/", "/api/v1/applications/" + b.ID + "/jobs"} {
			a, err := Get(ctx, dave, e.gw.URL+p, one)
			if err != nil {
				t.Fatal(err)
			}
			if a.Verdict() != "deny" {
				t.Errorf("dave with %s: alice on %s = %s; want deny", name, p, a.Verdict())
			}
			a, err = Get(ctx, anon, e.gw.URL+p, one)
			if err != nil {
				t.Fatal(err)
			}
			if a.Verdict() != "login" {
				t.Errorf("no session, %s: alice on %s = %s; want a sign-in challenge", name, p, a.Verdict())
			}
		}
	}
	a, err := Get(ctx, dave, e.gw.URL+"/app/"+b.ID+"/jobs/", all)
	if err != nil {
		t.Fatal(err)
	}
	if a.Verdict() != "deny" {
		t.Errorf("dave with every forged header at once on B = %s; want deny", a.Verdict())
	}
	// The index and list do not grow either.
	listed, err := e.gw.Apps(ctx, &http.Client{Transport: headerRT{dave.Transport, all}, Jar: dave.Jar})
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(listed, func(g GatewayApp) bool { return g.ID == b.ID }) {
		t.Errorf("dave with forged headers sees B in the app list")
	}
}

type headerRT struct {
	next http.RoundTripper
	h    http.Header
}

func (h headerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.h {
		r.Header[k] = v
	}
	next := h.next
	if next == nil {
		next = http.DefaultTransport
	}
	return next.RoundTrip(r)
}

// doAsSpellings put user into the doAs parameter as a client might.
func doAsSpellings(user string) []string {
	return []string{"doAs=" + user, "DOAS=" + user, "doas=" + user, "%64oAs=" + user, "x=1&doAs=" + user, "doAs=" + user + "&doAs=" + user}
}

// checkDoAs proves with the real driver of B (view.acls=alice, no auth
// filter, so Spark honours doAs from anyone) that doAs never reaches it:
// dave asking as alice is refused by the gateway, and alice asking as dave
// is served, which the driver would refuse if it saw doAs=dave.
func (e *aclEnv) checkDoAs(t *testing.T) {
	ctx := ctxFor(t, time.Minute)
	b := e.app("B")
	// Spark itself honours doAs from an unauthenticated caller.
	direct, err := Get(ctx, http.DefaultClient, b.Driver.UIURL()+"/jobs/?doAs=alice", nil)
	if err != nil {
		t.Fatal(err)
	}
	direct2, err := Get(ctx, http.DefaultClient, b.Driver.UIURL()+"/jobs/?doAs=dave", nil)
	if err != nil {
		t.Fatal(err)
	}
	if direct.Status != http.StatusOK || direct2.Status != http.StatusForbidden {
		t.Fatalf("driver of B directly: doAs=alice %d, doAs=dave %d; want 200 and 403 (the premise of this test)", direct.Status, direct2.Status)
	}
	for _, q := range doAsSpellings("alice") {
		for _, p := range []string{"/app/" + b.ID + "/jobs/?", "/api/v1/applications/" + b.ID + "/jobs?"} {
			a, err := Get(ctx, e.clients["dave"], e.gw.URL+p+q, nil)
			if err != nil {
				t.Fatal(err)
			}
			if a.Verdict() != "deny" {
				t.Errorf("dave %s%s = %s; want deny", p, q, a.Verdict())
			}
		}
	}
	for _, q := range doAsSpellings("dave") {
		for _, p := range []string{"/app/" + b.ID + "/jobs/?", "/api/v1/applications/" + b.ID + "/jobs?"} {
			a, err := Get(ctx, e.clients["alice"], e.gw.URL+p+q, nil)
			if err != nil {
				t.Fatal(err)
			}
			if a.Status != http.StatusOK {
				t.Errorf("alice %s%s = %d %.200s; want 200 (the driver answers 403 if doAs=dave reaches it)", p, q, a.Status, a.Body)
			}
		}
	}
}

// checkRecorded sends forged identity headers, doAs and bearer tokens to
// the recording stand-in driver through the gateway and checks what
// arrived.
func (e *aclEnv) checkRecorded(t *testing.T) {
	ctx := ctxFor(t, time.Minute)
	const marker = "forged-identity"
	hdr := forgedHeaders(marker)
	hdr.Set("Forwarded", "for=6.6.6.6;by="+marker)
	hdr.Set("X-Real-Ip", "6.6.6.6")
	before := len(e.rec.Requests())
	sent := 0
	for _, who := range []string{"alice", "svc-reporter"} {
		for _, p := range []string{"/app/" + e.rec.AppID + "/jobs/?probe=" + who + "&", "/api/v1/applications/" + e.rec.AppID + "/jobs?probe=" + who + "&"} {
			for _, q := range doAsSpellings("carol") {
				a, err := Get(ctx, e.clients[who], e.gw.URL+p+q, hdr)
				if err != nil {
					t.Fatal(err)
				}
				if a.Status != http.StatusOK {
					t.Errorf("%s %s%s = %d; want 200", who, p, q, a.Status)
				}
				sent++
			}
		}
	}
	var probes []RecordedRequest
	for _, r := range e.rec.Requests()[before:] {
		if strings.Contains(r.RequestURI, "probe=") {
			probes = append(probes, r)
		}
	}
	if len(probes) != sent {
		t.Errorf("recorder saw %d probe requests; want %d", len(probes), sent)
	}
	identity := regexp.MustCompile(`(?i)^(x-forwarded-(user|email|groups|preferred-username)|x-remote-user|remote-user|x-auth-request-.*|authorization|x-real-ip)$`)
	doAs := regexp.MustCompile(`(?i)(^|[?&])(doas|%64oas)=`)
	for _, r := range probes {
		if doAs.MatchString(r.RequestURI) {
			t.Errorf("driver saw doAs: %s", r.RequestURI)
		}
		for name, vals := range r.Header {
			if identity.MatchString(name) {
				t.Errorf("driver saw header %s: %q (request %s)", name, vals, r.RequestURI)
			}
			for _, v := range vals {
				if strings.Contains(v, marker) || strings.Contains(v, "6.6.6.6") || strings.Contains(v, "_sparkgate") || strings.Contains(v, e.token) {
					t.Errorf("driver saw %s: %q (request %s)", name, v, r.RequestURI)
				}
			}
		}
	}
	if len(probes) > 0 {
		t.Logf("recorded request example: %s headers %v", probes[0].RequestURI, probes[0].Header)
	}
}

// checkReturnURLs signs in for real with unsafe rd values: no redirect of
// the whole round trip may leave the gateway and the provider, as a
// browser would read it.
func (e *aclEnv) checkReturnURLs(t *testing.T) {
	ctx := ctxFor(t, 2*time.Minute)
	gwHost, opHost := hostOf(e.gw.URL), hostOf(e.op.Issuer)
	for _, rd := range unsafeReturnURLs {
		t.Run(rd, func(t *testing.T) {
			jar, _ := cookiejar.New(nil)
			var offsite string
			c := &http.Client{Jar: jar, Timeout: 60 * time.Second, CheckRedirect: func(req *http.Request, via []*http.Request) error {
				loc := req.Response.Header.Get("Location")
				if h := browserTarget(via[len(via)-1].URL, loc); h != gwHost && h != opHost {
					offsite = loc
					return fmt.Errorf("redirect off-site to %q", loc)
				}
				return nil
			}}
			final, body, err := BrowserlessLogin(ctx, c, e.gw.URL+"/oauth2/login?rd="+rd, "alice")
			if offsite != "" {
				t.Fatalf("rd=%s: after sign-in the gateway redirected to %q", rd, offsite)
			}
			if err != nil {
				t.Fatal(err)
			}
			if final.Host != gwHost || final.Path != "/" {
				t.Errorf("rd=%s: sign-in ended at %s; want the gateway's start page", rd, final)
			}
			if !strings.Contains(string(body), "you may view") {
				t.Errorf("rd=%s: sign-in did not end signed in on the index: %.300s", rd, body)
			}
		})
	}
}

func hostOf(u string) string {
	p, _ := url.Parse(u)
	return p.Host
}
