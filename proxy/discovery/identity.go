package discovery

import (
	"fmt"
	"slices"
	"strings"

	"go.uber.org/zap"
)

// An app id is a name that anyone who can start a process on the cluster can
// claim: a driver answers /api/v1/applications with whatever it likes. These
// rules decide whose claim stands, in this order of trust:
//
//  1. A History Server's record (its sparkUser, read from the event log)
//     outranks every live claim of a driver that a weaker source found (see
//     3): such a driver may not claim an app that a History Server lists as
//     finished, or with another owner. A driver that a ResourceManager or a
//     master names keeps its id whatever an event log says: anyone who may
//     write to the event-log directory can write one under any id.
//  2. Where the source itself names the app (the ResourceManager's id, the
//     pod's spark-app-selector label, the master's list, the log's app-id
//     line), the driver must report that id.
//  3. A ResourceManager or a standalone master binds an id to an address
//     itself (it gave the app that id), where a log line, a pod label, a
//     probe or a static entry only repeats what the driver's owner wrote:
//     its address replaces one such a weaker source found first, and once
//     it has named an app, no weaker source's address may take the id over
//     after the app ends (while the ended app is remembered,
//     ended_retention). Once no such source lists an app it named
//     (endUnlisted), the app has finished: only such a source naming it
//     again brings it back, whatever answers at its address.
//  4. Otherwise the first verified owner keeps the id: a second address
//     answering for it with another owner is refused, and once the app has
//     ended no other address takes its id (while it is remembered), whatever
//     owner it reports: only the source that names the app may. Nor does
//     an address taken for the same driver while the app ran (a second
//     address: the same id and owner reported, which prove nothing).
//
// A refused claim is logged and counted (sparkgate_discovery_conflicts_total)
// once per address and id, and the address is not asked again for a while.

// claimConflict says why the app a driver reported at t may not be
// published, or "" when it may.
func (d *Discoverer) claimConflict(t *target, info driverInfo) string {
	if want := t.c.appID; want != "" && !sameApp(want, info.ID) {
		return fmt.Sprintf("the source names app %s at this address", want)
	}
	if want := t.c.yarnUser; want != "" && info.User != want {
		return fmt.Sprintf("the ResourceManager admitted the app as user %q", want)
	}
	strong := namesApp(t.c, info.ID)
	for _, ha := range d.histByID[info.ID] {
		if strong {
			break // rule 1: the source that named the app outranks an event log
		}
		if ha.Ref.Completed {
			return fmt.Sprintf("History Server %s lists the app as finished", ha.Ref.Server)
		}
		if ha.User != info.User {
			return fmt.Sprintf("History Server %s says the app's owner is %q", ha.Ref.Server, ha.User)
		}
	}
	old := d.apps[info.ID]
	if old == nil {
		return ""
	}
	if old.unlistedEnd && !strong && old.app.State != Running {
		// The source that named the app stopped listing it at its
		// address: what answers there now is not it, whoever found it.
		return fmt.Sprintf("%s no longer lists the app at %s", old.app.Source, u2s(old.app.UIURL))
	}
	if old.key != t.c.key() {
		switch oldStrong := bindsIDs(old.app.Source); {
		case strong && !oldStrong:
			return "" // rule 3: this address replaces the weaker one (onVerified)
		case oldStrong && !strong && old.app.State != Running:
			return fmt.Sprintf("%s named the app at %s, where it has ended", old.app.Source, u2s(old.app.UIURL))
		case !strong && old.app.State != Running:
			// Rule 4: the same owner reported proves nothing (a driver
			// says what it likes), and the app's logs stay on workers
			// and in pods under its id.
			return fmt.Sprintf("the app ended at %s; another address may not take its id", u2s(old.app.UIURL))
		}
	}
	if old.app.User != info.User {
		return fmt.Sprintf("the app was verified first at %s with owner %q", u2s(old.app.UIURL), old.app.User)
	}
	return ""
}

