// Package diagnosis reads an application's data from Spark's REST API and
// says what is wrong with it, in the order the tuning guides teach (jobs,
// then stages, then tasks, then executors): skew, GC pressure, spill,
// failures, lost executors, scheduling and locality trouble, stages far
// slower than their siblings. Each finding quotes the numbers it saw,
// says why they matter, names the Spark UI page that shows them and the
// usual remedies.
//
// It is pure: it takes parsed REST answers and returns findings. It does
// no HTTP and no I/O; it also decides (Plan) which of the costlier calls
// (task summaries, task lists) are worth making, so that the caller's cost
// stays bounded. It knows nothing of users or permissions.
package diagnosis

import (
	"cmp"
	"slices"
	"time"
)

// Quantiles is the quantiles query of the taskSummary calls: the median,
// the 75th and 95th percentiles and the maximum.
const Quantiles = "0.5,0.75,0.95,1.0"

// Input is what one diagnosis reads: the app's REST answers as of Now.
type Input struct {
	// Now is when the data was read; running stages are timed against it.
	Now       time.Time
	Jobs      []Job
	Stages    []Stage
	Executors []Executor
	SQL       []SQLExecution
	// Summaries holds the taskSummary of the stages Plan chose.
	Summaries map[StageKey]*TaskSummary
	// Slowest holds the longest tasks of the stages TaskLists chose.
	Slowest map[StageKey][]Task
	// Failed holds failed tasks of the stages TaskLists chose.
	Failed map[StageKey][]Task
}

// Level is the part of the app a finding is about.
type Level string

// The levels, in the order a report lists them.
const (
	LevelJob      Level = "job"
	LevelStage    Level = "stage"
	LevelTask     Level = "task"
	LevelExecutor Level = "executor"
)

var levelOrder = map[Level]int{LevelJob: 0, LevelStage: 1, LevelTask: 2, LevelExecutor: 3}

// Severity ranks findings.
type Severity string

// Severities, worst first.
const (
	Critical Severity = "critical"
	Warning  Severity = "warning"
	Info     Severity = "info"
)

var severityOrder = map[Severity]int{Critical: 0, Warning: 1, Info: 2}

// Kind names a rule.
type Kind string

// The kinds of finding.
const (
	KindJobFailed        Kind = "job_failed"
	KindSQLFailed        Kind = "sql_failed"
	KindStageFailed      Kind = "stage_failed"
	KindSpill            Kind = "spill"
	KindSlowStage        Kind = "slow_running_stage"
	KindTaskDurationSkew Kind = "task_duration_skew"
	KindShuffleSkew      Kind = "shuffle_skew"
	KindTaskFailures     Kind = "task_failures"
	KindSchedulerDelay   Kind = "scheduler_delay"
	KindLocalityAny      Kind = "locality_any"
	KindGCPressure       Kind = "gc_pressure"
	KindExecutorGC       Kind = "executor_gc_pressure"
	KindExecutorRemoved  Kind = "executor_removed"
)

// Finding is one thing wrong with the app.
type Finding struct {
	Kind     Kind     `json:"kind"`
	Severity Severity `json:"severity"`
	Level    Level    `json:"level"`
	Title    string   `json:"title"`
	// Seen says what was seen, with the numbers.
	Seen string `json:"seen"`
	// Why says why it matters.
	Why      string   `json:"why"`
	Remedies []string `json:"remedies"`
	// Messages are error messages, shortened.
	Messages []string `json:"messages,omitempty"`
	// Page is the Spark UI page that shows it, relative to the app's UI
	// root: "stages/stage/?id=3&attempt=0", "executors/",
	// "SQL/execution/?id=2".
	Page string `json:"page"`
	// SQLPage is the plan of the SQL query the stage or job ran for.
	SQLPage string `json:"sql_page,omitempty"`
	// Link and SQLLink are Page and SQLPage as gateway paths; the caller
	// sets them (the package knows no prefix).
	Link    string `json:"link,omitempty"`
	SQLLink string `json:"sql_link,omitempty"`

	JobID      *int      `json:"job_id,omitempty"`
	Stage      *StageKey `json:"stage,omitempty"`
	ExecutorID string    `json:"executor_id,omitempty"`
	SQLID      *int64    `json:"sql_id,omitempty"`
	// Metrics are the numbers of Seen, by name (ms, bytes, ratios).
	Metrics map[string]float64 `json:"metrics,omitempty"`
}

