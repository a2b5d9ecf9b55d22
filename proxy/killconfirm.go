package proxy

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/sparkgate/sparkgate/proxy/discovery"
)

// csrfCookie is the double-submit cookie of the kill confirmation, and
// hostCSRFCookie its name on an app's host over https (csrfCookieName).
// Like every cookie, it never reaches Spark.
const (
	csrfCookie     = CookiePrefix + "_csrf"
	hostCSRFCookie = "__Host-sparkgate_csrf"
)

// csrfCookieName is the confirmation cookie's name for st's host. On an
// app's host over https it is "__Host-": a browser takes such a cookie only
// from that very host, so a page of another app's host (a driver's script)
// cannot plant one for the whole app domain and make the confirmation
// fail. On the main host the cookie's path is the app's prefix, which a
// "__Host-" name does not allow (Path=/ would let two confirmation pages
// of different apps overwrite each other's).
func (s *Server) csrfCookieName(st *reqState) string {
	if st.onAppHost && s.publicURL != nil && s.publicURL.Scheme == "https" {
		return hostCSRFCookie
	}
	return csrfCookie
}

// csrfMaxAge bounds how long a confirmation page may be left open.
const csrfMaxAge = 10 * time.Minute

type killPage struct {
	pageBase
	Kind    string // "job" or "stage"
	ID      string
	AppID   string
	AppName string
	Token   string
	Cancel  string
}

