package diagnosis

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// jobRules: failed jobs (with the failure reasons of their stages) and
// failed SQL queries.
func jobRules(in *Input, x *index) []Finding {
	var out []Finding
	failedStages := make(map[int][]*Stage)
	for i := range in.Stages {
		s := &in.Stages[i]
		if s.Status == "FAILED" {
			failedStages[s.StageID] = append(failedStages[s.StageID], s)
		}
	}
	for _, j := range in.Jobs {
		if j.Status != "FAILED" {
			continue
		}
		f := Finding{
			Kind: KindJobFailed, Severity: Critical, Level: LevelJob,
			Title: fmt.Sprintf("Job %d failed", j.JobID),
			Seen: fmt.Sprintf("job %d (%q) failed: %d of its %d tasks failed, %d stage(s) failed",
				j.JobID, clip(firstNonEmpty(j.Description, j.Name), 80), j.NumFailedTasks, j.NumTasks, j.NumFailedStages),
			Why: "the action that started the job got an exception instead of a result; whatever the app does next (retry, give up, write partial output) follows from this error",
			Remedies: []string{
				"read the error below and the failed stage's failed tasks (their executor logs hold the full stack trace)",
				"an error in user code (a bad record, a division by zero, a null) fails every retry: fix the code or filter the data",
				"an executor lost or out of memory shows as ExecutorLostFailure or FetchFailed: see the executor findings",
			},
			Page:    jobPage(j.JobID),
			JobID:   ptr(j.JobID),
			Metrics: map[string]float64{"failed_tasks": float64(j.NumFailedTasks), "tasks": float64(j.NumTasks), "failed_stages": float64(j.NumFailedStages)},
		}
		for _, sid := range j.StageIDs {
			for _, s := range failedStages[sid] {
				f.Messages = addMessage(f.Messages, s.FailureReason)
			}
		}
		if q, ok := x.sqlOfJob[j.JobID]; ok {
			f.SQLID, f.SQLPage = ptr(q), sqlPage(q)
		}
		out = append(out, f)
	}
	for _, q := range in.SQL {
		if q.Status != "FAILED" {
			continue
		}
		f := Finding{
			Kind: KindSQLFailed, Severity: Critical, Level: LevelJob,
			Title: fmt.Sprintf("SQL query %d failed", q.ID),
			Seen: fmt.Sprintf("SQL query %d (%q) failed after %s; failed jobs %v",
				q.ID, clip(q.Description, 80), msStr(float64(q.Duration)), q.FailedJobIDs),
			Why:      "the query returned an error instead of its result",
			Remedies: []string{"read the error and the query's plan; the failed jobs' stages show which step failed"},
			Page:     sqlPage(q.ID),
			SQLID:    ptr(q.ID),
		}
		f.Messages = addMessage(f.Messages, q.ErrorMessage)
		out = append(out, f)
	}
	return out
}

// stageRules: stage attempts that failed although their job did not (a
// retried stage: fetch failures, lost executors), spill, and running
// stages far slower than their siblings.
func stageRules(in *Input, x *index, c Config) []Finding {
	var out []Finding
	failedJobs := make(map[int]bool)
	for _, j := range in.Jobs {
		if j.Status == "FAILED" {
			failedJobs[j.JobID] = true
		}
	}
	for i := range in.Stages {
		s := &in.Stages[i]
		j, inJob := x.jobOfStage[s.StageID]
		// A failed stage of a failed job: the job's finding quotes it.
		if s.Status == "FAILED" && !(inJob && failedJobs[j]) {
			f := stageFinding(s, x, KindStageFailed, Warning,
				fmt.Sprintf("Stage %d attempt %d failed", s.StageID, s.AttemptID),
				fmt.Sprintf("%s failed after %d of %d tasks had completed; %d tasks failed",
					stageLabel(s), s.NumCompleteTasks, s.NumTasks, s.NumFailedTasks),
				"a failed stage attempt is re-run from its last shuffle output: its work is done twice, and repeated failures fail the job",
				[]string{
					"FetchFailed means a shuffle output was lost with its executor: see the removed-executor findings; an external shuffle service or decommissioning keeps shuffle files",
					"read the failure reason and the stage's failed tasks",
				})
			f.Messages = addMessage(f.Messages, s.FailureReason)
			out = append(out, f)
		}
		if s.DiskBytesSpilled >= c.SpillMinBytes {
			f := stageFinding(s, x, KindSpill, Warning,
				fmt.Sprintf("Stage %d spilled %s to disk", s.StageID, bytesStr(float64(s.DiskBytesSpilled))),
				fmt.Sprintf("%s spilled %s to disk (%s in memory before serialization) over %d tasks; it read %s of shuffle and %s of input",
					stageLabel(s), bytesStr(float64(s.DiskBytesSpilled)), bytesStr(float64(s.MemoryBytesSpilled)), s.NumTasks,
					bytesStr(float64(s.ShuffleReadBytes)), bytesStr(float64(s.InputBytes))),
				"tasks ran out of execution memory and wrote their sort or aggregation buffers to disk and read them back: the stage pays for the data twice in disk I/O and serialization",
				[]string{
					"more partitions, so that each task holds less (spark.sql.shuffle.partitions, or repartition; spark.sql.adaptive.coalescePartitions only merges)",
					"more execution memory: a larger spark.executor.memory, or a larger spark.memory.fraction",
					"cache less (or MEMORY_AND_DISK_SER), so that storage does not take execution memory",
					"if one task spills most, it is skew: see the skew findings",
				})
			f.Metrics = map[string]float64{"disk_bytes_spilled": float64(s.DiskBytesSpilled), "memory_bytes_spilled": float64(s.MemoryBytesSpilled)}
			out = append(out, f)
		}
	}
	out = append(out, slowStages(in, x, c)...)
	return out
}