// Report is one diagnosis.
type Report struct {
	Findings []Finding `json:"findings"`
	// Read counts what the diagnosis looked at.
	Read Read `json:"read"`
	// Omitted counts, by kind, the findings left out beyond
	// max_findings_per_kind (kept: the most severe, then in stage or
	// executor order).
	Omitted map[Kind]int `json:"omitted,omitempty"`
}

// Read counts what a diagnosis looked at, so that "no finding" can be
// told from "nothing read".
type Read struct {
	Jobs             int `json:"jobs"`
	Stages           int `json:"stages"`
	StagesSummarized int `json:"stages_summarized"`
	TaskLists        int `json:"task_lists"`
	Tasks            int `json:"tasks"`
	Executors        int `json:"executors"`
	SQL              int `json:"sql_executions"`
}

// Diagnose runs every rule over in and returns the findings, jobs first,
// then stages, tasks and executors, the worst first within each.
func Diagnose(in *Input, c Config) Report {
	x := newIndex(in)
	var out []Finding
	out = append(out, jobRules(in, x)...)
	out = append(out, stageRules(in, x, c)...)
	out = append(out, taskRules(in, x, c)...)
	out = append(out, executorRules(in, c)...)
	slices.SortStableFunc(out, func(a, b Finding) int {
		if d := cmp.Compare(levelOrder[a.Level], levelOrder[b.Level]); d != 0 {
			return d
		}
		return cmp.Compare(severityOrder[a.Severity], severityOrder[b.Severity])
	})
	kept := make([]Finding, 0, len(out))
	var omitted map[Kind]int
	perKind := make(map[Kind]int)
	for _, f := range out {
		if perKind[f.Kind] >= c.MaxFindingsPerKind {
			if omitted == nil {
				omitted = make(map[Kind]int)
			}
			omitted[f.Kind]++
			continue
		}
		perKind[f.Kind]++
		kept = append(kept, f)
	}
	r := Report{Findings: kept, Omitted: omitted, Read: Read{
		Jobs: len(in.Jobs), Stages: len(in.Stages), StagesSummarized: len(in.Summaries),
		TaskLists: len(in.Slowest) + len(in.Failed), Executors: len(in.Executors), SQL: len(in.SQL),
	}}
	for _, ts := range in.Slowest {
		r.Read.Tasks += len(ts)
	}
	for _, ts := range in.Failed {
		r.Read.Tasks += len(ts)
	}
	return r
}

// index links stages to jobs and jobs to SQL executions.
type index struct {
	jobOfStage map[int]int
	sqlOfJob   map[int]int64
}

func newIndex(in *Input) *index {
	x := &index{jobOfStage: make(map[int]int), sqlOfJob: make(map[int]int64)}
	for _, j := range in.Jobs {
		for _, s := range j.StageIDs {
			if _, ok := x.jobOfStage[s]; !ok {
				x.jobOfStage[s] = j.JobID
			}
		}
	}
	for _, q := range in.SQL {
		for _, ids := range [][]int{q.RunningJobIDs, q.SuccessJobIDs, q.FailedJobIDs} {
			for _, j := range ids {
				x.sqlOfJob[j] = q.ID
			}
		}
	}
	return x
}

// sqlOfStage is the SQL execution a stage ran for, if any.
func (x *index) sqlOfStage(stageID int) (int64, bool) {
	j, ok := x.jobOfStage[stageID]
	if !ok {
		return 0, false
	}
	q, ok := x.sqlOfJob[j]
	return q, ok
}
