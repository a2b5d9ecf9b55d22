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
	Live      bool   `json:"live"`
	Start     string `json:"start_time,omitempty"`
	Link      string `json:"link"`
	Diagnosis string `json:"diagnosis"`
}

type byNamePage struct {
	pageBase
	Name   string
	Newest string
	Rows   []byNameRow
}

// serveByName serves /by-name/<name>/...: a redirect to the same path
// under the newest app of that name the user may view (a running one
// before finished ones), so that a bookmark survives the restarts of a
// streaming job, each of which gets a new app id. With ?all it lists every
// app of the name the user may view, with their ids. Only apps the user may
// view are considered: one that may not learns nothing of the others.
func (s *Server) serveByName(w http.ResponseWriter, r *http.Request, st *reqState) error {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return &httpError{Status: http.StatusMethodNotAllowed, Msg: "only GET and HEAD", Allow: "GET, HEAD"}
	}
	name := st.route.Name
	q := r.URL.Query()
	_, all := q["all"]
	var rows []byNameRow
	// visibleApps keeps the registry's order: running first, newest first.
	for _, v := range s.visibleApps(st) {
		if stableName(v.app) != name && v.app.Name != name {
			continue
		}
		row := byNameRow{ID: v.app.ID, Name: v.app.Name, Live: v.app.Live(), Link: "/app/" + v.app.ID + "/"}
		row.Diagnosis = row.Link + diagnosisPath[1:]
		if !v.app.StartTime.IsZero() {
			row.Start = v.app.StartTime.UTC().Format(time.RFC3339)
		}
		rows = append(rows, row)
		if !all {
			break
		}
	}
	if len(rows) == 0 {
		return &httpError{Status: http.StatusNotFound, Title: "No such application",
			Msg: fmt.Sprintf("no application named %q that you may view is running or finished", name)}
	}
	if !all {
		// The rest of the path and the query are kept.
		redirect(w, r, "/app/"+rows[0].ID+st.route.Path)
		return nil
	}
	if st.json {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rows) // a write error means the client has gone
		return nil
	}
	link, _ := byNameLink(name)
	return s.pages.render(w, http.StatusOK, "byname", byNamePage{
		pageBase: pageBase{Title: "Applications named " + name, User: st.ident.User, Groups: st.ident.Groups, RequestID: st.requestID},
		Name:     name, Newest: link, Rows: rows,
	})
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
