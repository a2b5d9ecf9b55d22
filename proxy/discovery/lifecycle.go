package discovery

import (
	"errors"
	"time"

	"go.uber.org/zap"
)

// The life of a live app, on Run's goroutine: a candidate is offered,
// verified against its UI's REST API (identity.go decides whether its claim
// stands), published, its environment read, re-checked each round, and
// ended when it stops answering or another app answers at its address.

// offer considers a candidate: verify it unless it is known live, being
// verified, or backing off.
//
// Several sources may offer one URL (a driver pod's address is also a
// probe's, a log line names the driver a master lists, a master lists
// whatever address a driver registered): each offer is remembered for a
// while, and verification credits the strongest that fits the driver
// found there (target.credit), since what an app's logs and identity rules
// allow depends on who found it (VouchesForID, bindsIDs).
func (d *Discoverer) offer(c candidate) {
	now := d.now()
	key := c.key()
	t := d.targets[key]
	if t == nil {
		t = &target{c: c}
		d.targets[key] = t
	}
	t.c, t.lastOffer = c, now
	t.remember(c, now, offerHeld*d.cfg.Interval)
	if t.appID != "" {
		if a := d.apps[t.appID]; a != nil && a.app.State == Running {
			if c.yarn && (a.app.YARNName != c.yarnName || a.app.YARNQueue != c.yarnQueue) {
				// Moved to another queue (yarn application -movetoqueue).
				a.app.YARNName, a.app.YARNQueue = c.yarnName, c.yarnQueue
				d.dirty = true
			}
			switch {
			case sourceRank(c.source) <= sourceRank(a.app.Source) || c.appID == "" || !sameApp(c.appID, a.app.ID):
				return
			case a.key == key:
				// A stronger source names the app verified here, if its
				// read began after the app last verified here ended (as
				// credit asks): a list read before vouches for nothing
				// now at the URL.
				if seen := c.seen; !seen.IsZero() && !seen.After(t.endedAt) {
					return
				}
				a.app.Source = c.source
				d.dirty = true
				return
			case !namesApp(c, a.app.ID):
				return
			}
			// A source that binds ids names the app here, where it was
			// taken for the same driver under a second address: verified
			// again, this address may replace the other (rule 3), which may
			// be another driver claiming the id.
		}
		t.appID = ""
	}
	if t.verifying || now.Before(t.retryAt) {
		return
	}
	d.verify(t)
}

func (d *Discoverer) verify(t *target) {
	ctx := d.ctx
	t.verifying = true
	t.verifyAt = d.now()
	d.pending++
	u := t.c.url
	go func() {
		addr, err := d.pins.resolve(ctx, u)
		var info driverInfo
		if err == nil {
			info, err = d.c.verify(ctx, u)
			info.addr = addr
		}
		d.send(ctx, func() { d.onVerified(t, info, err) })
	}()
}

