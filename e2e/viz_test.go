//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"
)

// sqlExecution is what the SQL REST API says of one query's plan.
type sqlExecution struct {
	ID     int    `json:"id"`
	Status string `json:"status"`
	Nodes  []struct {
		NodeID   int    `json:"nodeId"`
		NodeName string `json:"nodeName"`
	} `json:"nodes"`
	Edges []struct {
		From int `json:"fromId"`
		To   int `json:"toId"`
	} `json:"edges"`
}

// getGatewayJSON GETs a gateway path with c and decodes its JSON into v.
func getGatewayJSON(ctx context.Context, c *http.Client, u string, v any) error {
	a, err := Get(ctx, c, u, nil)
	if err != nil {
		return err
	}
	if a.Status != http.StatusOK {
		return fmt.Errorf("GET %s: %d %.200s", u, a.Status, a.Body)
	}
	if err := json.Unmarshal(a.Body, v); err != nil {
		return fmt.Errorf("GET %s: %w (%.200s)", u, err, a.Body)
	}
	return nil
}

// vizPlan counts what Spark's spark-sql-viz.js (dagre-d3) drew of a plan:
// operator nodes, WholeStageCodegen clusters and edges.
const vizPlan = `(() => {
	const svg = document.querySelector("#plan-viz-graph svg");
	if (!svg || svg.querySelectorAll("g.node").length === 0) return "";
	return JSON.stringify({nodes: svg.querySelectorAll("g.node").length,
		clusters: svg.querySelectorAll("g.cluster").length,
		edges: svg.querySelectorAll("g.edgePath").length});
})()`

// vizTimeline returns the ids vis.js drew in the timeline container sel
// for items of class kind, read from their "(Job N)" or "(Stage N.A)"
// labels, once it has drawn any, and how many executor events it drew
// (point events: vis.js draws each as a box, a line and a dot, all with
// the item's class; the box counts).
func vizTimeline(sel, kind, label string) string {
	return `(() => {
	const items = document.querySelectorAll(` + strconv.Quote(sel+" .vis-item."+kind) + `);
	if (items.length === 0) return "";
	const ids = [];
	for (const it of items) { const m = it.textContent.match(` + label + `); ids.push(m ? Number(m[1]) : -1); }
	return JSON.stringify({ids: ids, executors: document.querySelectorAll(` + strconv.Quote(sel+" .vis-item.vis-box.executor") + `).length});
})()`
}

