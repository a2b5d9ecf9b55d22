//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// sparkUILine is what every real driver logs once its UI is up.
const sparkUILine = "Successfully started service 'SparkUI' on port"

// checkPodLogs: the driver pod's log, read by the gateway through the real
// API server's pods/log (the API server reaching the stand-in kubelet,
// which serves the real driver's log file), is a page and a download under
// /app/<id>/_/logs/pod/<pod>, capped and followable; the Executors tab's
// REST answer links it; an executor pod of the app is served once the
// gateway's cache has it, a pod of another app and an unknown pod are
// not, and a user who may not view the app is refused as on its pages.
func checkPodLogs(ctx context.Context, t *testing.T, k *KubeAPI, gw *Gateway, client *http.Client, env *kubeLogEnv, d *Driver, ns, podName, logFile string) {
	base := gw.URL + "/app/" + d.AppID + "/_/logs/pod/" + podName
	code, body, err := gatewayDo(ctx, client, http.MethodGet, base)
	if err != nil || code != http.StatusOK {
		t.Fatalf("GET %s = %d (%v)\n%.2000s\nstand-in kubelet asked: %v", base, code, err, body, env.kubelet.Asked())
	}
	// The default page: the last 1000 lines, as they are in the log file.
	text := html.UnescapeString(preText(string(body)))
	file, _ := os.ReadFile(logFile)
	if n := strings.Count(text, "\n"); !strings.Contains(string(file), text) || n > 1000 || (n < 1000 && len(text) != len(file)) {
		t.Errorf("the driver pod's log page (%d lines, %d bytes) is not the last 1000 lines of the driver's log file (%d bytes)", n, len(text), len(file))
	}
	// From the start: the driver's own lines.
	code, body, err = gatewayDo(ctx, client, http.MethodGet, base+"?lines=0")
	if text := html.UnescapeString(preText(string(body))); code != http.StatusOK || !strings.Contains(text, sparkUILine) || !strings.Contains(text, "E2E app_id="+d.AppID) {
		t.Errorf("GET ?lines=0 = %d (%v); want the driver's own lines %q and its app id:\n%.3000s", code, err, sparkUILine, text)
	}
	asked := env.kubelet.Asked()
	want := fmt.Sprintf("/containerLogs/%s/%s/spark-kubernetes-driver?", ns, podName)
	if len(asked) < 2 || !strings.HasPrefix(asked[len(asked)-2], want) ||
		!strings.Contains(asked[len(asked)-2], "tailLines=1000") || !strings.Contains(asked[len(asked)-2], "limitBytes=1048577") {
		t.Errorf("the stand-in kubelet was asked %v; want %s with tailLines=1000 and limitBytes=1048577 passed on by the API server", asked, want)
	} else {
		t.Logf("the API server asked the stand-in kubelet for %s", asked[len(asked)-2])
	}

	// The download: the log from its start, as a text file.
	resp, raw := getRaw(ctx, t, client, base+"/raw")
	file, _ = os.ReadFile(logFile)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") ||
		!strings.HasPrefix(resp.Header.Get("Content-Disposition"), "attachment; filename=") {
		t.Errorf("GET raw = %d, Content-Type %q, Content-Disposition %q; want 200, text/plain, an attachment",
			resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Content-Disposition"))
	}
	if len(raw) < 1000 || !strings.HasPrefix(string(file), raw) || !strings.Contains(raw, sparkUILine) {
		t.Errorf("the download (%d bytes) is not the driver's log file (%d bytes) from its start", len(raw), len(file))
	} else {
		t.Logf("download: %d bytes of the driver's %d-byte log, %s", len(raw), len(file), resp.Header.Get("Content-Disposition"))
	}

	// The cap: a page and a download hold no more than asked for.
	code, body, _ = gatewayDo(ctx, client, http.MethodGet, base+"?lines=0&limitBytes=2000")
	shownHTML, note, _ := strings.Cut(preText(string(body)), "\n<span class=\"lognote\">")
	shown := html.UnescapeString(shownHTML)
	if code != http.StatusOK || shown != string(file[:2000]) || !strings.Contains(note, "cut at 2000 bytes") {
		t.Errorf("GET ?lines=0&limitBytes=2000 = %d: %d bytes shown, note %q; want the log's first 2000 bytes and a note", code, len(shown), note)
	}
	resp, raw = getRaw(ctx, t, client, base+"/raw?limitBytes=1500")
	if resp.StatusCode != http.StatusOK || raw != string(file[:1500]) {
		t.Errorf("GET raw?limitBytes=1500 = %d, %d bytes; want the log's first 1500", resp.StatusCode, len(raw))
	}
	code, body, _ = gatewayDo(ctx, client, http.MethodGet, base+"?lines=3")
	if lines := strings.Count(strings.TrimSuffix(html.UnescapeString(preText(string(body))), "\n"), "\n") + 1; code != http.StatusOK || lines != 3 {
		t.Errorf("GET ?lines=3 = %d with %d lines; want 3", code, lines)
	}

	// Follow: the page streams, the first lines arrive while it is open.
	fctx, cancel := context.WithTimeout(ctx, time.Minute)
	req, _ := http.NewRequestWithContext(fctx, http.MethodGet, base+"?follow=1&lines=0", nil)
	fresp, err := client.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	br := bufio.NewReader(fresp.Body)
	var seen strings.Builder
	tFollow := time.Now()
	for !strings.Contains(seen.String(), "SparkUI") {
		line, err := br.ReadString('\n')
		seen.WriteString(line)
		if err != nil {
			t.Errorf("the followed page ended (%v) before the driver's SparkUI line:\n%.2000s", err, seen.String())
			break
		}
	}
	t.Logf("follow: the SparkUI line arrived %v into a followed page still open", time.Since(tFollow).Round(time.Millisecond))
	cancel()
	fresp.Body.Close()
	if a := env.kubelet.Asked(); !strings.Contains(a[len(a)-1], "follow=true") {
		t.Errorf("the followed page asked the kubelet %s; want follow=true", a[len(a)-1])
	}

	// The Executors tab's data links the driver's pod log.
	restURL := gw.URL + "/app/" + d.AppID + "/api/v1/applications/" + d.AppID + "/allexecutors"
	code, body, err = gatewayDo(ctx, client, http.MethodGet, restURL)
	var execs []struct {
		ID   string            `json:"id"`
		Logs map[string]string `json:"executorLogs"`
	}
	if err != nil || code != http.StatusOK || json.Unmarshal(body, &execs) != nil {
		t.Errorf("GET allexecutors = %d (%v)\n%.500s", code, err, body)
	}
	for _, e := range execs {
		if e.ID == "driver" && e.Logs["log"] != "/app/"+d.AppID+"/_/logs/pod/"+podName {
			t.Errorf("the driver's executorLogs = %v; want its pod log", e.Logs)
		}
	}

	// The diagnosis page links the driver pod's log.
	code, body, err = gatewayDo(ctx, client, http.MethodGet, gw.URL+"/app/"+d.AppID+"/_/diagnosis")
	if err != nil || code != http.StatusOK || !strings.Contains(string(body), `href="/app/`+d.AppID+`/_/logs/pod/`+podName+`"`) {
		t.Errorf("GET the diagnosis = %d (%v); want a link to the driver pod's log\n%.1500s", code, err, body)
	}

	// Ownership. The other app's pod is created first, then this app's
	// executor pod: once the gateway serves the latter, its cache has
	// seen the former too (one watch, in order).
	pods := k.Client.CoreV1().Pods(ns)
	execLog := filepath.Join(filepath.Dir(logFile), "executor-1.log")
	if err := os.WriteFile(execLog, []byte("a stand-in executor 1 of "+d.AppID+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mkPod := func(name, appID string) {
		t.Helper()
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"spark-role": "executor", "spark-app-selector": appID, "spark-exec-id": "1"}},
			Spec:       corev1.PodSpec{NodeName: kubeNode, Containers: []corev1.Container{{Name: "spark-kubernetes-executor", Image: "spark"}}},
		}
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = pods.Delete(context.Background(), name, metav1.DeleteOptions{}) })
		env.kubelet.Serve(ns, name, "spark-kubernetes-executor", execLog)
	}
	other, mine := podName+"-other-exec-1", podName+"-exec-1"
	mkPod(other, "spark-0000000000000000000000000000beef")
	mkPod(mine, d.AppID)
	mineURL := gw.URL + "/app/" + d.AppID + "/_/logs/pod/" + mine
	pollStatus(ctx, t, client, mineURL, http.StatusOK)
	if _, body, _ := gatewayDo(ctx, client, http.MethodGet, mineURL); !strings.Contains(string(body), "a stand-in executor 1") || !strings.Contains(string(body), "executor 1 of application") {
		t.Errorf("executor pod page:\n%.2000s", body)
	}
	before := len(env.kubelet.Asked())
	for _, p := range []string{other, "no-such-pod", podName + "x"} {
		u := gw.URL + "/app/" + d.AppID + "/_/logs/pod/" + p
		if code, _, err := gatewayDo(ctx, client, http.MethodGet, u); err != nil || code != http.StatusNotFound {
			t.Errorf("GET %s = %d (%v); want 404: not a pod of this app", u, code, err)
		}
	}
	if a := env.kubelet.Asked(); len(a) != before {
		t.Errorf("pods not of the app were asked for: %v", a[before:])
	}

	// A user without the app's view ACL: refused as on the app's pages
	// (403 on the gateway that reveals refusals, once it knows the app).
	outBase := env.outGW.URL + "/app/" + d.AppID
	pollStatus(ctx, t, env.outClient, outBase+"/jobs/", http.StatusForbidden)
	for _, p := range []string{"/_/logs/pod/" + podName, "/_/logs/pod/" + podName + "/raw"} {
		code, body, err := gatewayDo(ctx, env.outClient, http.MethodGet, outBase+p)
		if err != nil || code != http.StatusForbidden || strings.Contains(string(body), "SparkUI") {
			t.Errorf("kube-outsider GET %s = %d (%v); want 403 as for the app's pages", p, code, err)
		}
	}
	if a := env.kubelet.Asked(); len(a) != before {
		t.Errorf("the kubelet was asked for the outsider: %v", a[before:])
	}

	// The log pages' own links stay on the gateway and lead somewhere.
	cctx := ctxFor(t, 2*time.Minute)
	rep, err := Crawl(cctx, client, base, CrawlOptions{
		MaxPages: 40,
		Scope:    []string{"/app/" + d.AppID + "/_/logs/pod/"},
		Skip: func(u *url.URL) bool {
			return skipLogout(u) || u.Query().Get("follow") == "1" // a followed page stays open for minutes
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	logCrawl(t, "pod log pages", rep)
	requireCleanCrawl(t, rep, 5)
}

// preText is the text of a page's <pre class="log">, as HTML.
func preText(page string) string {
	_, after, _ := strings.Cut(page, `<pre class="log">`)
	before, _, _ := strings.Cut(after, "</pre>")
	return before
}

// getRaw GETs u and returns the response and its body.
func getRaw(ctx context.Context, t *testing.T, c *http.Client, u string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading %s: %v", u, err)
	}
	return resp, string(b)
}

// checkPodLogsChromium: in Chromium, with the gateway's session, the
// Executors tab shows the driver's "log" link, which leads to the driver
// pod's log page through the gateway.
func checkPodLogsChromium(ctx context.Context, t *testing.T, gw *Gateway, client *http.Client, d *Driver, podName string) {
	b, err := NewBrowser(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	gu, _ := url.Parse(gw.URL)
	if err := b.SetCookies(gw.URL, client.Jar.Cookies(gu)); err != nil {
		t.Fatal(err)
	}
	prefix := gw.URL + "/app/" + d.AppID
	href, err := b.Poll(prefix+"/executors/", "", `(() => { const a = Array.from(document.querySelectorAll("#active-executors-table a"))
		.find(a => a.textContent.trim() === "log"); return a ? a.href : ""; })()`, 90*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if want := prefix + "/_/logs/pod/" + podName; href != want {
		t.Fatalf("the Executors tab's log link = %q; want %q", href, want)
	}
	// Click it, as a user does, and read the page it opens.
	bctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`(() => { Array.from(document.querySelectorAll("#active-executors-table a"))
		.find(a => a.textContent.trim() === "log").click(); return true; })()`)); err != nil {
		t.Fatal(err)
	}
	var text string
	for {
		text, err = chromedp.Run(bctx, chromedp.Evaluate[string](`location.pathname.includes("/_/logs/pod/") && document.readyState === "complete" ? document.body.innerText : ""`))
		if err == nil && text != "" {
			break
		}
		if bctx.Err() != nil {
			t.Fatalf("the log link led nowhere: %v", lastErr(err))
		}
		time.Sleep(200 * time.Millisecond)
	}
	at, _ := chromedp.Run(bctx, chromedp.Location())
	t.Logf("clicked the driver's log link: %s, %d characters of text", at, len(text))
	if !strings.Contains(text, "Log of pod "+podName) || !strings.Contains(text, "INFO") {
		t.Errorf("the log page shows no driver log:\n%.1500s", text)
	}
}
