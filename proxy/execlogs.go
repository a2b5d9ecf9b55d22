package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// execLogPrefix is where an executor's logs are served under /app/<id>:
// "/_/logs/<executor>/<type>" is a page of the log, ".../raw" the whole
// log as a download. "/_/" is no path of Spark's UI, so it cannot shadow
// one.
const execLogPrefix = "/_/logs/"

// Bounds of what one request reads from a worker. A worker's LogPage reads
// the range it is asked for into memory (Utils.offsetBytes), so a page and
// each step of a download ask for at most a MiB.
const (
	// execLogPageDefault is Spark's own LogPage default.
	execLogPageDefault = 100 << 10
	execLogPageMax     = 1 << 20
	execLogChunk       = 1 << 20
	// execLogDownloadMax caps a download: a runaway executor's stdout can
	// be far larger than anyone reads through a browser.
	execLogDownloadMax = 1 << 30
	// execListMax bounds the executors list read from a driver.
	execListMax  = 64 << 20
	execLogLimit = 30 * time.Second
)

// execLogReq is what an executor-log path names: nothing but the executor,
// the log type and, for an attempt on a History Server, the attempt (the
// query's "attempt"). The worker that has the log is found from the app's
// own REST answer, never from the request.
type execLogReq struct {
	exec, typ string
	raw       bool
	attempt   string
	// back is the Executors page the log page links back to: the
	// driver's, or the History Server's view of the attempt read.
	back string
}

var (
	// Spark's executor ids are "driver" or numbers; no dot, so no "..".
	validExecutorID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`).MatchString
	validLogType    = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`).MatchString
)

// parseExecLogPath parses the part of an app path after the app's prefix.
func parseExecLogPath(p string) (execLogReq, bool) {
	rest, ok := strings.CutPrefix(p, execLogPrefix)
	if !ok {
		return execLogReq{}, false
	}
	parts := strings.Split(rest, "/")
	if len(parts) < 2 || len(parts) > 3 || !validExecutorID(parts[0]) || !validLogType(parts[1]) {
		return execLogReq{}, false
	}
	q := execLogReq{exec: parts[0], typ: parts[1]}
	if len(parts) == 3 {
		if parts[2] != "raw" {
			return execLogReq{}, false
		}
		q.raw = true
	}
	return q, true
}

// execLogLinks says where the gateway's links to an app's executor logs
// go: under the app's bookmark, or at the root of the app's own host; with
// the attempt whose executors list named them, if any.
type execLogLinks struct {
	appID, attempt string
	onAppHost      bool
}

// link is the gateway path of an executor's log, as the Executors tab
// links it.
func (l execLogLinks) link(exec, typ string) string {
	p := execLogPrefix + exec + "/" + typ
	if !l.onAppHost {
		p = "/app/" + l.appID + p
	}
	return withAttempt(p, nil, l.attempt)
}

// withAttempt is path with query v and, if attempt is set, the attempt.
func withAttempt(path string, v url.Values, attempt string) string {
	if attempt != "" {
		if v == nil {
			v = url.Values{}
		}
		v.Set("attempt", attempt)
	}
	if len(v) == 0 {
		return path
	}
	return path + "?" + v.Encode()
}

