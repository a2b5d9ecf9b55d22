package discovery

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

const (
	suspectQueue = 64
	targetIdle   = 3  // intervals a target may go unreported before it is forgotten
	silentHold   = 10 // intervals a silent source that binds ids holds back endUnlisted
	// failoverHold is the least time such a source holds them back: a
	// ZooKeeper failover of standalone masters takes a minute or two,
	// whatever the interval.
	failoverHold  = 3 * time.Minute
	backoffMax    = 5 * time.Minute
	envRetryFirst = 250 * time.Millisecond // first wait before reading an environment again
	envRetryMax   = 30 * time.Second       // longest wait between environment reads
	publishEvery  = 50 * time.Millisecond  // longest a change waits for a busy event queue
	// publishGap bounds publishing to a share of Run's goroutine: the next
	// snapshot starts no sooner than publishGap times the last one's cost
	// of its apps found on drivers after it, and publishGapMax at most
	// (the cost is wall time, which a busy machine inflates). Publishing
	// at every one of 500 drivers verified together cost O(n²): 0.4-0.8 s
	// of CPU in a burst of 500, taken from the verifications.
	publishGap    = 4
	publishGapMax = 10 * time.Millisecond
)

// envRetryDelay is the wait after the n-th (1-based) failed read of a live
// app's environment: doubling from envRetryFirst up to envRetryMax.
func envRetryDelay(n int) time.Duration {
	if n < 1 {
		return envRetryFirst
	}
	return min(envRetryFirst<<min(n-1, 16), envRetryMax)
}

// Discoverer runs the configured sources, verifies every candidate against
// the UI's own REST API, re-checks live apps, merges History Server lists
// and publishes the result as registry snapshots. One goroutine (Run) owns
// all state; network calls run in workers that hand results back to it, so
// neither slow drivers nor requests ever wait on each other.
type Discoverer struct {
	cfg      Config
	reg      *Registry
	log      *zap.Logger
	c        *client
	pins     *pins
	polls    []pollSource
	hist     []*historySource
	follower *follower
	kube     *kubeSource // nil unless configured
	now      func() time.Time

	suspect chan string
	wantACL chan string
	events  chan func()
	ready   atomic.Bool
	health  health

	// State below is touched only by Run's goroutine.
	ctx         context.Context
	targets     map[string]*target
	apps        map[string]*liveApp
	histApps    map[string][]historyApp  // by History Server name
	histByID    map[string][]*historyApp // into histApps, by app id
	aclBusy     map[string]bool          // "server/app id" whose history ACLs are being read for a request
	logCands    map[string][]candidate   // by log path
	lastAnswer  map[string]time.Time     // when each poll source last answered in full
	haCluster   map[string]string        // poll source name -> its configured HA cluster, for masters that name one
	pollBusy    bool
	histBusy    bool
	pollsDone   bool
	histDone    bool
	logsDone    bool
	pending     int // verifications in flight
	graceTimer  bool
	dirty       bool
	histStale   bool    // the history-only apps must be rebuilt at the next publish
	histSet     *appSet // the history-only apps of the last publish
	lastPublish time.Time
	// publishedAt and publishTook are the wall-clock start of the last
	// publish and the cost of its apps found on drivers (real time, for
	// publishGap); publishWait is set while a timer is to wake Run for a
	// publish held back by publishGap.
	publishedAt time.Time
	publishTook time.Duration
	publishWait bool
	// announce holds the log lines of changes not yet published: "driver
	// found" is logged when the app is routable, not when it was verified.
	announce []func(published time.Time)
}

// target is one candidate URL and what is known about it.
type target struct {
	c          candidate
	offers     map[offerKey]offerStamp // lately, each source's offer naming each id (offer)
	prunedAt   time.Time               // when offers were last pruned
	endedAt    time.Time               // when the app last verified here ended
	appID      string                  // the live app verified at this URL, "" if none
	verifying  bool
	fails      int
	retryAt    time.Time
	lastOffer  time.Time
	fromLogAt  time.Time // when a log line last named it, for timing logs
	verifyAt   time.Time // when the current or last verification started
	bySourceAt time.Time
	refused    string // the app id whose claim here was last refused, to count each once
}