// serveKillConfirm replaces Spark's kill links when Kill is "modify-acl":
// GET shows the gateway's confirmation page; its form POSTs back with a
// CSRF token; the kill is sent (as the GET Spark expects) only if the
// Authorizer grants Modify. Spark's own check cannot do this: behind the
// gateway it sees no remote user. Pages lead here: for a user the
// Authorizer lets modify the app, the driver's kill controls are rewritten
// into plain links to this page (NewConfirmLinkReader, chosen in
// modifyResponse); Spark's own kill form (a POST without the gateway's
// token) is refused here like any other request.
func (s *Server) serveKillConfirm(w http.ResponseWriter, r *http.Request, st *reqState, kind string) error {
	rt := st.route
	if r.Method != http.MethodGet && r.Method != http.MethodHead && r.Method != http.MethodPost {
		return &httpError{Status: http.StatusMethodNotAllowed, Msg: "use the confirmation form", Allow: "GET, HEAD, POST", AppID: rt.AppID}
	}
	to, err := s.resolveApp(st, resolveOpts{liveOnly: true})
	if err != nil {
		return err
	}
	app := to.app
	if err := s.authorize(st, app, nil, Modify); err != nil {
		return err
	}
	id := r.URL.Query().Get("id")
	if !isDigits(id) {
		return errorf(http.StatusBadRequest, "the %s id must be a number", kind)
	}
	back := rt.Prefix + "/jobs/"
	if kind == "stage" {
		back = rt.Prefix + "/stages/"
	}
	path := r.URL.EscapedPath()
	if !fetchedByUser(r) {
		return &httpError{Status: http.StatusForbidden, Title: "Open the kill link yourself", AppID: app.ID,
			Msg: "the confirmation page and its form work only when opened and submitted in the browser window, not by a script or in a frame"}
	}
	if r.Method != http.MethodPost {
		nonce := make([]byte, 18)
		_, _ = rand.Read(nonce)
		cookie := base64.RawURLEncoding.EncodeToString(nonce)
		http.SetCookie(w, s.csrfCookie(r, st, cookie, int(csrfMaxAge/time.Second)))
		return s.pages.render(w, http.StatusOK, "killconfirm", killPage{
			pageBase: st.page("Kill "+kind+" "+id+"?", 0),
			Kind:     kind, ID: id, AppID: app.ID, AppName: app.Name,
			Token:  s.csrfToken(st.ident.User, path, id, driverRun(app), cookie, s.now()),
			Cancel: back,
		})
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	if err := r.ParseForm(); err != nil {
		return errorf(http.StatusBadRequest, "malformed form")
	}
	c, err := r.Cookie(s.csrfCookieName(st))
	if err != nil || !s.csrfValid(r.PostForm.Get("csrf"), st.ident.User, path, id, driverRun(app), c.Value) || !sameOrigin(r) {
		return &httpError{Status: http.StatusForbidden, Title: "Confirmation expired", AppID: app.ID,
			Msg: "the confirmation is missing, expired, from another page or for a driver of the app that has since been replaced; open the kill link again"}
	}
	if !s.killOnce(r.Context(), c.Value) {
		return &httpError{Status: http.StatusForbidden, Title: "Confirmation used", AppID: app.ID,
			Msg: "this confirmation has been used already; open the kill link again"}
	}
	if err := s.sendKill(r.Context(), app, rt.Path, id); err != nil {
		if s.suspect != nil {
			s.suspect(app.ID)
		}
		return &httpError{Status: http.StatusBadGateway, AppID: app.ID, Cause: err,
			Msg: fmt.Sprintf("%s of %s did not take the kill request", driverLabel(app.UIURL), app.ID)}
	}
	s.audit.Info("kill sent", zap.String("request_id", st.requestID), zap.String("user", st.ident.User),
		zap.String("app_id", app.ID), zap.String("kind", kind), zap.String("id", id))
	http.SetCookie(w, s.csrfCookie(r, st, "", -1))
	w.Header().Set("Location", back)
	w.WriteHeader(http.StatusSeeOther)
	return nil
}

// killOnce reports whether the confirmation whose double-submit cookie is
// nonce has not been used before, and marks it used: a form posted again
// (its cookie and token copied, a browser resending it) kills nothing more,
// on this replica and on every one that shares a session store
// (Options.ClaimOnce). A confirmation whose kill the driver did not take
// is used too: the user opens the kill link again.
func (s *Server) killOnce(ctx context.Context, nonce string) bool {
	now := s.now()
	if !s.nonces.use("kill:"+nonce, now.Add(csrfMaxAge).Unix(), now.Unix()) {
		return false
	}
	// Kept as long as a token can be valid, and a second more: clocks differ.
	return s.claimOnce == nil || s.claimOnce(ctx, "kill-confirm:"+nonce, csrfMaxAge+time.Second)
}

// csrfCookie builds the kill confirmation's double-submit cookie under
// the app's prefix (on an app's host, "/"); the deletion (maxAge -1, empty
// value) carries the same attributes so that browsers replace the cookie
// they hold.
func (s *Server) csrfCookie(r *http.Request, st *reqState, value string, maxAge int) *http.Cookie {
	name := s.csrfCookieName(st)
	path := st.route.Prefix + "/"
	if st.onAppHost {
		// The host is the app's alone, also under /proxy/<id>/ (a driver
		// with spark.ui.proxyBase), and a browser drops a "__Host-"
		// cookie whose path is not "/".
		path = "/"
	}
	return &http.Cookie{ //nolint:gosec // G124: HttpOnly and SameSite=Strict always; Secure over TLS or behind an https public URL
		Name: name, Value: value, Path: path,
		MaxAge: maxAge, HttpOnly: true,
		Secure: r.TLS != nil || s.secure || name == hostCSRFCookie, SameSite: http.SameSiteStrictMode,
	}
}

// sparkKillToken matches the per-UI token Spark 4.0.5 and later render in
// their kill forms (<input type="hidden" name="csrfToken" value="<hex>">);
// a match is at most killTokenSpan bytes long.
var sparkKillToken = regexp.MustCompile(`name="csrfToken"\s{1,16}value="([0-9A-Fa-f]{1,128})"`)

const killTokenSpan = 256

// sendKill sends Spark's kill request to the driver, with nothing of the
// client's request but the id. Spark 3.5 takes a GET with the id. Spark
// 4.0.5 and later take a POST (GET only with spark.ui.actionsViaGetEnabled)
// with the per-UI CSRF token from the driver's own kill form: when the
// driver's Jobs or Stages page carries one, the kill is posted with it, as
// that form would.
func (s *Server) sendKill(ctx context.Context, app *discovery.App, path, id string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*(s.cfg.DialTimeout+s.cfg.ResponseHeaderTimeout))
	defer cancel()
	// The kill names a job or a stage, not the app: a new connection must
	// be confirmed to reach this app's driver, as a proxied request's is
	// (Server.confirm, at the transport's dial). The app's port may have
	// gone to another app since, whose job of that number this would kill.
	ctx = contextWithState(ctx, &reqState{suspectID: app.ID})
	token, err := s.driverKillToken(ctx, app, path)
	if err != nil {
		return err
	}
	u := *app.UIURL
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	u.RawPath = ""
	var req *http.Request
	if token == "" {
		u.RawQuery = "id=" + url.QueryEscape(id)
		req, err = http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil) //nolint:gosec // G704: scheme and host from the verified registry's UI URL; the path is a kill endpoint (KillTarget), the id digits
	} else {
		form := url.Values{"id": {id}, "csrfToken": {token}}
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader(form.Encode())) //nolint:gosec // G704: scheme and host from the verified registry's UI URL; the path is a kill endpoint (KillTarget), the id digits
		if err == nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
	}
	if err != nil {
		return fmt.Errorf("building kill request: %w", err)
	}
	resp, err := s.upstreams.transport.RoundTrip(req)
	if err != nil {
		return fmt.Errorf("sending kill to %s: %w", u.Host, err)
	}
	defer func() { _ = resp.Body.Close() }() // read-only body; a close error loses nothing
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode >= 400 {
		return fmt.Errorf("kill at %s: status %d", u.Host, resp.StatusCode)
	}
	return nil
}

