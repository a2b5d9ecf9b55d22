package proxy

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sparkgate/sparkgate/proxy/discovery"
)

// The index renders one page of rows: indexPageSize unless ?n= asks for
// another size, at most indexMaxPageSize.
const (
	indexPageSize    = 100
	indexMaxPageSize = 1000
)

// indexMaxPage bounds ?page=: with indexMaxPageSize rows a page, far past
// any list.
const indexMaxPage = 1 << 20

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
	// YARNName and YARNQueue are the ResourceManager's application name
	// and queue, "" unless found through one.
	YARNName, YARNQueue string
	// Diagnosis is the app's diagnosis page.
	Diagnosis string
	// ByName is the stable link of the app's name ("" if it has none).
	ByName string
	// Stats is what a live app is doing now, or a finished app's badges
	// (index_finished.go); nil when not known.
	Stats *indexStats
	// Search is what the client-side filter matches, lower case.
	Search string
	// app is the app judged for this row: its live stats are read from
	// it, never from whatever holds the id by then (addLiveStats).
	app *discovery.App
}

type indexPage struct {
	pageBase
	Rows           []indexRow
	Query          string
	Matched        int // apps that match ?q=, over every page
	First, Last    int // 1-based positions of Rows among the Matched apps
	Prev, Next     string
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
	// Masters are the standalone masters the user may open (master.go).
	Masters []string
}

// sourceRow is one discovery source on the admin's index.
type sourceRow struct {
	Name, Since, SinceISO, Error string
	Up                           bool
	Failures                     uint64
}

// serveIndex lists the apps the user may view, one page of rows at a
// time (?page=, 1-based, and ?n=, the page size). ?q= filters on the server
// before paging (works without JavaScript): an app matches when each of the
// query's words is in its id, name, owner, state, version, source or
// cluster; the page's script filters the rows shown as one types, the same
// way. ?sort=findings orders every matching app by its findings before
// paging.
func (s *Server) serveIndex(w http.ResponseWriter, r *http.Request, st *reqState) error {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return &httpError{Status: http.StatusMethodNotAllowed, Msg: "only GET and HEAD", Allow: "GET, HEAD"}
	}
	qv := r.URL.Query()
	q := strings.TrimSpace(qv.Get("q"))
	if len(q) > 200 {
		q = q[:200]
	}
	terms := strings.Fields(strings.ToLower(q))
	size := indexPageSize
	if n, err := strconv.Atoi(qv.Get("n")); err == nil && n > 0 {
		size = min(n, indexMaxPageSize)
	}
	page := 1
	if n, err := strconv.Atoi(qv.Get("page")); err == nil && n > 1 {
		// Bounded, so that (page-1)*size cannot overflow: a page past
		// the last shows no rows either way.
		page = min(n, indexMaxPage)
	}
	now := s.now()
	vis := s.visibleApps(st)
	data := indexPage{
		pageBase:       st.page("Spark applications", 0),
		Query:          q,
		Total:          len(vis),
		HistoryServers: s.hsNames,
		SortFindings:   qv.Get("sort") == "findings",
	}
	admin := s.isAdmin != nil && s.isAdmin(st.ident)
	if admin {
		data.Sources, data.ShowSources = s.sources, true
		data.Health, data.SourcesUp, data.SourceDown = s.sourceRows()
	}
	for _, name := range slices.Sorted(maps.Keys(s.masters)) {
		if admin || s.masters[name].everyone {
			data.Masters = append(data.Masters, name)
		}
	}
	// Only the rows of the page asked for are rendered (every matching row
	// when sorted by findings, which the live stats decide); the others are
	// counted and matched.
	skip := (page - 1) * size
	for _, v := range vis {
		a := v.app
		running := a.Live()
		if running {
			data.Running++
		} else {
			data.Finished++
		}
		state := a.State.String()
		if !running {
			state = "finished"
		}
		source := sourceShown(a.Source, admin)
		search := strings.ToLower(strings.Join([]string{a.ID, a.Name, a.User, state, a.SparkVersion, source, a.ClusterName, a.ClusterState, a.YARNName, a.YARNQueue}, " "))
		if !matchesAll(search, terms) {
			continue
		}
		data.Matched++
		if !data.SortFindings && (data.Matched <= skip || len(data.Rows) >= size) {
			continue
		}
		row := indexRow{
			ID:      a.ID,
			Name:    a.Name,
			User:    a.User,
			State:   state,
			Running: running,
			Version: a.SparkVersion,
			Source:  source,
			Link:    "/app/" + a.ID + "/",
			Search:  search,
			app:     a,

			Cluster:      a.ClusterName,
			ClusterState: a.ClusterState,
			YARNName:     a.YARNName,
			YARNQueue:    a.YARNQueue,
		}
		row.Diagnosis = row.Link + diagnosisPath[1:]
		if !running {
			row.Stats = s.finishedStats(a.ID, v.hist)
		}
		row.ByName, _ = byNameLink(stableName(a))
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
		data.Rows = append(data.Rows, row)
	}
	s.addLiveStats(r.Context(), data.Rows)
	if data.SortFindings {
		sortByFindings(data.Rows)
		data.Rows = data.Rows[min(skip, len(data.Rows)):min(skip+size, len(data.Rows))]
	}
	if len(data.Rows) > 0 {
		data.First, data.Last = skip+1, skip+len(data.Rows)
	}
	if page > 1 && data.Matched > 0 {
		data.Prev = indexPageURL(q, size, min(page-1, (data.Matched+size-1)/size), data.SortFindings)
	}
	if skip+size < data.Matched {
		data.Next = indexPageURL(q, size, page+1, data.SortFindings)
	}
	return s.pages.render(w, http.StatusOK, "index", data)
}

// matchesAll reports whether every term is in hay.
func matchesAll(hay string, terms []string) bool {
	for _, t := range terms {
		if !strings.Contains(hay, t) {
			return false
		}
	}
	return true
}

// indexPageURL is the index's URL for a page, keeping the query, size and
// order.
func indexPageURL(q string, size, page int, byFindings bool) string {
	v := url.Values{}
	if q != "" {
		v.Set("q", q)
	}
	if size != indexPageSize {
		v.Set("n", strconv.Itoa(size))
	}
	if page > 1 {
		v.Set("page", strconv.Itoa(page))
	}
	if byFindings {
		v.Set("sort", "findings")
	}
	if len(v) == 0 {
		return "/"
	}
	return "/?" + v.Encode()
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

// sourceShown is what the index shows of where an app was found: all of
// it to admins, its kind ("probe", "log", "kubernetes") to others. The
// rest names a driver's host and port, a log's path, a pod, a master's
// address: where a viewer could reach the driver past the gateway.
func sourceShown(src string, admin bool) string {
	if admin {
		return src
	}
	kind, _, _ := strings.Cut(src, ":")
	return kind
}
