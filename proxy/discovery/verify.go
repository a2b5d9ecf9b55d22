package discovery

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Limits for calls to drivers and History Servers.
const (
	callTimeout   = 3 * time.Second        // per outbound request, headers and body
	driverBodyMax = 1 << 20                // a driver's app list is one small object
	envBodyMax    = 16 << 20               // environments list every classpath entry
	listBodyMax   = 64 << 20               // a History Server lists every app it has
	listStringMax = 1 << 10                // an oversized list's strings are cut here: app names are users' choice
	listRawMax    = 1 << 30                // a list as sent, before its strings are cut
	maxIdleConns  = 1024                   // idle connections to drivers and servers, in all
	startingMax   = 2 * time.Minute        // Spark shows its placeholder until SparkContext is up
	nonJSONMax    = 30 * time.Second       // HTML 404s and other non-JSON answers while handlers attach
	startPoll     = 40 * time.Millisecond  // between tries early in a UI's start-up window
	startFast     = 5 * time.Second        // how long into the window tries stay startPoll apart
	retryCap      = 250 * time.Millisecond // between tries after that
)

// Real drivers log the SparkUI port line about two seconds before the REST
// API answers (SparkContext start-up), longer on a busy machine, and the app
// should be routable as soon as it does. So verify polls a starting-up UI at
// a steady startPoll for the first startFast (a small GET that the
// placeholder or Jetty's 404 answers in a millisecond, one at a time), then
// every retryCap: a driver stuck on its placeholder costs four small GETs a
// second until startingMax.

// timeoutRetries is how many header timeouts verify retries from a UI that
// has not shown Spark's placeholder in the same verification.
const timeoutRetries = 2

// isTimeout reports whether err is an unreachableError from a request that
// connected but got no answer in time (not a refused or failed dial).
func isTimeout(err error) bool {
	var ue *unreachableError
	if !errors.As(err, &ue) || ue.refused {
		return false
	}
	var ne net.Error
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return false
	}
	return errors.As(err, &ne) && ne.Timeout()
}

// retryDelay is the period between the starts of two tries of a
// starting-up UI, elapsed into its verification.
func retryDelay(elapsed time.Duration) time.Duration {
	if elapsed >= 0 && elapsed < startFast {
		return startPoll
	}
	return retryCap
}

// aclKeys are the properties the policy needs, read from the environment:
// the ACLs, and whether the app writes an event log (one that writes none
// is never listed by a History Server, so an ended one keeps its own
// rules).
var aclKeys = []string{
	"spark.acls.enable",
	"spark.admin.acls", "spark.admin.acls.groups",
	"spark.ui.view.acls", "spark.ui.view.acls.groups",
	"spark.modify.acls", "spark.modify.acls.groups",
	"spark.user.groups.mapping",
	"spark.eventLog.enabled",
}

var (
	// errStarting means the UI answered with Spark's "starting up"
	// placeholder: retry soon.
	errStarting = errors.New("spark UI is starting up")
	// errNotJSON means an answer that is not JSON: retry a few times.
	errNotJSON = errors.New("answer is not JSON")
	// errNotDriver means a well-formed answer that is not one live app.
	errNotDriver = errors.New("not a driver UI")
)

// unreachableError is a failure to connect or to get any HTTP answer.
type unreachableError struct {
	refused bool
	err     error
}

func (e *unreachableError) Error() string { return "unreachable: " + e.err.Error() }
func (e *unreachableError) Unwrap() error { return e.err }

// apiAttempt and apiApp are Spark's ApplicationAttemptInfo and
// ApplicationInfo (status/api/v1/api.scala), as much as discovery reads.
type apiAttempt struct {
	AttemptID        string `json:"attemptId"`
	SparkUser        string `json:"sparkUser"`
	Completed        bool   `json:"completed"`
	AppSparkVersion  string `json:"appSparkVersion"`
	StartTimeEpoch   int64  `json:"startTimeEpoch"`
	EndTimeEpoch     int64  `json:"endTimeEpoch"`
	LastUpdatedEpoch int64  `json:"lastUpdatedEpoch"`
}

