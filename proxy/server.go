// Package proxy is the gateway's HTTP face for everything but sign-in: it
// routes a request to a live driver UI or a History Server, checks that the
// signed-in user may view the app (through the Authorizer it is given),
// refuses kill endpoints, reverse-proxies with Spark's own link building
// (X-Forwarded-Context), rewrites redirects, strips kill controls from
// pages, falls back to history when a driver has gone, and serves the
// index, the merged application list and the error pages.
//
// It must not decide who a user is (auth does), what Spark's ACLs mean
// (policy does) or where apps are (discovery does); and it never takes an
// upstream address from a request: app ids are looked up in the registry.
package proxy

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/sparkgate/sparkgate/proxy/diagnosis"
	"github.com/sparkgate/sparkgate/proxy/discovery"
)

// Options are what New needs. Registry, Authn and Authz are required.
type Options struct {
	Config   Config
	Registry *discovery.Registry
	Authn    Authenticator
	Authz    Authorizer
	// HistoryServers maps a History Server's configured name to its base
	// URL. Only these are ever proxied to.
	HistoryServers map[string]*url.URL
	// Ready reports readiness for /_/readyz (nil: always ready).
	Ready func() bool
	// ClaimOnce, if set, records a one-time token's key for ttl where every
	// replica sees it, and reports whether no replica had recorded it (or
	// that it cannot tell: true). An app host's hand-off token is taken
	// once per replica without it, once in all with it.
	ClaimOnce func(ctx context.Context, key string, ttl time.Duration) bool
	// Suspect, if set, is told that a live app's driver did not answer, so
	// that discovery re-checks it now rather than at its next round.
	Suspect func(appID string)
	// Confirm, if set, is asked before a new connection to a live app's
	// driver is used whether the address still serves that app (see
	// confirm.go); an error refuses the request.
	Confirm func(ctx context.Context, appID string) error
	// WantACLs, if set, is told that a request waits for an app's ACLs
	// (Verdict.Pending), so that discovery reads them before any other.
	WantACLs func(appID string)
	// IsAdmin reports whether an identity may see how the gateway runs
	// (where discovery looks, its sources' state); nil means none may. It
	// grants no access to any app.
	IsAdmin func(Identity) bool
	// Sources describes where discovery looks ("driver logs /var/log/spark",
	// "port probe 10.0.0.5:4040-4056"); the index shows it to admins when
	// it lists nothing: it names hosts and paths that other users need not
	// learn.
	Sources []string
	// SourceHealth, if set, reports each polled discovery source's state
	// (discovery.Discoverer.Sources); the index shows admins which are
	// down, since when and why.
	SourceHealth func() []discovery.SourceHealth
	// CSRFKey signs kill confirmations (Kill "modify-acl"). Replicas behind
	// one load balancer need the same key; nil picks a random one.
	CSRFKey []byte
	// SecureCookies marks the gateway's own cookies Secure even when TLS
	// ends in front of it (a load balancer); set it when the public URL is
	// https.
	SecureCookies bool
	Logger        *zap.Logger
	// Audit gets one line per authorization decision.
	Audit *zap.Logger
	// Metrics, when not nil, counts decisions, kill-guard refusals and
	// upstream failures (requests themselves are counted by Middleware).
	Metrics *Metrics
	// PublicURL is the main origin's URL ("https://spark.example.com");
	// required with Config.AppDomain, whose hosts take its scheme and port.
	PublicURL string
	// Diagnosis holds the thresholds and limits of app diagnoses (the
	// "diagnosis:" section); zero fields take their defaults.
	Diagnosis diagnosis.Config
	// StandaloneMasters are standalone masters (discovery.standalone)
	// whose workers' executor logs are served; Masters are added. An
	// executor log is fetched only from a worker one of them lists.
	StandaloneMasters []*url.URL
	// ResourceManagers are YARN ResourceManagers (discovery.yarn) whose
	// NodeManagers' container logs are served; a log is fetched only from
	// a NodeManager one of them lists.
	ResourceManagers []*url.URL
	// Pods, if set, serves the logs of apps' Kubernetes pods
	// (podlogs.go): discovery's Kubernetes source.
	Pods PodLogSource
	// Masters are standalone masters whose web UI is served under
	// /master/<name>/ (the config's "masters:"); ValidateMasters checks
	// them.
	Masters []MasterConfig
}

