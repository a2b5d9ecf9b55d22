package diagnosis

import (
	"fmt"
)

// skewRemedies are the usual cures of a hot key.
var skewRemedies = []string{
	"find the hot key(s): a groupBy/join key with one value far more frequent (often null or a default)",
	"salting: add a random suffix to the hot key, aggregate or join on the salted key, then combine",
	"two-phase aggregation: aggregate on (key, salt) first, then on key",
	"for joins: spark.sql.adaptive.enabled and spark.sql.adaptive.skewJoin.enabled (on by default in Spark 3.2+) split skewed partitions; broadcast the small side if it fits",
	"filter out or handle null keys separately",
}

// durationSkew reports the median and maximum task duration of a stage
// whose longest task is far longer than its median one.
func durationSkew(sum *TaskSummary, c Config) ([2]float64, bool) {
	med, ok1 := sum.at(sum.Duration, 0.5)
	top, ok2 := sum.at(sum.Duration, 1.0)
	if !ok1 || !ok2 {
		return [2]float64{}, false
	}
	excess := float64(c.DurationSkewMinExcess.Milliseconds())
	return [2]float64{med, top}, top-med >= excess && top >= c.DurationSkewRatio*med
}

// shuffleSkew reports the median and maximum per-task shuffle read (or,
// for a map stage, write) bytes of a skewed stage, and which of the two.
func shuffleSkew(sum *TaskSummary, c Config) ([2]float64, string, bool) {
	for _, m := range []struct {
		name string
		v    []float64
	}{{"read", sum.ShuffleReadMetrics.ReadBytes}, {"write", sum.ShuffleWriteMetrics.WriteBytes}} {
		med, ok1 := sum.at(m.v, 0.5)
		top, ok2 := sum.at(m.v, 1.0)
		if ok1 && ok2 && top >= float64(c.ShuffleSkewMinBytes) && top >= c.ShuffleSkewRatio*med {
			return [2]float64{med, top}, m.name, true
		}
	}
	return [2]float64{}, "", false
}

