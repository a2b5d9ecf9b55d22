package policy

import (
	"slices"
	"strings"
	"testing"
)

// on returns live-driver properties with ACLs enabled plus kv pairs.
func on(kv ...string) map[string]string {
	return props(append([]string{PropACLsEnable, "true"}, kv...)...)
}

func props(kv ...string) map[string]string {
	m := make(map[string]string, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func user(name string, groups ...string) Subject { return Subject{User: name, Groups: groups} }

// TestDecideSparkSemantics checks Decide against Spark 3.5/4.0
// SecurityManager and FsHistoryProvider behaviour, one rule per case.
func TestDecideSparkSemantics(t *testing.T) {
	t.Parallel()
	open := Config{}
	strict := Config{WhenACLsOff: ModeOwnerAndAdmins}
	gw := Config{Admins: []string{"root"}, AdminGroups: []string{"sre"}}
	gwStrict := Config{Admins: []string{"root"}, AdminGroups: []string{"sre"}, WhenACLsOff: ModeOwnerAndAdmins}
	h := func(enabled bool, admins, groups []string) *HistoryRules {
		return &HistoryRules{Name: "hs1", Enabled: enabled, Admins: admins, AdminGroups: groups}
	}

	tests := []struct {
		name    string
		cfg     Config
		props   map[string]string
		owner   string
		hist    *HistoryRules // nil: live driver
		subject Subject
		action  Action
		allow   bool
		rule    string
	}{
		// ACLs off (Spark's default) and the two gateway modes.
		{"acls unset, open: stranger views", open, props(), "alice", nil, user("eve"), View, true, RuleACLsDisabledOpen},
		{"acls false, open: stranger modifies", open, props(PropACLsEnable, "false"), "alice", nil, user("eve"), Modify, true, RuleACLsDisabledOpen},
		{"acls FALSE with spaces parses as false", open, props(PropACLsEnable, " FALSE "), "alice", nil, user("eve"), View, true, RuleACLsDisabledOpen},
		{"acls off, strict: stranger denied", strict, props(), "alice", nil, user("eve"), View, false, RuleACLsDisabledDenied},
		{"acls off, strict: owner views", strict, props(), "alice", nil, user("alice"), View, true, RuleACLsDisabledOwner},
		{"acls off, strict: owner modifies", strict, props(), "alice", nil, user("alice"), Modify, true, RuleACLsDisabledOwner},
		{"acls off, strict: app admin", strict, props(PropAdminACLs, "bob"), "alice", nil, user("bob"), View, true, RuleACLsDisabledAdmin},
		{"acls off, strict: app admin group", strict, props(PropAdminACLsGroups, "ops"), "alice", nil, user("bob", "ops"), Modify, true, RuleACLsDisabledAdmin},
		{"acls off, strict: view acl user is not enough", strict, props(PropViewACLs, "bob"), "alice", nil, user("bob"), View, false, RuleACLsDisabledDenied},
		{"acls off, strict: gateway admin", gwStrict, props(), "alice", nil, user("root"), View, true, RuleGatewayAdmin},
		{"acls off, strict: gateway admin group", gwStrict, props(), "alice", nil, user("x", "sre"), View, true, RuleGatewayAdminGroup},

		// ACLs on: owner, admins, view and modify lists.
		{"owner views", open, on(), "alice", nil, user("alice"), View, true, RuleOwner},
		{"owner modifies", open, on(), "alice", nil, user("alice"), Modify, true, RuleOwner},
		{"stranger denied view", open, on(), "alice", nil, user("eve"), View, false, RuleDenied},
		{"stranger denied modify", open, on(), "alice", nil, user("eve"), Modify, false, RuleDenied},
		{"owner case differs", open, on(), "alice", nil, user("Alice"), View, false, RuleDenied},
		{"user name compared untrimmed", open, on(PropViewACLs, "bob"), "alice", nil, user(" bob"), View, false, RuleDenied},
		{"view acl user", open, on(PropViewACLs, "bob,carol"), "alice", nil, user("carol"), View, true, RuleViewACLUser},
		{"view acl user cannot modify", open, on(PropViewACLs, "bob"), "alice", nil, user("bob"), Modify, false, RuleDenied},
		{"modify acl user modifies", open, on(PropModifyACLs, "bob"), "alice", nil, user("bob"), Modify, true, RuleModifyACLUser},
		{"modify acl user cannot view", open, on(PropModifyACLs, "bob"), "alice", nil, user("bob"), View, false, RuleDenied},
		{"admin views", open, on(PropAdminACLs, "bob"), "alice", nil, user("bob"), View, true, RuleAdminUser},
		{"admin modifies", open, on(PropAdminACLs, "bob"), "alice", nil, user("bob"), Modify, true, RuleAdminUser},
		{"admin is admin", open, on(PropAdminACLs, "bob"), "alice", nil, user("bob"), Admin, true, RuleAdminUser},
		{"owner is not admin", open, on(), "alice", nil, user("alice"), Admin, false, RuleDenied},
		{"view acl user is not admin", open, on(PropViewACLs, "bob"), "alice", nil, user("bob"), Admin, false, RuleDenied},
		{"admin group views", open, on(PropAdminACLsGroups, "ops"), "alice", nil, user("bob", "dev", "ops"), View, true, RuleAdminGroup},
		{"admin group modifies", open, on(PropAdminACLsGroups, "ops"), "alice", nil, user("bob", "ops"), Modify, true, RuleAdminGroup},
		{"view group", open, on(PropViewACLsGroups, "dev"), "alice", nil, user("bob", "dev"), View, true, RuleViewACLGroup},
		{"view group cannot modify", open, on(PropViewACLsGroups, "dev"), "alice", nil, user("bob", "dev"), Modify, false, RuleDenied},
		{"modify group modifies", open, on(PropModifyACLsGroups, "dev"), "alice", nil, user("bob", "dev"), Modify, true, RuleModifyACLGroup},
		{"modify group cannot view", open, on(PropModifyACLsGroups, "dev"), "alice", nil, user("bob", "dev"), View, false, RuleDenied},
		{"groups only, no match", open, on(PropViewACLsGroups, "dev"), "alice", nil, user("bob", "ops"), View, false, RuleDenied},
		{"user name is not a group", open, on(PropViewACLsGroups, "bob"), "alice", nil, user("bob"), View, false, RuleDenied},
		{"group name is not a user", open, on(PropViewACLs, "dev"), "alice", nil, user("bob", "dev"), View, false, RuleDenied},

		// Wildcards.
		{"* in view users", open, on(PropViewACLs, "*"), "alice", nil, user("eve"), View, true, RuleWildcardUser},
		{"* in view users does not give modify", open, on(PropViewACLs, "*"), "alice", nil, user("eve"), Modify, false, RuleDenied},
		{"* in modify users", open, on(PropModifyACLs, "bob, *"), "alice", nil, user("eve"), Modify, true, RuleWildcardUser},
		{"* in admins gives view", open, on(PropAdminACLs, "*"), "alice", nil, user("eve"), View, true, RuleWildcardUser},
		{"* in admins gives modify", open, on(PropAdminACLs, "*"), "alice", nil, user("eve"), Modify, true, RuleWildcardUser},
		{"* in view groups, user without groups", open, on(PropViewACLsGroups, "*"), "alice", nil, user("eve"), View, true, RuleWildcardGroup},
		{"* in admin groups gives modify", open, on(PropAdminACLsGroups, "*"), "alice", nil, user("eve"), Modify, true, RuleWildcardGroup},
		{"* inside a name is literal", open, on(PropViewACLs, "b*"), "alice", nil, user("bob"), View, false, RuleDenied},
		{"owner * is every user", open, on(), "*", nil, user("eve"), View, true, RuleWildcardUser},

		// List parsing: whitespace, empty entries, empty strings.
		{"whitespace around entries", open, on(PropViewACLs, "  bob ,\tcarol\n"), "alice", nil, user("carol"), View, true, RuleViewACLUser},
		{"whitespace around groups", open, on(PropViewACLsGroups, " dev , ops "), "alice", nil, user("x", "ops"), View, true, RuleViewACLGroup},
		{"empty entries dropped", open, on(PropViewACLs, ",,bob,,"), "alice", nil, user("bob"), View, true, RuleViewACLUser},
		{"empty view acls", open, on(PropViewACLs, ""), "alice", nil, user("bob"), View, false, RuleDenied},
		{"non-breaking space is not trimmed", open, on(PropViewACLs, "\u00a0bob"), "alice", nil, user("bob"), View, false, RuleDenied},
		{"acls TRUE parses as true", open, props(PropACLsEnable, "TRUE"), "alice", nil, user("eve"), View, false, RuleDenied},
		{"unparsable enable fails closed", open, props(PropACLsEnable, "yes"), "alice", nil, user("eve"), View, false, RuleDenied},
		{"legacy spark.ui.acls.enable ignored", open, props("spark.ui.acls.enable", "true"), "alice", nil, user("eve"), View, true, RuleACLsDisabledOpen},
		{"unreadable props fail closed", open, nil, "alice", nil, user("eve"), View, false, RuleDenied},
		{"unreadable props: owner still views", open, nil, "alice", nil, user("alice"), View, true, RuleOwner},

		// The user name must be present.
		{"empty user denied, acls off", open, props(), "alice", nil, user(""), View, false, RuleNoUser},
		{"empty user denied even with owner empty", open, on(), "", nil, user(""), View, false, RuleNoUser},
		{"empty user denied with * everywhere", gw, on(PropViewACLs, "*", PropViewACLsGroups, "*"), "alice", nil, user("", "sre"), View, false, RuleNoUser},
		{"unknown action denied", open, props(), "alice", nil, user("alice"), Action(9), false, RuleUnknownAction},
		{"empty owner grants no one", open, on(), "", nil, user("eve"), View, false, RuleDenied},

		// Gateway admins override the app's ACLs.
		{"gateway admin views", gw, on(), "alice", nil, user("root"), View, true, RuleGatewayAdmin},
		{"gateway admin modifies", gw, on(), "alice", nil, user("root"), Modify, true, RuleGatewayAdmin},
		{"gateway admin group", gw, on(), "alice", nil, user("x", "dev", "sre"), Modify, true, RuleGatewayAdminGroup},
		{"gateway admins are exact", gw, on(), "alice", nil, user("ROOT"), View, false, RuleDenied},

		// History Server: its own switch, merged admins, no modify.
		{"history off, app acls on: open", open, on(), "alice", h(false, nil, nil), user("eve"), View, true, RuleACLsDisabledOpen},
		{"history on, app acls off: checked", open, props(PropACLsEnable, "false"), "alice", h(true, nil, nil), user("eve"), View, false, RuleDenied},
		{"history on: owner views", open, props(), "alice", h(true, nil, nil), user("alice"), View, true, RuleOwner},
		{"history on: history admin views", open, props(), "alice", h(true, []string{" hadm "}, nil), user("hadm"), View, true, RuleAdminUser},
		{"history on: history admin group views", open, props(), "alice", h(true, nil, []string{"hops"}), user("x", "hops"), View, true, RuleAdminGroup},
		{"history on: app admin merged", open, props(PropAdminACLs, "bob"), "alice", h(true, []string{"hadm"}, nil), user("bob"), View, true, RuleAdminUser},
		{"history on: app admin group merged", open, props(PropAdminACLsGroups, "ops"), "alice", h(true, nil, []string{"hops"}), user("x", "ops"), View, true, RuleAdminGroup},
		{"history on: app view acl", open, props(PropViewACLs, "bob"), "alice", h(true, nil, nil), user("bob"), View, true, RuleViewACLUser},
		{"history on: app view group", open, props(PropViewACLsGroups, "dev"), "alice", h(true, nil, nil), user("x", "dev"), View, true, RuleViewACLGroup},
		{"history on: app modify acl ignored for view", open, props(PropModifyACLs, "bob"), "alice", h(true, nil, nil), user("bob"), View, false, RuleDenied},
		{"history on: app modify group ignored", open, props(PropModifyACLsGroups, "dev"), "alice", h(true, nil, nil), user("x", "dev"), View, false, RuleDenied},
		{"history: owner cannot modify", open, props(), "alice", h(true, nil, nil), user("alice"), Modify, false, RuleHistoryNoModify},
		{"history off: modify still denied", open, props(), "alice", h(false, nil, nil), user("eve"), Modify, false, RuleHistoryNoModify},
		{"history: gateway admin cannot modify", gw, props(), "alice", h(true, nil, nil), user("root"), Modify, false, RuleHistoryNoModify},
		{"history: app modify acl cannot modify", open, props(PropModifyACLs, "bob"), "alice", h(true, nil, nil), user("bob"), Modify, false, RuleHistoryNoModify},
		{"history on: gateway admin views", gw, props(), "alice", h(true, nil, nil), user("root"), View, true, RuleGatewayAdmin},
		{"history off, strict: stranger denied", strict, props(), "alice", h(false, nil, nil), user("eve"), View, false, RuleACLsDisabledDenied},
		{"history off, strict: history admin views", strict, props(), "alice", h(false, []string{"hadm"}, nil), user("hadm"), View, true, RuleACLsDisabledAdmin},
		{"history nil props: rules still apply", open, nil, "alice", h(true, []string{"hadm"}, nil), user("hadm"), View, true, RuleAdminUser},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var acl ACL
			if tt.hist != nil {
				acl = FromHistory(*tt.hist, tt.props, tt.owner)
			} else {
				acl = FromSparkProperties(tt.props, tt.owner)
			}
			d := New(tt.cfg).Decide(tt.subject, acl, tt.action)
			if d.Allow != tt.allow || d.Rule != tt.rule {
				t.Errorf("Decide(%+v, %s) = allow %v rule %q; want allow %v rule %q\nreasons: %q",
					tt.subject, tt.action, d.Allow, d.Rule, tt.allow, tt.rule, d.Reasons)
			}
			if len(d.Reasons) == 0 {
				t.Errorf("Decide(%+v, %s) has no reasons", tt.subject, tt.action)
			}
			for _, r := range d.Reasons {
				if r == "" || !strings.HasSuffix(r, ".") {
					t.Errorf("Decide(%+v, %s) reason %q is not a sentence", tt.subject, tt.action, r)
				}
			}
		})
	}
}