// Server is the gateway's handler for every path except /oauth2/. It is
// safe for concurrent use.
type Server struct {
	cfg       Config
	guard     Guard
	reg       *discovery.Registry
	authn     Authenticator
	authz     Authorizer
	hs        map[string]*url.URL
	hsNames   []string
	ready     func() bool
	suspect   func(string)
	confirm   *confirmer // nil: new connections are not confirmed
	isAdmin   func(Identity) bool
	wantACLs  func(string)
	sources   []string
	health    func() []discovery.SourceHealth
	csrfKey   []byte
	secure    bool // mark the gateway's cookies Secure
	log       *zap.Logger
	audit     *zap.Logger
	metrics   *Metrics
	pages     *pages
	static    http.Handler
	upstreams *upstreams
	now       func() time.Time
	// publicURL is where users reach the main origin; app hosts
	// (Config.AppDomain) take its scheme and port.
	publicURL *url.URL
	// publicURLOpt is Options.PublicURL as given ("" when unset): the
	// target Prometheus service discovery hands out.
	publicURLOpt string
	nonces       handoffNonces
	claimOnce    func(ctx context.Context, key string, ttl time.Duration) bool // Options.ClaimOnce
	diag         *diagnoser
	finished     *finishedSummaries // finished apps' index badges (index_finished.go)
	// workers and logClient serve executor logs (execlogs.go).
	workers   *workerSet
	nodes     *workerSet // YARN NodeManagers
	logClient *http.Client
	pods      PodLogSource // nil without a Kubernetes source
	// podLogStreams counts the pod logs each user reads at once.
	podLogStreams userSlots
	// masters are the standalone masters served under /master/<name>/.
	masters map[string]*masterTarget
}

var _ http.Handler = (*Server)(nil)

// New builds a Server. It applies Config defaults and refuses an invalid
// Config.
func New(o Options) (*Server, error) {
	cfg := o.Config
	cfg.SetDefaults()
	if errs := cfg.Validate(); len(errs) > 0 {
		return nil, fmt.Errorf("proxy: invalid config: %w", errors.Join(errs...))
	}
	if o.Registry == nil {
		return nil, errNoRegistry
	}
	if o.Authn == nil || o.Authz == nil {
		return nil, errors.New("proxy: Options.Authn and Options.Authz are required")
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Audit == nil {
		o.Audit = o.Logger.Named("audit")
	}
	// One line per authorized request, always from auditDecision: no
	// caller on it, which zap would find by walking the stack each time.
	o.Audit = o.Audit.WithOptions(zap.WithCaller(false))
	pg, err := newPages()
	if err != nil {
		return nil, err
	}
	key := o.CSRFKey
	if len(key) == 0 {
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("proxy: csrf key: %w", err)
		}
	}
	s := &Server{
		cfg:       cfg,
		guard:     Guard{AllowHeapHistogram: cfg.AllowHeapHistogram, AllowThreadDump: cfg.AllowThreadDump},
		reg:       o.Registry,
		authn:     o.Authn,
		authz:     o.Authz,
		hs:        make(map[string]*url.URL, len(o.HistoryServers)),
		ready:     o.Ready,
		suspect:   o.Suspect,
		claimOnce: o.ClaimOnce,
		wantACLs:  o.WantACLs,
		isAdmin:   o.IsAdmin,
		sources:   o.Sources,
		health:    o.SourceHealth,
		csrfKey:   key,
		secure:    o.SecureCookies,
		log:       o.Logger,
		audit:     o.Audit,
		metrics:   o.Metrics,
		pages:     pg,
		static:    staticHandler(),
		now:       time.Now,

		publicURLOpt: o.PublicURL,
	}
	if o.Confirm != nil {
		s.confirm = newConfirmer(o.Confirm, func() time.Time { return s.now() })
	}
	for name, u := range o.HistoryServers {
		if !ValidServerName(name) {
			return nil, fmt.Errorf("proxy: history server name %q: must match ^[a-z0-9][a-z0-9-]{0,30}$", name)
		}
		if u == nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("proxy: history server %q: base URL must be http(s)://host[:port]", name)
		}
		s.hs[name] = u
		s.hsNames = append(s.hsNames, name)
	}
	sort.Strings(s.hsNames)
	if cfg.AppDomain != "" {
		u, err := url.Parse(o.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("proxy: app_domain needs the public URL (http(s)://host[:port]), got %q", o.PublicURL)
		}
		s.publicURL = u
	}
	tr := newTransport(cfg)
	// Dial the address discovery verified for a driver, never a fresh DNS
	// answer for its host name (discovery.Snapshot.Pin).
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if pinned, ok := s.reg.Load().Pin(addr); ok {
			addr = pinned
		}
		c, err := dial(ctx, network, addr)
		if err != nil || s.confirm == nil {
			return c, err
		}
		// The dial's context carries the request's values: a live
		// driver's request names its app (suspectID).
		if st := stateFrom(ctx); st != nil && st.suspectID != "" {
			if err := s.confirm.check(ctx, st.suspectID); err != nil {
				_ = c.Close() // never used
				return nil, err
			}
		}
		return c, nil
	}
	s.upstreams = newUpstreams(s, tr)
	dcfg := o.Diagnosis
	dcfg.SetDefaults()
	if errs := dcfg.Validate(); len(errs) > 0 {
		return nil, fmt.Errorf("proxy: invalid diagnosis config: %w", errors.Join(errs...))
	}
	s.diag = newDiagnoser(dcfg, s.upstreams.transport, func() time.Time { return s.now() })
	s.finished = newFinishedSummaries()
	if err := s.initExecLogs(o.StandaloneMasters, o.Masters, o.ResourceManagers); err != nil {
		return nil, err
	}
	s.pods = o.Pods
	s.podLogStreams.max = podLogStreamsPerUser
	return s, nil
}

