package diagnosis

import (
	"fmt"
	"reflect"
	"time"
)

// Config holds every threshold of the rules and every limit on what a
// diagnosis may fetch, each with the reason for its default. It is the
// "diagnosis:" section of the gateway's configuration. Decode YAML over
// DefaultConfig, then Validate.
type Config struct {
	// SkewMinTasks: stages with fewer successful tasks are not judged for
	// skew, GC share or scheduler delay. Default 4: quantiles of two or
	// three tasks say nothing about a distribution, and a stage of two
	// tasks on two cores has no "others" to wait for.
	SkewMinTasks int `yaml:"skew_min_tasks"`
	// DurationSkewRatio: a stage's longest task at least this many times
	// its median task is skew. Default 5: the factor Spark itself uses to
	// call a partition skewed (spark.sql.adaptive.skewJoin.skewedPartitionFactor).
	DurationSkewRatio float64 `yaml:"duration_skew_ratio"`
	// DurationSkewMinExcess: and the longest task at least this much
	// longer than the median. Default 10s: below that, even a large ratio
	// costs the stage little wall time, and the first wave of tasks that
	// start Python workers or warm up the JIT looks like skew.
	DurationSkewMinExcess time.Duration `yaml:"duration_skew_min_excess"`
	// ShuffleSkewRatio: a stage's largest task shuffle read (or write) at
	// least this many times the median is skew. Default 5, as
	// DurationSkewRatio.
	ShuffleSkewRatio float64 `yaml:"shuffle_skew_ratio"`
	// ShuffleSkewMinBytes: and the largest task reads (or writes) at least
	// this much. Default 16 MiB: a task moves less than that in well under
	// a second on any network, so the imbalance costs nothing.
	ShuffleSkewMinBytes int64 `yaml:"shuffle_skew_min_bytes"`
	// GCShare: GC time over this share of task time is GC pressure, per
	// executor and over the app. Default 0.10, the figure the tuning
	// guides (and Spark's own Executors page, which marks an executor's
	// GC time red above 10 %) use.
	GCShare float64 `yaml:"gc_share"`
	// GCMinTaskTime: executors (and apps) with less task time than this
	// are not judged for GC. Default 1m: over a few seconds of tasks, one
	// young collection during JIT warm-up is already 10 %.
	GCMinTaskTime time.Duration `yaml:"gc_min_task_time"`
	// SpillMinBytes: a stage that spilled at least this much to disk is
	// under memory pressure. Default 1 MiB: any spill means execution
	// memory ran out; the floor only keeps a few stray buffers quiet.
	SpillMinBytes int64 `yaml:"spill_min_bytes"`
	// SchedulerDelayShare: a median scheduler delay over this share of
	// the median task duration means tasks wait on the driver rather than
	// run. Default 0.25: tasks that short (or a driver that slow) lose a
	// quarter of the cluster's time to scheduling.
	SchedulerDelayShare float64 `yaml:"scheduler_delay_share"`
	// SchedulerDelayMin: and the median delay is at least this long.
	// Default 500ms: shorter delays are the normal cost of launching a task.
	SchedulerDelayMin time.Duration `yaml:"scheduler_delay_min"`
	// LocalityAnyShare: a stage reading input whose tasks ran at locality
	// ANY more often than this share reads its input over the network.
	// Default 0.5: "mostly".
	LocalityAnyShare float64 `yaml:"locality_any_share"`
	// SlowStageFactor: a running stage that has run this many times longer
	// than the median of its completed siblings (stages from the same line
	// of code, as in every micro-batch of a stream) is far slower than them.
	// Default 3: well outside the normal spread of batch durations.
	SlowStageFactor float64 `yaml:"slow_stage_factor"`
	// SlowStageMinElapsed: and it has run at least this long. Default 1m:
	// a stage that has run less is not worth an alarm yet.
	SlowStageMinElapsed time.Duration `yaml:"slow_stage_min_elapsed"`
	// SlowStageMinSiblings: siblings needed for a median. Default 3.
	SlowStageMinSiblings int `yaml:"slow_stage_min_siblings"`

	// MaxStageSummaries bounds the taskSummary calls of one diagnosis: the
	// stages with the most task time are summarized. Default 30: Spark
	// computes a summary by scanning the stage's tasks, so each call costs
	// the driver in proportion to the stage's size.
	MaxStageSummaries int `yaml:"max_stage_summaries"`
	// IndexStageSummaries bounds the taskSummary calls behind a live app's
	// index row (cached like the rest for cache_ttl): the stages with the
	// most task time, where skew costs the most, so that the index shows
	// skew without reading any task. Default 3.
	IndexStageSummaries int `yaml:"index_stage_summaries"`
	// MaxTaskLists bounds the taskList calls (the worst stages only).
	// Default 6.
	MaxTaskLists int `yaml:"max_task_lists"`
	// TaskListLength bounds the tasks of one taskList call. Default 20: a
	// 10,000-task stage costs 20 rows, and the slowest 20 (or the failed
	// ones) are what a finding quotes.
	TaskListLength int `yaml:"task_list_length"`
	// MaxFindingsPerKind keeps the worst findings of each kind; the rest
	// are counted in Report.Omitted. Default 10: on a cluster of 200
	// executors, ten GC cards and a count read better than two hundred.
	MaxFindingsPerKind int `yaml:"max_findings_per_kind"`
	// CacheTTL is how long a diagnosis is reused for the same app. Default
	// 30s: a reload of the page or an agent polling costs nothing, and a
	// live app's picture is at most this old.
	CacheTTL time.Duration `yaml:"cache_ttl"`
	// FetchTimeout bounds all the REST calls of one diagnosis. Default 30s.
	FetchTimeout time.Duration `yaml:"fetch_timeout"`
}

