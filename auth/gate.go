package auth

import (
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"

	"go.uber.org/zap"
)

// maxContactLen bounds auth.access_contact, which every refused user sees.
const maxContactLen = 300

// gate is the sign-in gate: which of the people the provider knows may use
// the gateway at all. It is judged on every Authenticate, so sessions
// signed in before a narrower configuration are refused once it applies.
type gate struct {
	groups, users, domains map[string]bool // domains lower-case
	// The lists as configured, for the refusal page.
	groupList, userList, domainList []string
	contact                         string
}

func newGate(c Config) *gate {
	set := func(list []string, lower bool) map[string]bool {
		m := make(map[string]bool, len(list))
		for _, v := range list {
			if lower {
				v = strings.ToLower(v)
			}
			m[v] = true
		}
		return m
	}
	return &gate{
		groups:     set(c.AllowedGroups, false),
		users:      set(c.AllowedUsers, false),
		domains:    set(c.AllowedEmailDomains, true),
		groupList:  c.AllowedGroups,
		userList:   c.AllowedUsers,
		domainList: lowerAll(c.AllowedEmailDomains),
		contact:    strings.TrimSpace(c.AccessContact),
	}
}

// admits reports whether id passes the gate, and otherwise why (for the
// log). An allowed email domain is required on top of the user and group
// lists; between those two, either suffices.
func (g *gate) admits(id Identity) (bool, string) {
	if len(g.domains) > 0 && !g.domains[id.EmailDomain] {
		if id.EmailDomain == "" {
			return false, "no verified email, and auth.allowed_email_domains is set"
		}
		return false, "email domain not in auth.allowed_email_domains"
	}
	if len(g.groups) == 0 && len(g.users) == 0 || g.users[id.User] {
		return true, ""
	}
	for _, gr := range id.Groups {
		if g.groups[gr] {
			return true, ""
		}
	}
	return false, "neither in auth.allowed_users nor in a group of auth.allowed_groups"
}

// rule says in one sentence whom the gate admits.
func (g *gate) rule() string {
	var who []string
	if len(g.groupList) > 0 {
		who = append(who, "members of the groups "+listText(g.groupList))
	}
	if len(g.userList) > 0 {
		who = append(who, "the users "+listText(g.userList))
	}
	s := "This gateway admits only " + strings.Join(who, " and ")
	if len(g.domainList) > 0 {
		domains := "an email address at " + listText(g.domainList)
		if len(who) == 0 {
			return "This gateway admits only people with " + domains + "."
		}
		s += ", and only with " + domains
	}
	return s + "."
}

// contactURL returns the contact as a link target when it is one: an
// http(s) or mailto URL, or a bare email address.
func (g *gate) contactURL() string {
	c := g.contact
	if u, err := url.Parse(c); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" || err == nil && u.Scheme == "mailto" {
		return c
	}
	if _, _, ok := splitEmail(c); ok && !strings.ContainsAny(c, " <>\"") {
		return "mailto:" + c
	}
	return ""
}

// ask tells the user who to ask, as plain text.
func (g *gate) ask() string {
	if g.contact == "" {
		return "To get access, ask the people who run this gateway."
	}
	return "To get access, ask " + strings.TrimPrefix(g.contact, "mailto:") + "."
}

// listText joins names for a sentence, at most 20 of them.
func listText(list []string) string {
	const most = 20
	if len(list) > most {
		return strings.Join(list[:most], ", ") + fmt.Sprintf(" (and %d more)", len(list)-most)
	}
	return strings.Join(list, ", ")
}

func lowerAll(list []string) []string {
	out := make([]string, 0, len(list))
	for _, v := range list {
		out = append(out, strings.ToLower(v))
	}
	return out
}