// ServeHTTP answers one request: gateway endpoints without sign-in, then
// routing, sign-in, the kill guard, lookup, authorization and proxying.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	st := stateFrom(r.Context())
	if st == nil {
		// Without Middleware (tests, embedding): carry our own state.
		st = &reqState{}
		r = r.WithContext(contextWithState(r.Context(), st))
	}
	if isServiceWorkerFetch(r) {
		// Neither the gateway nor any upstream serves a service worker:
		// one registered on the shared origin would outlive its app.
		s.writeError(w, r, st, &httpError{Status: http.StatusForbidden, Title: "Refused by sparkgate",
			Msg: "service workers are not served through sparkgate"})
		return
	}
	if id, ok := s.appHostID(r.Host); ok {
		st.onAppHost = true
		s.serveAppHost(w, r, st, id)
		return
	}
	switch p := r.URL.Path; {
	case p == "/_/healthz":
		s.healthz(w, r)
		return
	case p == "/_/readyz":
		s.readyz(w, r)
		return
	case strings.HasPrefix(p, "/_/static/"):
		s.static.ServeHTTP(w, r)
		return
	}
	if err := s.serve(w, r, st); err != nil {
		s.writeError(w, r, st, err)
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request, st *reqState) error {
	route, err := ParseRoute(SentPath(r.URL))
	st.json = wantsJSON(r, route)
	if err != nil {
		return err
	}
	st.route, st.routed = route, true
	st.appID = route.AppID
	switch route.Kind {
	case KindGateway:
		if route.Path != PrometheusSDPath {
			return errorf(http.StatusNotFound, "no such page")
		}
	case KindNotFound, KindAuth:
		return errorf(http.StatusNotFound, "no such page")
	}
	id, ok, err := s.authn.Authenticate(r)
	if err != nil {
		return &httpError{Status: http.StatusInternalServerError, Msg: "could not check your sign-in; try again", Cause: fmt.Errorf("authenticating: %w", err)}
	}
	if !ok {
		s.authn.Challenge(w, r)
		return nil
	}
	st.ident = id
	st.user = id.User
	switch route.Kind {
	case KindIndex:
		return s.serveIndex(w, r, st)
	case KindAPIList:
		return s.serveAPIList(w, r, st)
	case KindHistoryAlias:
		return s.serveHistoryAlias(w, r, st)
	case KindHistory:
		return s.serveHistory(w, r, st)
	case KindApp, KindProxy:
		return s.serveApp(w, r, st)
	case KindAPIApp:
		return s.serveAPIApp(w, r, st)
	case KindByName:
		return s.serveByName(w, r, st)
	case KindGateway:
		return s.servePrometheusSD(w, r, st)
	case KindMaster:
		return s.serveMaster(w, r, st)
	}
	return errorf(http.StatusNotFound, "no such page")
}

