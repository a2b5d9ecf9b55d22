//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// RawRequest is one request written byte for byte to a TCP connection, so
// that no client library normalises its method, target or body.
type RawRequest struct {
	Method string
	Target string // the request target as sent: origin-form or absolute-form
	Host   string // the Host header
	Cookie string // the Cookie header, "" for none
	Body   string // sent as application/x-www-form-urlencoded when not ""
}

// Bytes renders the request.
func (r RawRequest) Bytes() []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\nUser-Agent: sparkgate-e2e\r\n", r.Method, r.Target, r.Host)
	if r.Cookie != "" {
		fmt.Fprintf(&b, "Cookie: %s\r\n", r.Cookie)
	}
	if r.Body != "" {
		fmt.Fprintf(&b, "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n", len(r.Body))
	}
	b.WriteString("\r\n")
	b.WriteString(r.Body)
	return []byte(b.String())
}

// SendRaw dials addr (host:port), writes req and returns the status code of
// the answer and its Location header. The connection is closed after the
// headers: the body does not matter here.
func SendRaw(ctx context.Context, addr string, req RawRequest) (int, string, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, "", fmt.Errorf("dialing %s: %w", addr, err)
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	if _, err := conn.Write(req.Bytes()); err != nil {
		return 0, "", fmt.Errorf("writing request: %w", err)
	}
	br := bufio.NewReader(conn)
	line, err := br.ReadString('\n')
	if err != nil {
		return 0, "", fmt.Errorf("reading status line: %w", err)
	}
	f := strings.Fields(line)
	if len(f) < 2 || !strings.HasPrefix(f[0], "HTTP/") {
		return 0, "", fmt.Errorf("bad status line %q", line)
	}
	code, err := strconv.Atoi(f[1])
	if err != nil {
		return 0, "", fmt.Errorf("bad status line %q: %w", line, err)
	}
	loc := ""
	for {
		h, err := br.ReadString('\n')
		if err != nil || strings.TrimSpace(h) == "" {
			break
		}
		if k, v, ok := strings.Cut(h, ":"); ok && strings.EqualFold(k, "Location") {
			loc = strings.TrimSpace(v)
		}
	}
	return code, loc, nil
}

// SparkJob is the part of Spark's JobData the kill tests read.
type SparkJob struct {
	JobID          int    `json:"jobId"`
	Name           string `json:"name"`
	Description    string `json:"description"`
	Status         string `json:"status"`
	StageIDs       []int  `json:"stageIds"`
	NumKilledTasks int    `json:"numKilledTasks"`
}

// SparkStage is the part of Spark's StageData the kill tests read.
type SparkStage struct {
	StageID        int    `json:"stageId"`
	AttemptID      int    `json:"attemptId"`
	Status         string `json:"status"`
	FailureReason  string `json:"failureReason"`
	NumKilledTasks int    `json:"numKilledTasks"`
	NumActiveTasks int    `json:"numActiveTasks"`
}

// getJSONDirect GETs url (a driver or History Server, never the gateway)
// into v.
func getJSONDirect(ctx context.Context, url string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("building request: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("decoding %s: %w", url, err)
	}
	return nil
}

// DriverJobs asks the driver's own REST API for every job and stage.
func DriverJobs(ctx context.Context, d *Driver) ([]SparkJob, []SparkStage, error) {
	base := d.UIURL() + "/api/v1/applications/" + d.AppID
	var jobs []SparkJob
	var stages []SparkStage
	if err := getJSONDirect(ctx, base+"/jobs", &jobs); err != nil {
		return nil, nil, err
	}
	if err := getJSONDirect(ctx, base+"/stages", &stages); err != nil {
		return nil, nil, err
	}
	return jobs, stages, nil
}