// liveApp is an app found on a driver, running or ended.
//
// An app is published as soon as the driver's app list names it, with
// ACLProps nil (judged fail-closed: its owner and admins only) and
// ProxyBase unknown; its environment is read next, and again with backoff
// until that succeeds, and each success publishes the real values.
type liveApp struct {
	app      App
	key      string // target key of the URL the app answers at
	fails    int
	checking bool
	// nextCheck is when the next liveness check is due; zero: not yet
	// scheduled.
	nextCheck time.Time
	foundAt   time.Time
	verifyAt  time.Time // when the verification that found it started
	envBusy   bool      // an environment read is in flight
	envKnown  bool      // app.ACLProps and app.ProxyBase come from the environment
	envFails  int       // environment reads failed in a row
	// unlisted counts the answered polls in a row of the source that named
	// the app (a ResourceManager, a master) that no longer list it here.
	unlisted int
	// unlistedEnd: the app ended as that source stopped listing it.
	unlistedEnd bool
}

// New builds a Discoverer from a validated configuration. Sources that
// cannot be built (an unreadable Kubernetes CA file) are logged and skipped.
func New(cfg Config, reg *Registry, logger *zap.Logger) *Discoverer {
	cfg.SetDefaults()
	if logger == nil {
		logger = zap.NewNop()
	}
	pn := newPins(cfg.AllowedNetworks)
	tr := newTransport()
	tr.DialContext = pn.dialer(tr.DialContext)
	d := &Discoverer{
		cfg: cfg, reg: reg, log: logger, c: newClient(tr), pins: pn, now: time.Now,
		suspect:  make(chan string, suspectQueue),
		wantACL:  make(chan string, suspectQueue),
		aclBusy:  map[string]bool{},
		events:   make(chan func(), 256),
		targets:  map[string]*target{},
		apps:     map[string]*liveApp{},
		histApps: map[string][]historyApp{},
		logCands: map[string][]candidate{},
	}
	if len(cfg.Logs) > 0 {
		d.follower = newFollower(cfg.Logs, logger)
	}
	// An explicit switch over the closed set of sources.
	if len(cfg.Static) > 0 {
		var s staticSource
		for _, raw := range cfg.Static {
			if u, err := parseRootURL(raw); err == nil {
				s = append(s, u)
			} else {
				logger.Error("skipping static url", zap.String("url", raw), zap.Error(err))
			}
		}
		d.polls = append(d.polls, s)
	}
	if len(cfg.Probe) > 0 {
		if p, err := newProbeSource(cfg.Probe); err == nil {
			d.polls = append(d.polls, p)
		} else {
			logger.Error("skipping probe source", zap.Error(err))
		}
	}
	for _, m := range cfg.Standalone {
		if u, err := parseRootURL(m.URL); err == nil {
			ms := newMasterSource(u, d.c)
			d.polls = append(d.polls, ms)
			if m.Cluster != "" {
				if d.haCluster == nil {
					d.haCluster = map[string]string{}
				}
				d.haCluster[ms.name()] = m.Cluster
			}
		} else {
			logger.Error("skipping standalone master", zap.String("url", m.URL), zap.Error(err))
		}
	}
	if cfg.Kubernetes != nil {
		if k, err := newKubeSource(*cfg.Kubernetes, logger); err == nil {
			d.polls = append(d.polls, k)
			d.kube = k
		} else {
			logger.Error("skipping kubernetes source", zap.Error(err))
		}
	}
	for _, y := range cfg.YARN {
		if u, err := parseRootURL(y.URL); err == nil {
			d.polls = append(d.polls, &yarnSource{base: u, c: d.c})
		} else {
			logger.Error("skipping yarn resource manager", zap.String("url", y.URL), zap.Error(err))
		}
	}
	for _, h := range cfg.History {
		if hs, err := newHistorySource(h, d.c, cfg.Interval); err == nil {
			hs.log = logger
			d.hist = append(d.hist, hs)
		} else {
			logger.Error("skipping history server", zap.String("history", h.Name), zap.Error(err))
		}
	}
	return d
}

