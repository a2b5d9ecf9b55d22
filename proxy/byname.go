package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sparkgate/sparkgate/proxy/discovery"
)

// byNameRow is one app of a name, for /by-name/<name>?all.
type byNameRow struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Owner     string `json:"owner"`
	Live      bool   `json:"live"`
	Picked    bool   `json:"picked"` // the app the stable link leads to
	Start     string `json:"start_time,omitempty"`
	Link      string `json:"link"`
	Diagnosis string `json:"diagnosis"`
}

type byNamePage struct {
	pageBase
	Name   string
	Newest string
	Rows   []byNameRow
	// Ambiguous says the stable link leads nowhere: apps of several
	// owners, none the user's, have the name.
	Ambiguous bool
}

// serveByName serves /by-name/<name>/...: a redirect to the same path
// under the newest app of that name the user may view (a running one
// before finished ones), so that a bookmark survives the restarts of a
// streaming job, each of which gets a new app id. With ?all it lists every
// app of the name the user may view, with their ids. Only apps the user may
// view are considered: one that may not learns nothing of the others.
//
// A name is anyone's to start an app under, so the link follows only one
// owner (byNamePick): the user's own newest app of the name, else the
// newest app when a single owner has them all. When several others do, it
// lists them (300 Multiple Choices) rather than pick one: an app started
// under the name of someone else's streaming job, its UI open to everyone,
// would otherwise take over their bookmarks.
func (s *Server) serveByName(w http.ResponseWriter, r *http.Request, st *reqState) error {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return &httpError{Status: http.StatusMethodNotAllowed, Msg: "only GET and HEAD", Allow: "GET, HEAD"}
	}
	name := st.route.Name
	q := r.URL.Query()
	_, all := q["all"]
	// visibleApps keeps the registry's order: running first, newest first.
	var apps []*discovery.App
	for _, v := range s.visibleApps(st) {
		if stableName(v.app) == name || v.app.Name == name {
			apps = append(apps, v.app)
		}
	}
	if len(apps) == 0 {
		return &httpError{Status: http.StatusNotFound, Title: "No such application",
			Msg: fmt.Sprintf("no application named %q that you may view is running or finished", name)}
	}
	pick := byNamePick(apps, st.ident.User)
	if !all && pick != nil {
		// The rest of the path and the query are kept.
		redirect(w, r, "/app/"+pick.ID+st.route.Path)
		return nil
	}
	status := http.StatusOK
	if !all {
		status = http.StatusMultipleChoices // the link picks none
	}
	// Listed for a link that picks none, each app's link keeps the rest of
	// the path and the query, as the redirect would.
	rest := "/"
	if !all {
		rest = st.route.Path
		if r.URL.RawQuery != "" {
			rest += "?" + r.URL.RawQuery
		}
	}
	rows := make([]byNameRow, 0, len(apps))
	for _, a := range apps {
		row := byNameRow{ID: a.ID, Name: a.Name, Owner: owner(a), Live: a.Live(), Link: "/app/" + a.ID + rest, Picked: a == pick}
		row.Diagnosis = "/app/" + a.ID + diagnosisPath
		if !a.StartTime.IsZero() {
			row.Start = a.StartTime.UTC().Format(time.RFC3339)
		}
		rows = append(rows, row)
	}
	if st.json {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(status)
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rows) // a write error means the client has gone
		return nil
	}
	link, _ := byNameLink(name)
	return s.pages.render(w, status, "byname", byNamePage{
		pageBase: st.page("Applications named "+name, 0),
		Name:     name, Newest: link, Rows: rows, Ambiguous: pick == nil,
	})
}

// byNamePick is the app of apps (of one name, running first, newest
// first) that the name's link leads user to: the first of user's own, else
// the first when one owner has them all; nil when several others do.
func byNamePick(apps []*discovery.App, user string) *discovery.App {
	for _, a := range apps {
		if a.User == user {
			return a
		}
	}
	first := ownerOf(apps[0])
	for _, a := range apps[1:] {
		if ownerOf(a) != first {
			return nil
		}
	}
	return apps[0]
}

// appOwner is owner's answer as parts, compared as such: a Spark user is
// any string its driver reports, so "185 in etl" may be one, and must not
// be taken for user 185 of namespace etl.
type appOwner struct {
	user, namespace string
	operator        bool // run by the Spark operator, in namespace
}

func ownerOf(a *discovery.App) appOwner {
	if ns, _, ok := strings.Cut(a.ClusterName, "/"); ok {
		return appOwner{user: a.User, namespace: ns, operator: true}
	}
	return appOwner{user: a.User}
}

// owner is who an app answers to, for by-name links: its Spark user and,
// for an app the Spark operator runs, its namespace (the teams of a
// cluster often run every driver as the same Spark user, each in their
// own namespace).
func owner(a *discovery.App) string {
	if o := ownerOf(a); o.operator {
		return o.user + " in " + o.namespace
	}
	return a.User
}

// stableName is the name an app's by-name link uses: its
// SparkApplication's name when the Spark operator runs it (what the
// operator keeps across the runs it starts; the namespace is left out, a
// path segment cannot carry its "/"), or its ResourceManager's application
// name on YARN (what the RM and its users call it, usually
// spark.app.name, but whatever the submitter set), otherwise
// spark.app.name.
func stableName(a *discovery.App) string {
	if _, name, ok := strings.Cut(a.ClusterName, "/"); ok && name != "" {
		return name
	}
	if a.YARNName != "" {
		return a.YARNName
	}
	return a.Name
}

// byNameLink is the stable link of an app name, "/by-name/<escaped>/",
// if the name can be one: a single path segment that routes back to
// exactly this name (no "/", no control characters, not "." or "..").
func byNameLink(name string) (string, bool) {
	if name == "" {
		return "", false
	}
	p := "/by-name/" + url.PathEscape(name) + "/"
	rt, err := ParseRoute(p)
	if err != nil || rt.Kind != KindByName || rt.Name != name || rt.Path != "/" || strings.Contains(name, "/") {
		return "", false
	}
	return p, true
}
