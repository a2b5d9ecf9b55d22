package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/sparkgate/sparkgate/proxy/discovery"
)

// podLogPrefix is where the logs of an app's Kubernetes pods are served
// under /app/<id>: "/_/logs/pod/<pod>" is a page of the pod's log,
// ".../raw" the log as a download; ?container= picks a container. "pod"
// is no Spark executor id (they are "driver" or numbers), so these paths
// cannot shadow an executor's log (execlogs.go).
const podLogPrefix = execLogPrefix + "pod/"

// Bounds of what one request reads through the API server's pods/log
// (which offers the last lines, a byte limit, follow, and no offset).
const (
	// podLogPageLines is how many of the last lines a page shows by default.
	podLogPageLines = 1000
	// podLogPageMax caps the bytes of a page, following included.
	podLogPageMax = 1 << 20
	// podLogDownloadMax caps a download, as execLogDownloadMax does.
	podLogDownloadMax = 1 << 30
	// podLogFollowMax bounds how long a page follows a log; the page then
	// ends with a link to follow on.
	podLogFollowMax = 5 * time.Minute
	// podLogDownloadLimit bounds a download's time.
	podLogDownloadLimit = 30 * time.Minute
	// podLogStreamsPerUser bounds the pod logs one user reads at once
	// through a replica: each holds a stream of the API server, whose
	// capacity every team shares, for up to podLogFollowMax (a page) or
	// podLogDownloadLimit (a download). A browser opens at most six
	// connections to a host.
	podLogStreamsPerUser = 8
)

// userSlots bounds what each user holds at once of something (max each).
type userSlots struct {
	mu   sync.Mutex
	held map[string]int
	max  int
}

// take takes one of user's slots; release gives it back. ok is false when
// user holds max already.
func (u *userSlots) take(user string) (release func(), ok bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.held[user] >= u.max {
		return nil, false
	}
	if u.held == nil {
		u.held = make(map[string]int)
	}
	u.held[user]++
	var once sync.Once
	return func() {
		once.Do(func() {
			u.mu.Lock()
			defer u.mu.Unlock()
			if u.held[user]--; u.held[user] <= 0 {
				delete(u.held, user)
			}
		})
	}, true
}

// PodLogSource is what serves the logs of apps' Kubernetes pods:
// discovery's Kubernetes source (discovery.Discoverer).
type PodLogSource interface {
	// AppPods lists the app's pods as the source's caches hold them: the
	// only pods whose logs are served for the app.
	AppPods(appID string) []discovery.Pod
	// PodLog opens one of them through the API server's pods/log.
	PodLog(ctx context.Context, p discovery.Pod, o discovery.PodLogOptions) (io.ReadCloser, error)
}

var _ PodLogSource = (*discovery.Discoverer)(nil)

type podLogReq struct {
	pod string
	raw bool
}

var (
	// A pod name is a DNS subdomain, a container name a DNS label.
	validPodName       = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$`).MatchString
	validContainerName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`).MatchString
)

// parsePodLogPath parses the part of an app path after the app's prefix.
func parsePodLogPath(p string) (podLogReq, bool) {
	rest, ok := strings.CutPrefix(p, podLogPrefix)
	if !ok {
		return podLogReq{}, false
	}
	name, tail, slash := strings.Cut(rest, "/")
	if !validPodName(name) || (slash && tail != "raw") || strings.Contains(name, "..") {
		return podLogReq{}, false
	}
	return podLogReq{pod: name, raw: tail == "raw"}, true
}

// podLogLink is the gateway path of a pod's log: under the app's bookmark,
// or at the root of the app's own host.
func podLogLink(appID string, onAppHost bool, pod string) string {
	if onAppHost {
		return podLogPrefix + pod
	}
	return "/app/" + appID + podLogPrefix + pod
}

