package proxy

import "strings"

// Kind says which part of the gateway a request path belongs to.
type Kind int

// The kinds of path ParseRoute knows.
const (
	// KindIndex is "/".
	KindIndex Kind = iota
	// KindGateway is the gateway's own: "/_/...", "/favicon.ico".
	KindGateway
	// KindAuth is "/oauth2/...".
	KindAuth
	// KindApp is "/app/<appId>/...": a live driver, X-Forwarded-Context style.
	KindApp
	// KindProxy is "/proxy/<appId>/...": a live driver launched with spark.ui.proxyBase.
	KindProxy
	// KindHistory is "/hs/<name>/...": a History Server.
	KindHistory
	// KindHistoryAlias is "/history/<appId>[/<attempt>]/...", to be redirected under /hs/<name>.
	KindHistoryAlias
	// KindAPIList is "/api/v1/applications": the gateway's merged list.
	KindAPIList
	// KindAPIApp is "/api/v1/applications/<appId>[/...]": one app's REST.
	KindAPIApp
	// KindNotFound is any other path.
	KindNotFound
	// KindByName is "/by-name/<app name>[/...]": the newest app of that name.
	KindByName
	// KindMaster is "/master/<name>/...": a configured standalone master's
	// web UI.
	KindMaster
)

var kindNames = [...]string{"index", "gateway", "auth", "app", "proxy", "history", "history-alias", "api-list", "api-app", "not-found", "by-name", "master"}

// String names the kind for logs and metrics.
func (k Kind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(?)"
}

// Route is what ParseRoute made of a request path.
type Route struct {
	Kind    Kind
	AppID   string // "" when the path names no app
	Attempt string // attempt id when the path names one
	Server  string // history server name for KindHistory
	Name    string // application name for KindByName
	// Prefix is the public prefix the upstream path is under, e.g.
	// "/app/local-1700000000000"; it is what X-Forwarded-Context carries.
	// It is "" for kinds that are not proxied under a prefix (KindIndex,
	// KindGateway, KindAuth, KindHistoryAlias, KindAPIList, KindAPIApp,
	// KindNotFound).
	Prefix string
	// Path is the canonical upstream path, always starting with "/", e.g.
	// "/jobs/job/". For kinds without a prefix it is the whole canonical
	// request path (for KindAPIApp "/api/v1/applications/<id>/...", for
	// KindHistoryAlias "/history/<id>/...", to be appended to "/hs/<name>").
	Path string
}

// ParseRoute canonicalises an escaped request path (SentPath(r.URL))
// with CanonicalPath and classifies it. It returns a *RequestError for an
// ambiguous path or a malformed app id, attempt id or server name.
//
// "/app/<id>" and "/app/<id>/" both give Path "/" (likewise for /proxy and
// /hs); the server may redirect the former to the latter so that relative
// links resolve.
//
// Inside a History Server only the paths a Spark history UI needs are
// routed: "/" and "/api/v1/applications" (app lists: the server must filter
// them), "/static/...", "/api/v1/version", and per-app
// "/history/<id>[/<attempt>]/..." and "/api/v1/applications/<id>[/...]".
// Anything else there (daemon logs, environment, metrics) is KindNotFound.
func ParseRoute(escapedPath string) (Route, error) {
	p, err := CanonicalPath(escapedPath)
	if err != nil {
		return Route{}, err
	}
	if p == "/" {
		return Route{Kind: KindIndex, Path: p}, nil
	}
	first, rest := splitFirst(p)
	switch first {
	case "_", "favicon.ico":
		if first == "favicon.ico" && rest != "" {
			break
		}
		return Route{Kind: KindGateway, Path: p}, nil
	case "oauth2":
		return Route{Kind: KindAuth, Path: p}, nil
	case "app", "proxy":
		id, tail, ok := cutSegment(rest)
		if !ok {
			break
		}
		if !ValidAppID(id) {
			return Route{}, badRequest("invalid application id")
		}
		k := KindApp
		if first == "proxy" {
			k = KindProxy
		}
		// p starts with "/<first>/<id>": slice it rather than build it.
		return Route{Kind: k, AppID: id, Prefix: p[:2+len(first)+len(id)], Path: tail}, nil
	case "hs":
		return parseHistoryServer(p, rest)
	case "master":
		// Server holds the master's configured name.
		if name, tail, ok := cutSegment(rest); ok {
			if !ValidServerName(name) {
				return Route{}, badRequest("invalid master name")
			}
			return Route{Kind: KindMaster, Server: name, Prefix: p[:len("/master/")+len(name)], Path: tail}, nil
		}
	case "by-name":
		// The name is one decoded segment (names with "/" have no by-name
		// link); Path is what follows it, "/" at least.
		if name, tail, ok := cutSegment(rest); ok {
			return Route{Kind: KindByName, Name: name, Path: tail}, nil
		}
	case "history":
		id, tail, ok := cutSegment(rest)
		if !ok {
			break
		}
		if !ValidAppID(id) {
			return Route{}, badRequest("invalid application id")
		}
		r := Route{Kind: KindHistoryAlias, AppID: id, Path: p}
		if att, _, ok := cutSegment(tail); ok && ValidAttemptID(att) {
			r.Attempt = att
		}
		return r, nil
	case "api":
		if rest == "/v1/applications" || rest == "/v1/applications/" {
			return Route{Kind: KindAPIList, Path: p}, nil
		}
		if strings.HasPrefix(rest, "/v1/applications/") {
			id, after, _ := cutSegment(rest[len("/v1/applications"):])
			if !ValidAppID(id) {
				return Route{}, badRequest("invalid application id")
			}
			r := Route{Kind: KindAPIApp, AppID: id, Path: p}
			if att, _, ok := cutSegment(after); ok && ValidAttemptID(att) {
				r.Attempt = att
			}
			return r, nil
		}
	}
	return Route{Kind: KindNotFound, Path: p}, nil
}