// serveExecLog answers an executor-log path of the route's app, for a user
// allowed to view the app (the same decision, and the same refusal, as for
// the app's pages).
func (s *Server) serveExecLog(w http.ResponseWriter, r *http.Request, st *reqState, q execLogReq) error {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return &httpError{Status: http.StatusMethodNotAllowed, Msg: "only GET and HEAD", Allow: "GET, HEAD"}
	}
	if q.attempt = r.URL.Query().Get("attempt"); q.attempt != "" && !ValidAttemptID(q.attempt) {
		return badRequest("attempt: an attempt id")
	}
	// Judged by the attempt whose executors list is read, and, when a
	// History Server lists several, by them all: an attempt's event log
	// may name a container of another (one without an id, numbered as
	// attempt 1 on YARN, or another that claims its number); and by the
	// driver that a master or ResourceManager named, if there is one, since
	// anyone may write an event log under its id.
	to, err := s.resolveApp(st, resolveOpts{attempt: q.attempt, historyFirst: q.attempt != "", everyAttempt: true, namedDriver: true})
	if err != nil {
		return err
	}
	app := to.app
	if to.hist == nil && !namedBySource(app) {
		// The executors list would come from a driver that a probe, a log
		// line or a static entry found: it says what it likes about its
		// id, and the logs under that id on workers and NodeManagers may
		// be another user's app's. A master or a ResourceManager named
		// this one (or a History Server lists it).
		return &httpError{Status: http.StatusNotFound, Title: "Log not served", AppID: app.ID,
			Msg:   "sparkgate serves the executor logs of apps that a standalone master or a YARN ResourceManager it reads names, or that a History Server lists",
			Cause: fmt.Errorf("app found by %q, which does not bind its id", app.Source)}
	}
	q.back = st.route.Prefix + "/executors/"
	if to.hist != nil && q.attempt != "" && !st.onAppHost {
		q.back = "/history/" + app.ID + "/" + q.attempt + "/executors/"
	}
	ctx, cancel := context.WithTimeout(r.Context(), execLogLimit)
	defer cancel()
	var base *url.URL
	rest := "/api/v1/applications/" + app.ID
	attempt := app.AttemptID
	if to.hist == nil {
		base = app.UIURL
	} else {
		base = s.hs[to.hist.Server]
		if attempt = firstNonEmpty(q.attempt, firstAttempt(to.hist)); attempt != "" {
			rest += "/" + attempt
		}
	}
	what := fmt.Sprintf("the %s of executor %s", q.typ, q.exec)
	claimed, err := s.executorLogURL(ctx, base, rest, q)
	switch {
	case errors.Is(err, errNoSuchLog):
		return &httpError{Status: http.StatusNotFound, Title: "No such log", AppID: app.ID,
			Msg: fmt.Sprintf("application %s lists no %s for executor %s", app.ID, q.typ, q.exec)}
	case err != nil:
		return &httpError{Status: http.StatusBadGateway, Title: "Upstream did not answer", AppID: app.ID,
			Msg: "could not read the application's executors; try again", Cause: err}
	}
	src, ok := workerLogSource(claimed, app.ID, q)
	hosts := s.workers
	if !ok {
		src, ok = nodeManagerLogSource(claimed, app.ID, attempt, q)
		hosts = s.nodes
	}
	if !ok {
		return &httpError{Status: http.StatusNotFound, Title: "Log not served", AppID: app.ID,
			Msg:   fmt.Sprintf("%s is kept where sparkgate does not serve it from: only the logs of standalone workers and YARN NodeManagers are served", what),
			Cause: fmt.Errorf("executor log URL %q is not a worker's or NodeManager's log of this executor", claimed)}
	}
	listed, err := hosts.has(ctx, src.base, s.now())
	if err != nil {
		return &httpError{Status: http.StatusBadGateway, Title: "Upstream did not answer", AppID: app.ID,
			Msg: "could not read the cluster's list of workers; try again", Cause: err}
	}
	if !listed {
		return &httpError{Status: http.StatusNotFound, Title: "Log not served", AppID: app.ID,
			Msg:   fmt.Sprintf("%s is on a host that no standalone master or YARN ResourceManager known to sparkgate lists", what),
			Cause: fmt.Errorf("log host %s is not listed by the configured masters or ResourceManagers", src.base.Redacted())}
	}
	if q.raw {
		return s.downloadExecLog(ctx, w, r, src, app.ID, q)
	}
	return s.pageExecLog(ctx, w, r, st, src, app.ID, q)
}

var (
	errNoSuchLog = errors.New("no such executor log")
	errNotArray  = errors.New("not a JSON array")
)