// appPodLinks maps each executor id of the app that has a pod (the driver
// included) to its pod's log path; nil without a Kubernetes source.
func (s *Server) appPodLinks(appID string, onAppHost bool) map[string]string {
	if s.pods == nil {
		return nil
	}
	var out map[string]string
	for _, p := range s.pods.AppPods(appID) {
		if _, dup := out[p.ExecID]; dup || !validExecutorID(p.ExecID) {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[p.ExecID] = podLogLink(appID, onAppHost, p.Name)
	}
	return out
}

// podLogQuery is what a pod-log request may ask for.
type podLogQuery struct {
	opts  discovery.PodLogOptions
	lines int64 // the last lines asked for; 0: from the start
	limit int64 // the bytes asked for (the cap unless fewer were asked)
}

func parsePodLogQuery(qs url.Values, pod discovery.Pod, raw bool) (podLogQuery, error) {
	q := podLogQuery{lines: podLogPageLines, limit: podLogPageMax}
	if raw {
		q.lines, q.limit = 0, podLogDownloadMax
	}
	q.opts.Container = qs.Get("container")
	switch {
	case q.opts.Container == "" && len(pod.Containers) > 0:
		q.opts.Container = pod.Containers[0] // Spark's own container
	case !slices.Contains(pod.Containers, q.opts.Container):
		return q, badRequest("container: one of the pod's containers (" + strings.Join(pod.Containers, ", ") + ")")
	}
	if l := qs.Get("lines"); l != "" {
		n, err := strconv.ParseInt(l, 10, 64)
		if err != nil || n < 0 {
			return q, badRequest("lines: the number of last lines to show, or 0 for the log from its start")
		}
		q.lines = n
	}
	if b := qs.Get("limitBytes"); b != "" {
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n <= 0 {
			return q, badRequest("limitBytes: a number of bytes, 1 or more")
		}
		q.limit = min(n, q.limit)
	}
	q.opts.TailLines = q.lines
	q.opts.Timestamps = qs.Get("timestamps") == "1"
	q.opts.Previous = qs.Get("previous") == "1"
	q.opts.Follow = !raw && qs.Get("follow") == "1" && !q.opts.Previous
	return q, nil
}

// servePodLog answers a pod-log path of the route's app, for a user
// allowed to view the app. The pod must be one the Kubernetes source's
// caches hold with the app's id: the user names a pod, never a namespace,
// and a pod of another app is no more found than a pod that does not
// exist.
func (s *Server) servePodLog(w http.ResponseWriter, r *http.Request, st *reqState) error {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return &httpError{Status: http.StatusMethodNotAllowed, Msg: "only GET and HEAD", Allow: "GET, HEAD"}
	}
	to, err := s.resolveApp(st, resolveOpts{namedDriver: true})
	if err != nil {
		return err
	}
	appID := to.app.ID
	q, valid := parsePodLogPath(st.route.Path)
	var pod discovery.Pod
	found := false
	if s.pods != nil && valid {
		for _, p := range s.pods.AppPods(appID) {
			if p.Name == q.pod {
				pod, found = p, true
				break
			}
		}
	}
	if !found {
		return &httpError{Status: http.StatusNotFound, Title: "No such pod", AppID: appID,
			Msg: fmt.Sprintf("application %s has no Kubernetes pod of that name that sparkgate watches", appID)}
	}
	pq, err := parsePodLogQuery(r.URL.Query(), pod, q.raw)
	if err != nil {
		return err
	}
	release, ok := s.podLogStreams.take(st.ident.User)
	if !ok {
		return &httpError{Status: http.StatusTooManyRequests, Title: "Too many pod logs open", AppID: appID, RetryAfter: 10,
			Msg: fmt.Sprintf("you are reading %d pod logs through this gateway already (followed pages and downloads); "+
				"close one, or wait for one to end, and this page tries again", podLogStreamsPerUser)}
	}
	defer release()
	if q.raw {
		return s.downloadPodLog(w, r, pod, appID, pq)
	}
	return s.pagePodLog(w, r, st, pod, appID, pq)
}