func (d *Discoverer) onVerified(t *target, info driverInfo, err error) {
	t.verifying = false
	d.pending--
	now := d.now()
	key := t.c.key()
	if d.targets[key] != t {
		d.targets[key] = t // forgotten while verifying; keep what we learnt
	}
	if err != nil {
		var ue *unreachableError
		switch {
		case errors.As(err, &ue):
			t.fails++
			t.retryAt = now.Add(min(d.cfg.Interval<<min(t.fails-1, 10), backoffMax) - time.Millisecond)
		default:
			t.fails++
			t.retryAt = now.Add(12 * d.cfg.Interval)
		}
		log := d.log.Debug
		if errors.Is(err, errNotAllowed) && t.fails == 1 {
			log = d.log.Warn
		}
		log("candidate not verified", zap.String("upstream", u2s(t.c.url)), zap.String("source", t.c.source), zap.Error(err))
		return
	}
	if d.stillAnswersEnded(key, info) {
		// The driver ended (its History Server lists it as finished) and
		// its UI still answers for a moment: no claim to refuse.
		t.retryAt = now.Add(claimBackoff * d.cfg.Interval)
		d.log.Debug("ended driver still answers", zap.String("app_id", info.ID), zap.String("upstream", u2s(t.c.url)))
		return
	}
	switch c, ok, other := t.credit(info.ID, now.Add(-offerHeld*d.cfg.Interval), t.c); {
	case ok:
		t.c = c
	case other != nil:
		// Every source that found the URL lately names another app there:
		// the claim is refused (rule 2).
		t.c = *other
	default:
		// No source has found this URL since the app verified here ended
		// (its port may be another process's now): nothing vouches for
		// what answers until one finds it again.
		t.retryAt = time.Time{}
		d.log.Debug("driver answers where no source found it since its app ended", zap.String("app_id", info.ID), zap.String("upstream", u2s(t.c.url)))
		return
	}
	if reason := d.claimConflict(t, info); reason != "" {
		d.refuseClaim(t, info.ID, info.User, reason)
		return
	}
	t.fails, t.refused = 0, ""
	if namesApp(t.c, info.ID) {
		d.replaceWeaker(t, info)
	}
	if old := d.apps[info.ID]; old != nil && old.app.State == Running && old.key != key {
		// Taken for the same driver under a second address, on the word of
		// what answers here (id and owner), which proves nothing: this
		// address never stands for the app, nor lends it its source
		// (a Kubernetes source naming the app here would give the driver
		// at the first address the pod's logs).
		t.appID = info.ID
		return
	}
	if t.appID != "" && t.appID != info.ID {
		d.endApp(t.appID, "another app answers at its url")
	}
	// ACLProps stay nil, which the authorizer judges fail-closed, until
	// the environment has been read.
	app := App{
		ID: info.ID, Name: info.Name, User: info.User, AttemptID: info.AttemptID,
		SparkVersion: info.SparkVersion, StartTime: info.Start, State: Running,
		UIURL: t.c.url, Addr: info.addr, Source: t.c.source, LastSeen: now,
	}
	if t.c.yarn {
		app.ProxyBase = "/proxy/" + info.ID // the RM web proxy's, unless the environment names one
		app.YARNName, app.YARNQueue = t.c.yarnName, t.c.yarnQueue
	}
	a := &liveApp{app: app, key: key, foundAt: now, verifyAt: t.verifyAt}
	d.apps[info.ID] = a
	t.appID = info.ID
	d.dirty = true
	// Logged once the app is routable (published): verify_took is the
	// gateway's share of time to routable, from the start of the
	// verification to the snapshot that holds the app.
	fromLog, verifyAt, tries := t.fromLogAt, t.verifyAt, info.tries
	d.announce = append(d.announce, func(published time.Time) {
		fields := []zap.Field{zap.String("app_id", info.ID), zap.String("upstream", u2s(app.UIURL)), zap.String("source", app.Source)}
		if !fromLog.IsZero() {
			fields = append(fields, zap.Duration("since_log_line", published.Sub(fromLog)))
		}
		fields = append(fields, zap.Duration("verify_took", published.Sub(verifyAt)), zap.Int("tries", tries))
		d.log.Info("driver found", fields...)
	})
	d.readEnv(info.ID, a)
}

// readEnv reads a live app's environment in a worker, unless it is known,
// being read, or the app is no longer the running one under its id.
func (d *Discoverer) readEnv(id string, a *liveApp) {
	if d.apps[id] != a || a.app.State != Running || a.envBusy || a.envKnown {
		return
	}
	a.envBusy = true
	ctx, u := d.ctx, a.app.UIURL
	go func() {
		acl, proxyBase, err := d.c.driverEnv(ctx, u, id)
		d.send(ctx, func() { d.onEnv(id, a, acl, proxyBase, err) })
	}()
}