// Ready reports whether the first full round (every source read once and
// the verifications it started settled, or a grace period passed) is done.
func (d *Discoverer) Ready() bool { return d.ready.Load() }

// Suspect asks for an immediate re-check of a live app, for example when
// its driver did not answer a proxied request. A refused connection then
// ends the app at once. It never blocks.
func (d *Discoverer) Suspect(appID string) {
	select {
	case d.suspect <- appID:
	default: // a queue this full means checks are already on the way
	}
}

// ErrReplaced says that a live app's address no longer serves the app:
// another app, or no Spark driver, answers there (see Confirm).
var ErrReplaced = errors.New("the driver's address no longer serves the app")

// Confirm asks the driver of live app id, now, whether its address still
// serves that app, as the liveness check does in turn: the gateway asks
// it before it uses a new connection to the address. A driver that exits
// gives up its port, and the next Spark app on the host takes it (4040,
// the first free port, is every app's default); until the liveness check
// or a source noticed, a new connection there reached the newcomer, whose
// pages were served under the old app's id and judged by its lists. nil
// when the app's id and owner answer (or the app is not live: nothing to
// confirm); otherwise the app is checked again in turn (Suspect), which
// ends it when another app answers, and the error, ErrReplaced or the
// reason the driver could not be asked, says why. A process that lies
// about its id and owner passes, as it passes every check (README).
func (d *Discoverer) Confirm(ctx context.Context, id string) error {
	a, ok := d.reg.Lookup(id)
	if !ok || !a.Live() || a.UIURL == nil {
		return nil
	}
	got, err := d.c.askDriverApp(ctx, a.UIURL)
	if err == nil && got.ID == id && attemptUser(got) == a.User {
		return nil
	}
	d.Suspect(id)
	switch {
	case errors.Is(err, errNotDriver):
		return fmt.Errorf("%w: %w", ErrReplaced, err)
	case err != nil:
		return fmt.Errorf("confirming %s at %s: %w", id, a.UIURL.Redacted(), err)
	}
	return fmt.Errorf("%w: %s answers as %s of %s", ErrReplaced, a.UIURL.Redacted(), got.ID, attemptUser(got))
}

// Run runs every source until ctx is done. It returns nil on cancellation.
func (d *Discoverer) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	var workers sync.WaitGroup
	defer func() {
		cancel()
		workers.Wait()
	}()
	d.ctx = ctx
	if d.follower != nil {
		workers.Add(1)
		go func() {
			defer workers.Done()
			d.followLogs(ctx)
		}()
	} else {
		d.logsDone = true
	}
	d.startPushes(ctx, &workers)
	for _, h := range d.hist {
		if h.visit == nil {
			continue
		}
		for range historyVisitParallel {
			workers.Add(1)
			go func() {
				defer workers.Done()
				h.runVisits(ctx)
			}()
		}
	}
	interval := d.cfg.Interval
	tick := time.NewTicker(interval)
	defer tick.Stop()
	d.round()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			d.round()
		case id := <-d.suspect:
			d.checkApp(id, true)
		case id := <-d.wantACL:
			d.readACLsNow(id)
		case f := <-d.events:
			f()
		}
		d.maybeReady()
		// Results arriving together (500 drivers verified at once) are
		// published together: a snapshot when the queue is drained, or
		// at least every publishEvery while it is not, and never more
		// often than publishGap allows.
		if d.dirty && (len(d.events) == 0 || d.now().Sub(d.lastPublish) >= publishEvery) && d.publishAllowed() {
			d.publish()
		}
	}
}

// send hands a result to Run's goroutine; it gives up when Run is done.
func (d *Discoverer) send(ctx context.Context, f func()) {
	select {
	case d.events <- f:
	case <-ctx.Done():
	}
}

