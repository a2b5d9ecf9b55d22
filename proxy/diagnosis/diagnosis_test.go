package diagnosis

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden reports in testdata/golden")

// load reads a captured app (testdata/<dir>) the way the gateway fetches
// it: summaries only for SummaryTargets, task lists only for
// TaskListTargets (the failed tasks of a stage taken from its captured
// list, which holds all of them in these small stages).
func load(t testing.TB, dir string) *Input {
	t.Helper()
	in := &Input{Summaries: map[StageKey]*TaskSummary{}, Slowest: map[StageKey][]Task{}, Failed: map[StageKey][]Task{}}
	read := func(name string, v any) bool {
		b, err := os.ReadFile(filepath.Join("testdata", dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			return false
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s/%s: %v", dir, name, err)
		}
		return true
	}
	read("jobs.json", &in.Jobs)
	read("stages.json", &in.Stages)
	read("allexecutors.json", &in.Executors)
	read("sql.json", &in.SQL)
	if len(in.Jobs) == 0 || len(in.Stages) == 0 || len(in.Executors) == 0 {
		t.Fatalf("%s: jobs, stages or executors missing", dir)
	}
	c := DefaultConfig()
	for _, k := range SummaryTargets(in.Stages, c) {
		var s TaskSummary
		if read(fmt.Sprintf("taskSummary_%d_%d.json", k.StageID, k.AttemptID), &s) {
			in.Summaries[k] = &s
		}
	}
	for _, tq := range TaskListTargets(in, c) {
		var ts []Task
		if !read(fmt.Sprintf("taskList_%d_%d.json", tq.Stage.StageID, tq.Stage.AttemptID), &ts) {
			continue
		}
		if tq.Failed {
			in.Failed[tq.Stage] = slices.DeleteFunc(ts, func(t Task) bool { return t.Status != "FAILED" })
		} else {
			in.Slowest[tq.Stage] = ts
		}
	}
	// Finished apps: time stands still after their last stage.
	for _, s := range in.Stages {
		if s.CompletionTime.After(in.Now) {
			in.Now = s.CompletionTime.Time
		}
	}
	return in
}

type want struct {
	kind  Kind
	stage int // -1: any
}

func kinds(r Report) []want {
	var out []want
	for _, f := range r.Findings {
		w := want{f.Kind, -1}
		if f.Stage != nil {
			w.stage = f.Stage.StageID
		}
		out = append(out, w)
	}
	return out
}

func TestDiagnoseCaptured(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		dir  string
		want []want
	}{
		{"3.5.9-healthy", nil},
		{"3.5.9-skew", []want{{KindTaskDurationSkew, 1}, {KindShuffleSkew, 1}}},
		{"4.0.5-skew", []want{{KindTaskDurationSkew, 1}, {KindShuffleSkew, 1}}},
		{"4.0.5-fail", []want{{KindJobFailed, -1}}},
		{"3.5.9-spill-fail", []want{{KindJobFailed, -1}, {KindSpill, 0}}},
		{"3.5.9-gc", []want{{KindGCPressure, -1}}},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			t.Parallel()
			r := Diagnose(load(t, tc.dir), DefaultConfig())
			if got := kinds(r); !slices.Equal(got, tc.want) {
				t.Errorf("Diagnose(%s) = %v; want %v\n%s", tc.dir, got, tc.want, dump(r))
			}
			golden(t, tc.dir, r)
		})
	}
}

// TestDiagnoseCapturedDetails checks what the findings on real data say.
func TestDiagnoseCapturedDetails(t *testing.T) {
	t.Parallel()
	r := Diagnose(load(t, "3.5.9-skew"), DefaultConfig())
	f := r.Findings[0]
	if f.Level != LevelTask || f.Page != "stages/stage/?id=1&attempt=0" || f.Metrics["max_ms"] != 17653 || f.Metrics["median_ms"] != 1462 {
		t.Errorf("duration skew finding = %+v", f)
	}
	if !strings.Contains(f.Seen, "the longest is task 8 (index 0) on executor driver") || !strings.Contains(f.Seen, "shuffle read 35.9 MiB") {
		t.Errorf("duration skew Seen = %q; want the slowest task and its shuffle read", f.Seen)
	}
	if !slices.ContainsFunc(f.Remedies, func(s string) bool { return strings.Contains(s, "salting") }) ||
		!slices.ContainsFunc(f.Remedies, func(s string) bool { return strings.Contains(s, "spark.sql.adaptive.skewJoin.enabled") }) {
		t.Errorf("skew remedies = %q", f.Remedies)
	}
	if r.Read.Tasks == 0 || r.Read.StagesSummarized != 2 {
		t.Errorf("Read = %+v", r.Read)
	}

	r = Diagnose(load(t, "4.0.5-fail"), DefaultConfig())
	f = r.Findings[0]
	if f.Severity != Critical || f.Page != "jobs/job/?id=1" || len(f.Messages) != 1 ||
		!strings.Contains(f.Messages[0], "ValueError: e2e: task 3 fails on purpose") ||
		!strings.HasPrefix(f.Messages[0], "Job aborted due to stage failure: Task 3 in stage 2.0 failed 1 times") {
		t.Errorf("job finding = %+v", f)
	}
}