// executorLogURL reads the app's executors from its REST API (driver or
// History Server) and returns the URL Spark gives for the executor's log.
// The list is decoded one executor at a time, and no further than the one
// asked for.
func (s *Server) executorLogURL(ctx context.Context, base *url.URL, rest string, q execLogReq) (string, error) {
	u := base.JoinPath(rest, "allexecutors")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil) //nolint:gosec // G704: base is the registry's verified UI URL or a configured History Server, the path fixed
	if err != nil {
		return "", fmt.Errorf("building request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.logClient.Do(req) //nolint:gosec // G704: see above
	if err != nil {
		return "", fmt.Errorf("reading executors: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("reading executors: %s", resp.Status)
	}
	dec := json.NewDecoder(io.LimitReader(resp.Body, execListMax))
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return "", fmt.Errorf("reading executors: not a JSON array (%w)", errors.Join(err, errNotArray))
	}
	for dec.More() {
		var e struct {
			ID   string            `json:"id"`
			Logs map[string]string `json:"executorLogs"`
		}
		if err := dec.Decode(&e); err != nil {
			return "", fmt.Errorf("decoding executors: %w", err)
		}
		if e.ID == q.exec {
			if l, ok := e.Logs[q.typ]; ok && l != "" {
				return l, nil
			}
			return "", errNoSuchLog
		}
	}
	return "", errNoSuchLog
}

// logSource is where one executor log is read: a standalone worker's
// /log/, or (yarn) a NodeManager's container log REST API.
type logSource struct {
	base      *url.URL // the worker's or NodeManager's web root
	yarn      bool
	container string // the YARN container id
}

// workerLogSource checks that a log URL Spark gave is a standalone
// worker's log page of exactly this app's executor and log type
// (http://<worker>/logPage/?appId=<app>&executorId=<exec>&logType=<type>,
// as ExecutorRunner builds it), and returns the worker's web UI root.
func workerLogSource(claimed, appID string, q execLogReq) (logSource, bool) {
	b, ok := workerLogBase(claimed, appID, q)
	return logSource{base: b}, ok
}

func workerLogBase(claimed, appID string, q execLogReq) (*url.URL, bool) {
	u, err := url.Parse(claimed)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return nil, false
	}
	if u.Path != "/logPage/" && u.Path != "/logPage" {
		return nil, false
	}
	v, err := url.ParseQuery(u.RawQuery)
	if err != nil || len(v) != 3 || v.Get("appId") != appID || v.Get("executorId") != q.exec || v.Get("logType") != q.typ ||
		len(v["appId"]) != 1 || len(v["executorId"]) != 1 || len(v["logType"]) != 1 {
		return nil, false
	}
	if q.typ != "stdout" && q.typ != "stderr" {
		return nil, false // the only types a worker serves (LogPage.supportedLogTypes)
	}
	return &url.URL{Scheme: u.Scheme, Host: u.Host}, true
}

// logChunk is one range of a log as a worker's /log answers it.
type logChunk struct {
	start, end, total int64
	// failed says the worker could not read the log ("Error…" text);
	// its message names paths on the worker and is not shown.
	failed bool
	body   io.Reader // the log bytes, bounded
	closer io.Closer
}

var reLogHeader = regexp.MustCompile(`^==== Bytes (\d+)-(\d+) of (\d+) of .*====\r?\n$`)

// fetchLogChunk asks the worker's /log for a range of the executor's log.
// offset < 0 asks for the last length bytes, as Spark does without one.
// The query is built here from checked values alone.
func (s *Server) fetchLogChunk(ctx context.Context, src logSource, appID string, q execLogReq, offset int64, length int) (*logChunk, error) {
	if src.yarn {
		return s.fetchContainerLog(ctx, src, q, offset, length)
	}
	worker := src.base
	v := url.Values{"appId": {appID}, "executorId": {q.exec}, "logType": {q.typ}, "byteLength": {strconv.Itoa(length)}}
	if offset >= 0 {
		v.Set("offset", strconv.FormatInt(offset, 10))
	}
	// "log/": /log is a servlet context, and Jetty redirects the bare
	// context path to the slash form.
	u := worker.JoinPath("log/")
	u.RawQuery = v.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil) //nolint:gosec // G704: a worker a configured master lists (workerSet), path fixed, query built from checked values
	if err != nil {
		return nil, fmt.Errorf("building request: %w", err)
	}
	resp, err := s.logClient.Do(req) //nolint:gosec // G704: see above
	if err != nil {
		return nil, fmt.Errorf("reading log from worker: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		_ = resp.Body.Close()
		return nil, fmt.Errorf("reading log from worker: %s", resp.Status)
	}
	br := bufio.NewReaderSize(resp.Body, 4096)
	line, err := br.ReadSlice('\n')
	if err != nil {
		_ = resp.Body.Close()
		return nil, fmt.Errorf("reading log header from worker: %w", err)
	}
	m := reLogHeader.FindSubmatch(line)
	if m == nil {
		_ = resp.Body.Close()
		return nil, errors.New("the worker's answer has no log header")
	}
	c := &logChunk{closer: resp.Body}
	c.start, _ = strconv.ParseInt(string(m[1]), 10, 64)
	c.end, _ = strconv.ParseInt(string(m[2]), 10, 64)
	c.total, _ = strconv.ParseInt(string(m[3]), 10, 64)
	if c.end < c.start || c.total < c.end {
		_ = resp.Body.Close()
		return nil, errors.New("the worker's log header is inconsistent")
	}
	if c.total == 0 {
		if peek, _ := br.Peek(5); string(peek) == "Error" {
			c.failed = true
		}
	}
	// The text is the range decoded as UTF-8 and encoded again: at most 3
	// bytes for each byte of the range (U+FFFD for an invalid one).
	c.body = io.LimitReader(br, 3*(c.end-c.start)+16)
	return c, nil
}