// checkGatewayViz renders, through the gateway, the SQL plan DAG of the
// app's biggest query and the job and stage event timelines in Chromium,
// and checks what Spark's JavaScript drew against the REST API (also
// through the gateway): the plan's nodes and edges, the jobs, a job's
// stages and the executors.
func (s *suite) checkGatewayViz(t *testing.T, gw *Gateway, c *http.Client, d *Driver) {
	ctx := ctxFor(t, 4*time.Minute)
	t0 := time.Now()
	b, err := NewBrowser(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	base, _ := url.Parse(gw.URL)
	if err := b.SetCookies(gw.URL, c.Jar.Cookies(base)); err != nil {
		t.Fatal(err)
	}
	prefix := gw.URL + "/app/" + d.AppID
	api := gw.URL + "/api/v1/applications/" + d.AppID

	t.Run("sql", func(t *testing.T) {
		var execs []sqlExecution
		if err := getGatewayJSON(ctx, c, api+"/sql?details=true&planDescription=false", &execs); err != nil {
			t.Fatal(err)
		}
		var big *sqlExecution
		for i := range execs {
			if execs[i].Status == "COMPLETED" && (big == nil || len(execs[i].Nodes) > len(big.Nodes)) {
				big = &execs[i]
			}
		}
		if big == nil || len(big.Nodes) < 5 {
			t.Fatalf("no completed SQL execution with a plan of 5 nodes or more among %d", len(execs))
		}
		clusters := 0
		for _, n := range big.Nodes {
			if regexp.MustCompile(`^WholeStageCodegen \(\d+\)$`).MatchString(n.NodeName) {
				clusters++
			}
		}
		out, err := b.Poll(fmt.Sprintf("%s/SQL/execution/?id=%d", prefix, big.ID), "", vizPlan, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		var got struct{ Nodes, Clusters, Edges int }
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatal(err)
		}
		t.Logf("SQL execution %d: REST %d nodes (%d WholeStageCodegen) and %d edges; SVG %d nodes, %d clusters, %d edges",
			big.ID, len(big.Nodes), clusters, len(big.Edges), got.Nodes, got.Clusters, got.Edges)
		if got.Nodes+got.Clusters != len(big.Nodes) || got.Clusters != clusters || got.Edges != len(big.Edges) {
			t.Errorf("SQL plan drawn with %d nodes + %d clusters and %d edges; the REST API has %d nodes (%d of them WholeStageCodegen) and %d edges",
				got.Nodes, got.Clusters, got.Edges, len(big.Nodes), clusters, len(big.Edges))
		}
	})

	type job struct {
		JobID    int    `json:"jobId"`
		Status   string `json:"status"`
		StageIDs []int  `json:"stageIds"`
	}
	jobIDs := func() []int {
		var jobs []job
		if err := getGatewayJSON(ctx, c, api+"/jobs", &jobs); err != nil {
			t.Fatal(err)
		}
		ids := make([]int, 0, len(jobs))
		for _, j := range jobs {
			ids = append(ids, j.JobID)
		}
		slices.Sort(ids)
		return ids
	}
	var execs []struct {
		ID string `json:"id"`
	}
	if err := getGatewayJSON(ctx, c, api+"/allexecutors", &execs); err != nil {
		t.Fatal(err)
	}

	t.Run("job timeline", func(t *testing.T) {
		// The stream adds jobs all the time: the drawn jobs must hold every
		// job listed before the page loaded and none listed after.
		before := jobIDs()
		out, err := b.Poll(prefix+"/jobs/", `localStorage.setItem("expand-application-timeline", "true")`,
			vizTimeline("#application-timeline", "job", `/\(Job (\d+)\)\s*$/`), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		after := jobIDs()
		var got struct {
			IDs       []int
			Executors int
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatal(err)
		}
		slices.Sort(got.IDs)
		t.Logf("application timeline: %d jobs drawn (REST: %d before, %d after), %d executor items (REST: %d executors)",
			len(got.IDs), len(before), len(after), got.Executors, len(execs))
		for _, id := range before {
			if _, ok := slices.BinarySearch(got.IDs, id); !ok {
				t.Errorf("job %d (in the REST API before the page loaded) is not on the timeline %v", id, got.IDs)
			}
		}
		for _, id := range got.IDs {
			if _, ok := slices.BinarySearch(after, id); !ok {
				t.Errorf("the timeline draws job %d, which the REST API does not list: %v", id, after)
			}
		}
		// Each executor (the driver in local mode) has one "added" item;
		// none has been removed.
		if got.Executors != len(execs) {
			t.Errorf("timeline draws %d executor items; the REST API lists %d executors", got.Executors, len(execs))
		}
	})

	t.Run("stage timeline", func(t *testing.T) {
		// The job with the most stages that ran (skipped stages are not drawn).
		var jobs []job
		if err := getGatewayJSON(ctx, c, api+"/jobs?status=succeeded", &jobs); err != nil {
			t.Fatal(err)
		}
		best, bestRan := -1, []int(nil)
		for _, j := range jobs {
			var ran []int
			for _, sid := range j.StageIDs {
				var st []struct {
					Status string `json:"status"`
				}
				if err := getGatewayJSON(ctx, c, fmt.Sprintf("%s/stages/%d", api, sid), &st); err != nil {
					t.Fatal(err)
				}
				if len(st) > 0 && st[0].Status != "SKIPPED" && st[0].Status != "PENDING" {
					ran = append(ran, sid)
				}
			}
			if len(ran) > len(bestRan) {
				best, bestRan = j.JobID, ran
			}
		}
		if len(bestRan) < 2 {
			t.Fatalf("no succeeded job ran two stages or more")
		}
		out, err := b.Poll(fmt.Sprintf("%s/jobs/job/?id=%d", prefix, best), `localStorage.setItem("expand-job-timeline", "true")`,
			vizTimeline("#job-timeline", "stage", `/\(Stage (\d+)\.\d+\)\s*$/`), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		var got struct{ IDs []int }
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatal(err)
		}
		slices.Sort(got.IDs)
		slices.Sort(bestRan)
		t.Logf("job %d timeline: stages %v drawn; REST: %v ran", best, got.IDs, bestRan)
		if !slices.Equal(got.IDs, bestRan) {
			t.Errorf("job %d timeline draws stages %v; the REST API says %v ran", best, got.IDs, bestRan)
		}
	})
	t.Logf("viz checks took %v", time.Since(t0).Round(time.Millisecond))
	_ = RecordFigure(s.outDir, "viz_checks_"+d.Opts.Name, time.Since(t0))
}