func dump(r Report) string {
	b, _ := json.MarshalIndent(r, "", "  ")
	return string(b)
}

func golden(t *testing.T, name string, r Report) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name+".json")
	got := dump(r) + "\n"
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if string(b) != got {
		t.Errorf("report of %s differs from %s (run with -update):\n%s", name, path, got)
	}
}

// TestDiagnoseVariants crafts each finding from the healthy capture, and
// one just below each threshold, which must stay quiet.
func TestDiagnoseVariants(t *testing.T) {
	t.Parallel()
	const hot = 1 // the 8-task reduce stage of the healthy capture
	k := StageKey{hot, 0}
	stage := func(in *Input) *Stage {
		for i := range in.Stages {
			if in.Stages[i].StageID == hot {
				return &in.Stages[i]
			}
		}
		t.Fatal("no stage 1")
		return nil
	}
	for _, tc := range []struct {
		name   string
		mutate func(in *Input)
		want   []want
	}{
		{"duration skew", func(in *Input) {
			in.Summaries[k].Duration = []float64{4000, 4500, 30000, 60000}
		}, []want{{KindTaskDurationSkew, hot}}},
		{"duration ratio below threshold", func(in *Input) {
			in.Summaries[k].Duration = []float64{4000, 4500, 15000, 19999}
		}, nil},
		{"duration excess below threshold", func(in *Input) {
			in.Summaries[k].Duration = []float64{100, 200, 9000, 9999}
		}, nil},
		{"shuffle write skew", func(in *Input) {
			in.Summaries[k].ShuffleWriteMetrics.WriteBytes = []float64{1 << 20, 1 << 20, 1 << 20, 64 << 20}
		}, []want{{KindShuffleSkew, hot}}},
		{"shuffle skew too small to matter", func(in *Input) {
			in.Summaries[k].ShuffleReadMetrics.ReadBytes = []float64{1 << 10, 1 << 10, 1 << 10, 15 << 20}
		}, nil},
		{"spill", func(in *Input) {
			stage(in).DiskBytesSpilled, stage(in).MemoryBytesSpilled = 3<<30, 9<<30
		}, []want{{KindSpill, hot}}},
		{"spill below threshold", func(in *Input) {
			stage(in).DiskBytesSpilled = 1<<20 - 1
		}, nil},
		{"retried stage attempt", func(in *Input) {
			s := *stage(in)
			s.AttemptID, s.Status, s.FailureReason = 1, "FAILED", "org.apache.spark.shuffle.FetchFailedException: Failed to connect to host-7:7337\n\tat x"
			in.Stages = append(in.Stages, s)
		}, []want{{KindStageFailed, hot}}},
		{"failed tasks retried", func(in *Input) {
			stage(in).NumFailedTasks = 2
			in.Failed[k] = []Task{
				{TaskID: 9, Status: "FAILED", ErrorMessage: "java.lang.OutOfMemoryError: Java heap space\n\tat a.b"},
				{TaskID: 10, Status: "FAILED", ErrorMessage: "java.lang.OutOfMemoryError: Java heap space\n\tat a.b"},
			}
		}, []want{{KindTaskFailures, hot}}},
		{"scheduler delay", func(in *Input) {
			in.Summaries[k].SchedulerDelay = []float64{1500, 1600, 1700, 1800}
		}, []want{{KindSchedulerDelay, hot}}},
		{"scheduler delay short", func(in *Input) {
			in.Summaries[k].SchedulerDelay = []float64{499, 499, 499, 499}
			in.Summaries[k].Duration = []float64{600, 600, 600, 600}
		}, nil},
		{"locality ANY", func(in *Input) {
			stage(in).InputBytes = 10 << 30
			ts := in.Slowest[k]
			if len(ts) == 0 {
				ts = make([]Task, 8)
			}
			for i := range ts {
				ts[i].TaskLocality = "ANY"
			}
			in.Slowest[k] = ts
		}, []want{{KindLocalityAny, hot}}},
		{"overall GC", func(in *Input) {
			stage(in).JVMGCTime = 20_000 // of the stages' 75 s of task time
		}, []want{{KindGCPressure, -1}}},
		{"overall GC from the stages, not the executors' totals", func(in *Input) {
			in.Executors[0].TotalDuration, in.Executors[0].TotalGCTime = 600_000, 90_000
		}, nil},
		{"overall GC from the executors when no stage reports run time", func(in *Input) {
			for i := range in.Stages {
				in.Stages[i].ExecutorRunTime, in.Stages[i].JVMGCTime = 0, 0
			}
			in.Executors[0].TotalDuration, in.Executors[0].TotalGCTime = 600_000, 90_000
		}, []want{{KindGCPressure, -1}}},
		{"GC below the floor of task time", func(in *Input) {
			for i := range in.Stages {
				in.Stages[i].ExecutorRunTime /= 2 // 37.7 s in all
				in.Stages[i].JVMGCTime = in.Stages[i].ExecutorRunTime / 2
			}
		}, nil},
		{"GC per executor", func(in *Input) {
			in.Executors = []Executor{
				{ID: "1", IsActive: true, TotalDuration: 600_000, TotalGCTime: 300_000},
				{ID: "2", IsActive: true, TotalDuration: 600_000, TotalGCTime: 1_000},
			}
		}, []want{{KindExecutorGC, -1}}}, // the app's tasks: 1.7 % (its stages)
		{"executor lost", func(in *Input) {
			in.Executors = append(in.Executors,
				Executor{ID: "3", HostPort: "host-3:40000", RemoveReason: "Worker lost", FailedTasks: 2},
				Executor{ID: "4", HostPort: "host-4:40000", RemoveReason: "Executor killed by driver."},
			)
		}, []want{{KindExecutorRemoved, -1}}},
		{"SQL failed", func(in *Input) {
			in.SQL[0].Status, in.SQL[0].ErrorMessage = "FAILED", "org.apache.spark.SparkArithmeticException: [DIVIDE_BY_ZERO] Division by zero."
		}, []want{{KindSQLFailed, -1}}},
		{"slow running stage", func(in *Input) {
			base := stage(in)
			for i := range 3 {
				s := *base
				s.StageID = 100 + i
				s.Name = "foreachBatch at stream.py:9"
				s.SubmissionTime.Time = in.Now.Add(-time.Hour + time.Duration(i)*time.Minute)
				s.CompletionTime.Time = s.SubmissionTime.Add(20 * time.Second)
				in.Stages = append(in.Stages, s)
			}
			s := *base
			s.StageID, s.Status, s.Name = 200, "ACTIVE", "foreachBatch at stream.py:9"
			s.SubmissionTime.Time = in.Now.Add(-5 * time.Minute)
			in.Stages = append(in.Stages, s)
		}, []want{{KindSlowStage, 200}}},
		{"running stage within its siblings' spread", func(in *Input) {
			base := stage(in)
			for i := range 3 {
				s := *base
				s.StageID = 100 + i
				s.Name = "foreachBatch at stream.py:9"
				s.SubmissionTime.Time = in.Now.Add(-time.Hour)
				s.CompletionTime.Time = s.SubmissionTime.Add(2 * time.Minute)
				in.Stages = append(in.Stages, s)
			}
			s := *base
			s.StageID, s.Status, s.Name = 200, "ACTIVE", "foreachBatch at stream.py:9"
			s.SubmissionTime.Time = in.Now.Add(-5 * time.Minute)
			in.Stages = append(in.Stages, s)
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := load(t, "3.5.9-healthy")
			if in.Summaries[k] == nil {
				t.Fatal("healthy capture: no summary of stage 1")
			}
			tc.mutate(in)
			r := Diagnose(in, DefaultConfig())
			if got := kinds(r); !slices.Equal(got, tc.want) {
				t.Errorf("Diagnose = %v; want %v\n%s", got, tc.want, dump(r))
			}
			for _, f := range r.Findings {
				if f.Seen == "" || f.Why == "" || len(f.Remedies) == 0 || f.Page == "" || f.Title == "" {
					t.Errorf("finding %s lacks a part: %+v", f.Kind, f)
				}
			}
		})
	}
}

