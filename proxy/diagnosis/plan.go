package diagnosis

import (
	"cmp"
	"slices"
	"strconv"
)

// SummaryTargets picks the stage attempts whose taskSummary a diagnosis
// reads: those with enough finished tasks to have a distribution, the
// most task time first, at most c.MaxStageSummaries. A stage that ran
// little cannot cost much, whatever its skew.
func SummaryTargets(stages []Stage, c Config) []StageKey {
	var cand []*Stage
	for i := range stages {
		s := &stages[i]
		switch s.Status {
		case "COMPLETE", "ACTIVE", "FAILED":
		default:
			continue
		}
		if s.NumCompleteTasks >= c.SkewMinTasks {
			cand = append(cand, s)
		}
	}
	slices.SortStableFunc(cand, func(a, b *Stage) int { return cmp.Compare(b.ExecutorRunTime, a.ExecutorRunTime) })
	if len(cand) > c.MaxStageSummaries {
		cand = cand[:c.MaxStageSummaries]
	}
	out := make([]StageKey, len(cand))
	for i, s := range cand {
		out[i] = s.Key()
	}
	return out
}

// TaskQuery is one taskList call.
type TaskQuery struct {
	Stage StageKey
	// Failed asks for failed tasks (their error messages); otherwise the
	// longest tasks.
	Failed bool
}

// Query is the call's query string, at most length tasks.
func (q TaskQuery) Query(length int) string {
	if q.Failed {
		return "length=" + strconv.Itoa(length) + "&status=failed"
	}
	return "length=" + strconv.Itoa(length) + "&sortBy=-runtime"
}

// TaskListTargets picks the taskList calls worth making once the
// summaries are in, at most c.MaxTaskLists: the failed tasks of stages
// that had failures (most first), the longest tasks of stages whose
// summary shows skew, then of the stages that read the most input (their
// locality).
func TaskListTargets(in *Input, c Config) []TaskQuery {
	var out []TaskQuery
	add := func(q TaskQuery) bool {
		if len(out) >= c.MaxTaskLists {
			return false
		}
		if !slices.Contains(out, q) {
			out = append(out, q)
		}
		return true
	}
	byFailures := sortedStages(in.Stages, func(s *Stage) int64 { return int64(s.NumFailedTasks) })
	for _, s := range byFailures {
		if s.NumFailedTasks == 0 || !add(TaskQuery{Stage: s.Key(), Failed: true}) {
			break
		}
	}
	byTime := sortedStages(in.Stages, func(s *Stage) int64 { return s.ExecutorRunTime })
	for _, s := range byTime {
		sum := in.Summaries[s.Key()]
		if sum == nil {
			continue
		}
		if _, ok := durationSkew(sum, c); !ok {
			if _, _, ok := shuffleSkew(sum, c); !ok {
				continue
			}
		}
		if !add(TaskQuery{Stage: s.Key()}) {
			return out
		}
	}
	byInput := sortedStages(in.Stages, func(s *Stage) int64 { return s.InputBytes })
	for _, s := range byInput {
		if s.InputBytes == 0 || s.NumCompleteTasks < c.SkewMinTasks || !add(TaskQuery{Stage: s.Key()}) {
			break
		}
	}
	return out
}

// sortedStages returns pointers to stages, largest by first.
func sortedStages(stages []Stage, by func(*Stage) int64) []*Stage {
	out := make([]*Stage, len(stages))
	for i := range stages {
		out[i] = &stages[i]
	}
	slices.SortStableFunc(out, func(a, b *Stage) int { return cmp.Compare(by(b), by(a)) })
	return out
}