// slowStages finds running stages that have run far longer than the
// completed stages of the same call site (the same stage of every
// micro-batch, or of every iteration of a loop).
func slowStages(in *Input, x *index, c Config) []Finding {
	if in.Now.IsZero() {
		return nil
	}
	done := make(map[string][]time.Duration)
	for i := range in.Stages {
		s := &in.Stages[i]
		if s.Status == "COMPLETE" && !s.SubmissionTime.IsZero() && !s.CompletionTime.IsZero() {
			done[s.Name] = append(done[s.Name], s.CompletionTime.Sub(s.SubmissionTime.Time))
		}
	}
	var out []Finding
	for i := range in.Stages {
		s := &in.Stages[i]
		if s.Status != "ACTIVE" || s.SubmissionTime.IsZero() {
			continue
		}
		sib := done[s.Name]
		if len(sib) < c.SlowStageMinSiblings {
			continue
		}
		slices.Sort(sib)
		med := sib[len(sib)/2]
		elapsed := in.Now.Sub(s.SubmissionTime.Time)
		if elapsed < c.SlowStageMinElapsed || float64(elapsed) < c.SlowStageFactor*float64(med) {
			continue
		}
		f := stageFinding(s, x, KindSlowStage, Warning,
			fmt.Sprintf("Stage %d is running far longer than its siblings", s.StageID),
			fmt.Sprintf("%s has run for %s with %d of %d tasks done (%d running); the %d completed stages from the same code took %s (median)",
				stageLabel(s), msStr(float64(elapsed.Milliseconds())), s.NumCompleteTasks, s.NumTasks, s.NumActiveTasks,
				len(sib), msStr(float64(med.Milliseconds()))),
			"the same code usually finishes much sooner: this run is stuck on something (a straggling task, a lost executor, more data than usual, waiting for resources)",
			[]string{
				"open the stage: a few long-running tasks point to skew or a bad node (spark.speculation re-runs stragglers)",
				"no running tasks points to missing resources: see the executors",
				"more input than usual: check the source of this batch",
			})
		f.Metrics = map[string]float64{"elapsed_ms": float64(elapsed.Milliseconds()), "sibling_median_ms": float64(med.Milliseconds()), "siblings": float64(len(sib))}
		out = append(out, f)
	}
	return out
}

// stageFinding fills what every stage-level finding has.
func stageFinding(s *Stage, x *index, kind Kind, sev Severity, title, seen, why string, remedies []string) Finding {
	k := s.Key()
	f := Finding{Kind: kind, Severity: sev, Level: LevelStage, Title: title, Seen: seen, Why: why, Remedies: remedies, Page: stagePage(k), Stage: &k}
	if j, ok := x.jobOfStage[s.StageID]; ok {
		f.JobID = ptr(j)
	}
	if q, ok := x.sqlOfStage(s.StageID); ok {
		f.SQLID, f.SQLPage = ptr(q), sqlPage(q)
	}
	return f
}

