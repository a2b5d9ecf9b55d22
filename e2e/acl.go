//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/chromedp"
)

// aclRule is one app's view rules as Spark's SecurityManager builds them
// (spark-ui-facts.md section 5). It is written here, apart from package
// policy, so that the tests' expectations do not come from the code under
// test.
type aclRule struct {
	Enabled                                    bool
	Owner                                      string
	Admins, AdminGroups, ViewUsers, ViewGroups []string
}

// sparkList splits a Spark list property: on ',', trimmed, empties dropped.
func sparkList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// liveRule is a live driver's rule: ACLs on with spark.acls.enable.
func liveRule(confs map[string]string, owner string) aclRule {
	return aclRule{
		Enabled:     strings.EqualFold(strings.TrimSpace(confs["spark.acls.enable"]), "true"),
		Owner:       owner,
		Admins:      sparkList(confs["spark.admin.acls"]),
		AdminGroups: sparkList(confs["spark.admin.acls.groups"]),
		ViewUsers:   sparkList(confs["spark.ui.view.acls"]),
		ViewGroups:  sparkList(confs["spark.ui.view.acls.groups"]),
	}
}

// historyRule is a History Server's per-app rule: ACLs on with the server's
// spark.history.ui.acls.enable, its admin lists added to the app's.
func historyRule(enabled bool, hsAdmins, hsAdminGroups []string, confs map[string]string, owner string) aclRule {
	r := liveRule(confs, owner)
	r.Enabled = enabled
	r.Admins = append(slices.Clone(hsAdmins), r.Admins...)
	r.AdminGroups = append(slices.Clone(hsAdminGroups), r.AdminGroups...)
	return r
}

// mayView is checkUIViewPermissions: isUserInACL(user, admins ∪ {owner} ∪
// view acls, admin groups ∪ view acl groups), with groups given instead of
// looked up.
func (r aclRule) mayView(user string, groups []string) bool {
	if !r.Enabled {
		return true
	}
	users := append(append([]string{r.Owner}, r.Admins...), r.ViewUsers...)
	gs := append(slices.Clone(r.AdminGroups), r.ViewGroups...)
	if slices.Contains(users, "*") || slices.Contains(users, user) || slices.Contains(gs, "*") {
		return true
	}
	for _, g := range groups {
		if slices.Contains(gs, g) {
			return true
		}
	}
	return false
}

// SparkDoAs asks a Spark UI (a driver, or a History Server with base the
// app's /history/<id> prefix for pages) whether user may view appID: with
// no authentication filter in front, Spark honours ?doAs= and judges the
// request as that user. It returns the verdict of the REST environment
// endpoint and of a UI page, each true for 200 and false for 403.
func SparkDoAs(ctx context.Context, apiBase, pageURL, appID, user string) (rest, page bool, err error) {
	ask := func(u string) (bool, error) {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(rctx, http.MethodGet, u, nil)
		if err != nil {
			return false, fmt.Errorf("building request: %w", err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, fmt.Errorf("GET %s: %w", u, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			return true, nil
		case http.StatusForbidden:
			return false, nil
		}
		return false, fmt.Errorf("GET %s: %s; want 200 or 403", u, resp.Status)
	}
	q := "?doAs=" + url.QueryEscape(user)
	if rest, err = ask(apiBase + "/api/v1/applications/" + appID + "/environment" + q); err != nil {
		return false, false, err
	}
	if page, err = ask(pageURL + q); err != nil {
		return false, false, err
	}
	return rest, page, nil
}

// RecordedRequest is one request a Recorder received.
type RecordedRequest struct {
	Method, RequestURI string
	Header             http.Header
}

// Recorder answers like a live Spark driver (one app in
// /api/v1/applications, its environment with the given Spark properties,
// a small HTML page for anything else) and records every request, so that
// tests can see what the gateway forwards.
type Recorder struct {
	AppID string
	URL   string
	srv   *httptest.Server
	mu    sync.Mutex
	reqs  []RecordedRequest
}

// StartRecorder serves a stand-in driver of app appID owned by owner, with
// props as its Spark properties, on 127.0.0.1.
func StartRecorder(appID, owner string, props map[string]string) *Recorder {
	r := &Recorder{AppID: appID}
	start := time.Now().Add(-time.Minute)
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	pairs := make([][]string, 0, len(keys))
	for _, k := range keys {
		pairs = append(pairs, []string{k, props[k]})
	}
	apps := []map[string]any{{
		"id": appID, "name": "recorder",
		"attempts": []map[string]any{{
			"startTime": start.UTC().Format("2006-01-02T15:04:05.000GMT"), "endTime": "1969-12-31T23:59:59.999GMT",
			"lastUpdated": start.UTC().Format("2006-01-02T15:04:05.000GMT"), "duration": 60000,
			"sparkUser": owner, "completed": false, "appSparkVersion": "3.5.9",
			"startTimeEpoch": start.UnixMilli(), "endTimeEpoch": -1, "lastUpdatedEpoch": start.UnixMilli(),
		}},
	}}
	env := map[string]any{"sparkProperties": pairs, "systemProperties": [][]string{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.reqs = append(r.reqs, RecordedRequest{Method: req.Method, RequestURI: req.RequestURI, Header: req.Header.Clone()})
		r.mu.Unlock()
		switch req.URL.Path {
		case "/api/v1/applications":
			writeTestJSON(w, apps)
		case "/api/v1/applications/" + appID + "/environment":
			writeTestJSON(w, env)
		case "/api/v1/applications/" + appID + "/jobs":
			writeTestJSON(w, []any{})
		default:
			w.Header().Set("Content-Type", "text/html;charset=utf-8")
			fmt.Fprint(w, "<html><body><p>recorded</p></body></html>")
		}
	}))
	r.URL = r.srv.URL
	return r
}

func writeTestJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// Requests returns a copy of the requests received so far.
func (r *Recorder) Requests() []RecordedRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.reqs)
}

