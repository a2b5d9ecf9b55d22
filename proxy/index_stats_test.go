package proxy

import (
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sparkgate/sparkgate/proxy/discovery"
)

// swapAuthz is fakeAuthz that, the first time it judges app id `at` for
// listing, has discovery publish a new snapshot: the moment an index view
// has filtered its apps but not yet read their live stats.
type swapAuthz struct {
	fakeAuthz
	once sync.Once
	at   string
	swap func()
}

func (z *swapAuthz) Authorize(id Identity, app *discovery.App, hist *discovery.HistoryRef, action Action) Verdict {
	v := z.fakeAuthz.Authorize(id, app, hist, action)
	if app.ID == z.at {
		z.once.Do(z.swap)
	}
	return v
}

// TestIndexLiveStatsOfTheAppJudged: an index row's live stats must come
// from the app that was judged for the row, not from whatever app holds
// the id when the stats are read. A driver found by a probe can claim an
// id before its carolsApp app (a YARN app, say) gets it; when the
// ResourceManager names the carolsApp app, discovery replaces the claimant at
// that id. An index view that judged the claimant's app (its owner's own)
// and then looked the id up again read the carolsApp app's driver (active
// jobs, running and failed tasks, executors, progress, finding badges)
// into the claimant's row, though its owner may not view it.
func TestIndexLiveStatsOfTheAppJudged(t *testing.T) {
	t.Parallel()
	mine := newRESTFiles(t, "3.5.9-healthy") // mallory's driver
	victim := newRESTFiles(t, "4.0.5-fail")  // carol's, 1 failed task
	u := func(f *restFiles) *url.URL { v, _ := url.Parse(f.URL); return v }
	const id = "application_1700000000000_0042"
	start := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	z := &swapAuthz{at: id}
	h := newHarness(t, func(o *Options) { o.Authz = z })
	claimant := &discovery.App{ID: id, Name: "claim", User: "mallory", StartTime: start, State: discovery.Running, UIURL: u(mine), Source: "probe:10.0.0.9:4040"}
	carolsApp := &discovery.App{ID: id, Name: "payroll-stream", User: "carol", StartTime: start, State: discovery.Running, UIURL: u(victim), Source: "yarn:http://rm:8088"}
	h.reg.Store(discovery.NewSnapshot([]*discovery.App{claimant}))
	z.swap = func() { h.reg.Store(discovery.NewSnapshot([]*discovery.App{carolsApp})) }

	_, body := h.do(t, "GET", "/", "mallory", nil)
	i := strings.Index(body, `href="/app/`+id+`/"`)
	if i < 0 {
		t.Fatalf("index lacks mallory's own app %s:\n%s", id, body)
	}
	row := body[i:]
	row = row[:strings.Index(row, "</tr>")]
	if strings.Contains(row, "failed task") || strings.Contains(row, "job_failed") {
		t.Errorf("mallory's row shows carol's driver's stats:\n%s", row)
	}
	if n := len(victim.requests()); n > 0 {
		t.Errorf("an index view of mallory's app read carol's driver %d times: %v", n, victim.requests())
	}
}
