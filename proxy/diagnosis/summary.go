package diagnosis

import (
	"cmp"
	"slices"
)

// Summary is what the index shows of an app: what it is doing now and
// badges for the findings that the list calls and the task summaries of
// a few stages reveal (no task list is read for it).
type Summary struct {
	ActiveJobs      int `json:"active_jobs"`
	RunningTasks    int `json:"running_tasks"`
	FailedTasks     int `json:"failed_tasks"`
	ActiveExecutors int `json:"active_executors"`
	// Progress is the share of the active jobs' tasks done (0..1), -1
	// when no job is active.
	Progress float64 `json:"progress"`
	Badges   []Badge `json:"badges"`
}

// Badge counts the findings of one kind.
type Badge struct {
	Kind     Kind     `json:"kind"`
	Severity Severity `json:"severity"`
	Count    int      `json:"count"`
}

// Score orders apps by their badges: critical findings first, then
// warnings, then the rest.
func (s Summary) Score() int {
	n := 0
	for _, b := range s.Badges {
		switch b.Severity {
		case Critical:
			n += 10000 * b.Count
		case Warning:
			n += 100 * b.Count
		default:
			n += b.Count
		}
	}
	return n
}

// Summarize reads the jobs, stages, executors, SQL queries and task
// summaries of in (its task lists, if any, are not read).
func Summarize(in *Input, c Config) Summary {
	s := Summary{Progress: -1}
	var done, total int
	for _, j := range in.Jobs {
		s.FailedTasks += j.NumFailedTasks
		if j.Status == "RUNNING" {
			s.ActiveJobs++
			done += j.NumCompletedTasks + j.NumSkippedTasks
			total += j.NumTasks
		}
	}
	for _, st := range in.Stages {
		if st.Status == "ACTIVE" {
			s.RunningTasks += st.NumActiveTasks
		}
	}
	for _, e := range in.Executors {
		if e.IsActive {
			s.ActiveExecutors++
		}
	}
	if s.ActiveJobs > 0 && total > 0 {
		s.Progress = float64(done) / float64(total)
	}
	lists := &Input{Now: in.Now, Jobs: in.Jobs, Stages: in.Stages, Executors: in.Executors, SQL: in.SQL, Summaries: in.Summaries}
	c.MaxFindingsPerKind = 1 << 30 // count them all
	byKind := make(map[Kind]*Badge)
	for _, f := range Diagnose(lists, c).Findings {
		b := byKind[f.Kind]
		if b == nil {
			b = &Badge{Kind: f.Kind, Severity: f.Severity}
			byKind[f.Kind] = b
		}
		b.Count++
		if severityOrder[f.Severity] < severityOrder[b.Severity] {
			b.Severity = f.Severity
		}
	}
	for _, b := range byKind {
		s.Badges = append(s.Badges, *b)
	}
	slices.SortFunc(s.Badges, func(a, b Badge) int {
		if d := cmp.Compare(severityOrder[a.Severity], severityOrder[b.Severity]); d != 0 {
			return d
		}
		return cmp.Compare(a.Kind, b.Kind)
	})
	return s
}
