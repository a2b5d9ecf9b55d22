package diagnosis

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// The types below are the parts of Spark's REST answers (status/api/v1,
// api.scala) the rules read, field names as Spark writes them; checked
// against real answers of Spark 3.5.9 and 4.0.5 in testdata/. Fields Spark
// leaves out decode to their zero value.

// Job is one element of /applications/<id>/jobs (JobData).
type Job struct {
	JobID             int       `json:"jobId"`
	Name              string    `json:"name"`
	Description       string    `json:"description"`
	SubmissionTime    SparkTime `json:"submissionTime"`
	CompletionTime    SparkTime `json:"completionTime"`
	StageIDs          IDs       `json:"stageIds"`
	Status            string    `json:"status"` // RUNNING, SUCCEEDED, FAILED, UNKNOWN
	NumTasks          int       `json:"numTasks"`
	NumActiveTasks    int       `json:"numActiveTasks"`
	NumCompletedTasks int       `json:"numCompletedTasks"`
	NumSkippedTasks   int       `json:"numSkippedTasks"`
	NumFailedTasks    int       `json:"numFailedTasks"`
	NumKilledTasks    int       `json:"numKilledTasks"`
	NumFailedStages   int       `json:"numFailedStages"`
}

// Stage is one element of /applications/<id>/stages (StageData, without
// details).
type Stage struct {
	Status                string    `json:"status"` // ACTIVE, COMPLETE, FAILED, PENDING, SKIPPED
	StageID               int       `json:"stageId"`
	AttemptID             int       `json:"attemptId"`
	NumTasks              int       `json:"numTasks"`
	NumActiveTasks        int       `json:"numActiveTasks"`
	NumCompleteTasks      int       `json:"numCompleteTasks"`
	NumFailedTasks        int       `json:"numFailedTasks"`
	NumKilledTasks        int       `json:"numKilledTasks"`
	SubmissionTime        SparkTime `json:"submissionTime"`
	FirstTaskLaunchedTime SparkTime `json:"firstTaskLaunchedTime"`
	CompletionTime        SparkTime `json:"completionTime"`
	FailureReason         string    `json:"failureReason"`
	ExecutorRunTime       int64     `json:"executorRunTime"` // ms, summed over tasks
	JVMGCTime             int64     `json:"jvmGcTime"`       // ms, summed over tasks
	MemoryBytesSpilled    int64     `json:"memoryBytesSpilled"`
	DiskBytesSpilled      int64     `json:"diskBytesSpilled"`
	InputBytes            int64     `json:"inputBytes"`
	ShuffleReadBytes      int64     `json:"shuffleReadBytes"`
	ShuffleWriteBytes     int64     `json:"shuffleWriteBytes"`
	Name                  string    `json:"name"`
	Description           string    `json:"description"`
}

// Key names the stage attempt.
func (s *Stage) Key() StageKey { return StageKey{s.StageID, s.AttemptID} }

// StageKey names one attempt of one stage.
type StageKey struct {
	StageID   int `json:"stage_id"`
	AttemptID int `json:"attempt_id"`
}

func (k StageKey) String() string { return fmt.Sprintf("%d.%d", k.StageID, k.AttemptID) }

// TaskSummary is /stages/<id>/<attempt>/taskSummary?quantiles=...
// (TaskMetricDistributions): for each metric, its value at each of
// Quantiles, over the stage's successful tasks.
type TaskSummary struct {
	Quantiles          Values `json:"quantiles"`
	Duration           Values `json:"duration"`        // ms
	ExecutorRunTime    Values `json:"executorRunTime"` // ms
	JVMGCTime          Values `json:"jvmGcTime"`       // ms
	SchedulerDelay     Values `json:"schedulerDelay"`  // ms
	MemoryBytesSpilled Values `json:"memoryBytesSpilled"`
	DiskBytesSpilled   Values `json:"diskBytesSpilled"`
	ShuffleReadMetrics struct {
		ReadBytes   Values `json:"readBytes"`
		ReadRecords Values `json:"readRecords"`
	} `json:"shuffleReadMetrics"`
	ShuffleWriteMetrics struct {
		WriteBytes   Values `json:"writeBytes"`
		WriteRecords Values `json:"writeRecords"`
	} `json:"shuffleWriteMetrics"`
}

// at returns the value of metric at quantile q, if the summary has it.
func (t *TaskSummary) at(metric []float64, q float64) (float64, bool) {
	for i, v := range t.Quantiles {
		if v == q && i < len(metric) {
			return metric[i], true
		}
	}
	return 0, false
}

// Task is one element of /stages/<id>/<attempt>/taskList (TaskData).
type Task struct {
	TaskID         int64        `json:"taskId"`
	Index          int          `json:"index"`
	Attempt        int          `json:"attempt"`
	LaunchTime     SparkTime    `json:"launchTime"`
	Duration       int64        `json:"duration"` // ms
	ExecutorID     string       `json:"executorId"`
	Host           string       `json:"host"`
	Status         string       `json:"status"` // SUCCESS, FAILED, KILLED, RUNNING
	TaskLocality   string       `json:"taskLocality"`
	ErrorMessage   string       `json:"errorMessage"`
	SchedulerDelay int64        `json:"schedulerDelay"`
	TaskMetrics    *TaskMetrics `json:"taskMetrics"`
}

