package main

import (
	"maps"
	"net/http"
	"slices"

	"github.com/sparkgate/sparkgate/auth"
	"github.com/sparkgate/sparkgate/policy"
	"github.com/sparkgate/sparkgate/proxy"
	"github.com/sparkgate/sparkgate/proxy/discovery"
)

// authnAdapter lets the proxy use auth without importing it.
type authnAdapter struct{ a *auth.Authenticator }

var _ proxy.Authenticator = authnAdapter{}

func (x authnAdapter) Authenticate(r *http.Request) (proxy.Identity, bool, error) {
	id, ok, err := x.a.Authenticate(r)
	if err != nil || !ok {
		return proxy.Identity{}, ok, err
	}
	return proxy.Identity{User: id.User, Groups: id.Groups, Method: id.Method}, true, nil
}

func (x authnAdapter) Challenge(w http.ResponseWriter, r *http.Request) { x.a.Challenge(w, r) }

// authorizer judges proxy requests with Spark's ACL model from policy.
type authorizer struct {
	c       *policy.Cached
	history map[string]policy.HistoryRules
	// historyNames are history's keys in order.
	historyNames []string
}

var _ proxy.Authorizer = (*authorizer)(nil)

func newAuthorizer(cfg policy.Config, history map[string]policy.HistoryRules) *authorizer {
	return &authorizer{
		c:            policy.NewCached(policy.New(cfg), cfg.CacheSize, cfg.CacheTTL),
		history:      history,
		historyNames: slices.Sorted(maps.Keys(history)),
	}
}

// unknownACL stands for an app whose ACLs are not read yet: judged as if
// ACLs were on with empty lists, so only its owner and admins get in, and
// everyone else is told to wait (Verdict.Pending). Failing open here would
// hand a private app to everyone.
var unknownACL = map[string]string{"spark.acls.enable": "true"}

func (z *authorizer) Authorize(id proxy.Identity, app *discovery.App, hist *discovery.HistoryRef, action proxy.Action) proxy.Verdict {
	sub := policy.Subject{User: id.User, Groups: id.Groups}
	act := policy.View
	if action == proxy.Modify {
		act = policy.Modify
	}
	var d policy.Decision
	var props map[string]string
	switch {
	case hist == nil && !app.Live() && len(z.historyNames) > 0 && app.ACLProps != nil && writesEventLog(app.ACLProps):
		props = cmpOr(app.ACLProps, unknownACL)
		var pending bool
		if d, pending = z.decideEnded(sub, props, app.User, act); pending {
			return proxy.Verdict{Pending: true}
		}
	case hist == nil:
		props = cmpOr(app.ACLProps, unknownACL)
		d = z.c.DecideLive(sub, props, app.User, act)
	default:
		props = cmpOr(hist.ACLProps, unknownACL)
		// The History Server's owner, never a live claim: a driver may say
		// anything about itself, the event log is what the server serves.
		d = z.c.DecideHistory(sub, z.history[hist.Server], props, hist.User, act)
	}
	if !d.Allow && (hist == nil && app.ACLProps == nil || hist != nil && hist.ACLProps == nil) {
		// Judged with empty lists, only the owner and admins are let in;
		// anyone else might be in a list not read yet. Say "not yet", and
		// give no reasons drawn from lists that were never read.
		return proxy.Verdict{Pending: true}
	}
	return proxy.Verdict{Allow: d.Allow, Reasons: d.Reasons, Grant: d.Grant, Ask: d.Ask}
}

// writesEventLog reports whether an app's properties (nil: not read yet)
// may have it write an event log: spark.eventLog.enabled is true as Spark
// reads booleans (" TRUE " is), not a boolean at all, or unknown. Its
// default is false.
// Authorize judges an ended app whose properties were never read as a
// live one of unknown ACLs (its owner and admins, everyone else "not
// yet"): whether a History Server will list it is not known, and one with
// ACLs off would let everyone see it listed, its name and owner, for as
// long as it is remembered.
func writesEventLog(props map[string]string) bool {
	if props == nil {
		return true
	}
	raw, set := props["spark.eventLog.enabled"]
	on, ok := policy.ParseSparkBool(raw)
	return set && (on || !ok)
}

// decideEnded judges an app whose driver has ended, that writes an event
// log, and that no History Server lists yet. Its pages will come from a
// History Server, which applies its own rules to the ACLs of the event log
// (the driver's environment, props), and which one is not known. Whoever
// every server would let in gets the waiting page now, rather than a "no"
// that turns into a "yes" once a server lists the app (a user in
// spark.history.ui.admin.acls of them all, or any user when their ACLs are
// off). Whoever only some would let in is told "not yet" (pending): let in
// now, they would see the app listed, its name and owner, by the rules of
// a server that may never list it (one with ACLs off lets everyone in,
// beside one with ACLs on that reads the app's event log). Whoever none
// would let in is told no, with the reasons of the first server in name
// order, so that they are stable.
func (z *authorizer) decideEnded(sub policy.Subject, props map[string]string, owner string, act policy.Action) (d policy.Decision, pending bool) {
	allowed := 0
	for i, name := range z.historyNames {
		h := z.c.DecideHistory(sub, z.history[name], props, owner, act)
		if h.Allow {
			allowed++
		}
		if i == 0 {
			d = h
		}
	}
	return d, allowed > 0 && allowed < len(z.historyNames)
}

// cmpOr returns m, or def when m is nil (an app whose ACLs are unknown; an
// empty map is a read environment that sets none).
func cmpOr(m, def map[string]string) map[string]string {
	if m == nil {
		return def
	}
	return m
}

// isAdmin reports whether an identity may see how the gateway itself runs
// (where discovery looks, its sources' state): the gateway-wide admins, and
// in local mode its one user, who runs it. It grants no access to apps.
func isAdmin(cfg policy.Config, local bool) func(proxy.Identity) bool {
	p := policy.New(cfg)
	return func(id proxy.Identity) bool {
		return local || p.IsAdmin(policy.Subject{User: id.User, Groups: id.Groups})
	}
}
