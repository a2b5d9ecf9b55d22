package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/hashicorp/golang-lru/v2/expirable"

	"github.com/sparkgate/sparkgate/proxy/diagnosis"
)

// diagSource is where one app's REST data is read: its live driver or the
// History Server that has it.
type diagSource struct {
	base *url.URL
	// rest is the app's REST path: /api/v1/applications/<id>[/<attempt>].
	rest  string
	label string // "driver 10.0.0.5:4040", "History Server main"
	live  bool
}

func (s diagSource) key(appID string) string { return appID + "|" + s.base.String() + s.rest }

// diagResult is one computed diagnosis, shared by the requests of its
// cache lifetime (read only once built).
type diagResult struct {
	report  diagnosis.Report
	summary diagnosis.Summary
	at      time.Time
	source  string
	live    bool
	// skipped lists the optional calls that failed (a stage summary that
	// had gone, say); the findings are computed without them.
	skipped []string
	// err is a summary's failure, cached so that an index view does not
	// ask a driver that did not answer again at once.
	err error
}

// diagnoser computes diagnoses on demand, one at a time per app, and keeps
// each for cfg.CacheTTL. It reads Spark's REST API with the gateway's
// upstream transport and none of the user's credentials, after the caller
// has authorized the user for the app: it sees what the user's proxied
// REST calls would.
type diagnoser struct {
	cfg    diagnosis.Config
	client *http.Client
	cache  *expirable.LRU[string, *diagResult]
	now    func() time.Time

	mu       sync.Mutex
	inflight map[string]*diagCall
	// held is what the diagnoses being computed hold of heldMax, bytes
	// read and decoded, gateway-wide.
	held    atomic.Int64
	heldMax atomic.Int64 // diagHeldMax; tests make it smaller
}

type diagCall struct {
	done chan struct{}
	res  *diagResult
	err  error
}

// maxDiagCache bounds the cached diagnoses (a few KB each).
const maxDiagCache = 1024

// What one diagnosis reads is bounded three ways, for the answers are any
// user's driver's: diagRawMax bytes of answers in all; diagDecodedMax
// bytes of what they decode to in all (a "{}" in a list is a whole
// struct, a hundred times its bytes); and diagListMax elements a list.
// Spark's lists are bounded by its retention (spark.ui.retainedStages,
// 1000, jobs and SQL executions alike; a stage is about 4 KB of JSON, a
// fifth of that decoded), the task lists by diagnosis.task_list_length.
// And the diagnoses computed at once hold no more than diagHeldMax of both
// in all, gateway-wide: one that finds it spent fails at once ("busy"),
// rather than wait behind a driver that answers slowly.
const (
	diagRawMax     = 32 << 20
	diagDecodedMax = 32 << 20
	diagListMax    = 20_000
	diagHeldMax    = 96 << 20
)

var (
	// errDiagTooLarge is a diagnosis whose answers pass its bounds
	// (a *diagBoundError names which).
	errDiagTooLarge = errors.New("the app's REST answers are larger than a diagnosis reads")
	// errDiagBusy is one that found diagHeldMax spent by others.
	errDiagBusy = errors.New("the gateway is reading other diagnoses")
)

// diagBoundError is a diagnosis past one of its bounds, which it names in
// words alone: what a user is shown of it (serveDiagnosis), unlike the
// errors it may be joined with, which name the driver's address.
type diagBoundError struct{ bound string }

func (e *diagBoundError) Error() string        { return errDiagTooLarge.Error() + " (" + e.bound + ")" }
func (e *diagBoundError) Is(target error) bool { return target == errDiagTooLarge }

// diagBudget is what is left of one diagnosis's bounds, shared by the
// answers it reads at once, and what it took of the gateway's.
type diagBudget struct {
	raw, decoded atomic.Int64 // left
	taken        atomic.Int64 // of d.held
	d            *diagnoser
}

