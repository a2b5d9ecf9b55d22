package proxy

import (
	"net/http"

	"github.com/sparkgate/sparkgate/proxy/discovery"
)

// CookiePrefix starts the name of every cookie the gateway sets. Cookies with
// this prefix are removed from every request before it goes upstream.
const CookiePrefix = "_sparkgate"

// Identity is who a request comes from, as the gateway's authentication
// decided. The proxy never reads identity from request headers.
type Identity struct {
	User   string
	Groups []string
	// Method says how the user signed in: "session", "bearer" or "local".
	Method string
}

// Authenticator identifies the sender of a request. It has three outcomes:
// signed in (id, true, nil); not signed in (_, false, nil); technical error.
type Authenticator interface {
	Authenticate(r *http.Request) (Identity, bool, error)
	// Challenge answers a request that is not signed in: a login redirect
	// that preserves the deep link for browsers, 401 JSON for API clients.
	Challenge(w http.ResponseWriter, r *http.Request)
}

// Action is what a request would do to an application.
type Action int

const (
	// View is reading any page or REST resource of the app.
	View Action = iota
	// Modify is killing a job or stage.
	Modify
)

func (a Action) String() string {
	if a == Modify {
		return "modify"
	}
	return "view"
}

// Verdict is an authorization decision with the reasons it was reached.
type Verdict struct {
	Allow   bool
	Reasons []string
	// Grant tells a denied user how access is granted, for example
	// "spark.ui.view.acls / spark.ui.view.acls.groups".
	Grant string
	// Ask names who a denied user may ask for access (the app's owner
	// and admins), shown on the 403 page.
	Ask []string
	// Pending means the app's ACLs have not been read yet (from the
	// driver's environment, or the event log through its History Server)
	// and the identity is neither the owner nor an admin, whom the lists
	// cannot exclude. It is not a "no": Spark might well say yes. Allow is
	// false and Reasons are empty, since no list was read to give one.
	Pending bool
}

// Authorizer decides whether an identity may act on an app. hist is nil for
// a live driver and names the History Server for a finished app, whose
// history ACL rules then apply.
type Authorizer interface {
	Authorize(id Identity, app *discovery.App, hist *discovery.HistoryRef, action Action) Verdict
}