// TestDiagnoseOrder: jobs, then stages, tasks, executors; critical first.
func TestDiagnoseOrder(t *testing.T) {
	t.Parallel()
	in := load(t, "4.0.5-fail")
	in.Executors = append(in.Executors, Executor{ID: "9", RemoveReason: "Worker lost"})
	in.Stages[0].DiskBytesSpilled = 1 << 30
	in.Summaries[in.Stages[0].Key()] = &TaskSummary{Quantiles: []float64{0.5, 0.75, 0.95, 1}, Duration: []float64{1000, 1000, 1000, 60000}}
	r := Diagnose(in, DefaultConfig())
	var levels []Level
	for _, f := range r.Findings {
		levels = append(levels, f.Level)
	}
	if want := []Level{LevelJob, LevelStage, LevelTask, LevelExecutor}; !slices.Equal(levels, want) {
		t.Errorf("levels = %v; want %v", levels, want)
	}
}

// TestFindingsCapped: beyond max_findings_per_kind, findings are counted.
func TestFindingsCapped(t *testing.T) {
	t.Parallel()
	in := load(t, "3.5.9-healthy")
	in.Executors = nil
	for i := range 25 {
		in.Executors = append(in.Executors, Executor{ID: fmt.Sprint(i), HostPort: "h:1", RemoveReason: "Worker lost"})
	}
	r := Diagnose(in, DefaultConfig())
	if len(r.Findings) != 10 || r.Omitted[KindExecutorRemoved] != 15 {
		t.Errorf("%d findings, omitted %v; want 10 and 15 omitted", len(r.Findings), r.Omitted)
	}
}

