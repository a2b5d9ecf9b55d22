package policy

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// refCase is one set of inputs for the reference model.
type refCase struct {
	cfg     Config
	props   map[string]string
	owner   string
	hist    *HistoryRules
	subject Subject
	action  Action
}

// refAllowed is Spark's access rule written straight from the facts sheet
// (section 5) and the gateway design, sharing no code with the package, so
// that a misreading in one shows up as a disagreement with the other.
func refAllowed(c refCase) bool {
	trim := func(s string) string { return strings.TrimFunc(s, func(r rune) bool { return r <= ' ' }) }
	set := func(lists ...[]string) map[string]bool {
		m := map[string]bool{}
		for _, l := range lists {
			for _, x := range l {
				if x = trim(x); x != "" {
					m[x] = true
				}
			}
		}
		return m
	}
	prop := func(k string) []string { return strings.Split(c.props[k], ",") }
	user := c.subject.User

	// The gateway always knows the user; no user, no access.
	if user == "" {
		return false
	}
	// A finished app has no SparkContext: nothing can be killed.
	if c.hist != nil && c.action == Modify {
		return false
	}
	for _, a := range c.cfg.Admins {
		if a == user {
			return true
		}
	}
	for _, g := range c.subject.Groups {
		for _, a := range c.cfg.AdminGroups {
			if a == g {
				return true
			}
		}
	}

	var enabled bool
	var admins, adminGroups map[string]bool
	switch {
	case c.hist != nil:
		enabled = c.hist.Enabled
		admins = set(c.hist.Admins, prop("spark.admin.acls"))
		adminGroups = set(c.hist.AdminGroups, prop("spark.admin.acls.groups"))
	case c.props == nil:
		enabled = true // unreadable properties fail closed
		admins, adminGroups = set(), set()
	default:
		v, ok := c.props["spark.acls.enable"]
		switch strings.ToLower(trim(v)) {
		case "false":
			enabled = false
		default: // "true", or a value Spark would refuse: fail closed
			enabled = ok
		}
		admins = set(prop("spark.admin.acls"))
		adminGroups = set(prop("spark.admin.acls.groups"))
	}
	inGroups := func(groups map[string]bool) bool {
		for _, g := range c.subject.Groups {
			if groups[g] {
				return true
			}
		}
		return false
	}

	if !enabled {
		if c.cfg.WhenACLsOff != ModeOwnerAndAdmins {
			return true // Spark: ACLs off lets everyone in
		}
		return user == c.owner || admins[user] || admins["*"] || adminGroups["*"] || inGroups(adminGroups)
	}

	var users, groups map[string]bool
	switch c.action {
	case Admin:
		users, groups = admins, adminGroups
	case Modify:
		users = set(keys(admins), prop("spark.modify.acls"))
		groups = set(keys(adminGroups), prop("spark.modify.acls.groups"))
	default:
		users = set(keys(admins), prop("spark.ui.view.acls"))
		groups = set(keys(adminGroups), prop("spark.ui.view.acls.groups"))
	}
	// isUserInACL: users contain "*"; users contain the user; groups
	// contain "*"; one of the user's groups is in groups.
	// The owner joins the view and modify users as is: Spark does not trim
	// sparkUser, and an owner of "*" is then a wildcard like any other.
	if c.action != Admin && (user == c.owner || c.owner == "*") {
		return true
	}
	return users["*"] || users[user] || groups["*"] || inGroups(groups)
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// decideUnderTest runs the package on a refCase.
func decideUnderTest(c refCase) Decision {
	var acl ACL
	if c.hist != nil {
		acl = FromHistory(*c.hist, c.props, c.owner)
	} else {
		acl = FromSparkProperties(c.props, c.owner)
	}
	return New(c.cfg).Decide(c.subject, acl, c.action)
}

func checkAgainstReference(t *testing.T, c refCase) Decision {
	t.Helper()
	d := decideUnderTest(c)
	if want := refAllowed(c); d.Allow != want {
		t.Fatalf("Decide(%+v, %s) on props %q owner %q hist %+v cfg %+v = %v (rule %q, reasons %q); reference model says %v",
			c.subject, c.action, c.props, c.owner, c.hist, c.cfg, d.Allow, d.Rule, d.Reasons, want)
	}
	if d.Rule == "" || len(d.Reasons) == 0 {
		t.Fatalf("Decide(%+v, %s) = rule %q reasons %q; want a rule and reasons", c.subject, c.action, d.Rule, d.Reasons)
	}
	denyRules := map[string]bool{RuleNoUser: true, RuleUnknownAction: true, RuleHistoryNoModify: true, RuleACLsDisabledDenied: true, RuleDenied: true}
	if denyRules[d.Rule] == d.Allow {
		t.Fatalf("Decide(%+v, %s) = allow %v with rule %q; rule and outcome disagree", c.subject, c.action, d.Allow, d.Rule)
	}
	return d
}

// randomCase draws inputs from small alphabets so that names collide often.
func randomCase(r *rand.Rand) refCase {
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	users := []string{"alice", "bob", "carol", "*", "Alice", "root", ""}
	groups := []string{"ops", "dev", "sre", "*", "hops", ""}
	pad := func(s string) string { return pick("", " ", "\t", "  ") + s + pick("", " ", "\n") }
	list := func(alphabet []string) string {
		n := r.IntN(4)
		parts := make([]string, n)
		for i := range parts {
			parts[i] = pad(pick(alphabet...))
		}
		return strings.Join(parts, pick(",", ",,", " , "))
	}
	c := refCase{owner: pick("alice", "bob", "", "*", " alice")}
	if r.IntN(10) > 0 {
		c.props = map[string]string{}
		if e := pick("true", "false", " TRUE ", "False", "yes", "", "-"); e != "-" {
			c.props[PropACLsEnable] = e
		}
		for _, k := range []string{PropAdminACLs, PropViewACLs, PropModifyACLs} {
			if r.IntN(2) == 0 {
				c.props[k] = list(users)
			}
		}
		for _, k := range []string{PropAdminACLsGroups, PropViewACLsGroups, PropModifyACLsGroups} {
			if r.IntN(2) == 0 {
				c.props[k] = list(groups)
			}
		}
	}
	if r.IntN(3) == 0 {
		c.hist = &HistoryRules{Name: "hs", Enabled: r.IntN(2) == 0}
		if r.IntN(2) == 0 {
			c.hist.Admins = []string{pad(pick(users...))}
		}
		if r.IntN(2) == 0 {
			c.hist.AdminGroups = []string{pad(pick(groups...))}
		}
	}
	if r.IntN(4) == 0 {
		c.cfg.Admins = []string{"root"}
	}
	if r.IntN(4) == 0 {
		c.cfg.AdminGroups = []string{"sre"}
	}
	if r.IntN(2) == 0 {
		c.cfg.WhenACLsOff = ModeOwnerAndAdmins
	}
	c.subject.User = pick(users...)
	for range r.IntN(3) {
		c.subject.Groups = append(c.subject.Groups, pick(groups...))
	}
	c.action = Action(r.IntN(3))
	return c
}

// TestDecideMatchesReference compares Decide with the reference model, and
// the cached path with the uncached one, over many generated inputs.
func TestDecideMatchesReference(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	// One cache per config shape: each Cached keeps purge goroutines alive.
	type shape struct {
		mode          Mode
		admins, group bool
	}
	caches := map[shape]*Cached{}
	allowed := 0
	const n = 20000
	for i := range n {
		c := randomCase(r)
		d := checkAgainstReference(t, c)
		if d.Allow {
			allowed++
		}
		// A tiny cache evicts constantly; answers must not change.
		k := shape{c.cfg.WhenACLsOff, len(c.cfg.Admins) > 0, len(c.cfg.AdminGroups) > 0}
		cached, ok := caches[k]
		if !ok {
			cached = NewCached(New(c.cfg), 8, time.Hour)
			caches[k] = cached
		}
		var got Decision
		if c.hist != nil {
			got = cached.DecideHistory(c.subject, *c.hist, c.props, c.owner, c.action)
		} else {
			got = cached.DecideLive(c.subject, c.props, c.owner, c.action)
		}
		if diff := cmp.Diff(d, got); diff != "" {
			t.Fatalf("case %d: cached decision differs from Decide (-want +got):\n%s", i, diff)
		}
	}
	// Guard against a generator that only ever produces one outcome.
	if allowed < n/10 || allowed > n*9/10 {
		t.Errorf("generator produced %d allowed of %d; want a mix", allowed, n)
	}
}

// FuzzDecide compares Decide with the reference model on arbitrary lists.
// flags: bit 0 history, bit 1 history enabled, bit 2 owner-and-admins,
// bits 3-4 action, bit 5 nil props, bit 6 gateway admin "root", bit 7
// gateway admin group "sre".
func FuzzDecide(f *testing.F) {
	f.Add("bob", "ops,dev", "alice", "true", "", "", "bob", "", "", "", uint8(0))
	f.Add("bob", "", "alice", "true", "*", "", "", "", "", "", uint8(8))
	f.Add("eve", "ops", "alice", " TRUE", "", " ops ,", "", "", "", "", uint8(0))
	f.Add("root", "", "alice", "true", "", "", "", "", "", "", uint8(64))
	f.Add("eve", "sre", "alice", "false", "", "", "", "", "", "", uint8(4|128))
	f.Add("bob", "", "alice", "false", "bob", "", "", "", "bob", "", uint8(1|2|8))
	f.Add("", "", "", "", "", "", "", "", "", "", uint8(32))
	f.Add("carol", "dev", "alice", "yes", "", "", "", "*", "carol", "dev", uint8(8))
	f.Fuzz(func(t *testing.T, user, groups, owner, enable, admins, adminGroups, view, viewGroups, modify, modifyGroups string, flags uint8) {
		c := refCase{owner: owner, subject: Subject{User: user}, action: Action(flags >> 3 & 3 % 3)}
		if groups != "" {
			c.subject.Groups = strings.Split(groups, ",")
		}
		if flags&32 == 0 {
			c.props = map[string]string{
				PropACLsEnable: enable, PropAdminACLs: admins, PropAdminACLsGroups: adminGroups,
				PropViewACLs: view, PropViewACLsGroups: viewGroups, PropModifyACLs: modify, PropModifyACLsGroups: modifyGroups,
			}
		}
		if flags&1 != 0 {
			c.hist = &HistoryRules{Name: "hs", Enabled: flags&2 != 0, Admins: []string{" hadm "}, AdminGroups: []string{"hops"}}
		}
		if flags&4 != 0 {
			c.cfg.WhenACLsOff = ModeOwnerAndAdmins
		}
		if flags&64 != 0 {
			c.cfg.Admins = []string{"root"}
		}
		if flags&128 != 0 {
			c.cfg.AdminGroups = []string{"sre"}
		}
		checkAgainstReference(t, c)
	})
}
