// Package policy decides who may view or modify a Spark application, exactly
// as Spark's own SecurityManager (and a History Server's per-app
// SecurityManager) would, plus the gateway's own admins and its choice for
// apps that run with ACLs off.
//
// It owns the ACL model: parsing spark.acls.enable, spark.admin.acls(.groups),
// spark.ui.view.acls(.groups) and spark.modify.acls(.groups), the owner, the
// "*" wildcard and the History Server rules. Every Decision carries
// human-readable reasons fit for a 403 page and an audit log.
//
// The package is pure: it does no HTTP, no I/O and no logging, and reads no
// clock except inside the expirable LRU of Cached. It does not import the
// proxy or auth packages; the caller maps its identities and actions.
package policy

import (
	"strconv"
	"strings"
)

// Subject is the signed-in user a decision is about.
type Subject struct {
	// User is the user name as Spark would see it in getRemoteUser; it is
	// compared exactly (case-sensitive, untrimmed), as Spark does.
	User string
	// Groups are the user's groups, taking the place of Spark's
	// spark.user.groups.mapping lookup.
	Groups []string
}

// Action is what the subject wants to do to an app.
type Action int

const (
	// View is reading any page or REST resource (checkUIViewPermissions).
	View Action = iota
	// Modify is killing a job or stage (checkModifyPermissions).
	Modify
	// Admin is what Spark checks before honouring doAs
	// (checkAdminPermissions).
	Admin
)

// String returns "view", "modify" or "admin".
func (a Action) String() string {
	switch a {
	case Modify:
		return "modify"
	case Admin:
		return "admin"
	}
	return "view"
}

// verb is the action as a phrase for reasons.
func (a Action) verb() string {
	switch a {
	case Modify:
		return "modify (kill jobs and stages of)"
	case Admin:
		return "administer"
	}
	return "view"
}

// Rule tags say which rule decided. They are stable, for logs and metrics.
const (
	RuleNoUser             = "no-user"
	RuleUnknownAction      = "unknown-action"
	RuleHistoryNoModify    = "history-no-modify"
	RuleGatewayAdmin       = "gateway-admin"
	RuleGatewayAdminGroup  = "gateway-admin-group"
	RuleACLsDisabledOpen   = "acls-disabled-open"
	RuleACLsDisabledOwner  = "acls-disabled-owner"
	RuleACLsDisabledAdmin  = "acls-disabled-admin"
	RuleACLsDisabledDenied = "acls-disabled-denied"
	RuleOwner              = "owner"
	RuleAdminUser          = "admin-user"
	RuleAdminGroup         = "admin-group"
	RuleViewACLUser        = "view-acl-user"
	RuleViewACLGroup       = "view-acl-group"
	RuleModifyACLUser      = "modify-acl-user"
	RuleModifyACLGroup     = "modify-acl-group"
	RuleWildcardUser       = "wildcard-user"
	RuleWildcardGroup      = "wildcard-group"
	RuleDenied             = "denied"
)

// wildcard is Spark's WILDCARD_ACL: in a user or group list it admits everyone.
const wildcard = "*"

// Decision is the outcome of Decide with the reasons it was reached.
// Reasons name the lists checked and the user and groups judged, never the
// lists' contents, so they can be shown to the denied user.
type Decision struct {
	Allow   bool
	Reasons []string
	// Rule is a short machine tag such as "view-acl-user" or "denied".
	Rule string
	// Grant says how access of this kind is granted, for example
	// "spark.ui.view.acls / spark.ui.view.acls.groups"; empty when nothing
	// can grant it.
	Grant string
	// Ask names, on a denial that access lists could lift, who to ask: the
	// app's owner, the admins and admin groups its ACLs name, and the
	// gateway's admins ("*" entries name no one and are left out). A user
	// who may view the app reads the same names on its Environment tab; one
	// who may not is shown them only where the operator reveals denials.
	Ask []string
}