// round starts one interval's work: the poll sources, the History Servers
// and the liveness checks. Work still running from the last round is not
// started twice.
func (d *Discoverer) round() {
	ctx := d.ctx
	if !d.pollBusy {
		d.pollBusy = true
		go func() {
			res := make([][]candidate, len(d.polls))
			ok := make([]bool, len(d.polls))
			var wg sync.WaitGroup
			for i, s := range d.polls {
				wg.Add(1)
				go func() {
					defer wg.Done()
					seen := d.now()
					cands, err := s.candidates(ctx)
					if ctx.Err() != nil {
						return
					}
					for j := range cands {
						cands[j].seen = seen
					}
					d.noteHealth("discovery source", s.name(), err)
					res[i], ok[i] = cands, answered(err)
				}()
			}
			wg.Wait()
			d.send(ctx, func() { d.onPolled(res, ok) })
		}()
	}
	if !d.histBusy {
		d.histBusy = true
		go func() {
			res := make([][]historyApp, len(d.hist))
			ok := make([]bool, len(d.hist))
			var wg sync.WaitGroup
			for i, h := range d.hist {
				wg.Add(1)
				go func() {
					defer wg.Done()
					apps, changed, err := h.poll(ctx)
					if ctx.Err() == nil {
						d.noteHealth("history server", h.name(), err)
					}
					if err != nil || !changed {
						return
					}
					res[i], ok[i] = apps, true
				}()
			}
			wg.Wait()
			d.send(ctx, func() { d.onHistory(res, ok) })
		}()
	}
	d.checkDue()
	// Log candidates stay offered while their file names them.
	for _, cs := range d.logCands {
		for _, c := range cs {
			d.offer(c)
		}
	}
	d.expire()
}

// checkDue starts the liveness checks that are due.
func (d *Discoverer) checkDue() {
	for _, id := range d.dueChecks() {
		d.checkApp(id, false)
	}
}

// dueChecks lists the running apps whose liveness check is due and
// schedules their next. Each running app is checked once per checkPeriod,
// at its own phase, so a round starts about checksPerRound checks however
// many drivers run; an app whose last check failed is due the next round.
func (d *Discoverer) dueChecks() []string {
	now := d.now()
	interval := d.cfg.Interval
	running := 0
	for _, a := range d.apps {
		if a.app.State == Running {
			running++
		}
	}
	period := checkPeriod(running, interval)
	var due []string
	for id, a := range d.apps {
		if a.app.State != Running || a.checking {
			continue
		}
		if a.nextCheck.IsZero() && period > interval {
			// Spread the apps found together over the period.
			a.nextCheck = now.Add(rand.N(period)) //nolint:gosec // G404: a phase to spread checks, not a secret
		}
		// Half an interval of slack: a round that ticks a little early
		// must not push the check a whole period back.
		if now.Add(interval / 2).Before(a.nextCheck) {
			continue
		}
		a.nextCheck = now.Add(period)
		due = append(due, id)
	}
	return due
}

// checksPerRound is about how many liveness checks one round starts.
const checksPerRound = 100

// checkPeriod is how often each of running live apps is checked: every
// interval up to checksPerRound apps, less often beyond.
func checkPeriod(running int, interval time.Duration) time.Duration {
	return time.Duration(max(1, (running+checksPerRound-1)/checksPerRound)) * interval
}

// endUnlisted ends the running apps that source, one that gives ids
// (bindsIDs), named and that its last offerHeld answered polls, the last
// of which found cands, have not listed at their addresses: the app has
// finished, whatever answers at its address now (a process that took the
// port as the driver exited may answer with its id and owner, and the
// liveness check would keep it running under the source's name). A source
// that does not answer in full ends nothing.
func (d *Discoverer) endUnlisted(source string, named map[string][]listing) {
	for id, a := range d.apps {
		if a.app.State != Running || a.app.Source != source {
			continue
		}
		if slices.ContainsFunc(named[a.key], func(l listing) bool { return sameApp(l.id, id) }) {
			a.unlisted = 0
			continue
		}
		if a.unlisted++; a.unlisted >= offerHeld {
			a.unlistedEnd = true
			d.endApp(id, source+" no longer lists it at its address")
		}
	}
}

// listing is an app id a source that gives ids lists at an address.
type listing struct{ source, id string }