// refuse answers a request whose sender the provider knows but the gate
// does not admit: 403 with who they are, whom the gateway admits and who to
// ask. A session cookie is cleared, so a refused user holds no session.
func (a *Authenticator) refuse(w http.ResponseWriter, r *http.Request, id Identity, reason string) {
	a.logger.Info("refused by the sign-in gate", zap.String("user", id.User), zap.Strings("groups", id.Groups),
		zap.String("email_domain", id.EmailDomain), zap.String("method", id.Method), zap.String("reason", reason))
	w.Header().Set("Cache-Control", "no-store")
	if id.Method == MethodSession {
		clearSession(w, r, a.cookies, nil)
	}
	g := a.gate
	if isAPIRequest(r) {
		writeJSONError(w, http.StatusForbidden, fmt.Sprintf("signed in as %s, who is not admitted to this gateway. %s %s", id.User, g.rule(), g.ask()))
		return
	}
	pageHeaders(w)
	w.WriteHeader(http.StatusForbidden)
	_ = refusalTemplate.Execute(w, struct {
		User, Domain, Rule, Ask, Contact string
		ContactURL                       template.URL
		Groups                           string
		Logout                           string
	}{
		User: id.User, Domain: id.EmailDomain, Groups: strings.Join(id.Groups, ", "),
		Rule: g.rule(), Ask: g.ask(), Contact: strings.TrimPrefix(g.contact, "mailto:"),
		ContactURL: template.URL(g.contactURL()), //nolint:gosec // contactURL admits only http(s) and mailto URLs from the operator's config
		Logout:     a.basePath + "/oauth2/logout",
	})
}

var refusalTemplate = template.Must(template.New("refusal").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Not admitted - sparkgate</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font-family:sans-serif;max-width:40em;margin:4em auto;padding:0 1em;color:#222}</style>
</head><body><h1>Not admitted to sparkgate</h1>
<p id="who">You are signed in as <strong>{{.User}}</strong>{{if .Domain}} (email at {{.Domain}}){{end}}{{if .Groups}}, in the groups {{.Groups}}{{else}}, in no groups{{end}}.</p>
<p id="rule">{{.Rule}}</p>
<p id="ask">{{if .ContactURL}}To get access, ask <a href="{{.ContactURL}}">{{.Contact}}</a>.{{else}}{{.Ask}}{{end}}</p>
<form method="post" action="{{.Logout}}"><button type="submit">Sign out</button> (to sign in as someone else)</form>
</body></html>
`))

// validateGate checks the sign-in gate's keys.
func (c *Config) validateGate() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for _, l := range c.gateLists() {
		for i, v := range l.list {
			switch {
			case v == "" || strings.TrimSpace(v) != v || !cleanName(v):
				add("auth.%s[%d]: %q is empty, has surrounding spaces or control characters", l.key, i, v)
			case l.key != "allowed_email_domains":
			case strings.HasPrefix(v, "@") || strings.Contains(v, "@"):
				add("auth.%s[%d]: %q: write the domain alone, e.g. example.com", l.key, i, v)
			case strings.Contains(v, "*"):
				add("auth.%s[%d]: %q: wildcards are not supported; list each domain (sub-domains are not included)", l.key, i, v)
			case !isDomain(v):
				add("auth.%s[%d]: %q is not a domain name", l.key, i, v)
			}
		}
	}
	if ct := c.AccessContact; ct != "" {
		if len(ct) > maxContactLen || !cleanName(ct) {
			add("auth.access_contact: longer than %d characters or has control characters", maxContactLen)
		} else if u, err := url.Parse(strings.TrimSpace(ct)); err == nil && u.Scheme != "" && strings.Contains(ct, ":") && !strings.Contains(ct, " ") {
			switch {
			case u.Scheme == "mailto":
			case (u.Scheme == "http" || u.Scheme == "https") && u.Host != "":
			default:
				add("auth.access_contact: %q: a URL here must be http(s) or mailto", ct)
			}
		}
	}
	return errs
}

type gateList struct {
	key  string
	list []string
}

func (c *Config) gateLists() []gateList {
	return []gateList{
		{"allowed_groups", c.AllowedGroups},
		{"allowed_users", c.AllowedUsers},
		{"allowed_email_domains", c.AllowedEmailDomains},
	}
}

// isDomain accepts host names in ASCII (IDNs in their xn-- form).
func isDomain(s string) bool {
	if len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') && r != '-' {
				return false
			}
		}
	}
	return true
}
