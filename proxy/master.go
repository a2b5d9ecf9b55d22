package proxy

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"go.uber.org/zap"
)

// MasterConfig is one standalone master under the config's "masters:".
type MasterConfig struct {
	// Name is the master's path segment, /master/<name>/. Required;
	// ^[a-z0-9][a-z0-9-]{0,30}$.
	Name string `yaml:"name"`
	// URL is the master's web UI root, http(s)://host:port. Required.
	URL string `yaml:"url"`
	// Everyone lets every signed-in user see the master's pages. Default
	// false: gateway admins only (the pages list every app and its owner).
	Everyone bool `yaml:"everyone"`
}

// ValidateMasters reports every problem of the config's "masters:", each
// naming its key.
func ValidateMasters(ms []MasterConfig) []error {
	var errs []error
	seen := map[string]bool{}
	for i, m := range ms {
		key := fmt.Sprintf("masters[%d]", i)
		if !ValidServerName(m.Name) {
			errs = append(errs, fmt.Errorf("%s.name: %q must match ^[a-z0-9][a-z0-9-]{0,30}$", key, m.Name))
		} else if seen[m.Name] {
			errs = append(errs, fmt.Errorf("%s.name: %q is used twice", key, m.Name))
		}
		seen[m.Name] = true
		u, err := url.Parse(m.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") ||
			u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			shown := m.URL // never the password of a URL written with one
			if err == nil {
				shown = u.Redacted()
			}
			errs = append(errs, fmt.Errorf("%s.url: %q must be http(s)://host[:port]", key, shown))
		}
	}
	return errs
}

// masterTarget is a configured master as the proxy serves it.
type masterTarget struct {
	name     string
	base     *url.URL
	everyone bool
	prefix   string // "/master/<name>"
}

// serveMaster proxies a standalone master's web UI under /master/<name>/:
// for gateway admins (everyone with the master's "everyone"), GET and HEAD
// only, kill endpoints refused in every spelling, kill controls removed
// and every link rewritten to stay on the gateway (masterLinkReader).
func (s *Server) serveMaster(w http.ResponseWriter, r *http.Request, st *reqState) error {
	m := s.masters[st.route.Server]
	if m == nil {
		return errorf(http.StatusNotFound, "no such page")
	}
	if !m.everyone && (s.isAdmin == nil || !s.isAdmin(st.ident)) {
		s.auditMaster(st, m, false)
		return &httpError{Status: http.StatusForbidden, Title: "Access denied",
			Msg: fmt.Sprintf("only sparkgate's admins may see standalone master %s", m.name)}
	}
	if done, err := s.guardRequest(w, r, st); done {
		return err
	}
	if isDaemonLog(st.route.Path) {
		return &httpError{Status: http.StatusNotFound, Title: "Not served",
			Msg: "the master's own daemon log is not served through sparkgate"}
	}
	if isMasterProxy(st.route.Path) {
		// In reverse-proxy mode the master relays /proxy/<id>/ to any
		// active app's driver or worker: past the app's own ACLs.
		return &httpError{Status: http.StatusNotFound, Title: "Not served",
			Msg: "the master's reverse proxy to drivers and workers is not served through sparkgate: an app's pages are at /app/<appId>/, for those its ACLs let in"}
	}
	s.auditMaster(st, m, true)
	st.prefix, st.xfc, st.master = m.prefix, m.prefix, m
	s.proxy(w, r, st, m.base, "standalone master "+m.name)
	return nil
}

func (s *Server) auditMaster(st *reqState, m *masterTarget, allow bool) {
	if ce := s.audit.Check(zap.InfoLevel, "authorization"); ce != nil {
		ce.Write(zap.String("request_id", st.requestID), zap.String("user", st.ident.User),
			zap.Strings("groups", st.ident.Groups), zap.String("master", m.name),
			zap.String("action", "view"), zap.Bool("allow", allow), zap.Bool("everyone", m.everyone))
	}
}

