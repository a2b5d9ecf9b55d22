package proxy

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/sparkgate/sparkgate/proxy/discovery"
)

// serveApp serves /app/<id>/... and /proxy/<id>/...: the live driver if
// there is one, else the History Server's view of the same page, else a
// page that waits for the History Server.
func (s *Server) serveApp(w http.ResponseWriter, r *http.Request, st *reqState) error {
	if st.route.Kind == KindApp && st.route.Path == diagnosisPath {
		return s.serveDiagnosis(w, r, st, false)
	}
	if st.route.Kind == KindApp && st.route.Path == handoffPath && s.cfg.AppDomain != "" && !st.onAppHost && st.handoffBind == "" {
		return s.bindHandOff(w, r, st)
	}
	if done, err := s.guardRequest(w, r, st); done {
		return err
	}
	if strings.HasPrefix(st.route.Path, podLogPrefix) && st.route.Kind == KindApp {
		return s.servePodLog(w, r, st)
	}
	if q, ok := parseExecLogPath(st.route.Path); ok && st.route.Kind == KindApp {
		return s.serveExecLog(w, r, st, q)
	}
	rt := st.route
	to, err := s.resolveApp(st, resolveOpts{})
	if err != nil {
		return err
	}
	app := to.app
	if ref := to.hist; ref != nil {
		if p, ok := historyREST(ref, app.ID, rt.Path); ok {
			redirect(w, r, p)
			return nil
		}
		redirect(w, r, historyPath(ref, app.ID, "")+rt.Path)
		return nil
	}
	if rt.Kind == KindApp && app.ProxyBase != "" {
		// The driver ignores X-Forwarded-Context and links under
		// /proxy/<id>; serve it there so its links resolve.
		redirect(w, r, "/proxy/"+app.ID+rt.Path)
		return nil
	}
	if s.cfg.AppDomain != "" && !st.onAppHost {
		// Served on the app's own host only: hand the user over.
		path := rt.Path
		if rt.Kind == KindProxy {
			path = rt.Prefix + rt.Path
		}
		return s.handOff(w, r, st, app.ID, path)
	}
	st.prefix = rt.Prefix
	if app.ProxyBase == "" {
		st.xfc = rt.Prefix
	}
	st.suspectID = app.ID
	if s.cfg.Kill == KillModifyACL {
		st.killApp = app
	}
	s.proxyDriver(w, r, st, app.UIURL)
	return nil
}

// historyPath is the gateway path of an app's UI on a History Server,
// without a trailing slash: /hs/<name>/history/<id>[/<attempt>]. With no
// attempt given it names the newest attempt, as the History Server's own
// redirect would.
func historyPath(ref *discovery.HistoryRef, appID, attempt string) string {
	p := "/hs/" + ref.Server + "/history/" + appID
	if attempt == "" && len(ref.Attempts) > 0 {
		attempt = ref.Attempts[0]
	}
	if attempt != "" {
		p += "/" + attempt
	}
	return p
}

// historyREST maps a live driver's REST path of the app
// (/api/v1/applications/<id>/...), as the JavaScript of a page opened while
// the app ran keeps calling it, to the gateway's REST path of the same app,
// now served by its History Server. The driver's paths name no attempt; a
// History Server needs the attempt for apps that have them.
func historyREST(ref *discovery.HistoryRef, appID, path string) (string, bool) {
	base := "/api/v1/applications/" + appID
	rest, ok := strings.CutPrefix(path, base)
	if !ok || (rest != "" && rest[0] != '/') {
		return "", false
	}
	if len(ref.Attempts) > 0 && ref.Attempts[0] != "" {
		base += "/" + ref.Attempts[0]
	}
	return base + rest, true
}

// driverLabel names a driver on error pages. Not by its address: users
// need not learn where drivers run (the log has it, see writeError).
func driverLabel(*url.URL) string { return "the driver" }

func notFoundApp(id string) *httpError {
	return &httpError{
		Status: http.StatusNotFound,
		Title:  "Unknown application",
		Msg:    fmt.Sprintf("sparkgate knows no application %s: it is not running where sparkgate looks, and no History Server lists it", id),
		AppID:  id,
	}
}

// waitForHistory answers for an app whose driver has gone but that no
// History Server lists yet (they scan event logs every few seconds): a page
// that says so and reloads itself. Only a user who may view the app (by its
// live ACLs) learns even that much. msg replaces the default message.
func (s *Server) waitForHistory(st *reqState, app *discovery.App, msg string) error {
	if err := s.authorize(st, app, nil, View); err != nil {
		return err
	}
	if msg == "" {
		msg = fmt.Sprintf("application %s (%s) has finished; waiting for the History Server to list it", app.ID, app.Name)
	}
	return &httpError{
		Status:     http.StatusServiceUnavailable,
		Title:      "Application finished",
		Msg:        msg,
		AppID:      app.ID,
		RetryAfter: 5,
	}
}