// driverKillToken reads the CSRF token of the driver's kill forms from its
// Jobs page (Stages page for a stage kill); "" when the page has none.
func (s *Server) driverKillToken(ctx context.Context, app *discovery.App, killPath string) (string, error) {
	page := "/jobs/"
	if strings.HasPrefix(killPath, "/stages/") {
		page = "/stages/"
	}
	u := *app.UIURL
	u.Path = strings.TrimSuffix(u.Path, "/") + page
	u.RawPath, u.RawQuery = "", ""
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil) //nolint:gosec // G704: u is the verified registry's UI URL with a fixed path
	if err != nil {
		return "", fmt.Errorf("building kill form request: %w", err)
	}
	resp, err := s.upstreams.transport.RoundTrip(req)
	if err != nil {
		return "", fmt.Errorf("reading kill form from %s: %w", u.Host, err)
	}
	defer func() { _ = resp.Body.Close() }() // read-only body; a close error loses nothing
	token, err := findKillToken(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return "", fmt.Errorf("reading kill form from %s: %w", u.Host, err)
	}
	return token, nil
}

// findKillToken finds sparkKillToken in a page as it is read, in a buffer
// of 32 KiB (a driver is anyone's, and so is its page's length), each
// byte looked at about once: what a read adds is searched with the
// killTokenSpan bytes before it, where a match may have begun.
func findKillToken(r io.Reader) (string, error) {
	buf := make([]byte, 32<<10)
	n, from := 0, 0
	for {
		m, err := r.Read(buf[n:])
		n += m
		if match := sparkKillToken.FindSubmatch(buf[from:n]); match != nil {
			return string(match[1]), nil
		}
		switch {
		case errors.Is(err, io.EOF):
			return "", nil
		case err != nil:
			return "", err
		}
		if n == len(buf) {
			n = copy(buf, buf[n-killTokenSpan:n])
		}
		from = max(0, n-killTokenSpan)
	}
}

// csrfToken is "<unix seconds>.<mac>", the MAC binding user, path, id,
// the driver's run (driverRun), time and the double-submit cookie.
func (s *Server) csrfToken(user, path, id, run, cookie string, t time.Time) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return ts + "." + s.csrfMAC(user, path, id, run, cookie, ts)
}

// driverRun names the run of an app's driver the confirmation was shown
// for: its attempt and start time. Job and stage ids start again at 0 in a
// new attempt (a YARN AM retry) or a restarted driver under the same app
// id (a driver pod), so "kill job 7" confirmed for one run must not kill
// another run's job 7. Both come from the driver's REST API, the same on
// every replica; its address may not be.
func driverRun(app *discovery.App) string {
	return app.AttemptID + "@" + strconv.FormatInt(app.StartTime.UnixMilli(), 10)
}

func (s *Server) csrfMAC(user, path, id, run, cookie, ts string) string {
	m := hmac.New(sha256.New, s.csrfKey)
	for _, p := range []string{"kill-confirm", user, path, id, run, cookie, ts} {
		m.Write([]byte(p))
		m.Write([]byte{0})
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func (s *Server) csrfValid(token, user, path, id, run, cookie string) bool {
	ts, mac, ok := strings.Cut(token, ".")
	if !ok || cookie == "" {
		return false
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return false
	}
	age := s.now().Sub(time.Unix(sec, 0))
	if age < -time.Minute || age > csrfMaxAge {
		return false
	}
	return hmac.Equal([]byte(mac), []byte(s.csrfMAC(user, path, id, run, cookie, ts)))
}

// sameOrigin refuses a POST whose Origin names another host; browsers
// send Origin on every cross-site POST.
// fetchedByUser reads the browser's fetch metadata (Sec-Fetch-*, which
// scripts cannot set): the confirmation page must be a document the
// browser navigates to, not a fetch() or a frame, so that a script on the
// gateway's origin (all apps share it) cannot read its CSRF token; and the
// form must be submitted by the user (Sec-Fetch-User), not by script. A
// client that sends no fetch metadata (older browsers, API tools) is judged
// by the token and Origin checks alone.
func fetchedByUser(r *http.Request) bool {
	mode := r.Header.Get("Sec-Fetch-Mode")
	if mode == "" {
		return true
	}
	if mode != "navigate" || r.Header.Get("Sec-Fetch-Dest") != "document" {
		return false
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "same-origin" && site != "none" {
		// "none": typed, bookmarked or opened from another application.
		return false
	}
	return r.Method != http.MethodPost || r.Header.Get("Sec-Fetch-User") == "?1"
}

func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && strings.EqualFold(u.Host, r.Host)
}

func isDigits(s string) bool {
	if s == "" || len(s) > 10 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