// taskRules reads the task summaries and task lists: duration and shuffle
// skew, failed tasks, scheduler delay, locality.
func taskRules(in *Input, x *index, c Config) []Finding {
	var out []Finding
	for i := range in.Stages {
		s := &in.Stages[i]
		k := s.Key()
		slow := in.Slowest[k]
		if sum := in.Summaries[k]; sum != nil {
			if v, ok := durationSkew(sum, c); ok {
				f := stageFinding(s, x, KindTaskDurationSkew, Warning,
					fmt.Sprintf("Stage %d: one task ran %.0f× longer than the median", s.StageID, v[1]/max1(v[0])),
					fmt.Sprintf("in %s the longest task took %s against a median of %s (%.0f×; 75th percentile %s, 95th %s)%s",
						stageLabel(s), msStr(v[1]), msStr(v[0]), v[1]/max1(v[0]),
						msStr(q(sum, sum.Duration, 0.75)), msStr(q(sum, sum.Duration, 0.95)), slowestTask(slow)),
					"the stage (and every stage after it) waits for its slowest task: the other cores sit idle while one task works through far more data than the rest, usually because one key holds most of the rows",
					skewRemedies)
				f.Level = LevelTask
				f.Metrics = map[string]float64{"median_ms": v[0], "max_ms": v[1], "ratio": v[1] / max1(v[0])}
				out = append(out, f)
			}
			if v, which, ok := shuffleSkew(sum, c); ok {
				f := stageFinding(s, x, KindShuffleSkew, Warning,
					fmt.Sprintf("Stage %d: one task's shuffle %s is %.0f× the median", s.StageID, which, v[1]/max1(v[0])),
					fmt.Sprintf("in %s the largest task's shuffle %s was %s against a median of %s (%.0f×)",
						stageLabel(s), which, bytesStr(v[1]), bytesStr(v[0]), v[1]/max1(v[0])),
					"one partition holds far more of the shuffled data than the others: its task runs longest, needs the most memory (and spills first), and the stage waits for it",
					skewRemedies)
				f.Level = LevelTask
				f.Metrics = map[string]float64{"median_bytes": v[0], "max_bytes": v[1], "ratio": v[1] / max1(v[0])}
				out = append(out, f)
			}
			if s.NumCompleteTasks >= c.SkewMinTasks {
				medDelay, ok1 := sum.at(sum.SchedulerDelay, 0.5)
				medDur, ok2 := sum.at(sum.Duration, 0.5)
				if ok1 && ok2 && medDur > 0 && medDelay >= float64(c.SchedulerDelayMin.Milliseconds()) && medDelay >= c.SchedulerDelayShare*medDur {
					f := stageFinding(s, x, KindSchedulerDelay, Info,
						fmt.Sprintf("Stage %d: tasks wait %s of their time to be scheduled", s.StageID, pct(medDelay/medDur)),
						fmt.Sprintf("in %s the median task waited %s in scheduling against a median duration of %s (%s)",
							stageLabel(s), msStr(medDelay), msStr(medDur), pct(medDelay/medDur)),
						"scheduler delay is time a task spends being shipped to and from its executor, not computing: tasks too short for their overhead, large closures or results, or a busy driver",
						[]string{
							"fewer, larger tasks (fewer partitions; spark.sql.files.maxPartitionBytes)",
							"broadcast large objects instead of capturing them in closures; collect less to the driver",
							"give the driver more cores or memory if it is busy (GC on the driver shows on the Executors page)",
						})
					f.Level = LevelTask
					f.Metrics = map[string]float64{"median_scheduler_delay_ms": medDelay, "median_duration_ms": medDur}
					out = append(out, f)
				}
			}
		}
		if failed := in.Failed[k]; s.Status != "FAILED" && s.NumFailedTasks > 0 {
			f := stageFinding(s, x, KindTaskFailures, Warning,
				fmt.Sprintf("Stage %d: %d task attempt(s) failed", s.StageID, s.NumFailedTasks),
				fmt.Sprintf("in %s %d task attempt(s) failed and were retried (%d of %d tasks complete)",
					stageLabel(s), s.NumFailedTasks, s.NumCompleteTasks, s.NumTasks),
				"a failed attempt's work is lost and re-run; failures that repeat (spark.task.maxFailures, default 4) fail the job",
				[]string{
					"read the error messages: the same error on every attempt is a bug or a bad record; errors on one executor or host point to that machine",
					"OutOfMemoryError or a lost container: more memory per task (spark.executor.memory, memoryOverhead, fewer cores per executor) or more partitions",
				})
			f.Level = LevelTask
			for _, t := range failed {
				f.Messages = addMessage(f.Messages, t.ErrorMessage)
			}
			f.Metrics = map[string]float64{"failed_tasks": float64(s.NumFailedTasks)}
			out = append(out, f)
		}
		if s.InputBytes > 0 && len(slow) >= c.SkewMinTasks {
			atAny := 0
			for _, t := range slow {
				if t.TaskLocality == "ANY" {
					atAny++
				}
			}
			if share := float64(atAny) / float64(len(slow)); share > c.LocalityAnyShare {
				f := stageFinding(s, x, KindLocalityAny, Info,
					fmt.Sprintf("Stage %d: most tasks read their input from another node", s.StageID),
					fmt.Sprintf("in %s, %d of the %d longest tasks ran at locality ANY (%s); the stage read %s of input",
						stageLabel(s), atAny, len(slow), pct(share), bytesStr(float64(s.InputBytes))),
					"at locality ANY a task runs on a node that does not hold its input block, so the input crosses the network",
					[]string{
						"raise spark.locality.wait (default 3s) if executors are busy when tasks are scheduled",
						"run executors on the nodes that hold the data (more executors, or dynamic allocation with locality-aware requests)",
					})
				f.Level = LevelTask
				f.Metrics = map[string]float64{"any_tasks": float64(atAny), "tasks_sampled": float64(len(slow)), "any_share": share}
				out = append(out, f)
			}
		}
	}
	return out
}

// slowestTask describes the longest task of a task list, if any.
func slowestTask(tasks []Task) string {
	if len(tasks) == 0 {
		return ""
	}
	t := tasks[0]
	for _, u := range tasks[1:] {
		if u.Duration > t.Duration {
			t = u
		}
	}
	s := fmt.Sprintf("; the longest is task %d (index %d) on executor %s", t.TaskID, t.Index, t.ExecutorID)
	if t.Host != "" {
		s += " (" + t.Host + ")"
	}
	if m := t.TaskMetrics; m != nil {
		if r := m.ShuffleReadMetrics.LocalBytesRead + m.ShuffleReadMetrics.RemoteBytesRead; r > 0 {
			s += ", shuffle read " + bytesStr(float64(r))
		}
		if m.DiskBytesSpilled > 0 {
			s += ", spilled " + bytesStr(float64(m.DiskBytesSpilled)) + " to disk"
		}
	}
	return s
}

func q(sum *TaskSummary, metric []float64, at float64) float64 {
	v, _ := sum.at(metric, at)
	return v
}

// max1 avoids dividing by zero: a median of 0 ms or 0 bytes counts as 1.
func max1(v float64) float64 {
	if v < 1 {
		return 1
	}
	return v
}
