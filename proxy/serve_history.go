package proxy

import (
	"fmt"
	"net/http"
	"strings"
)

// serveHistory serves /hs/<name>/...: a configured History Server. App
// pages and app REST are checked against the app's history ACLs; static
// assets and the version need only sign-in; the History Server's own
// listing is replaced by the gateway's filtered one.
func (s *Server) serveHistory(w http.ResponseWriter, r *http.Request, st *reqState) error {
	rt := st.route
	base, ok := s.hs[rt.Server]
	if !ok {
		return errorf(http.StatusNotFound, "sparkgate has no History Server named %q", rt.Server)
	}
	if done, err := s.guardRequest(w, r, st); done {
		return err
	}
	st.prefix = rt.Prefix
	st.xfc = rt.Prefix
	label := "History Server " + rt.Server
	if rt.AppID == "" {
		switch {
		case rt.Path == "/":
			// The History Server's listing would show every app.
			redirect(w, r, "/")
			return nil
		case strings.TrimSuffix(rt.Path, "/") == "/api/v1/applications":
			redirect(w, r, "/api/v1/applications")
			return nil
		case rt.Path == "/api/v1/version", strings.HasPrefix(rt.Path, "/static/"):
			s.proxy(w, r, st, base, label)
			return nil
		}
		return errorf(http.StatusNotFound, "no such page")
	}
	to, err := s.resolveApp(st, resolveOpts{server: rt.Server, attempt: rt.Attempt, everyAttempt: allEventLogs(rt),
		waitMsg: fmt.Sprintf("History Server %s does not list application %s yet", rt.Server, rt.AppID)})
	if err != nil {
		return err
	}
	if to.hist == nil {
		// A bookmark of the history view of an app that runs again
		// (or not yet listed there): the stable URL knows where it is.
		redirect(w, r, "/app/"+to.app.ID+"/")
		return nil
	}
	s.proxy(w, r, st, base, label)
	return nil
}

// serveHistoryAlias redirects /history/<id>[/<attempt>]/... (the History
// Server's own links, and YARN's tracking URLs) to the History Server that
// has the app.
func (s *Server) serveHistoryAlias(w http.ResponseWriter, r *http.Request, st *reqState) error {
	rt := st.route
	to, err := s.resolveApp(st, resolveOpts{attempt: rt.Attempt, historyFirst: true})
	if err != nil {
		return err
	}
	if to.hist != nil {
		// rt.Path is the whole "/history/<id>/..." path.
		redirect(w, r, "/hs/"+to.hist.Server+rt.Path)
		return nil
	}
	rest := strings.TrimPrefix(rt.Path, "/history/"+to.app.ID)
	if rt.Attempt != "" {
		rest = strings.TrimPrefix(rest, "/"+rt.Attempt)
	}
	if rest == "" {
		rest = "/"
	}
	redirect(w, r, "/app/"+to.app.ID+rest)
	return nil
}
