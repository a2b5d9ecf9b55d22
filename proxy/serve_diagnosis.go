package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sparkgate/sparkgate/proxy/diagnosis"
	"github.com/sparkgate/sparkgate/proxy/discovery"
)

// diagnosisPath is the diagnosis page under /app/<id>: "/_/" is no path
// of Spark's UI, so it cannot shadow one.
const diagnosisPath = "/_/diagnosis"

// isDiagnosisAPI reports whether a KindAPIApp route is
// /api/v1/applications/<id>[/<attempt>]/diagnosis.
func isDiagnosisAPI(rt Route) bool {
	rest, ok := appAPIRest(rt)
	if !ok {
		return false
	}
	if rest == "/diagnosis" {
		return true
	}
	if rt.Attempt == "" || !strings.HasPrefix(rest, "/") {
		return false
	}
	r, ok := strings.CutPrefix(rest[1:], rt.Attempt)
	return ok && r == "/diagnosis"
}

// diagnosisJSON is the answer of /api/v1/applications/<id>/diagnosis: the
// findings as structured data for automation and agents.
type diagnosisJSON struct {
	AppID      string                 `json:"app_id"`
	Name       string                 `json:"name"`
	Live       bool                   `json:"live"`
	Source     string                 `json:"source"`
	ComputedAt string                 `json:"computed_at"`
	UI         string                 `json:"ui"`
	Page       string                 `json:"page"`
	Findings   []diagnosis.Finding    `json:"findings"`
	Read       diagnosis.Read         `json:"read"`
	Omitted    map[diagnosis.Kind]int `json:"omitted,omitempty"`
	Skipped    []string               `json:"skipped,omitempty"`
	// Thresholds are the diagnosis: settings the findings were measured
	// against.
	Thresholds map[string]string `json:"thresholds"`
}

type diagnosisLevel struct {
	Name     string
	Findings []diagnosis.Finding
}

type diagnosisPage struct {
	pageBase
	App        diagnosisJSON
	Levels     []diagnosisLevel
	Critical   int
	Warnings   int
	ComputedAt string
	JSONLink   string
	DriverLog  string // the driver pod's log (podlogs.go), "" without one
}

// serveDiagnosis answers the diagnosis of the route's app, as JSON or as
// a page. The user must be allowed to view the app exactly as for its
// REST API (live: the driver's ACLs; finished: the History Server's), and
// the data is read from the same upstream the REST API would be proxied to.
func (s *Server) serveDiagnosis(w http.ResponseWriter, r *http.Request, st *reqState, asJSON bool) error {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return &httpError{Status: http.StatusMethodNotAllowed, Msg: "only GET and HEAD", Allow: "GET, HEAD"}
	}
	rt := st.route
	to, err := s.resolveApp(st, resolveOpts{attempt: rt.Attempt})
	if err != nil {
		return err
	}
	app := to.app
	var src diagSource
	if ref := to.hist; ref == nil {
		src = diagSource{base: app.UIURL, rest: "/api/v1/applications/" + app.ID, label: driverLabel(app.UIURL), live: true}
	} else {
		rest := "/api/v1/applications/" + app.ID
		if att := firstNonEmpty(rt.Attempt, firstAttempt(ref)); att != "" {
			rest += "/" + att
		}
		src = diagSource{base: s.hs[ref.Server], rest: rest, label: "History Server " + ref.Server}
	}
	res, err := s.diag.get(r.Context(), app.ID, src, true)
	if err != nil {
		if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
			st.clientGone = true
			return nil
		}
		he := &httpError{Status: http.StatusBadGateway, Title: "Diagnosis failed", AppID: app.ID,
			Msg: "could not read the application's data from " + src.label + "; try again", Cause: err}
		switch {
		case errors.Is(err, errDiagBusy):
			he.Status, he.Msg = http.StatusServiceUnavailable, "the gateway is reading other apps' data for their diagnoses; try again in a moment"
		case errors.As(err, new(*diagBoundError)):
			// Trying again will not help: say why, in words alone (the
			// errors joined to it name the driver's address).
			var be *diagBoundError
			errors.As(err, &be)
			he.Msg = "the application's data from " + src.label + " is larger than a diagnosis reads: " + be.bound
		case errors.Is(err, diagnosis.ErrTooMany):
			he.Msg = "the application's data from " + src.label + " is larger than a diagnosis reads: a list of ids or values too long"
		}
		return he
	}
	out := toDiagnosisJSON(app, res)
	out.Thresholds = s.diag.cfg.Values()
	if asJSON {
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Cache-Control", "no-store")
		h.Set("X-Content-Type-Options", "nosniff")
		if r.Method == http.MethodHead {
			return nil
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		_ = enc.Encode(out) // a write error means the client has gone
		return nil
	}
	page := newDiagnosisPage(st, out)
	page.DriverLog = s.appPodLinks(app.ID, false)["driver"]
	return s.pages.render(w, http.StatusOK, "diagnosis", page)
}

func toDiagnosisJSON(app *discovery.App, res *diagResult) diagnosisJSON {
	return diagnosisJSON{
		AppID:      app.ID,
		Name:       app.Name,
		Live:       res.live,
		Source:     res.source,
		ComputedAt: res.at.UTC().Format(time.RFC3339),
		UI:         "/app/" + app.ID + "/",
		Page:       "/app/" + app.ID + diagnosisPath,
		Findings:   res.report.Findings,
		Read:       res.report.Read,
		Omitted:    res.report.Omitted,
		Skipped:    res.skipped,
	}
}

func newDiagnosisPage(st *reqState, d diagnosisJSON) diagnosisPage {
	title := "Diagnosis of " + firstNonEmpty(d.Name, d.AppID)
	p := diagnosisPage{
		pageBase:   st.page(title, 0),
		App:        d,
		ComputedAt: strings.Replace(d.ComputedAt, "T", " ", 1),
		JSONLink:   "/api/v1/applications/" + url.PathEscape(d.AppID) + "/diagnosis",
	}
	names := map[diagnosis.Level]string{
		diagnosis.LevelJob: "Jobs", diagnosis.LevelStage: "Stages",
		diagnosis.LevelTask: "Tasks", diagnosis.LevelExecutor: "Executors",
	}
	for _, f := range d.Findings {
		switch f.Severity {
		case diagnosis.Critical:
			p.Critical++
		case diagnosis.Warning:
			p.Warnings++
		}
	}
	for _, lv := range []diagnosis.Level{diagnosis.LevelJob, diagnosis.LevelStage, diagnosis.LevelTask, diagnosis.LevelExecutor} {
		var fs []diagnosis.Finding
		for _, f := range d.Findings {
			if f.Level == lv {
				fs = append(fs, f)
			}
		}
		if len(fs) > 0 {
			p.Levels = append(p.Levels, diagnosisLevel{Name: names[lv], Findings: fs})
		}
	}
	return p
}

func firstAttempt(ref *discovery.HistoryRef) string {
	if len(ref.Attempts) > 0 {
		return ref.Attempts[0]
	}
	return ""
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