// Policy decides with Spark's semantics plus the gateway-wide settings.
// It is immutable and safe for concurrent use.
type Policy struct {
	admins      []string
	adminGroups []string
	mode        Mode
}

// New returns a Policy for cfg. cfg should have passed Validate; an empty
// when_acls_off means "open" and an unknown one "owner-and-admins".
func New(cfg Config) *Policy {
	mode := cfg.WhenACLsOff
	switch mode {
	case "":
		mode = ModeOpen
	case ModeOpen, ModeOwnerAndAdmins:
	default:
		mode = ModeOwnerAndAdmins
	}
	return &Policy{
		admins:      cleanList(cfg.Admins),
		adminGroups: cleanList(cfg.AdminGroups),
		mode:        mode,
	}
}

// IsAdmin reports whether s is one of the gateway-wide admins
// (policy.admins, policy.admin_groups), who may view and modify every app.
func (p *Policy) IsAdmin(s Subject) bool {
	if s.User == "" {
		return false
	}
	if contains(p.admins, s.User) {
		return true
	}
	_, ok := firstShared(s.Groups, p.adminGroups)
	return ok
}

// Decide reports whether s may perform a on the app whose ACL is acl.
//
// In order: an empty user is denied (Spark's null-user pass does not apply
// behind the gateway); an unknown action is denied; Modify on a History Server app is denied (there is no
// SparkContext to kill anything with); gateway admins are allowed; with the
// app's ACLs off, the configured Mode decides; otherwise Spark's
// isUserInACL over the effective lists decides.
func (p *Policy) Decide(s Subject, acl ACL, a Action) Decision {
	n := names(acl, a)
	d := Decision{Grant: n.grant, Reasons: make([]string, 0, len(acl.Warnings)+3)}
	d.Reasons = append(d.Reasons, acl.Warnings...)

	if s.User == "" {
		d.Rule = RuleNoUser
		d.Reasons = append(d.Reasons, "The request carries no user name, so it is denied.")
		return d
	}
	if a < View || a > Admin {
		d.Rule, d.Grant = RuleUnknownAction, ""
		d.Reasons = append(d.Reasons, "Action "+strconv.Itoa(int(a))+" is unknown to the policy, so it is denied.")
		return d
	}
	if acl.History() && a == Modify {
		d.Rule, d.Grant = RuleHistoryNoModify, ""
		d.Reasons = append(d.Reasons, "The app is served by History Server "+quote(acl.HistoryName())+
			", which has no SparkContext: jobs and stages of a finished app cannot be killed, so no one may modify it.")
		return d
	}
	if contains(p.admins, s.User) {
		return allow(d, RuleGatewayAdmin, "User "+quote(s.User)+" is a gateway admin (policy.admins), and gateway admins may "+a.verb()+" every app.")
	}
	if g, ok := firstShared(s.Groups, p.adminGroups); ok {
		return allow(d, RuleGatewayAdminGroup, "User "+quote(s.User)+" is in group "+quote(g)+
			", a gateway admin group (policy.admin_groups), and gateway admins may "+a.verb()+" every app.")
	}
	if !acl.Enabled {
		return p.decideACLsOff(d, s, acl, a, n)
	}
	d.Reasons = append(d.Reasons, n.enabled+" is true"+n.where+", so Spark checks the app's ACLs.")
	d = decideACLsOn(d, s, acl, a, n)
	if !d.Allow && d.Rule == RuleDenied {
		d.Ask = p.ask(acl, n)
	}
	return d
}