// onEnv publishes a read environment, or schedules the next read. A failed
// read changes nothing: ACLProps stay nil (fail-closed).
func (d *Discoverer) onEnv(id string, a *liveApp, acl map[string]string, proxyBase string, err error) {
	a.envBusy = false
	if d.apps[id] != a || a.app.State != Running {
		return // ended or replaced: its props stay as they were
	}
	if err != nil {
		a.envFails++
		wait := envRetryDelay(a.envFails)
		log := d.log.Debug
		if a.envFails == 1 {
			log = d.log.Warn
		}
		log("driver environment unreadable; only its owner and admins get in until it is read",
			zap.String("app_id", id), zap.String("upstream", u2s(a.app.UIURL)), zap.Int("fails", a.envFails),
			zap.Duration("retry_in", wait), zap.Error(err))
		ctx := d.ctx
		time.AfterFunc(wait, func() { d.send(ctx, func() { d.readEnv(id, a) }) })
		return
	}
	a.envKnown, a.envFails = true, 0
	a.app.ACLProps = acl
	if proxyBase != "" {
		a.app.ProxyBase = proxyBase
	}
	d.dirty = true
	// env_took is from the start of the app's verification to the
	// snapshot with its ACLs: the gateway's share of time to routable for
	// users its ACLs let in.
	foundAt, verifyAt, base := a.foundAt, a.verifyAt, a.app.ProxyBase
	d.announce = append(d.announce, func(published time.Time) {
		d.log.Info("driver environment read", zap.String("app_id", id), zap.Duration("since_found", published.Sub(foundAt)),
			zap.Duration("env_took", published.Sub(verifyAt)),
			zap.Bool("acls_enable", acl["spark.acls.enable"] == "true"), zap.String("proxy_base", base))
	})
}

// checkApp asks a live app's UI whether it still serves the same app.
func (d *Discoverer) checkApp(id string, suspect bool) {
	a := d.apps[id]
	if a == nil || a.app.State != Running || a.checking {
		return
	}
	a.checking = true
	ctx := d.ctx
	u := a.app.UIURL
	go func() {
		got, err := d.c.driverApp(ctx, u)
		d.send(ctx, func() { d.onChecked(id, a, got, err, suspect) })
	}()
}

func (d *Discoverer) onChecked(id string, a *liveApp, got apiApp, err error, suspect bool) {
	a.checking = false
	if d.apps[id] != a || a.app.State != Running {
		return
	}
	if err == nil && got.ID == id && attemptUser(got) == a.app.User {
		// LastSeen reaches the registry with the next change: a check
		// that changes nothing else publishes nothing.
		a.fails = 0
		a.app.LastSeen = d.now()
		return
	}
	if err == nil {
		// Port reused: the old driver is gone; verify the newcomer fully.
		d.endApp(id, "another app answers at its url")
		if t := d.targets[a.key]; t != nil && !t.verifying {
			d.verify(t)
		}
		return
	}
	a.fails++
	a.nextCheck = d.now() // again next round
	var ue *unreachableError
	refused := errors.As(err, &ue) && ue.refused
	if a.fails >= 2 || (suspect && refused) {
		d.endApp(id, err.Error())
		return
	}
	d.log.Debug("driver did not answer", zap.String("app_id", id), zap.String("upstream", u2s(a.app.UIURL)), zap.Error(err))
}

// endApp marks an app ended. Its UI URL stays for display; App.Live is
// false from now on.
// stillAnswersEnded reports whether info is the app that was live at key,
// with the same owner, and has since ended as its History Server lists it
// as finished: the same driver, not another claiming its id.
func (d *Discoverer) stillAnswersEnded(key string, info driverInfo) bool {
	a := d.apps[info.ID]
	if a == nil || a.app.State != Ended || a.key != key || a.app.User != info.User {
		return false
	}
	for _, ha := range d.histByID[info.ID] {
		if ha.Ref.Completed && ha.User == info.User {
			return true
		}
	}
	return false
}