// followListing makes a running app's source the one that lists it at its
// address where the source that named it no longer does: the active
// master of an HA pair after a failover (its standby lists nothing), so
// that the standby's answers do not end the app, nor the active one's
// silence let them. In a round where its own source answered in full, an
// app follows any source that lists it there, a master of its own
// configured HA cluster first. While its own source is silent, and it may
// be gone for good, it follows only such a partner: nothing else could end
// it when the partner stops listing it, and another cluster's master
// listing the same id at the address (ids of masters collide) would end it
// with its empty lists once that cluster's app stops.
func (d *Discoverer) followListing(named map[string][]listing, answeredNow []string) {
	for id, a := range d.apps {
		if a.app.State != Running || !bindsIDs(a.app.Source) {
			continue
		}
		own := a.app.Source
		cluster := d.haCluster[own]
		answered := slices.Contains(answeredNow, own)
		if cluster == "" && !answered {
			continue
		}
		other, partner := "", false
		for _, l := range named[a.key] {
			if !sameApp(l.id, id) {
				continue
			}
			if l.source == own {
				other = ""
				break
			}
			if cluster != "" && d.haCluster[l.source] == cluster {
				other, partner = l.source, true
			} else if answered && !partner {
				other = l.source
			}
		}
		if other != "" {
			a.app.Source, a.unlisted = other, 0
			d.dirty = true
		}
	}
}

// expire forgets the ended apps that no History Server knows once their
// retention has passed.
func (d *Discoverer) expire() {
	now := d.now()
	retention := d.cfg.EndedRetention
	for id, a := range d.apps {
		if a.app.State == Ended && len(d.histByID[id]) == 0 && now.Sub(a.app.EndTime) > retention {
			delete(d.apps, id)
			d.dirty = true
		}
	}
}

// answered reports whether a poll source's read listed all it named
// before: no error, or a partial list (partialListError).
func answered(err error) bool {
	var partial partialListError
	return err == nil || errors.As(err, &partial)
}

// onPolled handles a round's polls: res[i] is what d.polls[i] found, and
// ok[i] says whether it answered in full.
func (d *Discoverer) onPolled(res [][]candidate, ok []bool) {
	d.pollBusy = false
	d.pollsDone = true
	now := d.now()
	for _, cs := range res {
		for _, c := range cs {
			d.offer(c)
		}
	}
	// What the sources that give ids list this round, answered in full or
	// not: an app another master of an HA pair lists at its address still
	// runs there. While any of them is silent (it may be the active master
	// whose standby answers with nothing), no app is counted unlisted.
	named := map[string][]listing{} // target key -> what is listed there
	allAnswered := true
	var answeredNow []string // those that answered in full this round
	for i, full := range ok {
		if i >= len(res) || i >= len(d.polls) {
			break
		}
		if !bindsIDs(d.polls[i].name()) {
			continue
		}
		name := d.polls[i].name()
		for _, c := range res[i] {
			named[c.key()] = append(named[c.key()], listing{name, c.appID})
		}
		if full {
			if d.lastAnswer == nil {
				d.lastAnswer = map[string]time.Time{}
			}
			d.lastAnswer[name] = now
			answeredNow = append(answeredNow, name)
			continue
		}
		// A source silent longer than silentHold (or since the start) is
		// down, not the active master of a pair between two answers: it
		// holds back no ends.
		if at, seen := d.lastAnswer[name]; seen && now.Sub(at) <= max(silentHold*d.cfg.Interval, failoverHold) {
			allAnswered = false
		}
	}
	d.followListing(named, answeredNow)
	if allAnswered {
		// Only a source that answered counts its apps unlisted: one
		// silent past the hold ends nothing either.
		for _, name := range answeredNow {
			d.endUnlisted(name, named)
		}
	}
	idle := time.Duration(targetIdle) * d.cfg.Interval
	for k, t := range d.targets {
		if t.appID == "" && !t.verifying && now.Sub(t.lastOffer) > idle {
			delete(d.targets, k)
		}
	}
}