func TestThresholdsConfigurable(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	c.DurationSkewMinExcess = time.Second
	c.DurationSkewRatio = 1.2
	r := Diagnose(load(t, "3.5.9-healthy"), c)
	if got := kinds(r); !slices.Contains(got, want{KindTaskDurationSkew, 1}) {
		t.Errorf("with duration_skew_ratio 1.2: %v; want the reduce stage's 5.5 s against 4.4 s flagged", got)
	}
}

func TestPlanBounds(t *testing.T) {
	t.Parallel()
	var stages []Stage
	for i := range 500 {
		stages = append(stages, Stage{StageID: i, Status: "COMPLETE", NumTasks: 10000, NumCompleteTasks: 10000, NumFailedTasks: i % 2, ExecutorRunTime: int64(i), InputBytes: 1})
	}
	c := DefaultConfig()
	got := SummaryTargets(stages, c)
	if len(got) != c.MaxStageSummaries || got[0].StageID != 499 {
		t.Errorf("SummaryTargets: %d targets, first %v; want %d, the most task time first", len(got), got[0], c.MaxStageSummaries)
	}
	in := &Input{Stages: stages}
	tl := TaskListTargets(in, c)
	if len(tl) != c.MaxTaskLists {
		t.Errorf("TaskListTargets: %d; want %d", len(tl), c.MaxTaskLists)
	}
	if q := tl[0].Query(c.TaskListLength); q != "length=20&status=failed" {
		t.Errorf("Query = %q", q)
	}
}

func TestConfigValues(t *testing.T) {
	t.Parallel()
	v := DefaultConfig().Values()
	if v["duration_skew_ratio"] != "5" || v["duration_skew_min_excess"] != "10s" || v["gc_share"] != "0.1" || len(v) < 20 {
		t.Errorf("Values() = %v", v)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	if errs := c.Validate(); len(errs) != 0 {
		t.Fatalf("defaults invalid: %v", errs)
	}
	c.GCShare = 2
	c.TaskListLength = -1
	errs := c.Validate()
	if len(errs) != 2 || !strings.Contains(errs[0].Error(), "diagnosis.") {
		t.Errorf("Validate = %v; want two errors naming their keys", errs)
	}
}

func TestShortMessage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"java.lang.OutOfMemoryError: Java heap space\n\tat a.b(C.java:1)", "java.lang.OutOfMemoryError: Java heap space"},
		{"org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n  File \"x\"\nValueError: boom\n\n\tat a", "org.apache.spark.api.python.PythonException: Traceback (most recent call last): … ValueError: boom"},
		{"Job aborted\nCaused by: java.io.IOException: disk full\n\tat x", "Job aborted … Caused by: java.io.IOException: disk full"},
	} {
		if got := shortMessage(tc.in); got != tc.want {
			t.Errorf("shortMessage(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

func TestSummarize(t *testing.T) {
	t.Parallel()
	s := Summarize(load(t, "3.5.9-healthy"), DefaultConfig())
	if s.ActiveJobs != 0 || s.RunningTasks != 0 || s.ActiveExecutors != 1 || s.Progress != -1 || len(s.Badges) != 0 || s.Score() != 0 {
		t.Errorf("healthy, finished: %+v", s)
	}
	in := load(t, "4.0.5-fail")
	in.Jobs = append(in.Jobs, Job{JobID: 9, Status: "RUNNING", NumTasks: 200, NumCompletedTasks: 50, NumSkippedTasks: 50})
	in.Stages = append(in.Stages, Stage{StageID: 9, Status: "ACTIVE", NumActiveTasks: 7})
	in.Executors = append(in.Executors, Executor{ID: "1", RemoveReason: "Worker lost"}, Executor{ID: "2", RemoveReason: "Worker lost"})
	s = Summarize(in, DefaultConfig())
	want := []Badge{{KindJobFailed, Critical, 1}, {KindExecutorRemoved, Warning, 2}}
	if s.ActiveJobs != 1 || s.RunningTasks != 7 || s.FailedTasks != 1 || s.Progress != 0.5 || !slices.Equal(s.Badges, want) || s.Score() != 10200 {
		t.Errorf("Summarize = %+v; want 1 active job half done, 7 running tasks, badges %v", s, want)
	}
}