func (d *Discoverer) endApp(id, reason string) {
	a := d.apps[id]
	if a == nil || a.app.State != Running {
		return
	}
	a.app.State = Ended
	a.app.EndTime = d.now()
	for _, t := range d.targets {
		if t.appID == id {
			t.appID, t.retryAt, t.fails = "", time.Time{}, 0
			t.endedAt = a.app.EndTime
		}
	}
	d.dirty = true
	d.log.Info("driver ended", zap.String("app_id", id), zap.String("upstream", u2s(a.app.UIURL)), zap.String("source", a.app.Source), zap.String("reason", reason))
}

// offerHeld is how many intervals an offer of a URL is remembered after
// its source last made it.
const offerHeld = 3

// offerKey names one source's offer of a target's URL: the source and the
// app id it names there ("" for none).
type offerKey struct{ source, appID string }

// offerStamp says when a source's read that found a URL began (seen), and
// when the offer was last handled (at); a ResourceManager's offer keeps
// what it said of the app (yarn), which credit gives the candidate it
// credits to that source, whatever offer came last.
type offerStamp struct {
	seen, at time.Time
	yarn     yarnOffer
}

// yarnOffer is what a ResourceManager says of an app besides its URL.
type yarnOffer struct{ name, queue, user string }

// remember records c's offer, handled now: seen is when its source's read
// began (c.seen; now if unknown). At most once per hold it forgets the
// offers not handled within hold. A source may name many ids at one URL (a
// master lists whatever address a driver registered): each offer costs
// the same.
func (t *target) remember(c candidate, now time.Time, hold time.Duration) {
	seen := c.seen
	if seen.IsZero() || seen.After(now) {
		seen = now
	}
	if t.offers == nil {
		t.offers = make(map[offerKey]offerStamp, 2)
	}
	k := offerKey{c.source, c.appID}
	y := yarnOffer{c.yarnName, c.yarnQueue, c.yarnUser}
	if st := t.offers[k]; seen.After(st.seen) {
		t.offers[k] = offerStamp{seen, now, y}
	} else {
		t.offers[k] = offerStamp{st.seen, now, y}
	}
	if now.Sub(t.prunedAt) >= hold {
		t.prunedAt = now
		for k, st := range t.offers {
			if now.Sub(st.at) > hold {
				delete(t.offers, k)
			}
		}
	}
}

// credit picks the source a driver reporting id at t's URL is found by:
// among the offers handled since whose read began after the app last
// verified there ended, the strongest (sourceRank; the latest read of
// equals) that names id or no id, as a candidate like last (the latest
// offer, whose URL and YARN details are the target's). Without one, other
// is such an offer that names another app, if there is any.
func (t *target) credit(id string, since time.Time, last candidate) (c candidate, ok bool, other *candidate) {
	var at time.Time
	for k, st := range t.offers {
		if st.at.Before(since) || !st.seen.After(t.endedAt) {
			continue
		}
		cand := last
		cand.source, cand.appID = k.source, k.appID
		// What a ResourceManager said of the app is its own offer's, not
		// the latest offer's (a log line may name its proxy's URL).
		cand.yarn = sourceKind(k.source) == "yarn"
		cand.yarnName, cand.yarnQueue, cand.yarnUser = st.yarn.name, st.yarn.queue, st.yarn.user
		if k.appID != "" && !sameApp(k.appID, id) {
			other = &cand
			continue
		}
		if r, best := sourceRank(k.source), sourceRank(c.source); !ok || r > best || r == best && st.seen.After(at) {
			c, at, ok = cand, st.seen, true
		}
	}
	return c, ok, other
}

// sourceRank orders sources by what they vouch for: one that gave the app
// its id (a ResourceManager, a master) over the Kubernetes source (the
// driver pod's namespace) over a log line (which may name the id) over a
// probe or a static entry.
func sourceRank(source string) int {
	switch sourceKind(source) {
	case "yarn", "master":
		return 3
	case "kubernetes":
		return 2
	case "log":
		return 1
	}
	return 0
}
