package policy

import "strings"

// Spark property names read from an application's configuration.
const (
	PropACLsEnable       = "spark.acls.enable"
	PropAdminACLs        = "spark.admin.acls"
	PropAdminACLsGroups  = "spark.admin.acls.groups"
	PropViewACLs         = "spark.ui.view.acls"
	PropViewACLsGroups   = "spark.ui.view.acls.groups"
	PropModifyACLs       = "spark.modify.acls"
	PropModifyACLsGroups = "spark.modify.acls.groups"
	// propLegacyACLsEnable was read as a fallback up to Spark 2.4; Spark 3.0
	// and later ignore it, so it only earns a warning.
	propLegacyACLsEnable = "spark.ui.acls.enable"
)

// aclProps lists every property that takes part in a decision, in a fixed
// order: the cache hashes exactly these, so unrelated properties do not split it.
var aclProps = [...]string{
	PropACLsEnable, PropAdminACLs, PropAdminACLsGroups, PropViewACLs,
	PropViewACLsGroups, PropModifyACLs, PropModifyACLsGroups, propLegacyACLsEnable,
}

// SourceDriver is ACL.Source for a live driver.
const SourceDriver = "driver"

// historySourcePrefix starts ACL.Source for an app served by a History Server.
const historySourcePrefix = "history:"

// ACL is one app's access lists, built the way Spark's SecurityManager builds
// them. The lists hold the configured entries (split on ',', trimmed, empty
// entries dropped, duplicates removed); the effective lists Spark checks add
// Admins and Owner to the users and AdminGroups to the groups (see Users and
// Groups). An ACL is a value: callers must not modify its slices.
type ACL struct {
	// Enabled is spark.acls.enable for a live driver, or the History
	// Server's spark.history.ui.acls.enable for a finished app.
	Enabled bool
	// Owner is the app's sparkUser. Spark compares it exactly, untrimmed.
	Owner string
	// Admins is spark.admin.acls; for a History Server app it also holds
	// spark.history.ui.admin.acls.
	Admins []string
	// AdminGroups is spark.admin.acls.groups; for a History Server app it
	// also holds spark.history.ui.admin.acls.groups.
	AdminGroups []string
	// ViewUsers is spark.ui.view.acls as configured.
	ViewUsers []string
	// ViewGroups is spark.ui.view.acls.groups as configured.
	ViewGroups []string
	// ModifyUsers is spark.modify.acls as configured; empty for a History
	// Server app, where nothing can be modified.
	ModifyUsers []string
	// ModifyGroups is spark.modify.acls.groups as configured.
	ModifyGroups []string
	// Source is "driver" for a live driver or "history:<name>" for an app
	// served by the named History Server.
	Source string
	// Warnings note oddities found while building the ACL (an unparsable
	// spark.acls.enable, unreadable properties); decisions repeat them as
	// reasons.
	Warnings []string
}

// History reports whether the ACL is a History Server's view of a finished app.
func (a ACL) History() bool { return strings.HasPrefix(a.Source, historySourcePrefix) }

// HistoryName returns the History Server's name, or "" for a live driver.
func (a ACL) HistoryName() string {
	name, _ := strings.CutPrefix(a.Source, historySourcePrefix)
	if !a.History() {
		return ""
	}
	return name
}

// Users returns the effective user list Spark checks for the action:
// admins ∪ {owner} ∪ view (or modify) acls; Admin uses the admins alone.
func (a ACL) Users(act Action) []string {
	switch act {
	case Admin:
		return a.Admins
	case Modify:
		return union(a.Admins, []string{a.Owner}, a.ModifyUsers)
	default:
		return union(a.Admins, []string{a.Owner}, a.ViewUsers)
	}
}

// Groups returns the effective group list Spark checks for the action:
// admin groups ∪ view (or modify) groups; Admin uses the admin groups alone.
func (a ACL) Groups(act Action) []string {
	switch act {
	case Admin:
		return a.AdminGroups
	case Modify:
		return union(a.AdminGroups, a.ModifyGroups)
	default:
		return union(a.AdminGroups, a.ViewGroups)
	}
}