// TestDecideReasons checks that reasons name the lists checked and the user
// and groups judged, and do not reveal who else is on the lists.
func TestDecideReasons(t *testing.T) {
	t.Parallel()
	p := New(Config{})
	tests := []struct {
		name      string
		acl       ACL
		subject   Subject
		action    Action
		want      []string // substrings that must appear in the joined reasons
		notWant   []string
		wantGrant string
	}{
		{
			name:      "denied view names lists, user and groups",
			acl:       FromSparkProperties(on(PropViewACLs, "secretbob", PropAdminACLs, "secretadm"), "alice"),
			subject:   user("eve", "g1", "g2"),
			action:    View,
			want:      []string{"spark.acls.enable is true", `"eve"`, "spark.admin.acls or spark.ui.view.acls", `"g1", "g2"`, "spark.admin.acls.groups or spark.ui.view.acls.groups"},
			notWant:   []string{"secretbob", "secretadm", "alice"},
			wantGrant: "spark.ui.view.acls / spark.ui.view.acls.groups",
		},
		{
			name:      "denied modify names modify lists",
			acl:       FromSparkProperties(on(PropViewACLs, "eve"), "alice"),
			subject:   user("eve"),
			action:    Modify,
			want:      []string{"spark.modify.acls", "has no groups", "spark.modify.acls.groups"},
			wantGrant: "spark.modify.acls / spark.modify.acls.groups",
		},
		{
			name:    "acls off open says Spark lets everyone in",
			acl:     FromSparkProperties(props(), "alice"),
			subject: user("eve"),
			action:  View,
			want:    []string{"spark.acls.enable is false", "Spark lets everyone in"},
		},
		{
			name:    "group allow names the group",
			acl:     FromSparkProperties(on(PropViewACLsGroups, "dev"), "alice"),
			subject: user("eve", "x", "dev"),
			action:  View,
			want:    []string{`group "dev"`, "spark.ui.view.acls.groups"},
		},
		{
			name:    "history modify says why",
			acl:     FromHistory(HistoryRules{Name: "hs1", Enabled: true}, props(), "alice"),
			subject: user("alice"),
			action:  Modify,
			want:    []string{`History Server "hs1"`, "no SparkContext", "cannot be killed"},
		},
		{
			name:      "history denial names history lists",
			acl:       FromHistory(HistoryRules{Name: "hs1", Enabled: true}, props(), "alice"),
			subject:   user("eve"),
			action:    View,
			want:      []string{`spark.history.ui.acls.enable is true on History Server "hs1"`, "spark.history.ui.admin.acls", "the app's spark.ui.view.acls"},
			wantGrant: "spark.ui.view.acls / spark.ui.view.acls.groups in the app, or spark.history.ui.admin.acls / spark.history.ui.admin.acls.groups on the History Server",
		},
		{
			name:    "unparsable enable is explained",
			acl:     FromSparkProperties(props(PropACLsEnable, "yes"), "alice"),
			subject: user("eve"),
			action:  View,
			want:    []string{`"yes"`, "treated as true"},
		},
		{
			name:    "unreadable properties are explained",
			acl:     FromSparkProperties(nil, "alice"),
			subject: user("eve"),
			action:  View,
			want:    []string{"could not be read"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := p.Decide(tt.subject, tt.acl, tt.action)
			all := strings.Join(d.Reasons, " ")
			for _, w := range tt.want {
				if !strings.Contains(all, w) {
					t.Errorf("Decide(%+v).Reasons = %q; want it to mention %q", tt.subject, d.Reasons, w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(all, w) {
					t.Errorf("Decide(%+v).Reasons = %q; must not mention %q", tt.subject, d.Reasons, w)
				}
			}
			if tt.wantGrant != "" && d.Grant != tt.wantGrant {
				t.Errorf("Decide(%+v).Grant = %q; want %q", tt.subject, d.Grant, tt.wantGrant)
			}
		})
	}
}

func TestActionString(t *testing.T) {
	t.Parallel()
	for a, want := range map[Action]string{View: "view", Modify: "modify", Admin: "admin"} {
		if got := a.String(); got != want {
			t.Errorf("Action(%d).String() = %q; want %q", int(a), got, want)
		}
	}
}

// TestDecideMatchesObservedSpark replays answers recorded from real Spark
// 3.5.9 and 4.0.5 drivers (both gave the same), run as user "root" with the
// properties below; each user was tried with
// GET /api/v1/applications/<id>/environment?doAs=<user>, where 200 means
// the view check passed and 403 that it failed.
func TestDecideMatchesObservedSpark(t *testing.T) {
	t.Parallel()
	acl := FromSparkProperties(map[string]string{
		PropACLsEnable:     " TRUE ",
		PropViewACLs:       " bob , ,carol,b*",
		PropModifyACLs:     "dave",
		PropAdminACLs:      "adm",
		PropViewACLsGroups: "nogroup",
	}, "root")
	observed := map[string]bool{
		"bob": true, "carol": true, "Bob": false, "bxx": false, "dave": false,
		"adm": true, "eve": false, "root": true, "b*": true, "*": false,
	}
	p := New(Config{})
	for u, want := range observed {
		if d := p.Decide(Subject{User: u}, acl, View); d.Allow != want {
			t.Errorf("Decide(%q, view) = %v (%q); real Spark said %v", u, d.Allow, d.Reasons, want)
		}
	}
}

// TestDecideAsk checks who a denied user is told to ask: the owner and the
// admins the ACLs name, then the gateway's, and no one on an
// allow or where no list could help.
func TestDecideAsk(t *testing.T) {
	t.Parallel()
	p := New(Config{Admins: []string{"ops"}, AdminGroups: []string{"platform"}})
	owner := New(Config{WhenACLsOff: ModeOwnerAndAdmins})
	tests := []struct {
		name    string
		p       *Policy
		acl     ACL
		subject Subject
		action  Action
		want    []string
	}{
		{
			name:    "denied view",
			p:       p,
			acl:     FromSparkProperties(on(PropViewACLs, "bob", PropAdminACLs, "adm1", PropAdminACLsGroups, "spark-admins"), "alice"),
			subject: user("eve"),
			action:  View,
			want: []string{"the app's owner: alice", "its admins (spark.admin.acls): adm1",
				"members of its admin groups (spark.admin.acls.groups): spark-admins",
				"the gateway's admins (policy.admins): ops", "members of the gateway's admin groups (policy.admin_groups): platform"},
		},
		{
			name:    "denied modify",
			p:       New(Config{}),
			acl:     FromSparkProperties(on(PropViewACLs, "eve"), "alice"),
			subject: user("eve"),
			action:  Modify,
			want:    []string{"the app's owner: alice"},
		},
		{
			name:    "history adds the History Server's admins",
			p:       New(Config{}),
			acl:     FromHistory(HistoryRules{Name: "hs1", Enabled: true, Admins: []string{"hsadm"}}, on(PropViewACLs, "dave"), "alice"),
			subject: user("eve"),
			action:  View,
			want:    []string{"the app's owner: alice", "its admins (spark.history.ui.admin.acls or the app's spark.admin.acls): hsadm"},
		},
		{
			name:    "acls off, owner and admins",
			p:       owner,
			acl:     FromSparkProperties(props(PropAdminACLs, "adm1"), "alice"),
			subject: user("eve"),
			action:  View,
			want:    []string{"the app's owner: alice", "its admins (spark.admin.acls): adm1"},
		},
		{
			name:    "allowed",
			p:       p,
			acl:     FromSparkProperties(on(PropViewACLs, "eve"), "alice"),
			subject: user("eve"),
			action:  View,
		},
		{
			name:    "history modify: no one can help",
			p:       p,
			acl:     FromHistory(HistoryRules{Name: "hs1", Enabled: true}, props(), "alice"),
			subject: user("alice"),
			action:  Modify,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := tt.p.Decide(tt.subject, tt.acl, tt.action)
			if !slices.Equal(d.Ask, tt.want) {
				t.Errorf("Decide(%+v, %s).Ask = %q; want %q", tt.subject, tt.action, d.Ask, tt.want)
			}
		})
	}
}