// guard applies the kill guard to the upstream path. It reports whether
// the request has been dealt with (refused, or taken over by the kill
// confirmation flow).
func (s *Server) guardRequest(w http.ResponseWriter, r *http.Request, st *reqState) (bool, error) {
	blocked, reason := s.guard.Check(r.Method, st.route.Path)
	if !blocked {
		return false, nil
	}
	kind, isKill := KillTarget(st.route.Path)
	if isKill && s.cfg.Kill == KillModifyACL && (st.route.Kind == KindApp || st.route.Kind == KindProxy) {
		return true, s.serveKillConfirm(w, r, st, kind)
	}
	s.metrics.observeKillRefused(reason)
	if reason == ReasonMethod {
		return true, &httpError{Status: http.StatusMethodNotAllowed, Msg: "only GET and HEAD go through sparkgate", Allow: "GET, HEAD", AppID: st.route.AppID}
	}
	msg := "kill controls are disabled by sparkgate"
	if reason != ReasonStateChanging {
		msg = reason
	}
	return true, &httpError{Status: http.StatusForbidden, Title: "Disabled by sparkgate", Msg: msg, AppID: st.route.AppID}
}

// authorize asks the Authorizer, logs the decision to the audit log and
// turns a denial into a 403 that explains itself.
func (s *Server) authorize(st *reqState, app *discovery.App, hist *discovery.HistoryRef, action Action) error {
	v := s.authz.Authorize(st.ident, app, hist, action)
	s.auditDecision(st, app, hist, action, v, "request")
	s.metrics.observeDecision(action, v.Allow)
	if v.Allow {
		return nil
	}
	if v.Pending {
		if s.wantACLs != nil {
			s.wantACLs(app.ID)
		}
		// Whether the app is live or finished, and where its lists are
		// read from, is not said: the user may be one it keeps out.
		return &httpError{
			Status: http.StatusServiceUnavailable,
			Title:  "Access lists not read yet",
			Msg: fmt.Sprintf("sparkgate has not yet read the access lists of application %s, so it cannot tell whether %s may %s it; this page reloads itself",
				app.ID, st.ident.User, action),
			AppID:      app.ID,
			RetryAfter: 2,
		}
	}
	if action == View && !s.cfg.RevealDenied {
		// The same answer as for an id that names nothing.
		return notFoundApp(app.ID)
	}
	return &httpError{
		Status: http.StatusForbidden,
		Title:  "Access denied",
		// The name is not shown: a user who may not view the app may not
		// learn what it is either.
		Msg:     fmt.Sprintf("%s may not %s application %s", st.ident.User, action, app.ID),
		AppID:   app.ID,
		Reasons: v.Reasons,
		Grant:   v.Grant,
		Ask:     v.Ask,
		User:    st.ident.User,
		Groups:  st.ident.Groups,
	}
}

func (s *Server) auditDecision(st *reqState, app *discovery.App, hist *discovery.HistoryRef, action Action, v Verdict, what string) {
	lvl := zap.InfoLevel
	if what != "request" {
		// Listing filters judge every app on every index view: keep them
		// out of the audit log unless asked for.
		lvl = zap.DebugLevel
	}
	ce := s.audit.Check(lvl, "authorization")
	if ce == nil {
		return
	}
	server := ""
	if hist != nil {
		server = hist.Server
	}
	ce.Write(
		zap.String("request_id", st.requestID),
		zap.String("user", st.ident.User),
		zap.Strings("groups", st.ident.Groups),
		zap.String("app_id", app.ID),
		zap.String("history_server", server),
		zap.String("action", action.String()),
		zap.Bool("allow", v.Allow),
		zap.Strings("reason", v.Reasons),
		zap.String("for", what),
	)
}

// historyFor picks the configured History Server that has the app (the
// one with attempt, if given); nil if none does.
func (s *Server) historyFor(app *discovery.App, attempt string) *discovery.HistoryRef {
	var first *discovery.HistoryRef
	for i := range app.History {
		ref := &app.History[i]
		if _, ok := s.hs[ref.Server]; !ok {
			continue
		}
		if attempt == "" {
			return ref
		}
		for _, a := range ref.Attempts {
			if a == attempt {
				return ref
			}
		}
		if first == nil {
			first = ref
		}
	}
	return first
}

// redirect answers 302 to a gateway path, keeping the request's query.
func redirect(w http.ResponseWriter, r *http.Request, path string) {
	if r.URL.RawQuery != "" {
		path += "?" + r.URL.RawQuery
	}
	w.Header().Set("Location", path)
	w.WriteHeader(http.StatusFound)
}

// wantsJSON says whether errors should be JSON: REST paths, or a client
// that asks for JSON and not HTML.
func wantsJSON(r *http.Request, route Route) bool {
	if route.Kind == KindAPIList || route.Kind == KindAPIApp ||
		strings.HasPrefix(route.Path, "/api/") || strings.HasPrefix(r.URL.Path, "/api/") {
		return true
	}
	acc := r.Header.Get("Accept")
	return strings.Contains(acc, "application/json") && !strings.Contains(acc, "text/html")
}