// bindsIDs reports whether a source gives apps their ids and binds them to
// addresses itself: a YARN ResourceManager (the id it assigned, at its web
// proxy's path for that id) or a standalone master (the id it assigned,
// with the address the driver registered with it).
func bindsIDs(source string) bool {
	k := sourceKind(source)
	return k == "yarn" || k == "master"
}

// namesApp reports whether c's source binds the app id to c's address.
func namesApp(c candidate, id string) bool {
	return bindsIDs(c.source) && c.appID != "" && sameApp(c.appID, id)
}

// replaceWeaker withdraws the live app a weaker source found under id at
// another address, for t, whose source names the app (rule 3): quietly if
// it reports the same owner (the same driver found twice, as a log line
// and by the ResourceManager), as a refused claim if another.
func (d *Discoverer) replaceWeaker(t *target, info driverInfo) {
	old := d.apps[info.ID]
	if old == nil || old.key == t.c.key() || bindsIDs(old.app.Source) {
		return
	}
	if old.app.User != info.User {
		d.evictClaim(info.ID, fmt.Sprintf("%s names the app at %s", t.c.source, u2s(t.c.url)))
		return
	}
	delete(d.apps, info.ID)
	for _, ot := range d.targets {
		if ot.appID == info.ID {
			ot.appID = ""
		}
	}
	d.dirty = true
	d.log.Debug("app's address replaced by the source that names it", zap.String("app_id", info.ID),
		zap.String("upstream", u2s(t.c.url)), zap.String("source", t.c.source), zap.String("replaced", u2s(old.app.UIURL)))
}

// refuseClaim records a refused claim at t and backs off from t.
func (d *Discoverer) refuseClaim(t *target, id, user, reason string) {
	t.fails++
	t.retryAt = d.now().Add(claimBackoff * d.cfg.Interval)
	if t.appID == id {
		t.appID = ""
	}
	if t.refused == id {
		d.log.Debug("app claim refused again", zap.String("app_id", id), zap.String("upstream", u2s(t.c.url)), zap.String("reason", reason))
		return
	}
	t.refused = id
	d.health.conflict(sourceKind(t.c.source))
	d.log.Warn("discovery refused a driver's claim to an app",
		zap.String("app_id", id), zap.String("claimed_user", user), zap.String("upstream", u2s(t.c.url)),
		zap.String("source", t.c.source), zap.String("reason", reason))
}

// claimBackoff is how many intervals a refused address waits before it is
// asked again: it may have been a port reused by an honest driver.
const claimBackoff = 12

// evictClaim withdraws a published live app whose claim a more trusted
// source has since contradicted. Nothing of it is kept: a History Server's
// record, if any, takes its place at the next publish.
func (d *Discoverer) evictClaim(id, reason string) {
	a := d.apps[id]
	if a == nil {
		return
	}
	delete(d.apps, id)
	for _, t := range d.targets {
		if t.appID == id {
			d.refuseClaim(t, id, a.app.User, reason)
		}
	}
	d.dirty = true
}

// reconcileHistory applies rule 1 to apps verified before a History Server
// listed them: another owner is a false claim; a finished record means the
// driver is gone, whatever still answers at its address.
func (d *Discoverer) reconcileHistory() {
	d.histByID = make(map[string][]*historyApp, len(d.histByID))
	for _, h := range d.hist {
		list := d.histApps[h.cfg.Name]
		for i := range list {
			d.histByID[list[i].ID] = append(d.histByID[list[i].ID], &list[i])
		}
	}
	for id, a := range d.apps {
		if a.app.State != Running || bindsIDs(a.app.Source) {
			// Rule 1: an event log does not outrank the source that named
			// the app (which ends it itself).
			continue
		}
		for _, ha := range d.histByID[id] {
			if ha.User != a.app.User {
				d.evictClaim(id, fmt.Sprintf("History Server %s says the app's owner is %q", ha.Ref.Server, ha.User))
				break
			}
			if ha.Ref.Completed {
				d.endApp(id, "History Server "+ha.Ref.Server+" lists it as finished")
				break
			}
		}
	}
}

