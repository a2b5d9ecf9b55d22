package proxy

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The index renders one page of rows: indexPageSize unless ?n= asks for
// another size, at most indexMaxPageSize.
const (
	indexPageSize    = 100
	indexMaxPageSize = 1000
)

// indexRow is one app on the index page.
type indexRow struct {
	ID, Name, User, State string
	Running               bool
	Start, StartISO       string
	Duration              string
	Version, Source       string
	Link                  string
	// Search is what the client-side filter matches, lower case.
	Search string
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
}

// serveIndex lists the apps the user may view, one page of rows at a
// time (?page=, 1-based, and ?n=, the page size). ?q= filters on the server
// before paging (works without JavaScript): an app matches when each of the
// query's words is in its id, name, owner, state, version or source; the
// page's script filters the rows shown as one types, the same way.
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
		page = n
	}
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
	}
	// Only the rows of the page asked for are rendered; the others are
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
		search := strings.ToLower(strings.Join([]string{a.ID, a.Name, a.User, state, a.SparkVersion, a.Source}, " "))
		if !matchesAll(search, terms) {
			continue
		}
		data.Matched++
		if data.Matched <= skip || len(data.Rows) >= size {
			continue
		}
		row := indexRow{
			ID:      a.ID,
			Name:    a.Name,
			User:    a.User,
			State:   state,
			Running: running,
			Version: a.SparkVersion,
			Source:  a.Source,
			Link:    "/app/" + a.ID + "/",
			Search:  search,
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
		data.Rows = append(data.Rows, row)
	}
	if len(data.Rows) > 0 {
		data.First, data.Last = skip+1, skip+len(data.Rows)
	}
	if page > 1 && data.Matched > 0 {
		data.Prev = indexPageURL(q, size, min(page-1, (data.Matched+size-1)/size))
	}
	if skip+size < data.Matched {
		data.Next = indexPageURL(q, size, page+1)
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

// indexPageURL is the index's URL for a page, keeping the query and size.
func indexPageURL(q string, size, page int) string {
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
	if len(v) == 0 {
		return "/"
	}
	return "/?" + v.Encode()
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
