package discovery

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestDiscovererYARNNameAndQueue: an app found through a ResourceManager
// carries the RM's application name and queue (read from a real RM's
// answer, testdata/yarn-apps-running.json, recorded by e2e TestYARN), and
// a move to another queue reaches the published app.
func TestDiscovererYARNNameAndQueue(t *testing.T) {
	t.Parallel()
	rec, err := os.ReadFile("testdata/yarn-apps-running.json")
	if err != nil {
		t.Fatal(err)
	}
	var parsed struct {
		Apps struct {
			App []struct{ ID, User, Name, Queue string } `json:"app"`
		} `json:"apps"`
	}
	if err := json.Unmarshal(rec, &parsed); err != nil || len(parsed.Apps.App) != 1 {
		t.Fatalf("recorded answer: %v, %d apps; want one", err, len(parsed.Apps.App))
	}
	want := parsed.Apps.App[0]
	if want.Name == "" || want.Queue == "" {
		t.Fatalf("recorded app %+v has no name or queue", want)
	}
	// The driver behind the RM's web proxy, /proxy/<id>/.
	drv := newFakeDriver(t, want.ID)
	drv.claim(want.ID, want.User) // the user the RM admitted it as
	proxy := httptest.NewServer(http.StripPrefix("/proxy/"+want.ID, http.HandlerFunc(drv.serve)))
	t.Cleanup(proxy.Close)
	tracking := regexp.MustCompile(`("trackingUrl"\s*:\s*")https?://[^/"]+/`)
	var answer atomic.Value
	answer.Store(tracking.ReplaceAllString(string(rec), "${1}"+proxy.URL+"/"))
	rm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/ws/v1/cluster/apps" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(answer.Load().(string)))
	}))
	t.Cleanup(rm.Close)
	_, reg := startDiscoverer(t, Config{YARN: []URLSource{{URL: rm.URL}}})
	waitFor(t, reg, want.ID+" live", live(want.ID))
	a, _ := reg.Lookup(want.ID)
	if a.YARNName != want.Name || a.YARNQueue != want.Queue || a.Name != "demo" || a.ProxyBase == "" {
		t.Errorf("app = name %q, YARN name %q, queue %q, proxy base %q; want demo, %q, %q, set",
			a.Name, a.YARNName, a.YARNQueue, a.ProxyBase, want.Name, want.Queue)
	}
	// yarn application -movetoqueue: the next list says so.
	q := regexp.MustCompile(`("queue"\s*:\s*")[^"]*"`)
	answer.Store(q.ReplaceAllString(answer.Load().(string), `${1}root.moved"`))
	waitFor(t, reg, "the queue moved", func(s *Snapshot) bool {
		a, ok := s.Lookup(want.ID)
		return ok && a.Live() && a.YARNQueue == "root.moved"
	})
	if a, _ := reg.Lookup(want.ID); a.YARNName != want.Name || !strings.HasPrefix(a.Source, "yarn:") {
		t.Errorf("after the move: YARN name %q, source %q; want %q, yarn:…", a.YARNName, a.Source, want.Name)
	}
}

// TestYARNDriverReportsAdmittedUser: the owner of an app a ResourceManager
// runs is the user it admitted the app as; what the driver says of itself
// is anyone's (SPARK_USER=alice, or a process of mallory's behind the RM's
// proxy). mallory's app reporting alice is not published as alice's (her
// by-name links and the index would follow it), and the claim is counted;
// once the driver reports mallory it is published as hers.
func TestYARNDriverReportsAdmittedUser(t *testing.T) {
	t.Parallel()
	const id = "application_1796138513974_0042"
	drv := newFakeDriver(t, id)
	drv.claim(id, "alice")
	proxy := httptest.NewServer(http.StripPrefix("/proxy/"+id, http.HandlerFunc(drv.serve)))
	t.Cleanup(proxy.Close)
	rm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/ws/v1/cluster/apps" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"apps":{"app":[{"id":%q,"user":"mallory","name":"nightly-etl","queue":"default","state":"RUNNING",`+
			`"trackingUI":"ApplicationMaster","trackingUrl":"%s/proxy/%s/"}]}}`, id, proxy.URL, id)
	}))
	t.Cleanup(rm.Close)
	d, reg := startDiscoverer(t, Config{YARN: []URLSource{{URL: rm.URL}}})
	eventually(t, "the claim is counted", func() bool { return d.Conflicts()["yarn"] >= 1 })
	if a, ok := reg.Lookup(id); ok {
		t.Fatalf("%s, admitted as mallory, reporting alice: published as %+v; want it refused", id, a)
	}
	drv.claim(id, "mallory")
	waitFor(t, reg, id+" live", live(id))
	if a, _ := reg.Lookup(id); a.User != "mallory" {
		t.Errorf("%s reporting the admitted user: owner %q; want mallory", id, a.User)
	}
}

// TestYARNUserCheckNotSkippedByAnotherOffer: what a ResourceManager said
// of an app (its user above all) goes with the RM's own offer, not with
// the latest offer of its proxy's URL: a log line naming that URL (mallory
// can write one into her own driver log in a watched directory) must not
// make the app, credited to the RM, skip the check of the user the RM
// admitted it as. Found by a review.
func TestYARNUserCheckNotSkippedByAnotherOffer(t *testing.T) {
	t.Parallel()
	const id = "application_1796138513974_0043"
	drv := newFakeDriver(t, id)
	drv.claim(id, "alice") // mallory's driver, SPARK_USER=alice
	proxy := httptest.NewServer(http.StripPrefix("/proxy/"+id, http.HandlerFunc(drv.serve)))
	t.Cleanup(proxy.Close)
	rm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/ws/v1/cluster/apps" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"apps":{"app":[{"id":%q,"user":"mallory","name":"nightly-etl","queue":"default","state":"RUNNING",`+
			`"trackingUI":"ApplicationMaster","trackingUrl":"%s/proxy/%s/"}]}}`, id, proxy.URL, id)
	}))
	t.Cleanup(rm.Close)
	dir := t.TempDir()
	logPath := filepath.Join(dir, "mallory-driver.log")
	d, reg := startDiscoverer(t, Config{
		Interval: time.Duration(time.Second),
		YARN:     []URLSource{{URL: rm.URL}},
		Logs:     []LogSource{{Paths: []string{filepath.Join(dir, "*.log")}, Host: "127.0.0.1"}},
	})
	eventually(t, "the RM's app reporting alice is refused", func() bool { return d.Conflicts()["yarn"] >= 1 })
	if _, ok := reg.Lookup(id); ok {
		t.Fatal("published before the log line; the check under review should refuse it")
	}
	// mallory's log names the RM's proxy URL of her app: the latest offer
	// of that URL is now the log's.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		appendFile(t, logPath, "26/11/29 13:57:10 INFO SparkContext: Spark context Web UI available at "+proxy.URL+"/proxy/"+id+"\n")
		time.Sleep(150 * time.Millisecond)
		if _, ok := reg.Lookup(id); ok {
			break
		}
	}
	if a, ok := reg.Lookup(id); ok && a.User != "mallory" {
		t.Errorf("%s, admitted by the RM as mallory, reporting alice: published as user %q, source %q; want refused (or mallory)", id, a.User, a.Source)
	}
}
