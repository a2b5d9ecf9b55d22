package proxy

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sparkgate/sparkgate/proxy/diagnosis"
)

// bigDriver is a fake driver REST API of an app at Spark's default
// retention: 1000 jobs, 1000 stages of 10,000 tasks each, 200 executors.
// It serves whatever length of task list is asked for (up to the stage's
// 10,000), so the benchmark shows what the cap saves.
func bigDriver(b *testing.B, calls, tasks *atomic.Int64) *httptest.Server {
	var jobs, stages, execs []byte
	{
		var j []diagnosis.Job
		var s []map[string]any
		for i := range 1000 {
			j = append(j, diagnosis.Job{JobID: i, Status: "SUCCEEDED", StageIDs: []int{i}, NumTasks: 10000})
			s = append(s, map[string]any{"stageId": i, "attemptId": 0, "status": "COMPLETE", "numTasks": 10000,
				"numCompleteTasks": 10000, "numFailedTasks": i % 100 / 99, "executorRunTime": i * 1000, "name": "map at job.py:" + strconv.Itoa(i%20)})
		}
		var e []map[string]any
		for i := range 200 {
			e = append(e, map[string]any{"id": strconv.Itoa(i), "isActive": true, "totalDuration": 3_600_000, "totalGCTime": 1000})
		}
		jobs, _ = json.Marshal(j)
		stages, _ = json.Marshal(s)
		execs, _ = json.Marshal(e)
	}
	summary := []byte(`{"quantiles":[0.5,0.75,0.95,1.0],"duration":[1000,1200,2000,90000],"schedulerDelay":[10,10,10,10],
		"shuffleReadMetrics":{"readBytes":[1048576,1048576,2097152,1073741824]},"shuffleWriteMetrics":{"writeBytes":[0,0,0,0]}}`)
	task, _ := json.Marshal(diagnosis.Task{TaskID: 1, Duration: 90000, Status: "SUCCESS", ExecutorID: "7", Host: "host-7", TaskLocality: "NODE_LOCAL",
		TaskMetrics: &diagnosis.TaskMetrics{ExecutorRunTime: 89000}})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		p := r.URL.Path
		switch {
		case strings.HasSuffix(p, "/jobs"):
			_, _ = w.Write(jobs)
		case strings.HasSuffix(p, "/stages"):
			_, _ = w.Write(stages)
		case strings.HasSuffix(p, "/allexecutors"):
			_, _ = w.Write(execs)
		case strings.HasSuffix(p, "/sql"):
			_, _ = w.Write([]byte("[]"))
		case strings.HasSuffix(p, "/taskSummary"):
			_, _ = w.Write(summary)
		case strings.HasSuffix(p, "/taskList"):
			n, _ := strconv.Atoi(r.URL.Query().Get("length"))
			n = min(max(n, 0), 10000)
			tasks.Add(int64(n))
			var sb strings.Builder
			sb.WriteByte('[')
			for i := range n {
				if i > 0 {
					sb.WriteByte(',')
				}
				sb.Write(task)
			}
			sb.WriteByte(']')
			_, _ = w.Write([]byte(sb.String()))
		default:
			http.NotFound(w, r)
		}
	}))
	b.Cleanup(srv.Close)
	return srv
}

// BenchmarkDiagnosisCompute is the whole cost of one uncached diagnosis
// of a large app through the gateway's upstream transport: REST calls,
// decoding and rules. It reports the upstream calls and task rows read
// per diagnosis: bounded by diagnosis.max_stage_summaries,
// max_task_lists and task_list_length, not by the app's size.
func BenchmarkDiagnosisCompute(b *testing.B) {
	var calls, tasks atomic.Int64
	srv := bigDriver(b, &calls, &tasks)
	base, _ := url.Parse(srv.URL)
	cfg := diagnosis.DefaultConfig()
	d := newDiagnoser(cfg, newTransport(DefaultConfig()), time.Now)
	src := diagSource{base: base, rest: "/api/v1/applications/app-1", label: "driver", live: true}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		res, err := d.compute(context.Background(), "app-1", src, true)
		if err != nil {
			b.Fatal(err)
		}
		if len(res.report.Findings) == 0 {
			b.Fatal("no finding on a skewed app")
		}
		n++
	}
	b.ReportMetric(float64(calls.Load())/float64(n), "calls/op")
	b.ReportMetric(float64(tasks.Load())/float64(n), "tasks/op")
	if got := tasks.Load() / int64(n); got > int64(cfg.MaxTaskLists*cfg.TaskListLength) {
		b.Fatalf("read %d tasks per diagnosis; the cap is %d", got, cfg.MaxTaskLists*cfg.TaskListLength)
	}
}