// benignRemovals are executor remove reasons (prefixes) that are not
// trouble: dynamic allocation releasing an idle executor ("Executor killed
// by driver."), graceful decommissioning, and the app's own shutdown.
var benignRemovals = []string{
	"Executor killed by driver",
	"Executor decommission",
	"Executor is decommissioned",
	"Finished decommissioning",
}

// DefaultConfig returns the configuration with every default applied.
func DefaultConfig() Config {
	var c Config
	c.SetDefaults()
	return c
}

// SetDefaults fills zero fields with their defaults.
func (c *Config) SetDefaults() {
	setInt(&c.SkewMinTasks, 4)
	setFloat(&c.DurationSkewRatio, 5)
	setDur(&c.DurationSkewMinExcess, 10*time.Second)
	setFloat(&c.ShuffleSkewRatio, 5)
	if c.ShuffleSkewMinBytes == 0 {
		c.ShuffleSkewMinBytes = 16 << 20
	}
	setFloat(&c.GCShare, 0.10)
	setDur(&c.GCMinTaskTime, time.Minute)
	if c.SpillMinBytes == 0 {
		c.SpillMinBytes = 1 << 20
	}
	setFloat(&c.SchedulerDelayShare, 0.25)
	setDur(&c.SchedulerDelayMin, 500*time.Millisecond)
	setFloat(&c.LocalityAnyShare, 0.5)
	setFloat(&c.SlowStageFactor, 3)
	setDur(&c.SlowStageMinElapsed, time.Minute)
	setInt(&c.SlowStageMinSiblings, 3)
	setInt(&c.MaxStageSummaries, 30)
	setInt(&c.IndexStageSummaries, 3)
	setInt(&c.MaxTaskLists, 6)
	setInt(&c.TaskListLength, 20)
	setInt(&c.MaxFindingsPerKind, 10)
	setDur(&c.CacheTTL, 30*time.Second)
	setDur(&c.FetchTimeout, 30*time.Second)
}

// Validate reports every problem at once, each naming its key.
func (c *Config) Validate() []error {
	var errs []error
	pos := func(key string, ok bool) {
		if !ok {
			errs = append(errs, fmt.Errorf("diagnosis.%s: must be positive", key))
		}
	}
	pos("skew_min_tasks", c.SkewMinTasks > 0)
	pos("duration_skew_ratio", c.DurationSkewRatio > 1)
	pos("duration_skew_min_excess", c.DurationSkewMinExcess > 0)
	pos("shuffle_skew_ratio", c.ShuffleSkewRatio > 1)
	pos("shuffle_skew_min_bytes", c.ShuffleSkewMinBytes > 0)
	pos("gc_min_task_time", c.GCMinTaskTime > 0)
	pos("spill_min_bytes", c.SpillMinBytes > 0)
	pos("scheduler_delay_min", c.SchedulerDelayMin > 0)
	pos("slow_stage_factor", c.SlowStageFactor > 1)
	pos("slow_stage_min_elapsed", c.SlowStageMinElapsed > 0)
	pos("slow_stage_min_siblings", c.SlowStageMinSiblings > 0)
	pos("max_stage_summaries", c.MaxStageSummaries > 0)
	pos("index_stage_summaries", c.IndexStageSummaries > 0)
	pos("max_task_lists", c.MaxTaskLists > 0)
	pos("task_list_length", c.TaskListLength > 0)
	pos("max_findings_per_kind", c.MaxFindingsPerKind > 0)
	pos("cache_ttl", c.CacheTTL > 0)
	pos("fetch_timeout", c.FetchTimeout > 0)
	for _, s := range []struct {
		key string
		v   float64
	}{{"gc_share", c.GCShare}, {"scheduler_delay_share", c.SchedulerDelayShare}, {"locality_any_share", c.LocalityAnyShare}} {
		if s.v <= 0 || s.v > 1 {
			errs = append(errs, fmt.Errorf("diagnosis.%s: must be in (0, 1], got %v", s.key, s.v))
		}
	}
	if c.TaskListLength > 1000 {
		errs = append(errs, fmt.Errorf("diagnosis.task_list_length: at most 1000, got %d", c.TaskListLength))
	}
	return errs
}

func setInt(p *int, v int) {
	if *p == 0 {
		*p = v
	}
}

func setFloat(p *float64, v float64) {
	if *p == 0 {
		*p = v
	}
}

func setDur(p *time.Duration, v time.Duration) {
	if *p == 0 {
		*p = v
	}
}

// Values lists the settings by their configuration key, each printed as
// in the configuration ("5", "10s", "0.1"), so that a report's reader (a
// person or an agent) knows what its findings were measured against.
func (c Config) Values() map[string]string {
	out := make(map[string]string)
	v := reflect.ValueOf(c)
	for i := range v.NumField() {
		if key := v.Type().Field(i).Tag.Get("yaml"); key != "" {
			out[key] = fmt.Sprint(v.Field(i).Interface())
		}
	}
	return out
}