// parseHistoryServer classifies the canonical path p = "/hs" + rest.
func parseHistoryServer(p, rest string) (Route, error) {
	name, tail, ok := cutSegment(rest)
	if !ok {
		return Route{Kind: KindNotFound, Path: p}, nil
	}
	if !ValidServerName(name) {
		return Route{}, badRequest("invalid history server name")
	}
	r := Route{Kind: KindHistory, Server: name, Prefix: p[:len("/hs/")+len(name)], Path: tail}
	switch {
	case tail == "/", tail == "/api/v1/applications", tail == "/api/v1/applications/",
		tail == "/api/v1/version", strings.HasPrefix(tail, "/static/"):
		return r, nil
	}
	var after string
	switch {
	case strings.HasPrefix(tail, "/history/"):
		after = tail[len("/history"):]
	case strings.HasPrefix(tail, "/api/v1/applications/"):
		after = tail[len("/api/v1/applications"):]
	default:
		return Route{Kind: KindNotFound, Path: p}, nil
	}
	id, after, ok := cutSegment(after)
	if !ok {
		return Route{Kind: KindNotFound, Path: p}, nil
	}
	if !ValidAppID(id) {
		return Route{}, badRequest("invalid application id")
	}
	r.AppID = id
	if att, _, ok := cutSegment(after); ok && ValidAttemptID(att) {
		r.Attempt = att
	}
	return r, nil
}

// splitFirst splits "/a/b/c" into "a" and "/b/c"; "/a" into "a" and "".
func splitFirst(p string) (string, string) {
	seg, _, found := strings.Cut(p[1:], "/")
	if !found {
		return seg, ""
	}
	return seg, p[1+len(seg):]
}

// cutSegment takes the first segment of rest ("/<seg>[/...]"): it returns
// the segment, the remaining upstream path (always starting with "/") and
// whether there was a non-empty segment.
func cutSegment(rest string) (seg, tail string, ok bool) {
	if rest == "" || rest == "/" {
		return "", "/", false
	}
	seg, _, found := strings.Cut(rest[1:], "/")
	if !found {
		return seg, "/", seg != ""
	}
	return seg, rest[1+len(seg):], seg != ""
}

// ValidAppID reports whether s has the shape of a Spark application id.
// The known forms (local-<ms>, app-<yyyyMMddHHmmss>-<nnnn>,
// application_<ts>_<n>, spark-<32 hex>, spark-application-<ms>) are all
// instances of the general form accepted here: [A-Za-z0-9][A-Za-z0-9_.-]{0,127}
// without "..". The words "proxy" and "history" (any case) are refused
// because Spark's JavaScript treats path segments with those names as
// markers and would then take the wrong segment as the app id.
func ValidAppID(s string) bool {
	if len(s) == 0 || len(s) > 128 || !isAlnum(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !isAlnum(c) && c != '_' && c != '.' && c != '-' {
			return false
		}
	}
	if strings.Contains(s, "..") || strings.EqualFold(s, "proxy") || strings.EqualFold(s, "history") {
		return false
	}
	return true
}

// ValidAttemptID reports whether s is a Spark attempt id. Only YARN sets
// attempt ids and they are decimal ("1", "2"); Spark's JavaScript also
// treats only a numeric segment after the app id as an attempt.
func ValidAttemptID(s string) bool {
	if len(s) == 0 || len(s) > 9 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// ValidServerName reports whether s may name a History Server:
// ^[a-z0-9][a-z0-9-]{0,30}$, except "proxy" and "history", which Spark's
// JavaScript would take for its own markers in /hs/<name>/history/<id>/.
func ValidServerName(s string) bool {
	if len(s) == 0 || len(s) > 31 || s == "proxy" || s == "history" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' && i > 0) {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}
