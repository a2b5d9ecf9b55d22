package proxy

import (
	"net/http"
	"net/url"
	"strings"

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
	// attempt prefers the History Server that has this attempt, whose own
	// ACLs then judge the request.
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
	// everyAttempt asks, when a History Server serves the request, for
	// View on each of the app's attempts (a download of all their event
	// logs; an executor's log, whose container's attempt an event log
	// cannot be trusted to tell).
	everyAttempt bool
	// namedDriver asks, when a History Server serves the request, for View
	// under the ACLs of the app's driver too, live or ended, if its source
	// vouches for what is kept under its id (discovery.VouchesForID): an
	// event log anyone may write must not open the logs of the app that
	// source found. Its lists unread, only its owner and admins get in.
	namedDriver bool
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
	all := ref // before one attempt is chosen: every attempt's view
	if ref != nil && o.attempt != "" {
		// Judged by the named attempt's own owner and ACLs, as the History
		// Server judges it: an attempt whose event log opens it to all
		// must not open the others.
		at, ok := ref.ForAttempt(o.attempt)
		switch {
		case ok:
			ref = at
		case app.Live():
			ref = nil // the running attempt, not listed there yet
		default:
			if err := s.authorize(st, app, ref, View); err != nil {
				return served{}, err
			}
			return served{}, &httpError{Status: http.StatusNotFound, Title: "Unknown attempt", AppID: app.ID,
				Msg: "History Server " + ref.Server + " lists no attempt " + o.attempt + " of application " + app.ID}
		}
	}
	switch {
	case ref != nil && (o.historyFirst || o.server != "" || !app.Live()):
		if err := s.authorize(st, app, ref, View); err != nil {
			return served{}, err
		}
		for _, id := range alsoJudged(all, o) {
			at, _ := all.ForAttempt(id)
			if err := s.authorize(st, app, at, View); err != nil {
				return served{}, err
			}
		}
		if drv := vouchedDriver(app); o.namedDriver && drv != nil {
			if err := s.authorize(st, drv, nil, View); err != nil {
				return served{}, err
			}
		}
		return served{app, ref}, nil
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

// alsoJudged lists the attempts of ref that a request served from it must
// also be allowed to view, besides the one it is judged by (the attempt it
// names, else the newest, which the gateway links and reads): every other
// attempt with o.everyAttempt; for a request that names no attempt, the
// attempt without an id if the app has one besides its newest, since that
// is the one the History Server serves for it; every other attempt too if
// one has an id that is not a number (Spark numbers them; only a crafted
// event log names one "jobs", which a route takes for a page, not an
// attempt). None, without an allocation, for an app of one attempt.
func alsoJudged(ref *discovery.HistoryRef, o resolveOpts) []string {
	if len(ref.Attempts) < 2 {
		return nil
	}
	judged := o.attempt
	if judged == "" {
		judged = ref.Attempts[0]
	}
	every := o.everyAttempt
	for _, id := range ref.Attempts {
		if id != "" && !ValidAttemptID(id) {
			every = true
		}
	}
	var ids []string
	for _, id := range ref.Attempts {
		if id != judged && (every || o.attempt == "" && id == "") {
			ids = append(ids, id)
		}
	}
	return ids
}

// namedBySource reports whether a standalone master or a YARN
// ResourceManager named the app's driver (found it under the id it gave
// the app), rather than a probe, a log line, a pod label or a static entry,
// which repeat what the driver says of itself: the logs its workers and
// NodeManagers keep under that id are the app's.
func namedBySource(app *discovery.App) bool {
	kind, _, _ := strings.Cut(app.Source, ":")
	return kind == "master" || kind == "yarn"
}

// vouchedDriver returns the app's driver, running or ended, as the
// source that found it recorded it, if that source vouches for what is
// kept under the app's id (discovery.VouchesForID); nil otherwise. An
// ended one comes back as it ran, so that it is judged as it was then, by
// its own lists: a History Server's rules (its admins, its ACLs switched
// off) are what the event log is judged by, not the driver.
func vouchedDriver(app *discovery.App) *discovery.App {
	switch d := app.Driver; {
	case d != nil:
		u := d.UIURL
		if u == nil {
			u = &url.URL{} // discovery records it; judged as it ran all the same
		}
		return &discovery.App{ID: app.ID, Name: app.Name, User: d.User, StartTime: app.StartTime,
			State: discovery.Running, UIURL: u, Source: d.Source, ACLProps: d.ACLProps}
	case app.Live() && discovery.VouchesForID(app.Source):
		return app
	}
	return nil
}