// LongJob waits until the driver runs app.py's long job with its stage
// active and a task running, and returns the job and stage ids.
func LongJob(ctx context.Context, d *Driver) (jobID, stageID int, err error) {
	for {
		jobs, stages, err := DriverJobs(ctx, d)
		if err == nil {
			for _, j := range jobs {
				if j.Status != "RUNNING" || !strings.Contains(j.Description, "long-running") || len(j.StageIDs) == 0 {
					continue
				}
				for _, s := range stages {
					if s.StageID == j.StageIDs[0] && s.Status == "ACTIVE" && s.NumActiveTasks > 0 {
						return j.JobID, s.StageID, nil
					}
				}
			}
		}
		select {
		case <-ctx.Done():
			return 0, 0, fmt.Errorf("the long job never ran with an active stage (last error: %s): %w", lastErr(err), ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// KillControls is what a page shows of Spark's kill controls.
type KillControls struct {
	KillLinks int    `json:"killLinks"` // elements with class kill-link
	KillForms int    `json:"killForms"` // forms whose action contains "kill"
	KillText  bool   `json:"killText"`  // the text "(kill)" is visible
	Text      string `json:"text"`      // the first part of the visible text
	Location  string `json:"location"`
}

// Any reports whether any kill control is on the page.
func (k KillControls) Any() bool { return k.KillLinks > 0 || k.KillForms > 0 || k.KillText }

// KillControls opens pageURL and counts the kill controls on the page once
// it has loaded.
func (b *Browser) KillControls(pageURL string) (KillControls, error) {
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	var k KillControls
	if err := chromedp.Do(ctx, chromedp.Navigate(pageURL)); err != nil {
		return k, fmt.Errorf("navigating to %s: %w", pageURL, err)
	}
	const expr = `JSON.stringify({
		killLinks: document.querySelectorAll(".kill-link").length,
		killForms: [...document.querySelectorAll("form")].filter(f => (f.getAttribute("action") || "").toLowerCase().includes("kill")).length,
		killText: document.body ? document.body.innerText.includes("(kill)") : false,
		text: document.body ? document.body.innerText.slice(0, 4000) : "",
		location: location.href})`
	s, err := chromedp.Run(ctx, chromedp.Poll[string](`document.readyState === "complete" && `+expr,
		chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(30*time.Second)))
	if err != nil {
		return k, fmt.Errorf("reading %s: %w", pageURL, err)
	}
	if err := json.Unmarshal([]byte(s), &k); err != nil {
		return k, fmt.Errorf("decoding page state: %w", err)
	}
	return k, nil
}

var reCSRFToken = regexp.MustCompile(`name="csrfToken"\s+value="([0-9a-fA-F]+)"`)

// DriverCSRFToken returns the per-UI CSRF token a Spark 4 driver renders in
// its kill forms (fetched from the driver directly), or "" when the page
// has none (Spark 3.5).
func DriverCSRFToken(ctx context.Context, d *Driver) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.UIURL()+"/jobs/", nil)
	if err != nil {
		return "", fmt.Errorf("building request: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("GET driver /jobs/: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return "", fmt.Errorf("reading driver /jobs/: %w", err)
	}
	if m := reCSRFToken.FindSubmatch(body); m != nil {
		return string(m[1]), nil
	}
	return "", nil
}

// ConfirmedKill is what a person saw killing a job through the gateway's
// confirmation flow in the browser.
type ConfirmedKill struct {
	Link    string // href of the kill link clicked on the Jobs page
	Confirm string // URL of the confirmation page
	Text    string // visible text of the confirmation page
	Final   string // URL the browser ended on after confirming
}

// ConfirmKill opens jobsURL (a Jobs page through the gateway), clicks the
// "(kill)" link of job id, waits for the gateway's confirmation page,
// clicks its Kill button and waits for the page the gateway sends the
// browser to, as a person would.
func (b *Browser) ConfirmKill(jobsURL string, id int) (ConfirmedKill, error) {
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	var k ConfirmedKill
	if err := chromedp.Do(ctx, chromedp.Navigate(jobsURL)); err != nil {
		return k, fmt.Errorf("navigating to %s: %w", jobsURL, err)
	}
	sel := strconv.Quote(fmt.Sprintf(`a.kill-link[href$="/jobs/job/kill/?id=%d"]`, id))
	link, err := waitEval(ctx, `(() => { const a = document.readyState === "complete" && document.querySelector(`+sel+`);
		return a && a.textContent === "(kill)" && !a.getAttribute("onclick") ? a.href : ""; })()`)
	if err != nil {
		text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText.slice(0, 600) : ""`))
		return k, fmt.Errorf("no plain kill link for job %d on %s: %w; page text: %q", id, jobsURL, err, text)
	}
	k.Link = link
	// Real mouse clicks (CDP input events), not element.click(): the
	// gateway takes the confirmation only from a user's own click.
	if err := clickAndLeave(ctx, fmt.Sprintf(`a.kill-link[href$="/jobs/job/kill/?id=%d"]`, id)); err != nil {
		return k, fmt.Errorf("clicking the kill link: %w", err)
	}
	if k.Confirm, err = waitEval(ctx, `!window.__e2eLeft && document.readyState === "complete" && document.querySelector("form button[type=submit]") ? location.href : ""`); err != nil {
		return k, fmt.Errorf("waiting for the confirmation page: %w", err)
	}
	if k.Text, err = chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`)); err != nil {
		return k, fmt.Errorf("reading the confirmation page: %w", err)
	}
	if err := clickAndLeave(ctx, "form button[type=submit]"); err != nil {
		return k, fmt.Errorf("confirming: %w", err)
	}
	if k.Final, err = waitEval(ctx, `!window.__e2eLeft && document.readyState === "complete" ? location.href : ""`); err != nil {
		return k, fmt.Errorf("waiting for the page after confirming: %w", err)
	}
	return k, nil
}

// ScriptKill plays a hostile script on the gateway's origin (every app's
// pages share it): on the Spark page pageURL it reads the confirmation page
// at confirmURL with fetch(), whose status it returns; then, on the
// confirmation page, it submits the form itself, as a script holding the
// page (a popup it opened, say) would, and returns the text of the page
// that leads to.
func (b *Browser) ScriptKill(pageURL, confirmURL string) (fetchStatus int, after string, err error) {
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(pageURL)); err != nil {
		return 0, "", fmt.Errorf("navigating to %s: %w", pageURL, err)
	}
	fetchStatus, err = chromedp.Run(ctx, chromedp.Evaluate[int](`fetch(`+strconv.Quote(confirmURL)+`, {credentials: "same-origin"}).then(r => r.status)`, chromedp.EvalAwaitPromise))
	if err != nil {
		return 0, "", fmt.Errorf("fetch() of the confirmation page: %w", err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(confirmURL)); err != nil {
		return fetchStatus, "", fmt.Errorf("navigating to %s: %w", confirmURL, err)
	}
	if _, err := waitEval(ctx, `document.readyState === "complete" && document.querySelector("form") ? "yes" : ""`); err != nil {
		return fetchStatus, "", fmt.Errorf("no confirmation form at %s: %w", confirmURL, err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { window.__e2eLeft = true; document.querySelector("form").submit(); return true; })()`)); err != nil {
		return fetchStatus, "", fmt.Errorf("submitting by script: %w", err)
	}
	after, err = waitEval(ctx, `!window.__e2eLeft && document.readyState === "complete" ? document.body.innerText : ""`)
	return fetchStatus, after, err
}

// ScriptOpen plays a hostile script on the gateway's origin that opens
// the confirmation page in a popup: on the Spark page pageURL it calls
// window.open(confirmURL), with the user activation a click on that page
// would give it, and keeps trying to read the popup's document through the
// handle window.open returned. seen is what the script got: "read: <text>"
// if it could read the page, "closed" once the browser has severed the
// handle, "throws: <error>" if reading threw. popupText is what the popup
// itself shows, read through DevTools as the person looking at it sees
// it, and openerKept whether the popup still has window.opener.
func (b *Browser) ScriptOpen(pageURL, confirmURL string) (seen, popupText string, openerKept bool, err error) {
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(pageURL)); err != nil {
		return "", "", false, fmt.Errorf("navigating to %s: %w", pageURL, err)
	}
	gesture := func(p *runtime.EvaluateParams) { p.UserGesture = ptrTo(true) }
	opened, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { window.__e2eW = window.open(`+strconv.Quote(confirmURL)+`); return !!window.__e2eW; })()`, gesture))
	if err != nil {
		return "", "", false, fmt.Errorf("window.open(%s) from the page: %w", confirmURL, err)
	}
	if !opened {
		return "", "", false, fmt.Errorf("window.open(%s) from the page returned no window (popup blocked?)", confirmURL)
	}
	// Until the popup has left about:blank its document is readable and
	// empty; then it is either the confirmation page (read) or severed.
	seen, err = waitEval(ctx, `(() => { const w = window.__e2eW;
		try {
			const d = w.document, t = d && d.body ? d.body.innerText : "";
			if (t !== "" || (d && d.querySelector && d.querySelector("input[name=csrf]"))) return "read: " + t.slice(0, 300);
		} catch (e) { return "throws: " + e.name; }
		return w.closed ? "closed" : ""; })()`)
	if err != nil {
		return "", "", false, fmt.Errorf("reading the popup through its handle: %w", err)
	}
	var popup target.ID
	for popup == "" {
		infos, err := chromedp.Targets(ctx)
		if err != nil {
			return seen, "", false, fmt.Errorf("listing targets: %w", err)
		}
		for _, ti := range infos {
			if ti.Type == "page" && ti.URL == confirmURL {
				popup = ti.TargetID
			}
		}
		if popup == "" {
			select {
			case <-ctx.Done():
				return seen, "", false, fmt.Errorf("no popup at %s: %w", confirmURL, ctx.Err())
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	pctx, pcancel := chromedp.NewContext(ctx, chromedp.WithTargetID(popup))
	defer pcancel()
	if popupText, err = waitEval(pctx, `document.readyState === "complete" && document.querySelector("form input[name=csrf]") ? document.body.innerText : ""`); err != nil {
		return seen, "", false, fmt.Errorf("reading the popup itself: %w", err)
	}
	openerKept, err = chromedp.Run(pctx, chromedp.Evaluate[bool](`window.opener !== null`))
	if err != nil {
		return seen, popupText, false, fmt.Errorf("reading the popup's opener: %w", err)
	}
	_ = chromedp.Do(pctx, func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, t, page.Close, cdp.Empty{})
		return chromedp.Void{}, err
	})
	return seen, popupText, openerKept, nil
}

func ptrTo[T any](v T) *T { return &v }

// clickAndLeave marks the current document (window.__e2eLeft, gone once
// the browser has navigated away) and clicks the element sel with the
// mouse, as a person does.
func clickAndLeave(ctx context.Context, sel string) error {
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__e2eLeft = true`)); err != nil {
		return err
	}
	return chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel)))
}

// waitEval evaluates expr until it gives a non-empty string, retrying while
// the page navigates (evaluations fail between documents).
func waitEval(ctx context.Context, expr string) (string, error) {
	for {
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
		if err == nil && s != "" {
			return s, nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("waiting for %.80q (last error: %s): %w", expr, lastErr(err), ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