// Close stops the recorder.
func (r *Recorder) Close() { r.srv.Close() }

// SignIn signs user in to the gateway at gwURL through the provider's
// login form and returns a client holding the session that hands
// redirects back to the caller.
func SignIn(ctx context.Context, gwURL, user string) (*http.Client, error) {
	jar, err := cookiejar.New(nil)
	if err != nil {
		return nil, fmt.Errorf("cookie jar: %w", err)
	}
	c := &http.Client{Jar: jar, Timeout: 60 * time.Second}
	final, body, err := BrowserlessLogin(ctx, c, gwURL+"/", user)
	if err != nil {
		return nil, fmt.Errorf("signing in %s: %w", user, err)
	}
	if !strings.HasPrefix(final.String(), gwURL+"/") {
		return nil, fmt.Errorf("signing in %s ended at %s (page %.200s)", user, final, body)
	}
	return NoRedirectClient(jar), nil
}

// Answer is one gateway response, reduced to what the tests judge.
type Answer struct {
	Status      int
	ContentType string
	Location    string
	Body        []byte
}

// Get sends GET u with client c and extra headers.
func Get(ctx context.Context, c *http.Client, u string, hdr http.Header) (Answer, error) {
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, u, nil)
	if err != nil {
		return Answer{}, fmt.Errorf("building request: %w", err)
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	resp, err := c.Do(req)
	if err != nil {
		return Answer{}, fmt.Errorf("GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return Answer{}, fmt.Errorf("reading %s: %w", u, err)
	}
	return Answer{Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"), Location: resp.Header.Get("Location"), Body: body}, nil
}

// Verdict names an answer to an access attempt: "allow" (200), "deny"
// (403, or the 404 of an unknown app), "login" (a redirect to sign-in or 401), else "status N".
func (a Answer) Verdict() string {
	switch {
	case a.Status == http.StatusOK:
		return "allow"
	case a.Status == http.StatusForbidden,
		// A user who may not view an app gets the answer an unknown id
		// gets (proxy.reveal_denied off); the apps asked about exist.
		a.Status == http.StatusNotFound && bytes.Contains(a.Body, []byte("knows no application")):
		return "deny"
	case a.Status == http.StatusUnauthorized,
		a.Status == http.StatusFound && strings.Contains(a.Location, "/oauth2/login"):
		return "login"
	}
	return fmt.Sprintf("status %d", a.Status)
}

// JSONError reports whether the answer is a JSON object with an "error" or
// "message" member.
func (a Answer) JSONError() bool {
	if !strings.HasPrefix(a.ContentType, "application/json") {
		return false
	}
	var m map[string]any
	if json.Unmarshal(a.Body, &m) != nil {
		return false
	}
	_, e := m["error"]
	_, msg := m["message"]
	return e || msg
}

// GoAndLocate opens u in the browser and returns where it ends once loaded.
func (b *Browser) GoAndLocate(u string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(b.ctx, timeout)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(u)); err != nil {
		return "", fmt.Errorf("navigating to %s: %w", u, err)
	}
	// A poll fails with "Cannot find context" when a redirect replaces the
	// document under it; ask again on the new one.
	for {
		loc, err := chromedp.Run(ctx, chromedp.Poll[string](`document.readyState === "complete" && location.href`,
			chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(timeout)))
		if err == nil || ctx.Err() != nil {
			return loc, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// IndexAppIDs opens the gateway's index page at u and returns the app ids
// of its table rows, read from the DOM.
func (b *Browser) IndexAppIDs(u string, timeout time.Duration) ([]string, error) {
	if _, err := b.GoAndLocate(u, timeout); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(b.ctx, timeout)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`Array.from(document.querySelectorAll("table.apps tbody tr td:first-child code")).map(e => e.textContent.trim())`))
}

// browserTarget returns the host a browser would go to when following
// Location loc from base: browsers drop tabs and newlines and read "\" as
// "/" in special schemes, which Go's URL parser does not.
func browserTarget(base *url.URL, loc string) string {
	loc = strings.Map(func(r rune) rune {
		switch r {
		case '\t', '\n', '\r':
			return -1
		case '\\':
			return '/'
		}
		return r
	}, strings.TrimSpace(loc))
	u, err := base.Parse(loc)
	if err != nil {
		return "unparsable:" + loc
	}
	return u.Host
}

// SignOut signs out as the gateway's sign-out button does, with c (which
// must follow redirects and hold the session's cookie jar): a same-origin
// POST to /oauth2/logout, whose page continues to the provider's
// end-session form, confirmed with "Yes, sign me out" (logout=yes; the
// button sits outside the form). It returns where the browser-like client
// ends.
func SignOut(ctx context.Context, c *http.Client, gwURL string) (*url.URL, []byte, error) {
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, gwURL+"/oauth2/logout", strings.NewReader(""))
	if err != nil {
		return nil, nil, fmt.Errorf("building sign-out request: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", gwURL)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	req.Header.Set("Sec-Fetch-Mode", "navigate")
	req.Header.Set("Sec-Fetch-Dest", "document")
	req.Header.Set("Sec-Fetch-User", "?1")
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("POST /oauth2/logout: %w", err)
	}
	page, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if err != nil {
		return nil, nil, fmt.Errorf("reading the sign-out page: %w", err)
	}
	m := reContinue.FindSubmatch(page)
	if resp.StatusCode != http.StatusOK || m == nil {
		return resp.Request.URL, page, fmt.Errorf("sign-out answered %s without a link to the provider: %.300s", resp.Status, page)
	}
	a, final, err := getFollow(ctx, c, http.MethodGet, html.UnescapeString(string(m[1])), nil)
	if err != nil {
		return nil, nil, err
	}
	action, fields, ok := firstForm(a)
	if !ok || !strings.Contains(final.Path, "/session/end") {
		return final, a, fmt.Errorf("no end-session form at %s: %.300s", final, a)
	}
	fields.Set("logout", "yes")
	next, err := final.Parse(action)
	if err != nil {
		return nil, nil, fmt.Errorf("form action %q: %w", action, err)
	}
	body, final, err := getFollow(ctx, c, http.MethodPost, next.String(), fields)
	return final, body, err
}

// reContinue finds where the gateway's sign-out page sends the browser.
var reContinue = regexp.MustCompile(`<a id="continue" href="([^"]+)">`)

// getFollow sends one request with c (following redirects as c does) and
// returns the final body and URL; form, when set, is posted.
func getFollow(ctx context.Context, c *http.Client, method, u string, form url.Values) ([]byte, *url.URL, error) {
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(rctx, method, u, body)
	if err != nil {
		return nil, nil, fmt.Errorf("building request: %w", err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: %w", method, u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", u, err)
	}
	return b, resp.Request.URL, nil
}
