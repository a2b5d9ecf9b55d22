package proxy

import (
	"net/http"

	"github.com/sparkgate/sparkgate/proxy/discovery"
)

// served says what serves a request for an app: its live driver (hist nil)
// or the view of the History Server hist. resolveApp decides it once, and
// only for a user allowed to view the app there.
type served struct {
	app  *discovery.App
	hist *discovery.HistoryRef
}

// resolveOpts says how a route reaches an app.
type resolveOpts struct {
	// attempt prefers the History Server that has this attempt.
	attempt string
	// server, if set, is the one History Server whose view is asked for
	// (/hs/<server>/…); the live driver still answers when it lists none.
	server string
	// historyFirst prefers a History Server's view to the live driver
	// (links copied from a History Server); otherwise the driver comes
	// first, as for the stable bookmark.
	historyFirst bool
	// liveOnly refuses apps without a live driver (kill confirmations).
	liveOnly bool
	// waitMsg replaces the waiting page's message.
	waitMsg string
}

// resolveApp is the one road from a route's app id to what serves it:
// lookup, the live driver or a History Server's view, and the View decision
// against the ACLs of the one chosen. Every answer it gives away, the
// waiting page included, comes after that decision: an app the user may
// not view looks like an id that names nothing (see authorize).
func (s *Server) resolveApp(st *reqState, o resolveOpts) (served, error) {
	app, ok := s.reg.Lookup(st.route.AppID)
	if !ok {
		return served{}, notFoundApp(st.route.AppID)
	}
	var ref *discovery.HistoryRef
	if o.server != "" {
		for i := range app.History {
			if app.History[i].Server == o.server {
				ref = &app.History[i]
				break
			}
		}
	} else if !o.liveOnly {
		ref = s.historyFor(app, o.attempt)
	}
	switch {
	case ref != nil && (o.historyFirst || o.server != "" || !app.Live()):
		return served{app, ref}, s.authorize(st, app, ref, View)
	case app.Live():
		return served{app: app}, s.authorize(st, app, nil, View)
	}
	if o.liveOnly {
		if err := s.authorize(st, app, nil, View); err != nil {
			return served{}, err
		}
		return served{}, &httpError{Status: http.StatusConflict, Title: "Nothing to kill", AppID: app.ID,
			Msg: "application " + app.ID + " has finished"}
	}
	return served{}, s.waitForHistory(st, app, o.waitMsg) // authorizes by the live ACLs
}