// masterLinkReader rewrites the links of a master's page as they stream
// (after the kill stripper): the master's own paths go under its prefix
// (its 4.x pages hard-code "/" and "/environment/"), a driver's UI becomes
// the app's bookmark /app/<id>/, a worker's log page of an executor
// becomes the gateway's log of that executor, a History Server's page its
// /hs/<name>/ path; any other link (a worker's root, a host the gateway
// does not serve, javascript:) loses its address.
func (s *Server) masterLinkReader(resp *http.Response, m *masterTarget) io.ReadCloser {
	base, ok := requestWebURL(resp.Request.URL)
	apps := map[string]string{} // driver UI host:port → live app id
	for _, a := range s.reg.Load().Apps() {
		if a.Live() {
			k := strings.ToLower(a.UIURL.Host)
			if _, dup := apps[k]; dup {
				apps[k] = "" // two apps claim one address: link neither
				continue
			}
			apps[k] = a.ID
		}
	}
	hs := map[string]string{} // History Server host:port → name
	for name, u := range s.hs {
		hs[strings.ToLower(u.Host)] = name
	}
	return newLinkRewriter(resp.Body, func(v string) (string, bool) {
		if !ok {
			return "", false
		}
		return masterLink(v, &base, m.prefix, apps, hs)
	})
}

// masterLink maps one link of a master's page; see masterLinkReader.
func masterLink(v string, base *webURL, prefix string, apps, hs map[string]string) (string, bool) {
	u, ok := parseWebURL(v, base)
	if !ok {
		return "", false
	}
	if u.sameOrigin(base) {
		p := strings.TrimPrefix(u.Path, prefix)
		if isDaemonLog(p) {
			return "", false
		}
		if isMasterProxy(p) {
			return masterProxyLink(u, p)
		}
		return rewriteLocation(v, base, prefix)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", false
	}
	hostPort := u.Host
	if u.Port != "" {
		hostPort += ":" + u.Port
	}
	if u.Path == "/logPage/" || u.Path == "/logPage" {
		q, err := url.ParseQuery(u.Query)
		app, exec, typ := q.Get("appId"), q.Get("executorId"), q.Get("logType")
		if err == nil && ValidAppID(app) && validExecutorID(exec) && (typ == "stdout" || typ == "stderr") {
			return execLogLinks{appID: app}.link(exec, typ), true
		}
		return "", false
	}
	if id := apps[hostPort]; id != "" {
		return rewriteLocation(v, &webURL{Scheme: u.Scheme, Host: u.Host, Port: u.Port}, "/app/"+id)
	}
	if name, ok := hs[hostPort]; ok {
		return rewriteLocation(v, &webURL{Scheme: u.Scheme, Host: u.Host, Port: u.Port}, "/hs/"+name)
	}
	return "", false
}

// isMasterProxy reports whether a master path is under its reverse proxy
// (spark.ui.reverseProxy): /proxy/<app or worker id>/….
func isMasterProxy(p string) bool {
	return p == "/proxy" || strings.HasPrefix(p, "/proxy/")
}

// masterProxyLink maps a link of the master's reverse proxy, p: an app's
// (/proxy/<appId>/…) becomes the same page at the app's bookmark, which
// checks the app's ACLs; a worker's loses its address.
func masterProxyLink(u webURL, p string) (string, bool) {
	id, tail, _ := strings.Cut(strings.TrimPrefix(p, "/proxy/"), "/")
	if !ValidAppID(id) || strings.HasPrefix(id, "worker-") {
		return "", false
	}
	link := "/app/" + id + "/" + tail
	if u.HasQuery {
		link += "?" + u.Query
	}
	if u.HasFragment {
		link += "#" + u.Fragment
	}
	return link, true
}

// isDaemonLog reports whether a master path is its daemon log (4.x
// LogPage "/logPage/?self", "/log?self"), which names the hosts, ports and
// paths of the machine and every worker and driver it met: not served.
func isDaemonLog(p string) bool {
	return p == "/logPage" || strings.HasPrefix(p, "/logPage/") || p == "/log" || strings.HasPrefix(p, "/log/")
}