func (c *logChunk) Close() error { return c.closer.Close() }

// execLogPage is the data of the log page.
type execLogPage struct {
	pageBase
	AppID, AppLink, Exec, Type string
	Start, End, Total          int64
	Failed                     bool
	Earlier, Later, Newest     string
	Follow, Raw                string
	Marker                     string
}

// execLogMarker stands for the log text in the rendered page: the page is
// rendered around it and the text streamed in its place.
const execLogMarker = "@@sparkgate-log-text@@"

func (s *Server) pageExecLog(ctx context.Context, w http.ResponseWriter, r *http.Request, st *reqState, src logSource, appID string, q execLogReq) error {
	qs := r.URL.Query()
	offset := int64(-1)
	if o := qs.Get("offset"); o != "" {
		n, err := strconv.ParseInt(o, 10, 64)
		if err != nil || n < 0 {
			return badRequest("offset: a byte offset, 0 or more")
		}
		offset = n
	}
	length := execLogPageDefault
	if l := qs.Get("byteLength"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n <= 0 {
			return badRequest("byteLength: a number of bytes, 1 or more")
		}
		length = min(n, execLogPageMax)
	}
	if src.yarn && offset > 0 {
		return badRequest("offset: a NodeManager serves the first bytes of a log (offset 0) or the last ones (no offset)")
	}
	follow := qs.Get("follow") == "1" && offset < 0
	c, err := s.fetchLogChunk(ctx, src, appID, q, offset, length)
	if err != nil {
		return &httpError{Status: http.StatusBadGateway, Title: "Upstream did not answer", AppID: appID,
			Msg: "the worker did not answer with the log; try again", Cause: err}
	}
	defer func() { _ = c.Close() }()
	self := st.route.Prefix + execLogPrefix + q.exec + "/" + q.typ
	at := func(off int64) string {
		return withAttempt(self, url.Values{"offset": {strconv.FormatInt(off, 10)}, "byteLength": {strconv.Itoa(length)}}, q.attempt)
	}
	data := execLogPage{
		pageBase: st.page(q.typ+" of executor "+q.exec, 0),
		AppID:    appID, AppLink: q.back, Exec: q.exec, Type: q.typ,
		Start: c.start, End: c.end, Total: c.total, Failed: c.failed,
		Newest: withAttempt(self, nil, q.attempt), Follow: withAttempt(self, url.Values{"follow": {"1"}}, q.attempt),
		Raw: withAttempt(self+"/raw", nil, q.attempt), Marker: execLogMarker,
	}
	if follow {
		data.Refresh = 5
		data.Follow = ""
	}
	switch {
	case src.yarn && c.start > 0:
		data.Earlier = at(0) // the first bytes; "newest" is the last ones
	case c.start > 0:
		data.Earlier = at(max(0, c.start-int64(length)))
	}
	if c.end < c.total && !src.yarn {
		data.Later = at(c.end)
	}
	head, tail, err := s.renderLogPage(w.Header(), "execlog", data)
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return nil
	}
	if _, err := w.Write(head); err != nil { //nolint:gosec // G705: head is html/template output (renderLogPage)
		return nil //nolint:nilerr // the client has gone
	}
	if !c.failed {
		if err := copyEscaped(w, c.body); err != nil {
			// Headers are out: all that is left is to cut the answer short.
			panic(http.ErrAbortHandler)
		}
	}
	_, _ = w.Write(tail) //nolint:gosec // G705: html/template output (renderLogPage); a write error means the client has gone
	return nil
}