func (d *diagnoser) newBudget() *diagBudget {
	b := &diagBudget{d: d}
	b.raw.Store(diagRawMax)
	b.decoded.Store(diagDecodedMax)
	return b
}

// take takes n bytes of left (raw or decoded, bound its bound) and of
// the gateway's.
func (b *diagBudget) take(left *atomic.Int64, bound int64, what string, n int) error {
	if left.Add(-int64(n)) < 0 {
		return &diagBoundError{fmt.Sprintf("%d MiB %s", bound>>20, what)}
	}
	if b.d.held.Add(int64(n)) > b.d.heldMax.Load() {
		b.d.held.Add(-int64(n))
		return errDiagBusy
	}
	b.taken.Add(int64(n))
	return nil
}

// spend takes n decoded bytes.
func (b *diagBudget) spend(n int) error {
	return b.take(&b.decoded, diagDecodedMax, "decoded", n)
}

// release gives back what the diagnosis took of the gateway's: it holds
// none of its answers once computed.
func (b *diagBudget) release() { b.d.held.Add(-b.taken.Load()) }

// reader reads r within the raw bounds.
func (b *diagBudget) reader(r io.Reader) io.Reader { return &diagReader{r: r, b: b} }

type diagReader struct {
	r io.Reader
	b *diagBudget
}

func (r *diagReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if berr := r.b.take(&r.b.raw, diagRawMax, "sent", n); berr != nil {
		return n, berr
	}
	return n, err
}