// attemptUser is the sparkUser of an app list entry's first attempt.
func attemptUser(a apiApp) string {
	if len(a.Attempts) == 0 {
		return ""
	}
	return a.Attempts[0].SparkUser
}

// sourceKind is the kind of a candidate's source ("probe", "log", "yarn",
// "kubernetes", "master", "static"): a metric label with few values.
func sourceKind(source string) string {
	k, _, _ := strings.Cut(source, ":")
	return k
}

// WantACLs asks for an app's ACLs to be read now, before any other read: a
// request is waiting for them (its answer is "not yet" until they are). It
// never blocks.
func (d *Discoverer) WantACLs(appID string) {
	select {
	case d.wantACL <- appID:
	default: // a queue this full means reads are already on the way
	}
}

// readACLsNow starts the reads of an app's unknown ACLs: its live driver's
// environment and, for every History Server that lists it without them,
// its event log's.
func (d *Discoverer) readACLsNow(id string) {
	if a := d.apps[id]; a != nil && a.app.State == Running && !a.envKnown {
		d.readEnv(id, a)
	}
	for _, ha := range d.histByID[id] {
		h := d.histSource(ha.Ref.Server)
		if h == nil {
			continue
		}
		if ha.Ref.ACLProps == nil {
			d.readHistoryACLs(h, id, ha.AttemptID, ha.Ref.Completed, false)
		}
		for _, a := range ha.Ref.Older {
			// Each read has the server replay an event log: an app of
			// many attempts (anyone may write them) gets a few reads at
			// a time here, and the rest from the polls.
			if a.ACLProps == nil && len(d.aclBusy) < historyEnvParallel {
				d.readHistoryACLs(h, id, a.ID, a.Completed, true)
			}
		}
	}
}

// readHistoryACLs starts reading one attempt's ACLs from h, unless a read
// is under way.
func (d *Discoverer) readHistoryACLs(h *historySource, id, attempt string, completed, older bool) {
	key := h.cfg.Name + "/" + id + "/" + attempt
	if d.aclBusy[key] {
		return
	}
	d.aclBusy[key] = true
	ctx := d.ctx
	go func() {
		acl, err := h.fetchACLs(ctx, id, attempt, completed, older)
		d.send(ctx, func() { d.onHistoryACLs(key, h.cfg.Name, id, attempt, acl, err) })
	}()
}

func (d *Discoverer) onHistoryACLs(key, server, id, attempt string, acl map[string]string, err error) {
	delete(d.aclBusy, key)
	if err != nil {
		d.log.Debug("history ACLs unreadable", zap.String("app_id", id), zap.String("attempt", attempt),
			zap.String("history", server), zap.Error(err))
		return
	}
	for _, ha := range d.histByID[id] {
		if ha.Ref.Server != server {
			continue
		}
		if ha.AttemptID == attempt && ha.Ref.ACLProps == nil {
			ha.Ref.ACLProps = acl
			d.dirty, d.histStale = true, true
		}
		for k, a := range ha.Ref.Older {
			if a.ID == attempt && a.ACLProps == nil {
				// Published snapshots share the slice: change a copy.
				ha.Ref.Older = slices.Clone(ha.Ref.Older)
				ha.Ref.Older[k].ACLProps = acl
				d.dirty, d.histStale = true, true
			}
		}
	}
}

func (d *Discoverer) histSource(name string) *historySource {
	for _, h := range d.hist {
		if h.cfg.Name == name {
			return h
		}
	}
	return nil
}

// sameApp reports whether the id a source names is the driver's id. An
// event log's name may carry the attempt ("<app>_<attempt>", YARN cluster
// mode), so a name that extends the id by "_" and more also matches.
func sameApp(named, id string) bool {
	return named == id || strings.HasPrefix(named, id+"_")
}