// openPodLog asks the API server for the log, at most limit+1 bytes (the
// extra byte tells that the limit cut the log).
func (s *Server) openPodLog(ctx context.Context, pod discovery.Pod, appID string, pq podLogQuery) (io.ReadCloser, error) {
	o := pq.opts
	o.LimitBytes = pq.limit + 1
	rc, err := s.pods.PodLog(ctx, pod, o)
	var st apierrors.APIStatus
	switch {
	case err == nil:
		return rc, nil
	case apierrors.IsNotFound(err):
		return nil, &httpError{Status: http.StatusNotFound, Title: "No such log", AppID: appID,
			Msg: fmt.Sprintf("the API server has no log of pod %s", pod.Name), Cause: err}
	case apierrors.IsForbidden(err):
		return nil, &httpError{Status: http.StatusBadGateway, Title: "Log not readable", AppID: appID,
			Msg:   "the Kubernetes API server does not let sparkgate read pod logs (its role needs get on pods/log)",
			Cause: err}
	case errors.As(err, &st) && st.Status().Code == http.StatusBadRequest:
		// The container has not started, or has no previous instance.
		return nil, &httpError{Status: http.StatusNotFound, Title: "No such log", AppID: appID,
			Msg: fmt.Sprintf("no log of container %s of pod %s: %s", pq.opts.Container, pod.Name, st.Status().Message), Cause: err}
	default:
		return nil, &httpError{Status: http.StatusBadGateway, Title: "Upstream did not answer", AppID: appID,
			Msg: "the Kubernetes API server did not answer with the log; try again", Cause: err}
	}
}

// podLogPage is the data of the pod log page.
type podLogPage struct {
	pageBase
	AppID, AppLink, Pod, Exec, Container string
	Containers                           []podLogContainer
	Lines                                int64
	Limit                                int64
	Following                            bool
	FollowFor                            string
	Newest, Start, Follow, Raw           string
	Timestamps                           string // the link that turns timestamps on or off
	TimestampsOn                         bool
	Marker                               string
}

type podLogContainer struct {
	Name, Link string
	Current    bool
}

