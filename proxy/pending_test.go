package proxy

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/sparkgate/sparkgate/proxy/discovery"
)

// pendingAuthz says "not yet" to everyone: the app's ACLs are unread.
type pendingAuthz struct{}

func (pendingAuthz) Authorize(Identity, *discovery.App, *discovery.HistoryRef, Action) Verdict {
	return Verdict{Pending: true}
}

// TestPendingACLsAnswerNotYet: while an app's ACLs are unread, a user who is
// neither owner nor admin gets a self-reloading 503 that says so (never a
// 403 with reasons from lists that were not read), nothing reaches Spark,
// and discovery is asked to read that app's ACLs first.
func TestPendingACLsAnswerNotYet(t *testing.T) {
	t.Parallel()
	wanted := make(chan string, 4)
	h := newHarness(t, func(o *Options) {
		o.Authz = pendingAuthz{}
		o.WantACLs = func(id string) { wanted <- id }
	})
	for _, p := range []string{"/app/" + appLive + "/jobs/", "/hs/main/history/" + appHistory + "/jobs/", "/api/v1/applications/" + appLive + "/jobs"} {
		resp, body := h.do(t, http.MethodGet, p, "bob", nil)
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Errorf("GET %s = %d (Retry-After %q); want 503 with Retry-After", p, resp.StatusCode, resp.Header.Get("Retry-After"))
		}
		if !strings.Contains(body, "not yet read") || strings.Contains(body, "Access denied") {
			t.Errorf("GET %s: page does not say the ACLs are not read yet:\n%s", p, body)
		}
		select {
		case <-wanted:
		default:
			t.Errorf("GET %s: discovery was not asked for the app's ACLs", p)
		}
	}
	if n := len(h.drv.requests()) + len(h.hs.requests()); n != 0 {
		t.Errorf("upstreams received %d requests; want none", n)
	}
}

// TestProxyDialsPinnedAddress: the proxy dials the address discovery
// verified for a driver's host name, not whatever the name resolves to at
// request time (here it resolves to nothing).
func TestProxyDialsPinnedAddress(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	named, _ := url.Parse("http://driver.invalid:4040")
	h.reg.Store(discovery.NewSnapshot([]*discovery.App{{ID: appLive, User: "alice", State: discovery.Running,
		UIURL: named, Addr: h.drv.url().Host, ACLProps: map[string]string{}}}))
	resp, body := h.do(t, http.MethodGet, "/app/"+appLive+"/jobs/", "alice", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET through a pinned driver = %d; want 200\n%s", resp.StatusCode, body)
	}
	if got := h.drv.last(t).Path; got != "/jobs/" {
		t.Errorf("driver got %q; want /jobs/", got)
	}
}

// TestKillConfirmOfFinishedAppLooksUnknown: the confirmation of a kill on a
// finished app says "nothing to kill" only to a user who may view the app;
// anyone else gets the 404 of an unknown id.
func TestKillConfirmOfFinishedAppLooksUnknown(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(o *Options) { o.Config.Kill = KillModifyACL })
	p := "/app/" + appWaiting + "/jobs/job/kill/?id=1"
	if resp, _ := h.raw(t, http.MethodGet, p, "alice"); resp.StatusCode != http.StatusConflict {
		t.Errorf("owner GET %s = %d; want 409", p, resp.StatusCode)
	}
	if resp, _ := h.raw(t, http.MethodGet, p, "bob"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("non-viewer GET %s = %d; want 404", p, resp.StatusCode)
	}
}
