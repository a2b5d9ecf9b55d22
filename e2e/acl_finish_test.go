//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// notYet is the verdict of an answer that says "not known yet": the
// self-reloading 503 of an app whose ACLs are unread or that waits for its
// History Server.
const notYet = "status 503"

// checkFinished stops the apps whose lists name groups or "*" and asks the
// matrix again from the moment the History Server lists them, as fast as it
// can, until every answer is final: each answer must be Spark's own verdict
// (the History Server's, asked with doAs) or "not yet", never the opposite.
// This is issue 10's "never a wrong no": a user in a listed group once got
// 403s here while the gateway had not read the finished apps' ACLs. It
// stops drivers, so it runs last.
func (e *aclEnv) checkFinished(t *testing.T) {
	ctx := ctxFor(t, 4*time.Minute)
	var apps []*aclApp
	for _, key := range []string{"C", "E", "G"} {
		apps = append(apps, e.app(key))
	}
	var wg sync.WaitGroup
	errs := make([]error, len(apps))
	for i, a := range apps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = a.Driver.Stop(ctx); errs[i] == nil {
				errs[i] = e.hs.WaitApp(ctx, a.ID, true)
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("finishing app %s: %v", apps[i].Key, err)
		}
	}
	listed := time.Now()

	// got[user][app] is every verdict in the order asked, page and REST
	// alternating. Each user asks in its own goroutine, so the first
	// answers come while the gateway may still be reading the lists.
	got := make([]map[string][]string, len(aclUsers))
	rounds := make([]int, len(aclUsers))
	errs = make([]error, len(aclUsers))
	for i, u := range aclUsers {
		got[i] = map[string][]string{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := e.clients[u.Name]
			for settled := false; !settled; {
				if ctx.Err() != nil {
					errs[i] = fmt.Errorf("%s: answers not final %v after the listing: %v", u.Name, time.Since(listed).Round(time.Millisecond), got[i])
					return
				}
				rounds[i]++
				settled = true
				for _, a := range apps {
					verdicts, err := e.askJobs(ctx, c, a.ID)
					if err != nil {
						errs[i] = err
						return
					}
					for _, v := range verdicts {
						got[i][a.Key] = append(got[i][a.Key], v)
						settled = settled && v != notYet
					}
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("answers final %v after the History Server listed %d apps (rounds per user: %v)",
		time.Since(listed).Round(time.Millisecond), len(apps), rounds)

	var b strings.Builder
	for ui, u := range aclUsers {
		for _, a := range apps {
			finished := *a
			finished.History = true
			want, source, err := e.expectation(ctx, &finished, u)
			if err != nil {
				t.Fatal(err)
			}
			seq := got[ui][a.Key]
			fmt.Fprintf(&b, "%-13s %-3s %-37s %-6s %s\n", u.Name, a.Key, a.Rule, verdictWord(want), runs(seq))
			for i, v := range seq {
				if v != verdictWord(want) && v != notYet {
					what := "page"
					if i%2 == 1 {
						what = "REST"
					}
					t.Errorf("%s on finished app %s (%s), %s answer %d of %d: gateway %s; want %s (from %s) or %s",
						u.Name, a.Key, a.Rule, what, i/2+1, len(seq)/2, v, verdictWord(want), source, notYet)
				}
			}
		}
	}
	t.Log("\nuser          app app ACLs                              expect answers from the History Server's listing on\n" + b.String())
}

// askJobs asks the gateway for an app's jobs page (following redirects
// that stay in it) and its REST jobs, and returns the two verdicts.
func (e *aclEnv) askJobs(ctx context.Context, c *http.Client, id string) ([]string, error) {
	page, err := e.getInGateway(ctx, c, "/app/"+id+"/jobs/")
	if err != nil {
		return nil, err
	}
	rest, err := Get(ctx, c, e.gw.URL+"/api/v1/applications/"+id+"/jobs", nil)
	if err != nil {
		return nil, err
	}
	return []string{page.Verdict(), rest.Verdict()}, nil
}

// runs writes a sequence of verdicts as runs: "status 503 ×3, allow ×9".
func runs(seq []string) string {
	var parts []string
	for i := 0; i < len(seq); {
		j := i
		for j < len(seq) && seq[j] == seq[i] {
			j++
		}
		parts = append(parts, fmt.Sprintf("%s ×%d", seq[i], j-i))
		i = j
	}
	return strings.Join(parts, ", ")
}