func (s *Server) pagePodLog(w http.ResponseWriter, r *http.Request, st *reqState, pod discovery.Pod, appID string, pq podLogQuery) error {
	limit := execLogLimit
	if pq.opts.Follow {
		limit = podLogFollowMax
	}
	ctx, cancel := context.WithTimeout(r.Context(), limit)
	defer cancel()
	rc, err := s.openPodLog(ctx, pod, appID, pq)
	if err != nil {
		return err
	}
	defer func() { _ = rc.Close() }()
	self := st.route.Prefix + podLogPrefix + pod.Name
	link := func(path string, set map[string]string) string {
		v := url.Values{}
		if pq.opts.Container != pod.Containers[0] {
			v.Set("container", pq.opts.Container)
		}
		if pq.opts.Timestamps {
			v.Set("timestamps", "1")
		}
		for k, val := range set {
			if val == "" {
				v.Del(k)
			} else {
				v.Set(k, val)
			}
		}
		if len(v) == 0 {
			return path
		}
		return path + "?" + v.Encode()
	}
	what := "executor " + pod.ExecID
	if pod.ExecID == "driver" {
		what = "the driver"
	}
	data := podLogPage{
		pageBase: st.page("log of pod "+pod.Name, 0),
		AppID:    appID, AppLink: st.route.Prefix + "/executors/", Pod: pod.Name, Exec: what, Container: pq.opts.Container,
		Lines: pq.lines, Limit: pq.limit, Following: pq.opts.Follow, FollowFor: podLogFollowMax.String(),
		Newest: link(self, nil), Start: link(self, map[string]string{"lines": "0"}),
		Follow: link(self, map[string]string{"follow": "1"}), Raw: link(self+"/raw", nil),
		TimestampsOn: pq.opts.Timestamps, Marker: execLogMarker,
	}
	if pq.opts.Timestamps {
		data.Timestamps = link(self, map[string]string{"timestamps": ""})
	} else {
		data.Timestamps = link(self, map[string]string{"timestamps": "1"})
	}
	if len(pod.Containers) > 1 {
		for i, c := range pod.Containers {
			set := map[string]string{"container": c}
			if i == 0 {
				set["container"] = "" // the default
			}
			data.Containers = append(data.Containers, podLogContainer{Name: c, Current: c == pq.opts.Container,
				Link: link(self, set)})
		}
	}
	head, tail, err := s.renderLogPage(w.Header(), "podlog", data)
	if err != nil {
		return err
	}
	if pq.opts.Follow {
		w.Header().Set("X-Accel-Buffering", "no") // a proxy in front must not hold the stream
	}
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return nil
	}
	if _, err := w.Write(head); err != nil { //nolint:gosec // G705: head is html/template output (renderLogPage)
		return nil //nolint:nilerr // the client has gone
	}
	fw := &flushWriter{w: w, rc: http.NewResponseController(w), flush: pq.opts.Follow}
	n, err := copyEscapedN(fw, rc, pq.limit)
	var note string
	switch {
	case n >= pq.limit && (pq.opts.Follow || moreThan(rc)):
		// (A followed log at the cap stops here; probing it for one more
		// byte could wait for the next line.)
		note = fmt.Sprintf("cut at %d bytes: the rest is in the download", pq.limit)
	case pq.opts.Follow && errors.Is(ctx.Err(), context.DeadlineExceeded):
		note = "stopped following after " + podLogFollowMax.String()
	case fw.err != nil:
		panic(http.ErrAbortHandler) // the client has gone
	case err != nil && r.Context().Err() == nil:
		note = "the log stream broke off"
	}
	if note != "" {
		_, _ = io.WriteString(w, "\n<span class=\"lognote\">— "+note+" —</span>")
	}
	_, _ = w.Write(tail) //nolint:gosec // G705: html/template output (renderLogPage); a write error means the client has gone
	return nil
}

// moreThan reports whether r has one more byte to give.
func moreThan(r io.Reader) bool {
	var b [1]byte
	n, _ := io.ReadFull(r, b[:])
	return n == 1
}

// copyEscapedN streams at most limit bytes of text into an HTML element,
// escaped, and says how many it read.
func copyEscapedN(w io.Writer, r io.Reader, limit int64) (int64, error) {
	cr := &countReader{r: io.LimitReader(r, limit)}
	err := copyEscaped(w, cr)
	return cr.n, err
}

type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// flushWriter flushes after each write when following, so that each chunk
// of a followed log reaches the browser as it comes.
type flushWriter struct {
	w     io.Writer
	rc    *http.ResponseController
	flush bool
	err   error
}

func (f *flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if err == nil && f.flush {
		err = f.rc.Flush()
	}
	if err != nil {
		f.err = err
	}
	return n, err
}

// downloadPodLog streams the log (from its start, up to the cap) as a
// text file.
func (s *Server) downloadPodLog(w http.ResponseWriter, r *http.Request, pod discovery.Pod, appID string, pq podLogQuery) error {
	ctx, cancel := context.WithTimeout(r.Context(), podLogDownloadLimit)
	defer cancel()
	rc, err := s.openPodLog(ctx, pod, appID, pq)
	if err != nil {
		return err
	}
	defer func() { _ = rc.Close() }()
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s_%s_%s.log"`, appID, pod.Name, pq.opts.Container))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return nil
	}
	if _, err := io.Copy(w, io.LimitReader(rc, pq.limit)); err != nil {
		panic(http.ErrAbortHandler) // the client or the API server went away mid-way
	}
	return nil
}