// decideACLsOff applies the gateway's Mode to an app whose ACLs are off.
func (p *Policy) decideACLsOff(d Decision, s Subject, acl ACL, a Action, n listNames) Decision {
	off := n.enabled + " is false" + n.where
	if p.mode == ModeOpen {
		return allow(d, RuleACLsDisabledOpen, off+": Spark lets everyone in, and the gateway's policy.when_acls_off is \"open\".")
	}
	d.Grant = n.admins + " / " + n.adminGroups + ", or the gateway's policy.admins / policy.admin_groups"
	strict := off + ": Spark would let everyone in, but the gateway's policy.when_acls_off is \"owner-and-admins\""
	switch {
	case acl.Owner != "" && s.User == acl.Owner:
		return allow(d, RuleACLsDisabledOwner, strict+", and user "+quote(s.User)+" owns the app, so may "+a.verb()+" it.")
	case contains(acl.Admins, s.User):
		return allow(d, RuleACLsDisabledAdmin, strict+", and user "+quote(s.User)+" is listed in "+n.admins+".")
	case contains(acl.Admins, wildcard):
		return allow(d, RuleACLsDisabledAdmin, strict+", and "+n.admins+" contains \"*\".")
	case contains(acl.AdminGroups, wildcard):
		return allow(d, RuleACLsDisabledAdmin, strict+", and "+n.adminGroups+" contains \"*\".")
	}
	if g, ok := firstShared(s.Groups, acl.AdminGroups); ok {
		return allow(d, RuleACLsDisabledAdmin, strict+", and user "+quote(s.User)+" is in group "+quote(g)+", which is listed in "+n.adminGroups+".")
	}
	d.Rule = RuleACLsDisabledDenied
	d.Reasons = append(d.Reasons, strict+": user "+quote(s.User)+" is not the owner and is not listed in "+n.admins+" or policy.admins.",
		groupsSentence(s.Groups, n.adminGroups+" or policy.admin_groups"))
	d.Ask = p.ask(acl, n)
	return d
}

// decideACLsOn is Spark's isUserInACL over the effective lists for a, with
// the matching entry named. Only the allow/deny outcome must match Spark;
// the order of the checks below only picks the most specific explanation.
func decideACLsOn(d Decision, s Subject, acl ACL, a Action, n listNames) Decision {
	actUsers, actGroups := acl.ViewUsers, acl.ViewGroups
	userRule, groupRule := RuleViewACLUser, RuleViewACLGroup
	switch a {
	case Modify:
		actUsers, actGroups = acl.ModifyUsers, acl.ModifyGroups
		userRule, groupRule = RuleModifyACLUser, RuleModifyACLGroup
	case Admin:
		actUsers, actGroups = nil, nil
	}
	ownerCounts := a != Admin // checkAdminPermissions does not include the owner
	u := quote(s.User)
	switch {
	case ownerCounts && s.User == acl.Owner:
		return allow(d, RuleOwner, "User "+u+" owns the app (sparkUser), and Spark always lets the owner "+a.verb()+" it.")
	case contains(acl.Admins, s.User):
		return allow(d, RuleAdminUser, "User "+u+" is listed in "+n.admins+", and admins may "+a.verb()+" the app.")
	case contains(actUsers, s.User):
		return allow(d, userRule, "User "+u+" is listed in "+n.users+".")
	case ownerCounts && acl.Owner == wildcard:
		return allow(d, RuleWildcardUser, "The app's owner (sparkUser) is \"*\", which Spark reads as every user.")
	case contains(acl.Admins, wildcard):
		return allow(d, RuleWildcardUser, n.admins+" contains \"*\", so Spark lets every user "+a.verb()+" the app.")
	case contains(actUsers, wildcard):
		return allow(d, RuleWildcardUser, n.users+" contains \"*\", so Spark lets every user "+a.verb()+" the app.")
	case contains(acl.AdminGroups, wildcard):
		return allow(d, RuleWildcardGroup, n.adminGroups+" contains \"*\", so Spark lets every user "+a.verb()+" the app.")
	case contains(actGroups, wildcard):
		return allow(d, RuleWildcardGroup, n.groups+" contains \"*\", so Spark lets every user "+a.verb()+" the app.")
	}
	if g, ok := firstShared(s.Groups, acl.AdminGroups); ok {
		return allow(d, RuleAdminGroup, "User "+u+" is in group "+quote(g)+", which is listed in "+n.adminGroups+", and admins may "+a.verb()+" the app.")
	}
	if g, ok := firstShared(s.Groups, actGroups); ok {
		return allow(d, groupRule, "User "+u+" is in group "+quote(g)+", which is listed in "+n.groups+".")
	}
	d.Rule = RuleDenied
	users, groups := n.admins, n.adminGroups
	if a != Admin {
		users += " or " + n.users
		groups += " or " + n.groups
	}
	who := "User " + u + " is not the owner and is not listed in " + users + "."
	if a == Admin {
		who = "User " + u + " is not listed in " + users + "."
	}
	d.Reasons = append(d.Reasons, who, groupsSentence(s.Groups, groups))
	return d
}

