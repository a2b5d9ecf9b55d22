package discovery

import (
	"cmp"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// State is where an application is in its life, as far as the gateway knows.
type State int

const (
	// Running means a live driver UI answered for the app at its last check.
	Running State = iota
	// Ended means the driver stopped answering or reported itself complete;
	// the app may be served from a History Server.
	Ended
)

func (s State) String() string {
	if s == Running {
		return "running"
	}
	return "finished"
}

// HistoryRef says that one configured History Server knows the app.
type HistoryRef struct {
	// Server is the name of the history source in the configuration.
	Server string
	// BaseURL is the History Server's root URL.
	BaseURL *url.URL
	// Attempts lists the attempt ids the History Server has, newest first;
	// an empty string stands for an app without attempt ids.
	Attempts []string
	// Completed is the History Server's own view of the newest attempt.
	Completed bool
	// User is the newest attempt's sparkUser as the History Server read it
	// from the event log: the owner for history ACL purposes, whatever a
	// live driver claims.
	User string
	// ACLProps are the ACL properties of the app's event log as the
	// History Server's REST API gives them: its last environment update.
	// The History Server itself applies the first (README, Known
	// limitations); they differ only if the app changed them as it ran.
	ACLProps map[string]string
	// Older holds the attempts after the newest (Attempts[1:], in that
	// order), each with the owner and ACLs of its own event log: Spark
	// judges each attempt's pages by its own. Nil for an app of one attempt.
	Older []HistoryAttempt
	// ACLsEnable, AdminACLs and AdminACLsGroups are the server's own
	// settings from the gateway configuration (spark.history.ui.acls.enable,
	// spark.history.ui.admin.acls(.groups)); the slices are shared and must
	// not be modified.
	ACLsEnable      bool
	AdminACLs       []string
	AdminACLsGroups []string
}

// HistoryAttempt is one older attempt of an app on a History Server.
type HistoryAttempt struct {
	ID        string
	User      string // the attempt's sparkUser
	Completed bool
	// ACLProps are the attempt's ACL properties; nil until read.
	ACLProps    map[string]string
	lastUpdated int64
}

// ForAttempt returns the view of the History Server's app that judges
// attempt id ("" for the attempt without an id): r itself for the newest
// attempt, and for an older one a copy carrying that attempt's owner, ACLs
// and state, as the History Server judges each attempt by its own event
// log. For "", when no attempt lacks an id, it is r. ok is false for an
// attempt id r does not list.
func (r *HistoryRef) ForAttempt(id string) (_ *HistoryRef, ok bool) {
	if len(r.Attempts) == 0 || r.Attempts[0] == id {
		return r, true
	}
	for i := range r.Older {
		if a := &r.Older[i]; a.ID == id {
			cp := *r
			cp.User, cp.ACLProps, cp.Completed = a.User, a.ACLProps, a.Completed
			return &cp, true
		}
	}
	if id == "" {
		return r, true
	}
	return nil, false
}

// App is one Spark application as the registry knows it. Apps in a Snapshot
// are immutable: discovery builds new values rather than changing old ones.
type App struct {
	ID           string
	Name         string
	User         string // sparkUser: the owner for ACL purposes
	AttemptID    string
	SparkVersion string
	StartTime    time.Time
	EndTime      time.Time // zero while running
	State        State

	// UIURL is the live driver's UI root (scheme://host:port), nil when the
	// app is known only from a History Server.
	UIURL *url.URL
	// Addr is the ip:port that UIURL's host resolved to when the app was
	// verified; discovery and the proxy dial it and nothing else
	// (Snapshot.Pin).
	Addr string
	// ProxyBase is the driver's spark.ui.proxyBase (for example
	// "/proxy/<appId>" on YARN); when set, Spark ignores X-Forwarded-Context
	// and its links carry this prefix.
	ProxyBase string
	// Source names where the app was found ("log:/var/log/spark/a.log",
	// "probe:127.0.0.1:4040", "master:http://…", "static", "history:name").
	Source string
	// ACLProps holds the app's spark.acls.enable, spark.admin.acls(.groups),
	// spark.ui.view.acls(.groups), spark.modify.acls(.groups) as read from its
	// environment; nil when they could not be read.
	ACLProps map[string]string
	// History lists the History Servers that know the app.
	History []HistoryRef
	// LastSeen is when the driver last answered.
	LastSeen time.Time
	// ClusterName and ClusterState are the Spark operator's namespace/name
	// and state (RUNNING, COMPLETED, FAILED…) of the app's
	// SparkApplication; "" when it has none.
	ClusterName, ClusterState string
	// YARNName and YARNQueue are the ResourceManager's application name
	// and queue of an app found through a ResourceManager (discovery.yarn);
	// "" otherwise.
	YARNName, YARNQueue string
	// Driver is, for an ended app that a History Server lists (and so is
	// what that server says it is), what the source that found its driver
	// recorded of it, if that source vouches for what is kept under the
	// app's id (see VouchesForID); nil otherwise.
	Driver *DriverRecord
}

// DriverRecord is what discovery knew of an ended app's driver: where it
// was found and answered, its owner and its ACL properties (nil: never
// read).
type DriverRecord struct {
	Source   string
	UIURL    *url.URL
	User     string
	ACLProps map[string]string
}

// VouchesForID reports whether source, an App's Source, found the driver
// under an id whose logs it keeps: a standalone master or a YARN
// ResourceManager (which gave the app its id and bound it to the driver:
// the logs its workers and NodeManagers keep under that id are this
// app's), or the Kubernetes source (the app's pods are those in its driver
// pod's namespace). A probe, a log line or a static entry only repeats
// what the driver says of itself, and a History Server what an event log
// says, which anyone who may write to its directory may have written.
func VouchesForID(source string) bool {
	switch sourceKind(source) {
	case "master", "yarn", "kubernetes":
		return true
	}
	return false
}

// Live reports whether requests can go to a driver.
func (a *App) Live() bool { return a.State == Running && a.UIURL != nil }

// Snapshot is an immutable view of every known app.
//
// Discovery builds it in two parts: the apps known only from History
// Servers (shared by every snapshot until a History Server's list changes)
// and the live and ended apps found on drivers, which shadow a History
// Server record of the same id. A new snapshot costs what changed.
type Snapshot struct {
	byID map[string]*App
	hist *appSet           // nil, or apps looked up after byID, unless shadowed by it
	pins map[string]string // live apps' UIURL host:port → Addr

	once  sync.Once
	merge func() []*App // builds list at first use when both parts hold apps
	list  []*App        // sorted: running first, then newest start first
}

// appSet is a set of apps with a lookup by id and a list in snapshot order.
type appSet struct {
	byID map[string]*App
	list []*App
}

// newAppSet builds a set; the first app of an id wins.
func newAppSet(apps []*App) *appSet {
	s := &appSet{byID: make(map[string]*App, len(apps)), list: make([]*App, 0, len(apps))}
	for _, a := range apps {
		if _, dup := s.byID[a.ID]; dup {
			continue
		}
		s.byID[a.ID] = a
		s.list = append(s.list, a)
	}
	// Ids are unique here and compareApps ends on the id, so the order is
	// total and an unstable sort gives the one result (a stable sort's
	// extra moves cost a third of a publish).
	slices.SortFunc(s.list, compareApps)
	return s
}

// compareApps orders running apps first, then newest start first, then by id.
func compareApps(a, b *App) int {
	if a.State != b.State {
		return cmp.Compare(a.State, b.State)
	}
	if c := b.StartTime.Compare(a.StartTime); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// NewSnapshot builds a snapshot; apps must not be modified afterwards.
func NewSnapshot(apps []*App) *Snapshot {
	return newSnapshot(newAppSet(apps), nil)
}

// newSnapshot builds a snapshot of own apps and, after them, the apps of
// hist whose ids own does not hold; neither may be modified afterwards.
func newSnapshot(own, hist *appSet) *Snapshot {
	s := &Snapshot{byID: own.byID, hist: hist}
	for _, a := range own.list {
		if a.Live() && a.Addr != "" {
			if s.pins == nil {
				s.pins = map[string]string{}
			}
			s.pins[hostPort(a.UIURL)] = a.Addr
		}
	}
	switch {
	case hist == nil || len(hist.list) == 0:
		s.list = own.list
		return s
	case len(own.list) == 0:
		s.list = hist.list
		return s
	}
	ownList := own.list
	s.merge = func() []*App {
		out := make([]*App, 0, len(ownList)+len(hist.list))
		i := 0
		for _, h := range hist.list {
			if _, shadowed := own.byID[h.ID]; shadowed {
				continue
			}
			for i < len(ownList) && compareApps(ownList[i], h) <= 0 {
				out = append(out, ownList[i])
				i++
			}
			out = append(out, h)
		}
		return append(out, ownList[i:]...)
	}
	return s
}

// Lookup returns the app with exactly this id.
func (s *Snapshot) Lookup(id string) (*App, bool) {
	if a, ok := s.byID[id]; ok {
		return a, true
	}
	if s.hist != nil {
		a, ok := s.hist.byID[id]
		return a, ok
	}
	return nil, false
}

// Apps returns every app, running first, newest first. The slice is shared:
// callers must not modify it.
func (s *Snapshot) Apps() []*App {
	s.once.Do(func() {
		if s.merge != nil {
			s.list = s.merge()
		}
	})
	return s.list
}

// Registry holds the current snapshot. Readers never wait on discovery: a
// new snapshot is swapped in whole.
type Registry struct {
	cur atomic.Pointer[Snapshot]
}

// NewRegistry returns a registry holding an empty snapshot.
func NewRegistry() *Registry {
	r := &Registry{}
	r.cur.Store(NewSnapshot(nil))
	return r
}

// Load returns the current snapshot.
func (r *Registry) Load() *Snapshot { return r.cur.Load() }

// Store replaces the current snapshot.
func (r *Registry) Store(s *Snapshot) { r.cur.Store(s) }

// Lookup finds an app in the current snapshot.
func (r *Registry) Lookup(id string) (*App, bool) { return r.cur.Load().Lookup(id) }