// TaskMetrics is the part of a task's metrics the rules quote.
type TaskMetrics struct {
	ExecutorRunTime    int64 `json:"executorRunTime"`
	JVMGCTime          int64 `json:"jvmGcTime"`
	MemoryBytesSpilled int64 `json:"memoryBytesSpilled"`
	DiskBytesSpilled   int64 `json:"diskBytesSpilled"`
	ShuffleReadMetrics struct {
		LocalBytesRead  int64 `json:"localBytesRead"`
		RemoteBytesRead int64 `json:"remoteBytesRead"`
	} `json:"shuffleReadMetrics"`
	ShuffleWriteMetrics struct {
		BytesWritten int64 `json:"bytesWritten"`
	} `json:"shuffleWriteMetrics"`
}

// Executor is one element of /applications/<id>/allexecutors
// (ExecutorSummary), which lists removed executors too.
type Executor struct {
	ID             string    `json:"id"`
	HostPort       string    `json:"hostPort"`
	IsActive       bool      `json:"isActive"`
	TotalCores     int       `json:"totalCores"`
	ActiveTasks    int       `json:"activeTasks"`
	FailedTasks    int       `json:"failedTasks"`
	CompletedTasks int       `json:"completedTasks"`
	TotalDuration  int64     `json:"totalDuration"` // ms, summed over tasks
	TotalGCTime    int64     `json:"totalGCTime"`   // ms, summed over tasks
	AddTime        SparkTime `json:"addTime"`
	RemoveTime     SparkTime `json:"removeTime"`
	RemoveReason   string    `json:"removeReason"`
}

// SQLExecution is one element of /applications/<id>/sql?details=false
// (ExecutionData).
type SQLExecution struct {
	ID             int64     `json:"id"`
	Status         string    `json:"status"` // RUNNING, COMPLETED, FAILED
	Description    string    `json:"description"`
	SubmissionTime SparkTime `json:"submissionTime"`
	Duration       int64     `json:"duration"` // ms
	RunningJobIDs  IDs       `json:"runningJobIds"`
	SuccessJobIDs  IDs       `json:"successJobIds"`
	FailedJobIDs   IDs       `json:"failedJobIds"`
	ErrorMessage   string    `json:"errorMessage"`
}

// sparkTimeLayout is how Spark's REST API writes dates.
const sparkTimeLayout = "2006-01-02T15:04:05.000GMT"

// A driver's answer is anyone's, and a list of numbers decodes to four
// times its bytes and more: IDs and Values are read only up to MaxIDs and
// MaxValues numbers, and refused beyond.

// IDs is a list of job or stage ids.
type IDs []int

// Values is a metric's value at each quantile asked for.
type Values []float64

// MaxIDs bounds one list of ids (a job's stages, a query's jobs), and
// MaxValues one metric's values (one per quantile asked for).
const (
	MaxIDs    = 100_000
	MaxValues = 64
)

// ErrTooMany is a list of numbers longer than its bound.
var ErrTooMany = errors.New("more numbers than a list of them holds")

// UnmarshalJSON reads at most MaxIDs ids.
func (l *IDs) UnmarshalJSON(b []byte) error {
	return decodeNumbers(b, (*[]int)(l), MaxIDs)
}

// UnmarshalJSON reads at most MaxValues values.
func (l *Values) UnmarshalJSON(b []byte) error {
	return decodeNumbers(b, (*[]float64)(l), MaxValues)
}

// decodeNumbers decodes b, a JSON array of numbers (or null), into l,
// refusing more than limit: counted first, by their commas, the slice is
// then made to size.
func decodeNumbers[T int | float64](b []byte, l *[]T, limit int) error {
	n := bytes.Count(b, []byte(",")) + 1
	if n > limit {
		return fmt.Errorf("%w: %d, over %d", ErrTooMany, n, limit)
	}
	if *l == nil {
		*l = make([]T, 0, n)
	}
	return json.Unmarshal(b, l)
}

// SparkTime is a date as Spark's REST API writes it
// ("2026-12-01T09:46:17.775GMT"); zero when absent.
type SparkTime struct{ time.Time }

// UnmarshalJSON reads Spark's date string; null or an unreadable date
// leave the zero time (a missing date must not fail a whole diagnosis).
func (t *SparkTime) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return nil
	}
	if v, err := time.Parse(sparkTimeLayout, s); err == nil {
		t.Time = v
	}
	return nil
}

// MarshalJSON writes the date back as Spark does.
func (t SparkTime) MarshalJSON() ([]byte, error) {
	if t.IsZero() {
		return []byte("null"), nil
	}
	return json.Marshal(t.UTC().Format(sparkTimeLayout))
}
