package diagnosis

import (
	"fmt"
	"testing"
	"time"
)

// bigInput is an app at Spark's default retention: 1000 jobs, 1000 stages
// of 10,000 tasks, 200 executors (20 removed), 500 SQL queries, with the
// summaries and task lists a diagnosis reads at the default limits.
func bigInput() *Input {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	in := &Input{Now: now, Summaries: map[StageKey]*TaskSummary{}, Slowest: map[StageKey][]Task{}, Failed: map[StageKey][]Task{}}
	for i := range 1000 {
		in.Jobs = append(in.Jobs, Job{JobID: i, Status: "SUCCEEDED", StageIDs: []int{i}, NumTasks: 10000})
		in.Stages = append(in.Stages, Stage{
			StageID: i, Status: "COMPLETE", NumTasks: 10000, NumCompleteTasks: 10000, NumFailedTasks: i % 50 / 49,
			ExecutorRunTime: int64(i) * 1000, Name: fmt.Sprintf("map at job.py:%d", i%20),
			SubmissionTime: SparkTime{now.Add(-time.Hour)}, CompletionTime: SparkTime{now.Add(-time.Hour + time.Minute)},
		})
	}
	for i := range 200 {
		in.Executors = append(in.Executors, Executor{ID: fmt.Sprint(i), IsActive: i >= 20, RemoveReason: "Worker lost", TotalDuration: 3_600_000, TotalGCTime: int64(i) * 3_000})
	}
	for i := range 500 {
		in.SQL = append(in.SQL, SQLExecution{ID: int64(i), Status: "COMPLETED", SuccessJobIDs: []int{2 * i, 2*i + 1}})
	}
	c := DefaultConfig()
	q := []float64{0.5, 0.75, 0.95, 1}
	for _, k := range SummaryTargets(in.Stages, c) {
		s := &TaskSummary{Quantiles: q, Duration: []float64{1000, 1200, 2000, 90000}, SchedulerDelay: []float64{10, 10, 10, 10}}
		s.ShuffleReadMetrics.ReadBytes = []float64{1 << 20, 1 << 20, 2 << 20, 1 << 30}
		in.Summaries[k] = s
	}
	for _, tq := range TaskListTargets(in, c) {
		ts := make([]Task, c.TaskListLength)
		for i := range ts {
			ts[i] = Task{TaskID: int64(i), Duration: int64(90000 - i), Status: "SUCCESS", ErrorMessage: "java.lang.OutOfMemoryError\n\tat x", TaskMetrics: &TaskMetrics{}}
		}
		if tq.Failed {
			in.Failed[tq.Stage] = ts
		} else {
			in.Slowest[tq.Stage] = ts
		}
	}
	return in
}

// BenchmarkDiagnose is the CPU cost of the rules over a large app (the
// REST calls are measured in proxy's BenchmarkDiagnosisCompute).
func BenchmarkDiagnose(b *testing.B) {
	in := bigInput()
	c := DefaultConfig()
	b.ReportAllocs()
	var n int
	for b.Loop() {
		n = len(Diagnose(in, c).Findings)
	}
	b.ReportMetric(float64(n), "findings")
}
