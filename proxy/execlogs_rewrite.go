package proxy

import (
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"strings"
)

// executorsListApp reports whether an upstream path is an app's executors
// list in Spark's REST API (/api/v1/applications/<id>[/<attempt>]/
// {executors,allexecutors}), and for which app and attempt.
func executorsListApp(p string) (id, attempt string, ok bool) {
	rest, ok := strings.CutPrefix(p, "/api/v1/applications/")
	if !ok {
		return "", "", false
	}
	segs := strings.Split(rest, "/")
	n := len(segs)
	if n < 2 || n > 3 || (segs[n-1] != "executors" && segs[n-1] != "allexecutors") || !ValidAppID(segs[0]) {
		return "", "", false
	}
	if n == 3 && ValidAttemptID(segs[1]) {
		// Any other segment is no attempt of a gateway route; the list
		// is rewritten all the same.
		attempt = segs[1]
	}
	return segs[0], attempt, true
}

// rewriteExecutorLogs makes the executors list's executorLogs (which name
// a worker's, NodeManager's or other host's address; the Executors tab
// links them as they are) lead to the gateway's path of each log instead.
// Every entry is replaced, whether the gateway can serve it or not: the
// page never links a host behind the gateway. The list is rewritten as it
// streams, one executor at a time. pods maps executor ids to the gateway's
// paths of their Kubernetes pods' logs (podlogs.go): an executor with a pod
// links its pod's log, whatever Spark listed (on Kubernetes, nothing unless
// configured).
func rewriteExecutorLogs(resp *http.Response, links execLogLinks, pods map[string]string) error {
	return rewriteJSONAnswer(resp, func(w io.Writer, r io.Reader) error { return rewriteExecutorList(w, r, links, pods) })
}

// rewriteJSONAnswer has rewrite copy a successful JSON answer to a GET,
// decoded, into its body as it streams; any other answer is left alone.
func rewriteJSONAnswer(resp *http.Response, rewrite func(w io.Writer, r io.Reader) error) error {
	if resp.Request.Method != http.MethodGet || resp.StatusCode != http.StatusOK ||
		!strings.HasPrefix(strings.ToLower(resp.Header.Get("Content-Type")), "application/json") {
		return nil
	}
	body := resp.Body
	if ce := resp.Header.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
		d, err := decodeBody(ce, body)
		if err != nil {
			return fmt.Errorf("%w: %q: %w", errEncodedHTML, ce, err)
		}
		body = d
		resp.Header.Del("Content-Encoding")
	}
	pr, pw := io.Pipe()
	go func() {
		err := rewrite(pw, body)
		_ = body.Close()
		pw.CloseWithError(err) // nil: EOF for the reader
	}()
	resp.Body = pr
	resp.ContentLength = -1
	resp.Header.Del("Content-Length")
	return nil
}

// rewriteExecutorList copies a JSON array of executors from r to w with
// each executorLogs value replaced by the gateway's link.
func rewriteExecutorList(w io.Writer, r io.Reader, links execLogLinks, pods map[string]string) error {
	// Each executor is read whole, so each is bounded: a driver (or a
	// small gzip answer) could otherwise make one as large as it likes.
	br := &budgetReader{r: r, left: maxExecutorEntry}
	dec := json.NewDecoder(br)
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return fmt.Errorf("executors list: %w", errors.Join(errNotArray, err))
	}
	if _, err := io.WriteString(w, "["); err != nil {
		return err
	}
	for i := 0; dec.More(); i++ {
		br.left = maxExecutorEntry
		var e map[string]json.RawMessage
		if err := dec.Decode(&e); err != nil {
			return fmt.Errorf("executors list: %w", err)
		}
		for _, k := range []string{"id", "hostPort"} {
			if v, ok := e[k]; ok {
				e[k] = textOnly(v)
			}
		}
		if link, ok := podLinkFor(pods, e["id"]); ok {
			e["executorLogs"] = link
		} else if raw, ok := e["executorLogs"]; ok {
			e["executorLogs"] = gatewayLogLinks(raw, e["id"], links)
		}
		b, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("executors list: %w", err)
		}
		if i > 0 {
			if _, err := io.WriteString(w, ","); err != nil {
				return err
			}
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("executors list: %w", err)
	}
	if _, err := io.WriteString(w, "]"); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("executors list: data after the array")
	}
	return nil
}

// textOnly HTML-escapes a JSON string that holds markup characters.
// Spark's Executors tab puts an executor's id and hostPort into the page
// as HTML (executorspage.js renders them with no escaping), and a History
// Server's come from an event log anyone may write; Spark's own never hold
// these characters, so only a forged one changes.
func textOnly(raw json.RawMessage) json.RawMessage {
	var v string
	if json.Unmarshal(raw, &v) != nil || !strings.ContainsAny(v, `<>"'&`) {
		return raw
	}
	b, err := json.Marshal(html.EscapeString(v))
	if err != nil {
		return raw
	}
	return b
}

// maxExecutorEntry bounds the bytes read for one executor of a list (one
// of Spark's is some kilobytes), past what the decoder had read ahead.
const maxExecutorEntry = 1 << 20

var errExecutorTooLarge = errors.New("executors list: an executor's entry is over 1 MiB")

// budgetReader reads r until left bytes are read, then fails.
type budgetReader struct {
	r    io.Reader
	left int
}

func (b *budgetReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errExecutorTooLarge
	}
	if len(p) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= n
	return n, err
}

