package discovery

import (
	"net/url"
	"sort"
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
	// ACLProps are the ACL properties from the app's event log (the first
	// environment update), as the History Server would apply them.
	ACLProps map[string]string
	// ACLsEnable, AdminACLs and AdminACLsGroups are the server's own
	// settings from the gateway configuration (spark.history.ui.acls.enable,
	// spark.history.ui.admin.acls(.groups)); the slices are shared and must
	// not be modified.
	ACLsEnable      bool
	AdminACLs       []string
	AdminACLsGroups []string
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
}

// Live reports whether requests can go to a driver.
func (a *App) Live() bool { return a.State == Running && a.UIURL != nil }

// Snapshot is an immutable view of every known app.
type Snapshot struct {
	byID map[string]*App
	list []*App            // sorted: running first, then newest start first
	pins map[string]string // live apps' UIURL host:port → Addr
}

// NewSnapshot builds a snapshot; apps must not be modified afterwards.
func NewSnapshot(apps []*App) *Snapshot {
	s := &Snapshot{byID: make(map[string]*App, len(apps)), list: make([]*App, 0, len(apps))}
	for _, a := range apps {
		if _, dup := s.byID[a.ID]; dup {
			continue
		}
		s.byID[a.ID] = a
		s.list = append(s.list, a)
		if a.Live() && a.Addr != "" {
			if s.pins == nil {
				s.pins = map[string]string{}
			}
			s.pins[hostPort(a.UIURL)] = a.Addr
		}
	}
	sort.SliceStable(s.list, func(i, j int) bool {
		a, b := s.list[i], s.list[j]
		if a.State != b.State {
			return a.State < b.State
		}
		if !a.StartTime.Equal(b.StartTime) {
			return a.StartTime.After(b.StartTime)
		}
		return a.ID < b.ID
	})
	return s
}

// Lookup returns the app with exactly this id.
func (s *Snapshot) Lookup(id string) (*App, bool) {
	a, ok := s.byID[id]
	return a, ok
}

// Apps returns every app, running first, newest first. The slice is shared:
// callers must not modify it.
func (s *Snapshot) Apps() []*App { return s.list }

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