type apiApp struct {
	ID       string       `json:"id"`
	Name     string       `json:"name"`
	Attempts []apiAttempt `json:"attempts"`
}

// driverInfo is what a verified driver said about itself in its app list.
// Its environment (ACL properties, proxy base) is read separately, after
// the app is published: see driverEnv.
type driverInfo struct {
	ID, Name, User, AttemptID, SparkVersion string
	Start                                   time.Time
	Completed                               bool
	tries                                   int    // requests for the app list, for logs
	addr                                    string // the ip:port verified (pins)
}

// client makes the bounded outbound calls. Its zero value is not usable.
type client struct {
	hc *http.Client
	// drivers and envs bound the requests to drivers in flight at once
	// (app lists; environments, which are larger and may wait), so 500
	// drivers found together are asked in parallel but not all at once.
	drivers, envs chan struct{}
	// endpoints bounds, within drivers, the requests to one endpoint.
	endpoints endpointSlots
	// listMax is the most a list may hold (0: listBodyMax).
	listMax int64
}

// driverParallel and envParallel are how many app list and environment
// requests to drivers may be in flight at once.
const (
	driverParallel = 32
	envParallel    = 8
	// endpointParallel is how many of the driverParallel one endpoint
	// (scheme, host and port) may hold. Anyone can name their own process
	// at any number of paths (a log line each), and verification retries a
	// UI on its start-up placeholder for startingMax, one call timeout a
	// try if it then stalls: without a share per endpoint, one process held
	// every slot and other teams' new drivers waited behind it for
	// minutes. Real drivers are one per port; a ResourceManager's proxy
	// fronts many, which are then asked a few at a time.
	endpointParallel = 4
)

// endpointSlots hands out up to endpointParallel slots per endpoint; an
// endpoint's entry lives while someone holds or waits for one.
type endpointSlots struct {
	mu sync.Mutex
	m  map[string]*endpointSlot
}

type endpointSlot struct {
	sem   chan struct{}
	users int // holding or waiting
}

// acquire waits for a slot of the endpoint of u; done frees it.
func (e *endpointSlots) acquire(ctx context.Context, u *url.URL) (done func(), err error) {
	key := u.Scheme + "://" + strings.ToLower(u.Host)
	e.mu.Lock()
	if e.m == nil {
		e.m = map[string]*endpointSlot{}
	}
	s := e.m[key]
	if s == nil {
		s = &endpointSlot{sem: make(chan struct{}, endpointParallel)}
		e.m[key] = s
	}
	s.users++
	e.mu.Unlock()
	leave := func() {
		e.mu.Lock()
		if s.users--; s.users == 0 {
			delete(e.m, key)
		}
		e.mu.Unlock()
	}
	select {
	case s.sem <- struct{}{}:
		return func() { <-s.sem; leave() }, nil
	case <-ctx.Done():
		leave()
		return nil, ctx.Err()
	}
}