// gatewayLogLinks maps {"stdout": "http://worker/…", …} to the gateway's
// links of the same logs; entries it cannot name safely are dropped.
func gatewayLogLinks(raw, rawID json.RawMessage, links execLogLinks) json.RawMessage {
	var logs map[string]string
	var id string
	if json.Unmarshal(raw, &logs) != nil || json.Unmarshal(rawID, &id) != nil || !validExecutorID(id) {
		return json.RawMessage("{}")
	}
	out := make(map[string]string, len(logs))
	for typ := range logs {
		if validLogType(typ) {
			out[typ] = links.link(id, typ)
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return json.RawMessage("{}")
	}
	return b
}

// podLinkFor is {"log": <the pod log's path>} for an executor with a pod.
// The key names the pod's log (its containers' stdout and stderr as one,
// as kubectl logs shows them); the Executors tab shows the key as the
// link's text.
func podLinkFor(pods map[string]string, rawID json.RawMessage) (json.RawMessage, bool) {
	if len(pods) == 0 {
		return nil, false
	}
	var id string
	if json.Unmarshal(rawID, &id) != nil {
		return nil, false
	}
	link, ok := pods[id]
	if !ok {
		return nil, false
	}
	b, err := json.Marshal(map[string]string{"log": link})
	return b, err == nil
}

// taskLogsApp reports whether an upstream path is an answer of Spark's
// REST API that its pages render log links from besides the executors
// list, and for which app and attempt: a stage's task table and task list
// (/api/v1/applications/<id>[/<attempt>]/stages/<stage>/<att>/{taskTable,
// taskList}, whose tasks carry their executor's executorLogs) and the
// other processes (allmiscellaneousprocess: a YARN AM's processLogs). A
// stage's details carry the same links, but no page renders them, and
// they hold every task of the stage: they go out as sent.
func taskLogsApp(p string) (id, attempt string, ok bool) {
	rest, ok := strings.CutPrefix(p, "/api/v1/applications/")
	if !ok {
		return "", "", false
	}
	segs := strings.Split(rest, "/")
	if len(segs) < 2 || !ValidAppID(segs[0]) {
		return "", "", false
	}
	id, segs = segs[0], segs[1:]
	if len(segs) > 1 && segs[0] != "stages" && segs[0] != "allmiscellaneousprocess" {
		attempt, segs = segs[0], segs[1:]
		if !ValidAttemptID(attempt) {
			attempt = ""
		}
	}
	switch {
	case len(segs) == 1 && segs[0] == "allmiscellaneousprocess":
	case len(segs) == 4 && segs[0] == "stages" && (segs[3] == "taskTable" || segs[3] == "taskList"):
	default:
		return "", "", false
	}
	return id, attempt, true
}

// rewriteTaskLogs is rewriteExecutorLogs for taskLogsApp's answers: every
// "executorLogs" member, at any depth, becomes the gateway's links of the
// log types it names, for the "executorId" given before it in the same
// object ({} without one). Spark's stage page renders those links as HTML
// unescaped (utils.js formatLogsCells), and a History Server's come from
// an event log that anyone may write.
func rewriteTaskLogs(resp *http.Response, links execLogLinks) error {
	return rewriteJSONAnswer(resp, func(w io.Writer, r io.Reader) error { return rewriteLogsDeep(w, r, links) })
}

// rewriteLogsDeep copies one JSON value from r to w token by token, each
// token bounded by maxExecutorEntry, with every executorLogs member
// replaced (see rewriteTaskLogs).
func rewriteLogsDeep(w io.Writer, r io.Reader, links execLogLinks) error {
	type frame struct {
		obj, wantKey bool
		n            int
		key          string
		execID       json.RawMessage
	}
	br := &budgetReader{r: r}
	dec := json.NewDecoder(br)
	dec.UseNumber()
	bw := &errWriter{w: w}
	var stack []*frame
	done := false
	for {
		br.left = maxExecutorEntry
		if n := len(stack); n > 0 && stack[n-1].obj && !stack[n-1].wantKey && (stack[n-1].key == "executorLogs" || stack[n-1].key == "processLogs") {
			top := stack[n-1]
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return fmt.Errorf("stages answer: %w", err)
			}
			if top.key == "processLogs" {
				// Logs of no executor: none the gateway serves.
				_, _ = io.WriteString(bw, "{}")
			} else {
				_, _ = bw.Write(gatewayLogLinks(raw, top.execID, links))
			}
			top.n++
			top.wantKey = true
			continue
		}
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) && done && len(stack) == 0 {
			return bw.err
		}
		if err != nil {
			return fmt.Errorf("stages answer: %w", err)
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			_, _ = io.WriteString(bw, d.String())
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				done = true
			}
			if bw.err != nil {
				return bw.err
			}
			continue
		}
		if len(stack) == 0 && done {
			return errors.New("stages answer: data after the value")
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.obj && top.wantKey {
			k, _ := tok.(string)
			if top.n > 0 {
				_, _ = io.WriteString(bw, ",")
			}
			b, _ := json.Marshal(k)
			_, _ = bw.Write(b)
			_, _ = io.WriteString(bw, ":")
			top.key, top.wantKey = k, false
			continue
		}
		if top != nil && !top.obj && top.n > 0 {
			_, _ = io.WriteString(bw, ",")
		}
		switch v := tok.(type) {
		case json.Delim:
			_, _ = io.WriteString(bw, v.String())
			stack = append(stack, &frame{obj: v == '{', wantKey: v == '{'})
		case json.Number:
			_, _ = io.WriteString(bw, v.String())
		default:
			b, err := json.Marshal(v)
			if err != nil {
				return fmt.Errorf("stages answer: %w", err)
			}
			_, _ = bw.Write(b)
			if s, ok := v.(string); ok && top != nil && top.obj && top.key == "executorId" {
				top.execID, _ = json.Marshal(s)
			}
		}
		if top != nil {
			top.n++
			if top.obj {
				top.wantKey = true
			}
		} else if _, ok := tok.(json.Delim); !ok {
			done = true
		}
		if bw.err != nil {
			return bw.err
		}
	}
}
