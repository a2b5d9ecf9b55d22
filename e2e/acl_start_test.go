//go:build e2e

package e2e

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// settleRounds is how many rounds each user asks in checkStarted once the
// gateway has read the driver's lists.
const settleRounds = 10

// checkStarted starts one more driver while every user is signed in, its
// lists naming a group and a user (view.acls.groups=eng, modify.acls=bob),
// and from the moment its app id is known (its first log lines; the
// gateway follows the same log directory) each user asks for its page and
// REST jobs in its own goroutine, as fast as it can, until settleRounds
// rounds after the gateway has read the driver's lists. This is the moment
// a live driver is first found: the gateway registers it before it has
// read its environment, and must answer "not yet" (503), never let anyone
// in on lists it has not read. The History Server may list the running
// app (its in-progress event log) before the driver is found: until then
// the bookmark leads to its view, by its rules (its admins are in). So
// every answer must be the driver's own verdict (doAs), the History
// Server's (doAs) for the running app, or not yet; "deny" is also what an
// id the gateway does not know yet gets, so a user both let in must not
// see it after her first allow; and the last rounds are the driver's
// verdict.
func (e *aclEnv) checkStarted(t *testing.T) {
	ctx := ctxFor(t, 3*time.Minute)
	a := &aclApp{Key: "S", Rule: "started late: view.acls.groups=eng modify.acls=bob",
		Confs: map[string]string{"spark.acls.enable": "true", "spark.ui.view.acls.groups": "eng", "spark.modify.acls": "bob"}}
	d, err := StartDriver(ctx, e.root, e.home, DriverOptions{
		Name: "acl-S", EventDir: filepath.Join(e.dir, "events"), LogDir: filepath.Join(e.dir, "driver-logs"),
		WorkDir: filepath.Join(e.dir, "work"), Confs: a.Confs, Light: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Kill)
	known := time.Now()
	a.Driver, a.ID = d, d.AppID

	// The gateway logs when it has read the driver's lists; from then on
	// each user asks settleRounds more rounds, and for at least a second
	// (the registry publishes changes within 50 ms).
	var envRead atomic.Int64
	go func() {
		re := regexp.MustCompile(`driver environment read.*` + regexp.QuoteMeta(a.ID))
		if _, at, err := e.gw.Watch.WaitFor(ctx, re, e.gw.Proc.Exited); err == nil {
			envRead.Store(at.UnixNano())
		}
	}()
	// got[user] is every verdict in the order asked, page and REST
	// alternating.
	got := make([][]string, len(aclUsers))
	errs := make([]error, len(aclUsers))
	var wg sync.WaitGroup
	for i, u := range aclUsers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := e.clients[u.Name]
			for after := 0; ; {
				if at := envRead.Load(); at != 0 {
					if after++; after > settleRounds && time.Since(time.Unix(0, at)) > time.Second {
						return
					}
				}
				if ctx.Err() != nil {
					errs[i] = fmt.Errorf("%s: the gateway did not read the driver's lists in time (%v after the app id was known): %s", u.Name, time.Since(known).Round(time.Millisecond), runs(got[i]))
					return
				}
				verdicts, err := e.askJobs(ctx, c, a.ID)
				if err != nil {
					errs[i] = err
					return
				}
				got[i] = append(got[i], verdicts...)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("the gateway read the driver's lists %v after the app id %s was known",
		time.Unix(0, envRead.Load()).Sub(known).Round(time.Millisecond), a.ID)

	if a.Owner, err = driverOwner(ctx, d); err != nil {
		t.Fatal(err)
	}
	inHistory := *a
	inHistory.History = true
	var b strings.Builder
	for ui, u := range aclUsers {
		live, source, err := e.expectation(ctx, a, u)
		if err != nil {
			t.Fatal(err)
		}
		hist, histSource, err := e.expectation(ctx, &inHistory, u)
		if err != nil {
			t.Fatal(err)
		}
		seq := got[ui]
		fmt.Fprintf(&b, "%-13s %-6s %-6s %s\n", u.Name, verdictWord(live), verdictWord(hist), runs(seq))
		seenAllow := false
		for i, v := range seq {
			what := "page"
			if i%2 == 1 {
				what = "REST"
			}
			var wrong bool
			switch v {
			case "allow":
				wrong, seenAllow = !live && !hist, true
			case "deny": // unknown, or refused
				wrong = seenAllow && live && hist
			case notYet:
			default:
				wrong = true
			}
			if wrong {
				t.Errorf("%s on the just-started app (%s), %s answer %d of %d: gateway %s; want %s (driver: %s) or, while only the History Server serves the running app, %s (%s), or not yet",
					u.Name, a.Rule, what, i/2+1, len(seq)/2, v, verdictWord(live), source, verdictWord(hist), histSource)
			}
		}
		for _, v := range seq[max(0, len(seq)-2*settleRounds):] {
			if v != verdictWord(live) {
				t.Errorf("%s's last %d rounds on the just-started app: %s; want %s throughout (the driver's verdict)", u.Name, settleRounds, runs(seq[max(0, len(seq)-2*settleRounds):]), verdictWord(live))
				break
			}
		}
	}
	t.Log("\nuser          driver history answers from the moment the app id was known on\n" + b.String())
}
