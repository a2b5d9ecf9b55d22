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

// checkAttempts gives the History Server apps of two attempts whose event
// logs disagree, as anyone who can write to the event-log directory can
// make them: a private log (the history app F's: its owner,
// spark.ui.view.acls=dave) and a newer one of mallory's, open to everyone
// (spark.ui.view.acls=*). App A has attempts 1 (F's) and 2 (mallory's);
// app B has F's log without an attempt id and mallory's as attempt 1. The
// History Server judges each attempt by its own log, and for a path that
// names no attempt serves the attempt without an id (B's private one).
// Through the gateway every user gets the History Server's own answer for
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
	now := time.Now().UnixMilli()
	appA, appB := fmt.Sprintf("application_%d_0001", now), fmt.Sprintf("application_%d_0002", now)
	open := map[string]string{"spark.acls.enable": "true", "spark.ui.view.acls": "*"}
	type attempt struct {
		app, id string
		*aclApp
	}
	mk := func(app, id, rule, owner string, confs map[string]string) attempt {
		key := app
		if id != "" {
			key += "/" + id
		}
		return attempt{app, id, &aclApp{Key: key, Rule: rule, History: true, ID: key, Owner: owner, Confs: confs}}
	}
	attempts := []attempt{
		mk(appA, "1", "A/1: F's log, view.acls=dave", f.Owner, f.Confs),
		mk(appA, "2", "A/2: mallory's, view.acls=*", "mallory", open),
		mk(appB, "", "B (no attempt named): F's log without id", f.Owner, f.Confs),
		mk(appB, "1", "B/1: mallory's, view.acls=*", "mallory", open),
	}
	for i, a := range attempts {
		if err := WriteAttemptLog(events, f.ID, lines, AttemptLog{AppID: a.app, Attempt: a.id, User: a.Owner,
			ShiftMS: int64(i%2) * 60_000, Props: maps.Clone(a.Confs)}); err != nil {
			t.Fatal(err)
		}
	}
	for app, ids := range map[string][]string{appA: {"1", "2"}, appB: {"", "1"}} {
		if err := e.waitAttempts(ctx, app, ids); err != nil {
			t.Fatal(err)
		}
	}
	var table strings.Builder
	fmt.Fprintf(&table, "%-13s", "user")
	for _, a := range attempts {
		fmt.Fprintf(&table, " %-44s", a.Rule)
	}
	fmt.Fprintf(&table, " %s\n", "every attempt's event log: A, B")
	for _, u := range aclUsers {
		c := e.clients[u.Name]
		all := map[string]bool{appA: true, appB: true}
		fmt.Fprintf(&table, "%-13s", u.Name)
		for _, a := range attempts {
			want, source, err := e.expectation(ctx, a.aclApp, u)
			if err != nil {
				t.Fatal(err)
			}
			all[a.app] = all[a.app] && want
			fmt.Fprintf(&table, " %-44s", fmt.Sprintf("%s (%s)", verdictWord(want), source))
			for _, path := range []string{"/history/" + a.ID + "/jobs/", "/api/v1/applications/" + a.ID + "/environment"} {
				got, err := e.settled(ctx, c, path)
				if err != nil {
					t.Fatal(err)
				}
				if got.Verdict() != verdictWord(want) {
					t.Errorf("%s on %s, %s: gateway %s; want %s (from %s)", u.Name, a.Rule, path, got.Verdict(), verdictWord(want), source)
				}
			}
		}
		for _, app := range []string{appA, appB} {
			logs, err := e.settled(ctx, c, "/api/v1/applications/"+app+"/logs")
			if err != nil {
				t.Fatal(err)
			}
			if logs.Verdict() != verdictWord(all[app]) {
				t.Errorf("%s, every attempt's event log of %s: gateway %s; want %s (view on both attempts: %t)",
					u.Name, app, logs.Verdict(), verdictWord(all[app]), all[app])
			}
			if all[app] && logs.ContentType != "application/octet-stream" {
				t.Errorf("%s, every attempt's event log of %s: %s; want the zip", u.Name, app, logs.ContentType)
			}
			fmt.Fprintf(&table, " %s", logs.Verdict())
		}
		table.WriteString("\n")
	}
	t.Logf("apps A=%s B=%s; gateway verdicts as expected unless reported above:\n%s", appA, appB, table.String())
}

// waitAttempts waits until the History Server lists the attempts of id,
// and the gateway lists the app and serves each attempt that has an id to
// a gateway admin: it may have read the server's list before the last
// attempt was in it.
func (e *aclEnv) waitAttempts(ctx context.Context, id string, attempts []string) error {
	n := len(attempts)
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
	served := func() (bool, error) {
		for _, att := range attempts {
			if att == "" {
				continue
			}
			a, err := e.settled(ctx, ops, "/api/v1/applications/"+id+"/"+att+"/environment")
			if err != nil || a.Status != http.StatusOK {
				return false, err
			}
		}
		return true, nil
	}
	for {
		apps, err := e.gw.Apps(ctx, ops)
		for _, a := range apps {
			if a.ID == id && len(a.Attempts) > 0 && a.Attempts[0].Completed {
				ok, serr := served()
				if ok {
					return nil
				}
				err = serr
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the gateway never listed and served every attempt of %s (last error: %s): %w", id, lastErr(err), ctx.Err())
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