// ask lists who can help a denied user, most likely first: the owner
// (who sets the app's lists), its admins, then the gateway's.
func (p *Policy) ask(acl ACL, n listNames) []string {
	var out []string
	if acl.Owner != "" && acl.Owner != wildcard {
		out = append(out, "the app's owner: "+acl.Owner)
	}
	people := func(what string, list []string) {
		var named []string
		for _, e := range list {
			if e != wildcard {
				named = append(named, e)
			}
		}
		if len(named) > 0 {
			out = append(out, what+": "+strings.Join(named, ", "))
		}
	}
	people("its admins ("+n.admins+")", acl.Admins)
	people("members of its admin groups ("+n.adminGroups+")", acl.AdminGroups)
	people("the gateway's admins (policy.admins)", p.admins)
	people("members of the gateway's admin groups (policy.admin_groups)", p.adminGroups)
	return out
}

func allow(d Decision, rule, reason string) Decision {
	d.Allow, d.Rule = true, rule
	d.Reasons = append(d.Reasons, reason)
	return d
}

// groupsSentence says that none of the groups is in the named lists.
func groupsSentence(groups []string, lists string) string {
	if len(groups) == 0 {
		return "The user has no groups to match against " + lists + "."
	}
	q := make([]string, len(groups))
	for i, g := range groups {
		q[i] = quote(g)
	}
	return "None of the user's groups (" + strings.Join(q, ", ") + ") is listed in " + lists + "."
}

// firstShared returns the first of have that is in want.
func firstShared(have, want []string) (string, bool) {
	for _, g := range have {
		if contains(want, g) {
			return g, true
		}
	}
	return "", false
}

// listNames are the config keys behind an ACL's lists, for reasons.
type listNames struct {
	enabled, where      string
	admins, adminGroups string
	users, groups       string // the action's own lists
	grant               string
}

func names(acl ACL, a Action) listNames {
	n := listNames{
		enabled:     PropACLsEnable,
		where:       " for this app",
		admins:      PropAdminACLs,
		adminGroups: PropAdminACLsGroups,
		users:       PropViewACLs,
		groups:      PropViewACLsGroups,
	}
	if a == Modify {
		n.users, n.groups = PropModifyACLs, PropModifyACLsGroups
	}
	if acl.History() {
		n.enabled = "spark.history.ui.acls.enable"
		n.where = " on History Server " + quote(acl.HistoryName())
		n.admins = "spark.history.ui.admin.acls or the app's spark.admin.acls"
		n.adminGroups = "spark.history.ui.admin.acls.groups or the app's spark.admin.acls.groups"
		n.users, n.groups = "the app's "+n.users, "the app's "+n.groups
	}
	switch a {
	case Admin:
		n.grant = n.admins + " / " + n.adminGroups
	case Modify:
		n.grant = PropModifyACLs + " / " + PropModifyACLsGroups
	default:
		n.grant = PropViewACLs + " / " + PropViewACLsGroups
		if acl.History() {
			n.grant += " in the app, or spark.history.ui.admin.acls / spark.history.ui.admin.acls.groups on the History Server"
		}
	}
	return n
}

func quote(s string) string { return strconv.Quote(s) }
