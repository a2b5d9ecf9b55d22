package proxy

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sparkgate/sparkgate/proxy/discovery"
)

// Spark's stage page fills its task table from .../stages/<id>/<attempt>/
// taskTable, whose every task carries its executor's executorLogs, and
// renders them with formatLogsCells (utils.js: '<a href=' + url + '>' +
// name + '</a>', no escaping). Those links must lead through the gateway
// as the Executors tab's do: neither a worker's address nor the upstream's
// markup reaches the page. A History Server's view (on the main origin,
// with app_domain too) shows whatever an event log, which anyone may
// write, says an executor's "Log Urls" are.
func TestTaskLogLinksRewritten(t *testing.T) {
	const worker = "http://worker.internal:8081"
	logs := fmt.Sprintf(`{"stdout":%q,"<img src=x onerror=alert(document.cookie)>":"x onmouseover=alert(1)"}`,
		worker+"/logPage/?appId="+appStandalone+"&executorId=0&logType=stdout")
	task := `{"taskId":0,"index":0,"attempt":0,"executorId":"0","host":"h","status":"SUCCESS","executorLogs":` + logs + `}`
	driver := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		p := strings.TrimPrefix(r.URL.Path, "/api/v1/applications/"+appStandalone)
		switch p {
		case "/stages/0/0/taskTable":
			_, _ = fmt.Fprintf(rw, `{"aaData":[%s],"recordsTotal":1,"recordsFiltered":1}`, task)
		case "/stages/0/0/taskList":
			_, _ = fmt.Fprintf(rw, `[%s]`, task)
		case "/allmiscellaneousprocess":
			_, _ = fmt.Fprintf(rw, `[{"id":"yarn-am","hostPort":"nm:1","processLogs":%s}]`, logs)
		case "/stages/0/0":
			_, _ = fmt.Fprintf(rw, `{"stageId":0,"attemptId":0,"tasks":{"0":%s}}`, task)
		default:
			http.NotFound(rw, r)
		}
	}))
	t.Cleanup(driver.Close)
	h := newHarness(t, nil)
	du, _ := url.Parse(driver.URL)
	apps := append(h.reg.Load().Apps(), &discovery.App{ID: appStandalone, Name: "sa", User: "alice", StartTime: time.Now(),
		State: discovery.Running, UIURL: du, Source: "master:http://m:8080", ACLProps: map[string]string{"spark.ui.view.acls": "bob"}})
	h.reg.Store(discovery.NewSnapshot(apps))
	for _, p := range []string{"/stages/0/0/taskTable", "/stages/0/0/taskList", "/allmiscellaneousprocess"} {
		path := "/app/" + appStandalone + "/api/v1/applications/" + appStandalone + p
		resp, body := h.do(t, "GET", path, "bob", nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s = %d\n%s", path, resp.StatusCode, body)
		}
		if strings.Contains(body, "worker.internal") || strings.Contains(body, "onerror") || strings.Contains(body, "onmouseover") {
			t.Errorf("GET %s passes the upstream's executorLogs on:\n%s", path, body)
		}
		if p != "/allmiscellaneousprocess" && !strings.Contains(body, `"/app/`+appStandalone+`/_/logs/0/stdout"`) {
			t.Errorf("GET %s does not link the gateway's log of executor 0:\n%s", path, body)
		}
	}
}

// The same through a History Server's view, served on the main origin:
// the executor's "Log Urls" are what an event log says.
func TestTaskLogLinksRewrittenHistory(t *testing.T) {
	task := `{"taskId":0,"index":0,"attempt":0,"executorId":"1","executorLogs":{"stdout":"http://worker.internal:8081/logPage/?x","<img src=x onerror=alert(1)>":"y"}}`
	hs := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/stages/0/0/taskTable") {
			rw.Header().Set("Content-Type", "application/json")
			_, _ = fmt.Fprintf(rw, `{"aaData":[%s],"recordsTotal":1,"recordsFiltered":1}`, task)
			return
		}
		http.NotFound(rw, r)
	}))
	t.Cleanup(hs.Close)
	hu, _ := url.Parse(hs.URL)
	h := newHarness(t, func(o *Options) { o.HistoryServers = map[string]*url.URL{"main": hu} })
	for _, path := range []string{
		"/hs/main/api/v1/applications/" + appHistory + "/1/stages/0/0/taskTable",
		"/api/v1/applications/" + appHistory + "/1/stages/0/0/taskTable",
	} {
		resp, body := h.do(t, "GET", path, "bob", nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s = %d\n%s", path, resp.StatusCode, body)
		}
		if strings.Contains(body, "worker.internal") || strings.Contains(body, "onerror") {
			t.Errorf("GET %s passes the event log's executorLogs on:\n%s", path, body)
		}
	}
}

// rewriteLogsDeep keeps every other member as it was.
func TestRewriteLogsDeepKeepsTheRest(t *testing.T) {
	in := `{"stageId":3,"big":12345678901234567890,"f":1.5e-7,"s":"<b>\u00e9\"","n":null,"t":true,"a":[[],{},[1,{"x":[]}]],` +
		`"tasks":{"7":{"executorId":"2","executorLogs":{"stderr":"http://w:1/logPage/?a","bad type":"x"},"after":[1,2]},` +
		`"8":{"executorLogs":{"stdout":"http://w:1/"},"executorId":"3"}}}`
	var out strings.Builder
	if err := rewriteLogsDeep(&out, strings.NewReader(in), execLogLinks{appID: "app-1", attempt: "2"}); err != nil {
		t.Fatal(err)
	}
	var got, want map[string]any
	decodeJSON(t, out.String(), &got)
	decodeJSON(t, in, &want)
	want["tasks"].(map[string]any)["7"].(map[string]any)["executorLogs"] = map[string]any{"stderr": "/app/app-1/_/logs/2/stderr?attempt=2"}
	want["tasks"].(map[string]any)["8"].(map[string]any)["executorLogs"] = map[string]any{}
	if fmt.Sprint(got) != fmt.Sprint(want) || !strings.Contains(out.String(), "12345678901234567890") {
		t.Errorf("rewriteLogsDeep =\n%s\nwant\n%v", out.String(), want)
	}
	for _, bad := range []string{`[1,2]]`, `{"a":1} {}`, `{"a":`} {
		if err := rewriteLogsDeep(io.Discard, strings.NewReader(bad), execLogLinks{appID: "a"}); err == nil {
			t.Errorf("rewriteLogsDeep(%q) = nil; want an error", bad)
		}
	}
}

// TestExecutorMarkupEscaped: Spark's Executors tab puts an executor's id
// and hostPort into the page as HTML, and a History Server's come from an
// event log anyone may write: markup in them reaches the page as text.
func TestExecutorMarkupEscaped(t *testing.T) {
	in := `[{"id":"1","hostPort":"<img src=x onerror=alert(1)>:7337","isActive":true},` +
		`{"id":"<svg onload=alert(2)>","hostPort":"10.0.0.5:7337"}]`
	var out strings.Builder
	if err := rewriteExecutorList(&out, strings.NewReader(in), execLogLinks{appID: "app-1"}, nil); err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal([]byte(out.String()), &got); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if len(got) != 2 || got[0]["hostPort"] != "&lt;img src=x onerror=alert(1)&gt;:7337" || got[0]["isActive"] != true ||
		got[1]["id"] != "&lt;svg onload=alert(2)&gt;" || got[1]["hostPort"] != "10.0.0.5:7337" || got[0]["id"] != "1" {
		t.Errorf("rewritten list = %s; want markup in id and hostPort escaped, the rest as sent", out.String())
	}
}