// executorRules: GC pressure over the app and per executor, and executors
// removed for a reason other than dynamic allocation or decommissioning.
func executorRules(in *Input, c Config) []Finding {
	var out []Finding
	dur, gc, withTasks := appGC(in)
	minMs := c.GCMinTaskTime.Milliseconds()
	gcRemedies := []string{
		"create fewer objects: DataFrame operations instead of RDDs of objects, no per-row allocations in UDFs, Kryo serialization for RDDs",
		"more executor memory (spark.executor.memory), or fewer cores per executor so that fewer tasks share one heap",
		"cache less, or serialized (MEMORY_ONLY_SER), so that the old generation holds less",
		"G1 with a larger heap region or an earlier start (-XX:InitiatingHeapOccupancyPercent) in spark.executor.extraJavaOptions",
	}
	if dur >= minMs && float64(gc) >= c.GCShare*float64(dur) {
		share := float64(gc) / float64(dur)
		out = append(out, Finding{
			Kind: KindGCPressure, Severity: Warning, Level: LevelExecutor,
			Title: fmt.Sprintf("GC took %s of task time", pct(share)),
			Seen: fmt.Sprintf("the app's tasks spent %s in garbage collection out of %s of task time (%s) over %d executor(s)",
				msStr(float64(gc)), msStr(float64(dur)), pct(share), max(withTasks, 1)),
			Why:      fmt.Sprintf("above %s, the JVM spends a large part of every task collecting garbage instead of working, and is close to running out of memory", pct(c.GCShare)),
			Remedies: gcRemedies,
			Page:     "executors/",
			Metrics:  map[string]float64{"gc_ms": float64(gc), "task_ms": float64(dur), "gc_share": share},
		})
	}
	if withTasks >= 2 {
		for _, e := range in.Executors {
			if e.TotalDuration < minMs || float64(e.TotalGCTime) < c.GCShare*float64(e.TotalDuration) {
				continue
			}
			share := float64(e.TotalGCTime) / float64(e.TotalDuration)
			out = append(out, Finding{
				Kind: KindExecutorGC, Severity: Warning, Level: LevelExecutor,
				Title: fmt.Sprintf("Executor %s spent %s of task time in GC", e.ID, pct(share)),
				Seen: fmt.Sprintf("executor %s (%s) spent %s in GC out of %s of task time (%s)",
					e.ID, e.HostPort, msStr(float64(e.TotalGCTime)), msStr(float64(e.TotalDuration)), pct(share)),
				Why:        "this executor's tasks spend a large part of their time collecting garbage; if others do not, it holds more data (skew, or cached blocks)",
				Remedies:   gcRemedies,
				Page:       "executors/",
				ExecutorID: e.ID,
				Metrics:    map[string]float64{"gc_ms": float64(e.TotalGCTime), "task_ms": float64(e.TotalDuration), "gc_share": share},
			})
		}
	}
	for _, e := range in.Executors {
		if e.IsActive || e.ID == "driver" || benignRemoval(e.RemoveReason) {
			continue
		}
		sev := Warning
		if e.FailedTasks > 0 {
			sev = Critical
		}
		reason := e.RemoveReason
		if reason == "" {
			reason = "no reason recorded"
		}
		when := ""
		if !e.RemoveTime.IsZero() {
			when = " at " + e.RemoveTime.UTC().Format("15:04:05 UTC")
		}
		f := Finding{
			Kind: KindExecutorRemoved, Severity: sev, Level: LevelExecutor,
			Title: fmt.Sprintf("Executor %s was lost", e.ID),
			Seen: fmt.Sprintf("executor %s (%s) was removed%s: %s; it had completed %d tasks and failed %d",
				e.ID, e.HostPort, when, clip(shortMessage(reason), 300), e.CompletedTasks, e.FailedTasks),
			Why: "its running tasks failed and its cached blocks and shuffle output are gone: stages that need them are re-run",
			Remedies: []string{
				"\"Container killed ... exceeding memory limits\" or exit code 137/143: raise spark.executor.memoryOverhead (off-heap, Python workers) or spark.executor.memory",
				"a worker or node lost: check the cluster manager's logs for that host; spark.decommission.enabled moves shuffle data before planned removals",
				"an external shuffle service (or spark.shuffle.service.enabled on YARN/standalone) keeps shuffle output when an executor goes",
			},
			Page:       "executors/",
			ExecutorID: e.ID,
			Metrics:    map[string]float64{"failed_tasks": float64(e.FailedTasks), "completed_tasks": float64(e.CompletedTasks)},
		}
		out = append(out, f)
	}
	return out
}

func benignRemoval(reason string) bool {
	for _, p := range benignRemovals {
		if strings.HasPrefix(reason, p) {
			return true
		}
	}
	return false
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

func ptr[T any](v T) *T { return &v }

// appGC is the app's GC time and task time in ms, and how many executors
// ran tasks. The times are the stages' sums of their tasks' jvmGcTime and
// executorRunTime: the tasks' own figures, which a driver and a History
// Server report alike. Executors' totalGCTime and totalDuration are not:
// a History Server rebuilds them from the executors' logged peak metrics
// and counts task time again (3.5.9: 7.7 s of GC and 160 s of task time,
// where the same app's tasks logged 42 s and 80 s), so an app would show
// GC pressure while it runs and none once it has finished. They are used
// only when no stage reports run time.
func appGC(in *Input) (dur, gc int64, withTasks int) {
	for _, e := range in.Executors {
		dur += e.TotalDuration
		gc += e.TotalGCTime
		if e.TotalDuration > 0 {
			withTasks++
		}
	}
	var sDur, sGC int64
	for i := range in.Stages {
		sDur += in.Stages[i].ExecutorRunTime
		sGC += in.Stages[i].JVMGCTime
	}
	if sDur > 0 {
		return sDur, sGC, withTasks
	}
	return dur, gc, withTasks
}