// toDriver waits for a slot of sem for one request to a driver; done frees
// it.
func toDriver(ctx context.Context, sem chan struct{}) (done func(), err error) {
	select {
	case sem <- struct{}{}:
		return func() { <-sem }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func newClient(tr http.RoundTripper) *client {
	if tr == nil {
		tr = newTransport()
	}
	return &client{drivers: make(chan struct{}, driverParallel), envs: make(chan struct{}, envParallel), hc: &http.Client{
		Transport: tr,
		// Drivers answer the API directly; a redirect means a proxy or
		// filter in the way (YARN's AmIpFilter, a login page), which is
		// not an answer from the app.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

func newTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil // drivers are on the cluster network, never behind the environment's proxy
	// Short dials: a dead driver must not hold a verification slot.
	t.DialContext = (&net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	// A UI that accepts but does not answer is as good as gone.
	t.ResponseHeaderTimeout = callTimeout
	// Jetty sends at most 8 KiB of response headers; whatever answers a
	// probe may send 10 MiB (the transport's default bound) to each call.
	t.MaxResponseHeaderBytes = 64 << 10
	// Keep a few idle connections per driver for the liveness checks, and
	// room for one to each of many drivers: with the default 100 in all,
	// 500 drivers checked in turn found their connection gone and each
	// check dialled anew (a fifth of the gateway's CPU with nothing
	// changing). Bounded, as every idle connection holds two goroutines
	// and their buffers (24-35 KiB of RSS as measured at 500 drivers):
	// however many HTTP services a probe or a user's fake drivers offer,
	// the pool holds at most some 35 MiB.
	t.MaxIdleConnsPerHost = 2
	t.MaxIdleConns = maxIdleConns
	t.IdleConnTimeout = 90 * time.Second
	return t
}

// getListJSON fetches and decodes a cluster manager's or History Server's
// list of apps: one larger than listBodyMax as sent is read again with its
// strings cut to listStringMax bytes (stringCapper), and then read up to
// listBodyMax bytes.
func (c *client) getListJSON(ctx context.Context, base *url.URL, p string, v any) error {
	body, u, err := c.fetch(ctx, base, p, c.listLimit(), nil, true)
	if err != nil {
		return err
	}
	return decodeJSON(u, body, v)
}

// getListInto is getBodyInto for a list, as getListJSON reads it.
func (c *client) getListInto(ctx context.Context, base *url.URL, p string, buf *bytes.Buffer) ([]byte, *url.URL, error) {
	return c.fetch(ctx, base, p, c.listLimit(), buf, true)
}

func (c *client) listLimit() int64 {
	if c.listMax > 0 {
		return c.listMax
	}
	return listBodyMax
}

func decodeJSON(u *url.URL, body []byte, v any) error {
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%s: decoding: %w: %w", u.Redacted(), errNotDriver, err)
	}
	return nil
}

// getBody fetches base+p (p may end in ?query), reading at most limit
// bytes, and returns the body, trimmed, when it is a 200 answer that starts
// like JSON. It also returns the URL asked, for error messages.
func (c *client) getBody(ctx context.Context, base *url.URL, p string, limit int64) ([]byte, *url.URL, error) {
	return c.getBodyInto(ctx, base, p, limit, nil)
}

// getBodyInto is getBody reading into buf when it is not nil: the body
// returned is buf's bytes, valid until buf is reused.
func (c *client) getBodyInto(ctx context.Context, base *url.URL, p string, limit int64, buf *bytes.Buffer) ([]byte, *url.URL, error) {
	return c.fetch(ctx, base, p, limit, buf, false)
}

// fetch is getBodyInto, with the strings of a list cut as they are read.
func (c *client) fetch(ctx context.Context, base *url.URL, p string, limit int64, buf *bytes.Buffer, list bool) ([]byte, *url.URL, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	p, query, _ := strings.Cut(p, "?")
	if hasDotSegment(p) {
		// JoinPath would resolve it and ask for another path than the one
		// built from ids (sources refuse such ids; this is the last check).
		return nil, base, fmt.Errorf("path %q has a dot segment", p)
	}
	u := base.JoinPath(p)
	u.RawQuery = query
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, u, fmt.Errorf("building request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, u, &unreachableError{refused: errors.Is(err, syscall.ECONNREFUSED), err: err}
	}
	defer func() { _ = resp.Body.Close() }() // read-only body; a close error loses nothing
	if buf == nil {
		buf = new(bytes.Buffer)
	}
	buf.Reset()
	_, err = buf.ReadFrom(io.LimitReader(resp.Body, limit+1))
	if err == nil && list && int64(buf.Len()) > limit {
		// Too large as sent: read it again with its strings cut, from
		// what is read so far and the rest (only then, at the capper's
		// cost of about 2.5 ns a byte).
		var cut bytes.Buffer
		sent := io.MultiReader(bytes.NewReader(buf.Bytes()), io.LimitReader(resp.Body, listRawMax))
		_, err = cut.ReadFrom(io.LimitReader(newStringCapper(ctxReader{ctx, sent}, listStringMax), limit+1))
		buf.Reset()
		buf.Write(cut.Bytes())
	}
	body := buf.Bytes()
	if err != nil {
		return nil, u, &unreachableError{err: fmt.Errorf("reading %s: %w", u.Redacted(), err)}
	}
	if int64(len(body)) > limit {
		return nil, u, fmt.Errorf("%s: answer larger than %d bytes: %w", u.Redacted(), limit, errNotDriver)
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if ct != "application/json" && bytes.Contains(body, []byte("Spark is starting up")) {
		return nil, u, errStarting
	}
	trimmed := bytes.TrimSpace(body)
	isJSON := len(trimmed) > 0 && (trimmed[0] == '[' || trimmed[0] == '{')
	if resp.StatusCode != http.StatusOK {
		switch {
		case resp.StatusCode == http.StatusNotFound && (!isJSON || trimmed[0] == '{'):
			// Real drivers answer 404 between the port line and the
			// moment the API handlers are attached: Jetty's error page,
			// which is a JSON object when the request accepts JSON.
			return nil, u, fmt.Errorf("%s: status %d: %w", u.Redacted(), resp.StatusCode, errNotJSON)
		case resp.StatusCode == http.StatusFound && redirectsToJobs(resp):
			// And, once the "/" handler is attached and the API's not
			// yet (SparkUI.initialize attaches them in that order), a
			// redirect of every path to /jobs/.
			return nil, u, fmt.Errorf("%s: status %d to /jobs/: %w", u.Redacted(), resp.StatusCode, errNotJSON)
		}
		return nil, u, fmt.Errorf("%s: status %d: %w", u.Redacted(), resp.StatusCode, errNotDriver)
	}
	if !isJSON {
		return nil, u, fmt.Errorf("%s: %w", u.Redacted(), errNotJSON)
	}
	return trimmed, u, nil
}

// ctxReader reads from r until ctx is done: a reader of memory (the part
// of a list read before its strings were cut) minds the call's deadline
// too.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// redirectsToJobs reports whether resp redirects to a path that ends in
// /jobs/ (Spark's root redirect, under whatever prefix).
func redirectsToJobs(resp *http.Response) bool {
	loc, err := resp.Location()
	return err == nil && strings.HasSuffix(loc.Path, "/jobs/")
}

// driverApp asks a UI for its one application, in a slot of its endpoint
// and then one of discovery's driver slots.
func (c *client) driverApp(ctx context.Context, ui *url.URL) (apiApp, error) {
	leave, err := c.endpoints.acquire(ctx, ui)
	if err != nil {
		return apiApp{}, err
	}
	defer leave()
	done, err := toDriver(ctx, c.drivers)
	if err != nil {
		return apiApp{}, err
	}
	defer done()
	return c.askDriverApp(ctx, ui)
}

// askDriverApp is driverApp without the slots: for Confirm, which the
// proxy runs before each new connection to a live app's driver (one at a
// time per app) and which must not wait behind discovery's verifications
// of whatever anyone's log lines, probes and pods named.
func (c *client) askDriverApp(ctx context.Context, ui *url.URL) (apiApp, error) {
	body, u, err := c.getBody(ctx, ui, "api/v1/applications", driverBodyMax)
	if err != nil {
		return apiApp{}, err
	}
	// Bytes are not what they decode to: each "{}" of a list becomes a
	// whole apiApp or apiAttempt, a hundred times its size, and this list
	// is read at every check of every driver. A driver's list holds one
	// app of a few attempts.
	if n := jsonContainers(body); n > driverContainersMax {
		return apiApp{}, fmt.Errorf("%s: %d objects and arrays, more than a driver's one app has: %w", u.Redacted(), n, errNotDriver)
	}
	var apps []apiApp
	if err := decodeJSON(u, body, &apps); err != nil {
		return apiApp{}, err
	}
	if len(apps) != 1 || !validAppIDHint(apps[0].ID) || len(apps[0].Attempts) == 0 ||
		!validAttemptID(apps[0].Attempts[0].AttemptID) {
		return apiApp{}, fmt.Errorf("%d apps at %s: %w", len(apps), ui.Redacted(), errNotDriver)
	}
	return apps[0], nil
}

// driverContainersMax bounds the objects and arrays of a driver's app
// list: the list, its app, the app's attempts and each attempt (Spark's
// YARN default allows two; a History Server's list is read elsewhere).
const driverContainersMax = 64

// jsonContainers counts the objects and arrays of a JSON text: the "{" and
// "[" outside its strings.
func jsonContainers(b []byte) int {
	n := 0
	inString := false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case inString && c == '\\':
			i++ // the escaped byte
		case c == '"':
			inString = !inString
		case !inString && (c == '{' || c == '['):
			n++
		}
	}
	return n
}

// environmentProps reads the ACL properties and spark.ui.proxyBase from an
// environment endpoint (driver or History Server).
func (c *client) environmentProps(ctx context.Context, base *url.URL, p string) (map[string]string, string, error) {
	buf := envBufs.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= envBufKeep {
			envBufs.Put(buf)
		}
	}()
	body, u, err := c.getBodyInto(ctx, base, p, envBodyMax, buf)
	if err != nil {
		return nil, "", err
	}
	acl, proxyBase, err := decodeEnvironment(body)
	if err != nil {
		return nil, "", fmt.Errorf("%s: decoding: %w: %w", u.Redacted(), errNotDriver, err)
	}
	return acl, proxyBase, nil
}

// envBufs holds the buffers environments are read into: about 100 KB
// each, read by the hundred when drivers are found together and by the
// thousand from a History Server's backlog; decodeEnvironment keeps nothing
// of them. Buffers grown past envBufKeep are left to the collector.
var envBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const envBufKeep = 1 << 20

// driverEnv reads a driver's ACL properties and spark.ui.proxyBase from the
// environment of its app id.
func (c *client) driverEnv(ctx context.Context, ui *url.URL, id string) (map[string]string, string, error) {
	done, err := toDriver(ctx, c.envs)
	if err != nil {
		return nil, "", err
	}
	defer done()
	return c.environmentProps(ctx, ui, "api/v1/applications/"+url.PathEscape(id)+"/environment")
}

// verifyOnce asks a candidate UI once for its one app.
func (c *client) verifyOnce(ctx context.Context, ui *url.URL) (driverInfo, error) {
	app, err := c.driverApp(ctx, ui)
	if err != nil {
		return driverInfo{}, err
	}
	a := app.Attempts[0]
	info := driverInfo{
		ID: app.ID, Name: app.Name, User: a.SparkUser, AttemptID: a.AttemptID,
		SparkVersion: a.AppSparkVersion, Completed: a.Completed,
	}
	if a.StartTimeEpoch > 0 {
		info.Start = time.UnixMilli(a.StartTimeEpoch)
	}
	return info, nil
}

// verify retries verifyOnce while the UI shows its placeholder or a
// non-JSON answer, starting a try every retryDelay (startPoll at first,
// then retryCap); tries never overlap.
//
// A UI that accepts the connection but sends no headers within callTimeout
// is also retried, a few times, or for as long as the placeholder budget
// when it showed the placeholder before: a driver's first API request
// initialises the JAX-RS servlet, which takes seconds on a busy machine.
func (c *client) verify(ctx context.Context, ui *url.URL) (driverInfo, error) {
	start := time.Now()
	starting, timeouts := false, 0
	for n := 0; ; n++ {
		tryAt := time.Now()
		info, err := c.verifyOnce(ctx, ui)
		info.tries = n + 1
		delay := max(retryDelay(tryAt.Sub(start))-time.Since(tryAt), 0)
		var budget time.Duration
		switch {
		case errors.Is(err, errStarting):
			budget, starting = startingMax, true
		case errors.Is(err, errNotJSON):
			budget, starting = nonJSONMax, true
		case isTimeout(err) && ctx.Err() == nil && (starting || timeouts < timeoutRetries):
			timeouts++
			budget, delay = nonJSONMax, 0
			if starting {
				budget = startingMax
			}
		default:
			return info, err
		}
		if time.Since(start)+delay > budget {
			return info, err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return driverInfo{}, ctx.Err()
		case <-t.C:
		}
	}
}

// hasDotSegment reports whether the relative path p has a segment a server
// reads as "." or "..": Jetty drops path parameters first, so "..;x" is
// "..".
func hasDotSegment(p string) bool {
	for seg := range strings.SplitSeq(p, "/") {
		seg, _, _ = strings.Cut(seg, ";")
		if seg == "." || seg == ".." {
			return true
		}
	}
	return false
}