func (d *Discoverer) onHistory(res [][]historyApp, ok []bool) {
	d.histBusy = false
	d.histDone = true
	changed := false
	for i, h := range d.hist {
		if i < len(ok) && i < len(res) && ok[i] { // keep the last good list while a server is down or unchanged
			d.histApps[h.cfg.Name] = res[i]
			changed = true
		}
	}
	if !changed {
		return // every list as it was
	}
	d.reconcileHistory()
	d.dirty, d.histStale = true, true
}

func (d *Discoverer) maybeReady() {
	if d.ready.Load() || !d.pollsDone || !d.histDone || !d.logsDone {
		return
	}
	if d.pending == 0 {
		d.ready.Store(true)
		return
	}
	if !d.graceTimer {
		// Do not let a driver stuck on its start-up page hold readiness.
		d.graceTimer = true
		ctx := d.ctx
		time.AfterFunc(2*d.cfg.Interval, func() {
			d.send(ctx, func() { d.ready.Store(true) })
		})
	}
}

// publishAllowed reports whether publishGap lets a snapshot be built now;
// if not, it arranges for Run to wake when it does.
func (d *Discoverer) publishAllowed() bool {
	wait := min(time.Duration(publishGap)*d.publishTook, publishGapMax) - time.Since(d.publishedAt)
	if wait <= 0 {
		return true
	}
	if !d.publishWait {
		d.publishWait = true
		ctx := d.ctx
		time.AfterFunc(wait, func() { d.send(ctx, func() { d.publishWait = false }) })
	}
	return false
}

// publish builds a snapshot of live, ended and history-only apps. The
// history-only part is rebuilt only when a History Server's list, its ACLs
// or the cluster's annotations changed (histStale); otherwise a publish
// costs the apps found on drivers.
func (d *Discoverer) publish() {
	d.dirty = false
	if d.histStale || d.histSet == nil {
		d.histStale = false
		var hist []*App
		for _, h := range d.hist {
			list := d.histApps[h.cfg.Name]
			for i := range list {
				ha := &list[i]
				if d.histByID[ha.ID][0] != ha {
					continue // the first History Server's record stands
				}
				a := &App{
					ID: ha.ID, Name: ha.Name, User: ha.User, AttemptID: ha.AttemptID,
					SparkVersion: ha.SparkVersion, StartTime: ha.Start, EndTime: ha.End,
					State: Ended, Source: "history:" + ha.Ref.Server,
					ACLProps: ha.Ref.ACLProps, History: d.histRefs(ha.ID),
				}
				d.annotate(a)
				hist = append(hist, a)
			}
		}
		d.histSet = newAppSet(hist)
	}
	// The history-only part is rebuilt only when a list changed; what
	// each publish costs is the rest.
	d.publishedAt = time.Now()
	own := make([]*App, 0, len(d.apps))
	for id, a := range d.apps {
		if a.app.State == Ended && len(d.histByID[id]) > 0 {
			// A finished app is what its History Server says it is,
			// whatever its driver claimed while it ran; but what a source
			// that vouches for its id recorded of its driver is kept
			// beside it, since an event log may be anyone's.
			if h, ok := d.histSet.byID[id]; ok && VouchesForID(a.app.Source) {
				cp := *h
				cp.Driver = &DriverRecord{Source: a.app.Source, UIURL: a.app.UIURL, User: a.app.User, ACLProps: a.app.ACLProps}
				own = append(own, &cp)
			}
			continue
		}
		cp := a.app
		cp.History = d.histRefs(id)
		d.annotate(&cp)
		own = append(own, &cp)
	}
	d.reg.Store(newSnapshot(newAppSet(own), d.histSet))
	d.lastPublish = d.now()
	d.publishTook = time.Since(d.publishedAt)
	for _, f := range d.announce {
		f(d.lastPublish)
	}
	clear(d.announce)
	d.announce = d.announce[:0]
}

// histRefs lists the History Servers that know an app, nil if none.
func (d *Discoverer) histRefs(id string) []HistoryRef {
	has := d.histByID[id]
	if len(has) == 0 {
		return nil
	}
	refs := make([]HistoryRef, len(has))
	for i, ha := range has {
		refs[i] = ha.Ref
	}
	return refs
}

func u2s(u *url.URL) string {
	if u == nil {
		return ""
	}
	return u.Redacted()
}