func newDiagnoser(cfg diagnosis.Config, t http.RoundTripper, now func() time.Time) *diagnoser {
	d := &diagnoser{
		cfg: cfg,
		// No redirects: an upstream's REST answers directly; a redirect
		// would be somebody else's (a YARN proxy once the app has ended).
		client:   &http.Client{Transport: t, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		cache:    expirable.NewLRU[string, *diagResult](maxDiagCache, nil, cfg.CacheTTL),
		now:      now,
		inflight: make(map[string]*diagCall),
	}
	d.heldMax.Store(diagHeldMax)
	return d
}

// get returns the app's diagnosis from the cache or computes it; requests
// for the same app while it is computed wait for that one computation.
// With full false only the summary is wanted: it reads the four lists and
// no task summary or task list (a full diagnosis, if cached, serves too).
func (d *diagnoser) get(ctx context.Context, appID string, src diagSource, full bool) (*diagResult, error) {
	key := src.key(appID)
	if r, ok := d.cache.Get(key); ok {
		return r, nil
	}
	if !full {
		key += "|summary"
		if r, ok := d.cache.Get(key); ok {
			return r, r.err
		}
	}
	d.mu.Lock()
	c, ok := d.inflight[key]
	if !ok {
		c = &diagCall{done: make(chan struct{})}
		d.inflight[key] = c
		// Not tied to the first requester: others wait for the result.
		go d.run(context.WithoutCancel(ctx), key, appID, src, full, c)
	}
	d.mu.Unlock()
	select {
	case <-c.done:
		return c.res, c.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (d *diagnoser) run(ctx context.Context, key, appID string, src diagSource, full bool, c *diagCall) {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.FetchTimeout)
	defer cancel()
	c.res, c.err = d.compute(ctx, appID, src, full)
	switch {
	case c.err == nil:
		d.cache.Add(key, c.res)
	case !full && !errors.Is(c.err, errDiagBusy):
		// Busy is the gateway's state, not the driver's: asked again.
		d.cache.Add(key, &diagResult{err: c.err})
	}
	d.mu.Lock()
	delete(d.inflight, key)
	d.mu.Unlock()
	close(c.done)
}

// compute reads the app's REST data in the order of its plan and
// diagnoses it: four lists, then at most MaxStageSummaries summaries,
// then at most MaxTaskLists task lists of TaskListLength tasks. With full
// false it stops after the lists, with the summary only.
func (d *diagnoser) compute(ctx context.Context, appID string, src diagSource, full bool) (*diagResult, error) {
	in := &diagnosis.Input{
		Summaries: make(map[diagnosis.StageKey]*diagnosis.TaskSummary),
		Slowest:   make(map[diagnosis.StageKey][]diagnosis.Task),
		Failed:    make(map[diagnosis.StageKey][]diagnosis.Task),
	}
	res := &diagResult{source: src.label, live: src.live}
	budget := d.newBudget()
	defer budget.release()
	var (
		mu   sync.Mutex
		errs []error
	)
	get := func(path string, v any, optional bool) {
		err := d.fetchJSON(ctx, src, path, v, budget)
		if errors.Is(err, errDiagTooLarge) || errors.Is(err, errDiagBusy) {
			optional = false // not one answer missing: the diagnosis would be of part of the app
		}
		if err != nil {
			mu.Lock()
			defer mu.Unlock()
			if optional {
				res.skipped = append(res.skipped, path)
			} else {
				errs = append(errs, err)
			}
		}
	}
	parallel(4, []func(){
		func() { get("/jobs", &in.Jobs, false) },
		func() { get("/stages", &in.Stages, false) },
		func() { get("/allexecutors", &in.Executors, false) },
		// Apps without Spark SQL have no /sql: no SQL findings then.
		// Without each query's plan text, which the rules do not read and
		// which is most of the answer (planDescription, Spark 3.1 on).
		func() { get("/sql?details=false&planDescription=false", &in.SQL, true) },
	})
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	in.Now = d.now()
	res.at = in.Now
	targets := diagnosis.SummaryTargets(in.Stages, d.cfg)
	if !full {
		// The index row: the summaries of the stages with the most task
		// time show skew; no task is read.
		targets = targets[:min(len(targets), d.cfg.IndexStageSummaries)]
	}
	sums := make([]*diagnosis.TaskSummary, len(targets))
	fns := make([]func(), len(targets))
	for i, k := range targets {
		fns[i] = func() {
			var s diagnosis.TaskSummary
			get(stagePath(k)+"/taskSummary?quantiles="+diagnosis.Quantiles, &s, true)
			if len(s.Quantiles) > 0 {
				sums[i] = &s
			}
		}
	}
	parallel(4, fns)
	for i, k := range targets {
		if sums[i] != nil {
			in.Summaries[k] = sums[i]
		}
	}
	res.summary = diagnosis.Summarize(in, d.cfg)
	if !full {
		return res, nil
	}
	queries := diagnosis.TaskListTargets(in, d.cfg)
	lists := make([][]diagnosis.Task, len(queries))
	fns = make([]func(), len(queries))
	for i, q := range queries {
		fns[i] = func() { get(stagePath(q.Stage)+"/taskList?"+q.Query(d.cfg.TaskListLength), &lists[i], true) }
	}
	parallel(4, fns)
	for i, q := range queries {
		if q.Failed {
			in.Failed[q.Stage] = lists[i]
		} else {
			in.Slowest[q.Stage] = lists[i]
		}
	}
	res.report = diagnosis.Diagnose(in, d.cfg)
	for i := range res.report.Findings {
		f := &res.report.Findings[i]
		f.Link = "/app/" + appID + "/" + f.Page
		if f.SQLPage != "" {
			f.SQLLink = "/app/" + appID + "/" + f.SQLPage
		}
	}
	return res, nil
}

func stagePath(k diagnosis.StageKey) string {
	return "/stages/" + strconv.Itoa(k.StageID) + "/" + strconv.Itoa(k.AttemptID)
}

// fetchJSON GETs src's REST path rest+path and decodes its JSON answer
// into v, within budget.
func (d *diagnoser) fetchJSON(ctx context.Context, src diagSource, path string, v any, budget *diagBudget) error {
	u := *src.base
	p, q, _ := strings.Cut(path, "?")
	u.Path = src.base.Path + src.rest + p
	u.RawPath = ""
	u.RawQuery = q
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := d.client.Do(req)
	if err != nil {
		return fmt.Errorf("reading %s from %s: %w", path, src.label, err)
	}
	defer func() { _ = resp.Body.Close() }() // read-only body; a close error loses nothing
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("reading %s from %s: status %d", path, src.label, resp.StatusCode)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" {
		// A starting driver answers a placeholder page.
		return fmt.Errorf("reading %s from %s: not JSON (%q)", path, src.label, mt)
	}
	if err := decodeREST(json.NewDecoder(budget.reader(resp.Body)), v, budget); err != nil {
		return fmt.Errorf("reading %s from %s: %w", path, src.label, err)
	}
	return nil
}

// decodeREST decodes one REST answer into v, one of the diagnosis's
// lists (an element at a time, each weighed against budget as it is
// read) or a stage's task summary.
func decodeREST(dec *json.Decoder, v any, budget *diagBudget) error {
	var err error
	switch v := v.(type) {
	case *[]diagnosis.Job:
		*v, err = decodeList(dec, budget, func(j *diagnosis.Job) int {
			return len(j.Name) + len(j.Description) + len(j.Status) + 8*cap(j.StageIDs)
		})
	case *[]diagnosis.Stage:
		*v, err = decodeList(dec, budget, func(s *diagnosis.Stage) int {
			return len(s.Status) + len(s.FailureReason) + len(s.Name) + len(s.Description)
		})
	case *[]diagnosis.Executor:
		*v, err = decodeList(dec, budget, func(e *diagnosis.Executor) int {
			return len(e.ID) + len(e.HostPort) + len(e.RemoveReason)
		})
	case *[]diagnosis.SQLExecution:
		*v, err = decodeList(dec, budget, func(q *diagnosis.SQLExecution) int {
			return len(q.Status) + len(q.Description) + len(q.ErrorMessage) + 8*(cap(q.RunningJobIDs)+cap(q.SuccessJobIDs)+cap(q.FailedJobIDs))
		})
	case *[]diagnosis.Task:
		*v, err = decodeList(dec, budget, func(t *diagnosis.Task) int {
			n := len(t.ExecutorID) + len(t.Host) + len(t.Status) + len(t.TaskLocality) + len(t.ErrorMessage)
			if t.TaskMetrics != nil {
				n += int(unsafe.Sizeof(*t.TaskMetrics))
			}
			return n
		})
	case *diagnosis.TaskSummary:
		// Its lists are of diagnosis.MaxValues numbers at most.
		if err = dec.Decode(v); err == nil {
			err = budget.spend(int(unsafe.Sizeof(*v)) + 11*8*diagnosis.MaxValues)
		}
	default:
		err = fmt.Errorf("no decoding for %T", v)
	}
	return err
}

// decodeList decodes a JSON array (or null) of T an element at a time,
// taking each one's size (its struct and what size says it holds besides)
// from budget, up to diagListMax elements.
func decodeList[T any](dec *json.Decoder, budget *diagBudget, size func(*T) int) ([]T, error) {
	tok, err := dec.Token()
	if err != nil || tok == nil {
		return nil, err
	}
	if tok != json.Delim('[') {
		return nil, errors.New("not a JSON array")
	}
	var out []T
	for dec.More() {
		if len(out) == diagListMax {
			return nil, &diagBoundError{fmt.Sprintf("over %d elements in a list", diagListMax)}
		}
		var v T
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if err := budget.spend(int(unsafe.Sizeof(v)) + size(&v)); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	_, err = dec.Token() // the closing ]
	return out, err
}

// parallel runs fns, at most n at a time, and waits for all: a diagnosis
// must not open more connections to one driver than a browser tab would.
func parallel(n int, fns []func()) {
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	for _, f := range fns {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			f()
		}()
	}
	wg.Wait()
}
