package proxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

var (
	// reContainerID is a YARN container id: container_[e<epoch>_]<cluster
	// timestamp>_<app sequence>_<attempt>_<container>.
	reContainerID = regexp.MustCompile(`^container_(?:e\d+_)?(\d+)_(\d+)_(\d+)_\d+$`)
	reYARNAppID   = regexp.MustCompile(`^application_(\d+)_(\d+)$`)
	validYARNUser = regexp.MustCompile(`^[A-Za-z0-9_@-][A-Za-z0-9._@-]{0,63}$`).MatchString
)

// nodeManagerLogSource checks that a log URL Spark gave is a NodeManager's
// container log page of a container of exactly this YARN app, and of the
// attempt whose executors named it when that is known (YARN numbers them
// 1, 2, …, a container "01", "000001"; an attempt id with a leading zero
// is no YARN attempt and matches none), for this log type
// (http://<nm>/node/containerlogs/<container>/<user>/<type>?start=…, as
// Spark's YARN ExecutorRunnable builds it), and returns the NodeManager's
// web root and the container.
func nodeManagerLogSource(claimed, appID, attempt string, q execLogReq) (logSource, bool) {
	u, err := url.Parse(claimed)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawPath != "" {
		return logSource{}, false
	}
	segs := strings.Split(strings.TrimPrefix(u.Path, "/"), "/")
	if len(segs) != 5 || segs[0] != "node" || segs[1] != "containerlogs" || !validYARNUser(segs[3]) || segs[4] != q.typ {
		return logSource{}, false
	}
	c := reContainerID.FindStringSubmatch(segs[2])
	a := reYARNAppID.FindStringSubmatch(appID)
	if c == nil || a == nil || c[1] != a[1] || strings.TrimLeft(c[2], "0") != strings.TrimLeft(a[2], "0") ||
		attempt != "" && strings.TrimLeft(c[3], "0") != attempt {
		return logSource{}, false
	}
	return logSource{base: &url.URL{Scheme: u.Scheme, Host: u.Host}, yarn: true, container: segs[2]}, true
}

// containerLogHeaderMax bounds the lines a NodeManager writes before a
// log's contents ("Container: … on <node>", "LogType:", "LogLength:",
// "LogContents:").
const containerLogHeaderMax = 32

var errNoLogContents = errors.New("no LogContents line")

// fetchContainerLog reads a container's log from the NodeManager's REST
// API (/ws/v1/node/containers/<id>/logs/<type>?size=N), which serves the
// first N bytes (N > 0), the last -N bytes, or the whole file (no size):
// offset 0 asks for the first length bytes, offset < 0 for the last,
// length < 0 for the whole log. The NodeManager's header lines (they name
// the node) are dropped and the contents are read up to their length.
func (s *Server) fetchContainerLog(ctx context.Context, src logSource, q execLogReq, offset int64, length int) (*logChunk, error) {
	u := src.base.JoinPath("ws", "v1", "node", "containers", src.container, "logs", q.typ)
	size := int64(length)
	switch {
	case length < 0:
		size = 0
	case offset < 0:
		size = -size
	case offset > 0:
		return nil, errors.New("a NodeManager serves no byte offset")
	}
	if size != 0 {
		u.RawQuery = url.Values{"size": {strconv.FormatInt(size, 10)}}.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil) //nolint:gosec // G704: a NodeManager a configured ResourceManager lists, path built from a checked container id
	if err != nil {
		return nil, fmt.Errorf("building request: %w", err)
	}
	req.Header.Set("Accept", "text/plain")
	resp, err := s.logClient.Do(req) //nolint:gosec // G704: see above
	if err != nil {
		return nil, fmt.Errorf("reading log from NodeManager: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		// The NodeManager says why (for the log, not the user).
		why, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		_ = resp.Body.Close()
		return nil, fmt.Errorf("reading log from NodeManager: %s: %q", resp.Status, why)
	}
	br := bufio.NewReaderSize(resp.Body, 4096)
	total := int64(-1)
	for i := 0; ; i++ {
		line, err := br.ReadSlice('\n')
		if err != nil || i == containerLogHeaderMax {
			_ = resp.Body.Close()
			return nil, fmt.Errorf("reading the NodeManager's log header: %w", errors.Join(errNoLogContents, err))
		}
		line = bytes.TrimRight(line, "\r\n")
		if v, ok := bytes.CutPrefix(line, []byte("LogLength:")); ok {
			total, _ = strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
		}
		if string(line) == "LogContents:" {
			break
		}
	}
	if total < 0 {
		_ = resp.Body.Close()
		return nil, errors.New("the NodeManager's log header has no length")
	}
	n := total
	if size != 0 {
		n = min(total, max(size, -size))
	}
	if length < 0 {
		n = min(n, execLogDownloadMax)
	}
	c := &logChunk{closer: resp.Body, total: total, start: 0, end: n, body: io.LimitReader(br, n)}
	if size < 0 {
		c.start, c.end = total-n, total
	}
	return c, nil
}