// renderLogPage renders the log page named page around execLogMarker, the
// place of the log's text, and sets the headers of an uncached page; the
// handler writes head, streams the text, and writes tail.
func (s *Server) renderLogPage(h http.Header, page string, data any) (head, tail []byte, err error) {
	var buf bytes.Buffer
	if err := s.pages.byName[page].ExecuteTemplate(&buf, "layout.html", data); err != nil {
		return nil, nil, fmt.Errorf("rendering %s page: %w", page, err)
	}
	head, tail, ok := bytes.Cut(buf.Bytes(), []byte(execLogMarker))
	if !ok {
		return nil, nil, fmt.Errorf("rendering %s page: no place for the text", page)
	}
	setPageHeaders(h)
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	return head, tail, nil
}

// copyEscaped streams text into an HTML element, escaped, in pooled chunks.
func copyEscaped(w io.Writer, r io.Reader) error {
	bp := chunkPool.Get().(*[]byte)
	defer chunkPool.Put(bp)
	buf := *bp
	ew := &errWriter{w: w}
	for {
		n, err := r.Read(buf)
		if n > 0 {
			template.HTMLEscape(ew, buf[:n])
			if ew.err != nil {
				return ew.err
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// errWriter remembers the first write error (template.HTMLEscape returns
// none).
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

// downloadExecLog streams the whole log (from ?offset=, up to
// execLogDownloadMax bytes) as a text file, asking the worker for one
// chunk at a time, so that neither the worker nor the gateway holds more
// than a chunk.
func (s *Server) downloadExecLog(ctx context.Context, w http.ResponseWriter, r *http.Request, src logSource, appID string, q execLogReq) error {
	offset := int64(0)
	if o := r.URL.Query().Get("offset"); o != "" {
		n, err := strconv.ParseInt(o, 10, 64)
		if err != nil || n < 0 {
			return badRequest("offset: a byte offset, 0 or more")
		}
		offset = n
	}
	// The first chunk is read before any header is sent, so that a worker
	// that does not answer is a clean error page.
	chunk := execLogChunk
	if src.yarn {
		// A NodeManager streams a whole file from disk: one request.
		chunk, offset = -1, 0
	}
	c, err := s.fetchLogChunk(ctx, src, appID, q, offset, chunk)
	if err != nil {
		return &httpError{Status: http.StatusBadGateway, Title: "Upstream did not answer", AppID: appID,
			Msg: "the worker did not answer with the log; try again", Cause: err}
	}
	if c.failed {
		_ = c.Close()
		return &httpError{Status: http.StatusBadGateway, Title: "Log not readable", AppID: appID,
			Msg: fmt.Sprintf("the worker could not read the %s of executor %s", q.typ, q.exec)}
	}
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s_%s_%s.log"`, appID, q.exec, q.typ))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		_ = c.Close()
		return nil
	}
	var sent int64
	for {
		n, err := io.Copy(w, c.body)
		_ = c.Close()
		sent += n
		if err != nil {
			panic(http.ErrAbortHandler) // the client or the worker went away mid-way
		}
		// Stop at the log's end as of this chunk (a log still growing is
		// read up to where it was), at no progress, or at the cap.
		if src.yarn || c.end >= c.total || c.end <= offset || sent >= execLogDownloadMax {
			return nil
		}
		offset = c.end
		if c, err = s.fetchLogChunk(ctx, src, appID, q, offset, int(min(execLogChunk, execLogDownloadMax-sent))); err != nil || c.failed {
			if c != nil {
				_ = c.Close()
			}
			panic(http.ErrAbortHandler)
		}
	}
}

// initExecLogs sets up what executor logs need: the workers the masters
// list, and a client on the upstreams' transport that follows no redirect.
func (s *Server) initExecLogs(standalone []*url.URL, masters []MasterConfig, rms []*url.URL) error {
	if errs := ValidateMasters(masters); len(errs) > 0 {
		return fmt.Errorf("proxy: invalid masters: %w", errors.Join(errs...))
	}
	all := append([]*url.URL(nil), standalone...)
	s.masters = make(map[string]*masterTarget, len(masters))
	for _, m := range masters {
		u, err := url.Parse(m.URL)
		if err != nil {
			return fmt.Errorf("proxy: master %q: %w", m.Name, err)
		}
		u.Path = ""
		all = append(all, u)
		s.masters[m.Name] = &masterTarget{name: m.Name, base: u, everyone: m.Everyone, prefix: "/master/" + m.Name}
	}
	s.logClient = &http.Client{
		Transport:     s.upstreams.transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	s.workers = newWorkerSet(all, s.upstreams.transport)
	s.nodes = newNodeSet(rms, s.upstreams.transport)
	return nil
}
