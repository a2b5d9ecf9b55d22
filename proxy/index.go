package proxy

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// indexRow is one app on the index page.
type indexRow struct {
	ID, Name, User, State string
	Running               bool
	Start, StartISO       string
	Duration              string
	Version, Source       string
	Link                  string
	// Cluster is the Spark operator's SparkApplication ("namespace/name")
	// and ClusterState its state, "" without one.
	Cluster, ClusterState string
	// Diagnosis is the app's diagnosis page.
	Diagnosis string
	// ByName is the stable link of the app's name ("" if it has none).
	ByName string
	// Stats is what a live app is doing now (nil for finished apps).
	Stats *indexStats
	// Search is what the client-side filter matches, lower case.
	Search string
}

type indexPage struct {
	pageBase
	Rows           []indexRow
	Query          string
	Total          int // apps the user may view, before ?q=
	Running        int
	Finished       int
	Sources        []string
	ShowSources    bool // to admins only
	HistoryServers []string
	// Health is each polled discovery source's state, for admins only.
	Health     []sourceRow
	SourcesUp  int
	SourceDown int
	// SortFindings: rows ordered by their findings (?sort=findings).
	SortFindings bool
}

// sourceRow is one discovery source on the admin's index.
type sourceRow struct {
	Name, Since, SinceISO, Error string
	Up                           bool
	Failures                     uint64
}

// serveIndex lists every app the user may view. ?q= filters on the server
// (works without JavaScript); the page's script filters as one types.
func (s *Server) serveIndex(w http.ResponseWriter, r *http.Request, st *reqState) error {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return &httpError{Status: http.StatusMethodNotAllowed, Msg: "only GET and HEAD", Allow: "GET, HEAD"}
	}
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	if len(q) > 200 {
		q = q[:200]
	}
	needle := strings.ToLower(q)
	now := s.now()
	vis := s.visibleApps(st)
	data := indexPage{
		pageBase:       pageBase{Title: "Spark applications", User: st.ident.User, Groups: st.ident.Groups, RequestID: st.requestID},
		Query:          q,
		Total:          len(vis),
		HistoryServers: s.hsNames,
	}
	if s.isAdmin != nil && s.isAdmin(st.ident) {
		data.Sources, data.ShowSources = s.sources, true
		data.Health, data.SourcesUp, data.SourceDown = s.sourceRows()
	}
	for _, v := range vis {
		a := v.app
		row := indexRow{
			ID:      a.ID,
			Name:    a.Name,
			User:    a.User,
			State:   a.State.String(),
			Running: a.Live(),
			Version: a.SparkVersion,
			Source:  a.Source,
			Link:    "/app/" + a.ID + "/",

			Cluster:      a.ClusterName,
			ClusterState: a.ClusterState,
		}
		row.Diagnosis = row.Link + diagnosisPath[1:]
		row.ByName, _ = byNameLink(a.Name)
		if !a.Live() {
			row.State = "finished"
		}
		if !a.StartTime.IsZero() {
			row.Start = a.StartTime.UTC().Format("2006-01-02 15:04 UTC")
			row.StartISO = a.StartTime.UTC().Format(time.RFC3339)
			end := now
			if !row.Running {
				end = a.EndTime
			}
			if !end.IsZero() && !end.Before(a.StartTime) {
				row.Duration = humanDuration(end.Sub(a.StartTime))
			}
		}
		if row.Running {
			data.Running++
		} else {
			data.Finished++
		}
		row.Search = strings.ToLower(strings.Join([]string{row.ID, row.Name, row.User, row.State, row.Version, row.Source, row.Cluster, row.ClusterState}, " "))
		if needle != "" && !strings.Contains(row.Search, needle) {
			continue
		}
		data.Rows = append(data.Rows, row)
	}
	s.addLiveStats(r.Context(), data.Rows)
	if data.SortFindings = r.URL.Query().Get("sort") == "findings"; data.SortFindings {
		sortByFindings(data.Rows)
	}
	return s.pages.render(w, http.StatusOK, "index", data)
}

// sourceRows describes each polled discovery source: up, or down since
// when, with how many failed polls and the last error.
func (s *Server) sourceRows() (rows []sourceRow, up, down int) {
	if s.health == nil {
		return nil, 0, 0
	}
	for _, h := range s.health() {
		r := sourceRow{Name: h.Name, Up: h.Up, Failures: h.Failures, Error: h.LastError}
		if h.Up {
			up++
		} else {
			down++
			if !h.DownSince.IsZero() {
				r.Since = h.DownSince.UTC().Format("2006-01-02 15:04:05 UTC")
				r.SinceISO = h.DownSince.UTC().Format(time.RFC3339)
			}
		}
		rows = append(rows, r)
	}
	return rows, up, down
}

// humanDuration prints a duration the way Spark's UI does: "45 s",
// "3.2 min", "1.5 h", "2.0 d".
func humanDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%.1f min", d.Minutes())
	case d < 48*time.Hour:
		return fmt.Sprintf("%.1f h", d.Hours())
	default:
		return fmt.Sprintf("%.1f d", d.Hours()/24)
	}
}