// FromSparkProperties builds a live driver's ACL from its Spark properties
// (as the environment REST API lists them) and its owner (sparkUser).
//
// A nil props means the properties could not be read. Spark's defaults would
// turn ACLs off and let everyone in, so the ACL fails closed instead: ACLs
// on, and only the owner (and gateway admins) get in. An empty, non-nil map
// means Spark's defaults.
func FromSparkProperties(props map[string]string, owner string) ACL {
	acl := ACL{
		Owner:        owner,
		Source:       SourceDriver,
		Admins:       splitList(props[PropAdminACLs]),
		AdminGroups:  splitList(props[PropAdminACLsGroups]),
		ViewUsers:    splitList(props[PropViewACLs]),
		ViewGroups:   splitList(props[PropViewACLsGroups]),
		ModifyUsers:  splitList(props[PropModifyACLs]),
		ModifyGroups: splitList(props[PropModifyACLsGroups]),
	}
	if props == nil {
		acl.Enabled = true
		acl.Warnings = append(acl.Warnings,
			"The app's Spark properties could not be read, so its ACLs are treated as enabled with no extra users: only the owner and admins get in.")
		return acl
	}
	acl.Enabled = true
	raw, set := props[PropACLsEnable]
	switch on, ok := ParseSparkBool(raw); {
	case !set:
		acl.Enabled = false // Spark's default
	case ok:
		acl.Enabled = on
	default:
		acl.Warnings = append(acl.Warnings,
			"spark.acls.enable has the value "+quote(raw)+", which Spark refuses to start with; it is treated as true.")
	}
	if legacy, ok := ParseSparkBool(props[propLegacyACLsEnable]); ok && legacy && !acl.Enabled {
		acl.Warnings = append(acl.Warnings,
			"spark.ui.acls.enable is true, but Spark 3.0 and later ignore it; only spark.acls.enable turns ACLs on.")
	}
	return acl
}

// HistoryRules are one History Server's ACL settings.
type HistoryRules struct {
	// Name is the history source's name in the gateway configuration.
	Name string
	// Enabled is spark.history.ui.acls.enable (Spark's default: false).
	Enabled bool
	// Admins is spark.history.ui.admin.acls.
	Admins []string
	// AdminGroups is spark.history.ui.admin.acls.groups.
	AdminGroups []string
}

// FromHistory builds the ACL a History Server applies to a finished app, as
// FsHistoryProvider.createSecurityManager does: ACLs are on only when the
// History Server's own spark.history.ui.acls.enable is (the app's
// spark.acls.enable is ignored); admins are the History Server's admins plus
// the app's spark.admin.acls; view users add the owner and the app's
// spark.ui.view.acls; groups likewise; the app's modify acls are not used.
// props are the "Spark Properties" of the app's first environment update in
// its event log; owner is its sparkUser.
func FromHistory(rules HistoryRules, props map[string]string, owner string) ACL {
	return ACL{
		Enabled:     rules.Enabled,
		Owner:       owner,
		Source:      historySourcePrefix + rules.Name,
		Admins:      dedupe(append(cleanList(rules.Admins), splitList(props[PropAdminACLs])...)),
		AdminGroups: dedupe(append(cleanList(rules.AdminGroups), splitList(props[PropAdminACLsGroups])...)),
		ViewUsers:   splitList(props[PropViewACLs]),
		ViewGroups:  splitList(props[PropViewACLsGroups]),
	}
}

// splitList parses a Spark list property the way Spark's stringToSeq does:
// split on ',', trim each entry as Java's String.trim does, drop empty
// entries. Duplicates are removed (Spark keeps a Set), first one first.
func splitList(s string) []string {
	if javaTrim(s) == "" {
		return nil
	}
	parts := strings.Split(s, ",")
	out := parts[:0]
	for _, p := range parts {
		if p = javaTrim(p); p != "" {
			out = append(out, p)
		}
	}
	return dedupe(out)
}

// cleanList trims and drops empty entries of an already split list, such as
// History Server rules from the gateway configuration.
func cleanList(in []string) []string {
	out := make([]string, 0, len(in))
	for _, p := range in {
		if p = javaTrim(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// javaTrim removes leading and trailing characters at or below U+0020, as
// Java's String.trim does. strings.TrimSpace would also remove Unicode
// spaces such as U+00A0, which Spark keeps.
func javaTrim(s string) string {
	i, j := 0, len(s)
	for i < j && s[i] <= ' ' {
		i++
	}
	for j > i && s[j-1] <= ' ' {
		j--
	}
	return s[i:j]
}

// ParseSparkBool parses a boolean property as Spark's ConfigBuilder does
// (Java's trim, then "true" or "false" in any case). ok is false for
// anything else, which Spark rejects at start-up.
func ParseSparkBool(s string) (v, ok bool) {
	switch t := javaTrim(s); {
	case strings.EqualFold(t, "true"):
		return true, true
	case strings.EqualFold(t, "false"):
		return false, true
	}
	return false, false
}

// dedupe removes repeated entries in place, keeping the first of each.
func dedupe(in []string) []string {
	if len(in) < 2 {
		return in
	}
	out := in[:0]
	for _, s := range in {
		if !contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// union concatenates lists into a new slice without repeats.
func union(lists ...[]string) []string {
	n := 0
	for _, l := range lists {
		n += len(l)
	}
	out := make([]string, 0, n)
	for _, l := range lists {
		for _, s := range l {
			if !contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
