package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// workerListTTL is how long the workers the masters listed are trusted
// without asking again; a log link naming a worker not in the list asks
// again once workerListMinAge has passed (a worker that has just joined).
const (
	workerListTTL    = 30 * time.Second
	workerListMinAge = 2 * time.Second
	masterJSONMax    = 8 << 20
	masterCallLimit  = 5 * time.Second
)

// workerSet knows the web UI addresses of the workers that the configured
// standalone masters list. An executor's log is fetched only from one of
// them: the address comes from the app's own REST answer, which is the
// driver's claim, and a claim must not be able to point the gateway at any
// other host.
type workerSet struct {
	masters []*url.URL
	client  *http.Client
	// list reads one master's (or ResourceManager's) list of addresses;
	// readMaster by default.
	list func(ctx context.Context, base *url.URL) ([]string, error)

	mu    sync.Mutex
	at    time.Time
	addrs map[string]bool // "scheme://host:port", lower case
	err   error
}

func newWorkerSet(masters []*url.URL, tr http.RoundTripper) *workerSet {
	ws := &workerSet{masters: masters, client: &http.Client{
		Transport: tr,
		// The master's /json answers directly; a redirect is not followed
		// anywhere.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
	ws.list = ws.readMaster
	return ws
}

// newNodeSet is a workerSet of the NodeManagers that YARN
// ResourceManagers list (/ws/v1/cluster/nodes).
func newNodeSet(rms []*url.URL, tr http.RoundTripper) *workerSet {
	ns := newWorkerSet(rms, tr)
	ns.list = ns.readRM
	return ns
}

// workerKey is how a worker's or NodeManager's web address is compared:
// host:port (the scheme of the claim is the one dialled).
func workerKey(u *url.URL) string {
	return strings.ToLower(u.Host)
}

// has reports whether u's scheme and host:port are a worker's web UI that
// a configured master lists. It re-reads the masters when the list is
// stale, or when u is not in it and the list is older than
// workerListMinAge.
func (ws *workerSet) has(ctx context.Context, u *url.URL, now time.Time) (bool, error) {
	if len(ws.masters) == 0 {
		return false, nil
	}
	k := workerKey(u)
	ws.mu.Lock()
	defer ws.mu.Unlock()
	age := now.Sub(ws.at)
	if ws.addrs != nil && age < workerListTTL && (ws.addrs[k] || age < workerListMinAge) {
		return ws.addrs[k], nil
	}
	if ws.addrs == nil && ws.err != nil && age < workerListMinAge {
		return false, ws.err
	}
	addrs, err := ws.read(ctx)
	ws.at = now
	if err != nil && len(addrs) == 0 {
		ws.err = err
		if ws.addrs == nil {
			return false, err
		}
		// Keep the last good list for a master that is down for a moment.
		return ws.addrs[k], nil
	}
	ws.addrs, ws.err = addrs, nil
	return addrs[k], nil
}

// read asks every master's /json for its workers.
func (ws *workerSet) read(ctx context.Context) (map[string]bool, error) {
	out := map[string]bool{}
	var firstErr error
	for _, m := range ws.masters {
		ws1, err := ws.list(ctx, m)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		for _, a := range ws1 {
			out[a] = true
		}
	}
	return out, firstErr
}

func (ws *workerSet) readMaster(ctx context.Context, m *url.URL) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, masterCallLimit)
	defer cancel()
	// "json/": Jetty redirects the bare context path to the slash form.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.JoinPath("json/").String(), nil) //nolint:gosec // G704: a configured master
	if err != nil {
		return nil, fmt.Errorf("building request to master %s: %w", m.Redacted(), err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := ws.client.Do(req) //nolint:gosec // G704: a configured master or ResourceManager
	if err != nil {
		return nil, fmt.Errorf("reading master %s: %w", m.Redacted(), err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("reading master %s: %s", m.Redacted(), resp.Status)
	}
	var st struct {
		Workers []struct {
			WebUIAddress string `json:"webuiaddress"`
		} `json:"workers"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, masterJSONMax)).Decode(&st); err != nil {
		return nil, fmt.Errorf("decoding master %s: %w", m.Redacted(), err)
	}
	var out []string
	for _, w := range st.Workers {
		u, err := url.Parse(w.WebUIAddress)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			continue
		}
		out = append(out, workerKey(u))
	}
	return out, nil
}

// readRM asks a ResourceManager for its NodeManagers' web addresses.
func (ws *workerSet) readRM(ctx context.Context, rm *url.URL) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, masterCallLimit)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rm.JoinPath("ws/v1/cluster/nodes").String(), nil) //nolint:gosec // G704: a configured ResourceManager
	if err != nil {
		return nil, fmt.Errorf("building request to ResourceManager %s: %w", rm.Redacted(), err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := ws.client.Do(req) //nolint:gosec // G704: a configured master or ResourceManager
	if err != nil {
		return nil, fmt.Errorf("reading ResourceManager %s: %w", rm.Redacted(), err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("reading ResourceManager %s nodes: %s", rm.Redacted(), resp.Status)
	}
	var st struct {
		Nodes struct {
			Node []struct {
				HTTPAddress string `json:"nodeHTTPAddress"`
			} `json:"node"`
		} `json:"nodes"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, masterJSONMax)).Decode(&st); err != nil {
		return nil, fmt.Errorf("decoding ResourceManager %s nodes: %w", rm.Redacted(), err)
	}
	var out []string
	for _, n := range st.Nodes.Node {
		if n.HTTPAddress != "" {
			out = append(out, strings.ToLower(n.HTTPAddress))
		}
	}
	return out, nil
}
