//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// checkAttempts gives the History Server an app of two attempts whose
// event logs disagree: attempt 1 is the history app F's log (its owner,
// spark.ui.view.acls=dave), attempt 2, newer, is mallory's, open to
// everyone (spark.ui.view.acls=*), as anyone who can write to the event
// log directory can make it. The History Server judges each attempt by
// its own log; through the gateway every user gets the same answer for
// each attempt's page and REST, and the download of every attempt's event
// log only with view on them all.
func (e *aclEnv) checkAttempts(t *testing.T) {
	ctx := ctxFor(t, 3*time.Minute)
	var f *aclApp
	for _, a := range e.apps {
		if a.History {
			f = a
		}
	}
	events := filepath.Join(e.dir, "events")
	lines, err := ReadEventLog(events, f.ID)
	if err != nil {
		t.Fatal(err)
	}
	id := fmt.Sprintf("application_%d_0001", time.Now().UnixMilli())
	attempts := []*aclApp{
		{Key: "F/1", Rule: "attempt 1: F's log, view.acls=dave", History: true, ID: id + "/1", Owner: f.Owner, Confs: f.Confs},
		{Key: "F/2", Rule: "attempt 2: mallory's, view.acls=*", History: true, ID: id + "/2", Owner: "mallory",
			Confs: map[string]string{"spark.acls.enable": "true", "spark.ui.view.acls": "*"}},
	}
	for i, a := range attempts {
		if err := WriteAttemptLog(events, f.ID, lines, AttemptLog{AppID: id, Attempt: fmt.Sprint(i + 1), User: a.Owner,
			ShiftMS: int64(i) * 60_000, Props: maps.Clone(a.Confs)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.waitAttempts(ctx, id, 2); err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	fmt.Fprintf(&table, "%-13s %-44s %-44s %s\n", "user", attempts[0].Rule, attempts[1].Rule, "every attempt's event log")
	for _, u := range aclUsers {
		c := e.clients[u.Name]
		all := true
		fmt.Fprintf(&table, "%-13s", u.Name)
		for _, a := range attempts {
			want, source, err := e.expectation(ctx, a, u)
			if err != nil {
				t.Fatal(err)
			}
			all = all && want
			fmt.Fprintf(&table, " %-44s", fmt.Sprintf("%s (%s)", verdictWord(want), source))
			for _, path := range []string{"/history/" + a.ID + "/jobs/", "/api/v1/applications/" + a.ID + "/environment"} {
				got, err := e.settled(ctx, c, path)
				if err != nil {
					t.Fatal(err)
				}
				if got.Verdict() != verdictWord(want) {
					t.Errorf("%s on %s (%s), %s: gateway %s; want %s (from %s)", u.Name, a.Key, a.Rule, path, got.Verdict(), verdictWord(want), source)
				}
			}
		}
		logs, err := e.settled(ctx, c, "/api/v1/applications/"+id+"/logs")
		if err != nil {
			t.Fatal(err)
		}
		if logs.Verdict() != verdictWord(all) {
			t.Errorf("%s, every attempt's event log: gateway %s; want %s (view on both attempts: %t)", u.Name, logs.Verdict(), verdictWord(all), all)
		}
		if all && logs.ContentType != "application/octet-stream" {
			t.Errorf("%s, every attempt's event log: %s; want the zip", u.Name, logs.ContentType)
		}
		fmt.Fprintf(&table, " %s\n", logs.Verdict())
	}
	t.Logf("app %s, gateway verdicts as expected unless reported above:\n%s", id, table.String())
}

// waitAttempts waits until the History Server lists n attempts of id, and
// the gateway serves its newest to a gateway admin.
func (e *aclEnv) waitAttempts(ctx context.Context, id string, n int) error {
	c := &http.Client{Timeout: 5 * time.Second}
	for {
		var app struct {
			Attempts []struct{ Completed bool } `json:"attempts"`
		}
		a, err := Get(ctx, c, e.hs.URL+"/api/v1/applications/"+id, nil)
		if err == nil && a.Status == http.StatusOK && json.Unmarshal(a.Body, &app) == nil && len(app.Attempts) == n {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the History Server never listed %d attempts of %s: %w", n, id, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
	ops, err := SignIn(ctx, e.gw.URL, "ops")
	if err != nil {
		return err
	}
	for {
		apps, err := e.gw.Apps(ctx, ops)
		for _, a := range apps {
			if a.ID == id && len(a.Attempts) > 0 && a.Attempts[0].Completed {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the gateway never listed %s (last error: %s): %w", id, lastErr(err), ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// settled asks the gateway for path, following its redirects, again while
// the answer is "access lists not read yet" (the attempt's ACLs are read
// when the History Server lists it; a request only hurries them).
func (e *aclEnv) settled(ctx context.Context, c *http.Client, path string) (Answer, error) {
	for {
		a, err := e.getInGateway(ctx, c, path)
		if err != nil || a.Status != http.StatusServiceUnavailable {
			return a, err
		}
		select {
		case <-ctx.Done():
			return a, fmt.Errorf("%s: still %d: %w", path, a.Status, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}
