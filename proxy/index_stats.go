package proxy

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sparkgate/sparkgate/proxy/diagnosis"
)

// indexStats is what a live app's index row shows of it now.
type indexStats struct {
	// Pending: the summary was not ready in time; the next view has it.
	Pending bool
	Text    string // "2 active jobs · 14 tasks running · 3 executors · 45 %"
	Failed  int    // failed tasks so far
	// FailedText is Failed in words: "1 failed task", "3 failed tasks".
	FailedText string
	Badges     []diagnosis.Badge
	score      int
}

// indexStatsWait bounds how long an index view waits for the summaries of
// its live apps (computed concurrently; one that is late is still cached
// for the next view).
const indexStatsWait = 1500 * time.Millisecond

// indexStatsMax bounds the live apps summarized per index view.
const indexStatsMax = 100

// addLiveStats fills the Stats of the live rows from their drivers'
// jobs, stages, executors and SQL lists (cached for diagnosis.cache_ttl;
// never a task list). The rows are already filtered to apps the user may
// view.
func (s *Server) addLiveStats(ctx context.Context, rows []indexRow) {
	ctx, cancel := context.WithTimeout(ctx, indexStatsWait)
	defer cancel()
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	n := 0
	for i := range rows {
		row := &rows[i]
		if !row.Running || n >= indexStatsMax {
			continue
		}
		// The app judged for the row, not a lookup of its id now: discovery
		// may have given the id to another app since (a ResourceManager's
		// app replaces a driver that claimed its id first), which the
		// user may not view.
		app := row.app
		if app == nil || !app.Live() || app.UIURL == nil {
			continue
		}
		n++
		src := diagSource{base: app.UIURL, rest: "/api/v1/applications/" + app.ID, label: driverLabel(app.UIURL), live: true}
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
			case <-ctx.Done():
				row.Stats = &indexStats{Pending: true}
				return
			}
			res, err := s.diag.get(ctx, app.ID, src, false)
			if err != nil {
				row.Stats = &indexStats{Pending: true}
				return
			}
			row.Stats = newIndexStats(res.summary)
		}()
	}
	wg.Wait()
}

// findingStats is what any row shows of an app's summary: its failed
// tasks and its badges.
func findingStats(sum diagnosis.Summary) *indexStats {
	return &indexStats{Failed: sum.FailedTasks, FailedText: plural(sum.FailedTasks, "failed task"), Badges: sum.Badges, score: sum.Score()}
}

// newIndexStats is what a live row shows: findingStats and the app's
// activity now.
func newIndexStats(sum diagnosis.Summary) *indexStats {
	st := findingStats(sum)
	parts := []string{plural(sum.ActiveJobs, "active job"), plural(sum.RunningTasks, "task") + " running", plural(sum.ActiveExecutors, "executor")}
	if sum.Progress >= 0 {
		parts = append(parts, fmt.Sprintf("%.0f %% done", 100*sum.Progress))
	}
	st.Text = strings.Join(parts, " · ")
	return st
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// sortByFindings orders rows by their badges, the worst first; rows
// without a summary keep their order after those with findings.
func sortByFindings(rows []indexRow) {
	slices.SortStableFunc(rows, func(a, b indexRow) int {
		return rowScore(b) - rowScore(a)
	})
}

func rowScore(r indexRow) int {
	if r.Stats == nil {
		return 0
	}
	return r.Stats.score
}
