package discovery

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func keys(cs []candidate) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.key())
	}
	return out
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestMasterSource(t *testing.T) {
	t.Parallel()
	// Shapes from JsonProtocol.writeMasterState and ApplicationPage (3.5).
	mux := http.NewServeMux()
	// Jetty, as on a real master: the bare context path redirects.
	mux.Handle("/json", http.RedirectHandler("/json/", http.StatusFound))
	mux.HandleFunc("/json/", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"url":"spark://m:7077","workers":[],"aliveworkers":1,"cores":4,"coresused":1,
 "activeapps":[{"id":"app-20240501123456-0000","starttime":1,"name":"a","cores":1,"user":"alice","state":"RUNNING","duration":5},
               {"id":"app-20240501123456-0001","starttime":2,"name":"b","cores":1,"user":"bob","state":"RUNNING","duration":5}],
 "completedapps":[{"id":"app-20240501000000-0009","name":"old"}],"activedrivers":[],"completeddrivers":[],"status":"ALIVE"}`)
	})
	mux.HandleFunc("/app/", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("appId") {
		case "app-20240501123456-0000":
			fmt.Fprint(w, `<html><body><ul><li><strong>ID:</strong> app-20240501123456-0000</li>
<li><strong>Name:</strong> a</li>
<li><strong>
  <a href="http://10.1.2.3:4040">Application Detail UI</a>
</strong></li></ul></body></html>`)
		case "app-20240501123456-0001": // reverse-proxy mode: relative link
			fmt.Fprint(w, `<li><strong><a href="/proxy/app-20240501123456-0001/">Application Detail UI</a></strong></li>`)
		default:
			http.Error(w, "No running application with ID", 404)
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	m := newMasterSource(mustURL(t, srv.URL), newClient(nil))
	got, err := m.candidates(context.Background())
	if err != nil {
		t.Fatalf("candidates() error = %v", err)
	}
	want := []string{"http://10.1.2.3:4040", srv.URL + "/proxy/app-20240501123456-0001"}
	if diff := cmp.Diff(want, keys(got)); diff != "" {
		t.Errorf("candidates() (-want +got):\n%s", diff)
	}
}

func TestYARNSource(t *testing.T) {
	t.Parallel()
	var gotQuery string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotQuery = r.URL.RawQuery
		if r.URL.Path != "/ws/v1/cluster/apps" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, `{"apps":{"app":[
 {"id":"application_1714550000000_0001","user":"alice","name":"a","queue":"default","state":"RUNNING","finalStatus":"UNDEFINED",
  "trackingUI":"ApplicationMaster","trackingUrl":"http://rm:8088/proxy/application_1714550000000_0001/","amHostHttpAddress":"nm1:8042"},
 {"id":"application_1714550000000_0002","state":"RUNNING","trackingUI":"UNASSIGNED"},
 {"id":"application_1714550000000_0003","state":"ACCEPTED","trackingUI":"UNASSIGNED","trackingUrl":"http://rm:8088/proxy/application_1714550000000_0003/"}]}}`)
	}))
	defer srv.Close()
	y := &yarnSource{base: mustURL(t, srv.URL), c: newClient(nil)}
	got, err := y.candidates(context.Background())
	if err != nil {
		t.Fatalf("candidates() error = %v", err)
	}
	if gotQuery != "states=RUNNING" {
		t.Errorf("query = %q; want states=RUNNING", gotQuery)
	}
	if want := []string{"http://rm:8088/proxy/application_1714550000000_0001"}; !cmp.Equal(keys(got), want) || !got[0].yarn {
		t.Errorf("candidates() = %v; want %v marked yarn", keys(got), want)
	}
	// No running apps: {"apps":null}.
	empty := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, `{"apps":null}`) }))
	defer empty.Close()
	y = &yarnSource{base: mustURL(t, empty.URL), c: newClient(nil)}
	if got, err := y.candidates(context.Background()); err != nil || len(got) != 0 {
		t.Errorf("candidates() on {apps:null} = %v, %v; want none", keys(got), err)
	}
}

func TestProbeSource(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	open := l.Addr().(*net.TCPAddr).Port
	closedL, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := closedL.Addr().(*net.TCPAddr).Port
	closedL.Close()
	p, err := newProbeSource([]ProbeSource{{Hosts: []string{"127.0.0.1"}, Ports: strconv.Itoa(open) + "," + strconv.Itoa(closed)}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.candidates(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"http://127.0.0.1:" + strconv.Itoa(open)}; !cmp.Equal(keys(got), want) {
		t.Errorf("candidates() = %v; want %v", keys(got), want)
	}
}

func TestHistorySource(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	envHits := map[string]int{}
	lastUpdated := 100
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/applications":
			fmt.Fprintf(w, `[ {"id":"application_1_0001","name":"yarn app","attempts":[
   {"attemptId":"1","startTimeEpoch":10,"endTimeEpoch":20,"lastUpdatedEpoch":20,"sparkUser":"alice","completed":true,"appSparkVersion":"3.5.0"},
   {"attemptId":"2","startTimeEpoch":30,"endTimeEpoch":40,"lastUpdatedEpoch":40,"sparkUser":"mallory","completed":true,"appSparkVersion":"3.5.0"}]},
 {"id":"local-1","name":"running","attempts":[{"startTimeEpoch":50,"endTimeEpoch":-1,"lastUpdatedEpoch":%d,"sparkUser":"bob","completed":false,"appSparkVersion":"4.0.0"}]}]`, lastUpdated)
		default:
			mu.Lock()
			envHits[r.URL.Path]++
			mu.Unlock()
			admin := "carol"
			if r.URL.Path == "/api/v1/applications/application_1_0001/1/environment" {
				admin = "dan" // each attempt's event log has its own ACLs
			}
			fmt.Fprintf(w, `{"sparkProperties":[["spark.acls.enable","true"],["spark.admin.acls",%q]],"systemProperties":[]}`, admin)
		}
	}))
	defer srv.Close()
	h, err := newHistorySource(HistorySource{Name: "hs", URL: srv.URL, ACLsEnable: true, AdminACLs: []string{"ops"}}, newClient(nil), DefaultInterval)
	if err != nil {
		t.Fatal(err)
	}
	apps, changed, err := h.poll(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(apps) != 2 || !changed {
		t.Fatalf("poll() = %d apps; want 2", len(apps))
	}
	y := apps[0]
	if !cmp.Equal(y.Ref.Attempts, []string{"2", "1"}) || y.AttemptID != "2" || !y.Ref.Completed || y.Ref.Server != "hs" || !y.Ref.ACLsEnable {
		t.Errorf("yarn app ref = %+v; want attempts [2 1], completed, server hs", y.Ref)
	}
	if y.Ref.ACLProps["spark.admin.acls"] != "carol" || y.Ref.User != "mallory" {
		t.Errorf("newest attempt: ACLProps = %v, user %q; want spark.admin.acls=carol, mallory", y.Ref.ACLProps, y.Ref.User)
	}
	if len(y.Ref.Older) != 1 || y.Ref.Older[0].ID != "1" || y.Ref.Older[0].User != "alice" ||
		y.Ref.Older[0].ACLProps["spark.admin.acls"] != "dan" {
		t.Errorf("older attempts = %+v; want attempt 1 of alice with spark.admin.acls=dan", y.Ref.Older)
	}
	if e := h.last[0].Ref.Older; e[0].ACLProps != nil {
		t.Errorf("the decoded entry kept for the next poll got ACLs %v: the poll changed a shared slice", e[0].ACLProps)
	}
	if !cmp.Equal(apps[1].Ref.Attempts, []string{""}) || apps[1].Ref.Completed {
		t.Errorf("running app ref = %+v", apps[1].Ref)
	}
	// The same answer again changes nothing and reads nothing.
	if again, changed, err := h.poll(context.Background()); err != nil || changed || again != nil {
		t.Errorf("second poll = %d apps, changed %t, %v; want nothing changed", len(again), changed, err)
	}
	lastUpdated = 200
	moved, changed, err := h.poll(context.Background())
	if err != nil || !changed || len(moved) != 2 || moved[0].Ref.ACLProps["spark.admin.acls"] != "carol" ||
		len(moved[0].Ref.Older) != 1 || moved[0].Ref.Older[0].ACLProps["spark.admin.acls"] != "dan" {
		t.Errorf("poll after lastUpdated moved = %+v, changed %t, %v; want both apps with their ACLs", moved, changed, err)
	}
	want := map[string]int{
		"/api/v1/applications/application_1_0001/1/environment": 1, // completed: once
		"/api/v1/applications/application_1_0001/2/environment": 1,
		"/api/v1/applications/local-1/environment":              2, // incomplete: again when lastUpdated moved
	}
	if diff := cmp.Diff(want, envHits); diff != "" {
		t.Errorf("environment fetches (-want +got):\n%s", diff)
	}
}
