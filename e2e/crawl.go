//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"golang.org/x/net/html"
)

// CrawlOptions bounds and scopes a crawl.
type CrawlOptions struct {
	// MaxPages bounds the number of fetches (default 600).
	MaxPages int
	// MaxPerPath bounds fetches of one path with different queries (sort and
	// paging links multiply otherwise); default 15.
	MaxPerPath int
	// Scope lists path parts ("/app/<id>/", "/history/<id>/"): HTML of a
	// path containing one of them is parsed for more links; other
	// same-origin URLs are fetched (checked) but not followed further.
	Scope []string
	// Skip names URLs never fetched (e.g. /oauth2/logout).
	Skip func(u *url.URL) bool
	// Needles are strings (driver host:port spellings) that must not appear
	// in any body or Location header.
	Needles []string
	// Allow lists other origins links may lead to without being a leak
	// (an app host's links back to the gateway's main origin); they are
	// not fetched.
	Allow []string
}

// Link is one problem the crawler found.
type Link struct {
	URL    string
	From   string
	Status int
	Why    string
}

func (l Link) String() string {
	return fmt.Sprintf("%s (status %d, from %s): %s", l.URL, l.Status, l.From, l.Why)
}

// CrawlReport is what a crawl found.
type CrawlReport struct {
	Pages     int
	Truncated bool
	Broken    []Link // status >= 400 not allowed, or transport errors
	Leaks     []Link // links or redirects leaving the origin, or naming a needle
	KillLinks []Link // links to kill endpoints (never fetched)
	Offsite   []Link // links to other origins (not fetched)
	Visited   []string
	// Compressed counts the answers that came gzip-encoded (the client
	// asks for gzip and decodes, as Go's transport does by default).
	Compressed int
}

// Crawl walks same-origin links breadth-first from start. client must not
// follow redirects itself (the crawler checks every Location); use
// NoRedirectClient.
func Crawl(ctx context.Context, client *http.Client, start string, opt CrawlOptions) (*CrawlReport, error) {
	if opt.MaxPages == 0 {
		opt.MaxPages = 600
	}
	if opt.MaxPerPath == 0 {
		opt.MaxPerPath = 15
	}
	su, err := url.Parse(start)
	if err != nil {
		return nil, fmt.Errorf("parsing start %q: %w", start, err)
	}
	origin := su.Scheme + "://" + su.Host
	rep := &CrawlReport{}
	type item struct{ u, from string }
	queue := []item{{start, ""}}
	seen := map[string]bool{start: true}
	perPath := map[string]int{}
	for len(queue) > 0 {
		if err := ctx.Err(); err != nil {
			return rep, fmt.Errorf("crawl: %w", err)
		}
		it := queue[0]
		queue = queue[1:]
		u, _ := url.Parse(it.u)
		if perPath[u.Path] >= opt.MaxPerPath {
			continue
		}
		if rep.Pages >= opt.MaxPages {
			rep.Truncated = true
			break
		}
		perPath[u.Path]++
		rep.Pages++
		rep.Visited = append(rep.Visited, it.u)
		links, status, err := fetchOne(ctx, client, u, it.from, origin, opt, rep)
		if err != nil {
			rep.Broken = append(rep.Broken, Link{URL: it.u, From: it.from, Why: err.Error()})
			continue
		}
		if status >= 400 {
			rep.Broken = append(rep.Broken, Link{URL: it.u, From: it.from, Status: status, Why: "error status"})
		}
		for _, l := range links {
			lu, err := u.Parse(l)
			if err != nil {
				rep.Broken = append(rep.Broken, Link{URL: l, From: it.u, Why: "unparsable link: " + err.Error()})
				continue
			}
			lu.Fragment = ""
			browserEscape(lu)
			switch lu.Scheme {
			case "http", "https":
			default:
				continue // javascript:, mailto:, data:
			}
			if lu.Scheme+"://"+lu.Host != origin {
				if slices.Contains(opt.Allow, lu.Scheme+"://"+lu.Host) {
					continue
				}
				if containsAny(lu.Host, opt.Needles) || strings.HasPrefix(lu.Host, "127.") || lu.Hostname() == "localhost" {
					rep.Leaks = append(rep.Leaks, Link{URL: lu.String(), From: it.u, Why: "link to another local origin"})
				} else {
					rep.Offsite = append(rep.Offsite, Link{URL: lu.String(), From: it.u, Why: "other origin"})
				}
				continue
			}
			if isKillPath(lu.Path) {
				rep.KillLinks = append(rep.KillLinks, Link{URL: lu.String(), From: it.u, Why: "kill endpoint"})
				continue
			}
			if opt.Skip != nil && opt.Skip(lu) {
				continue
			}
			k := lu.String()
			if !seen[k] {
				seen[k] = true
				queue = append(queue, item{k, it.u})
			}
		}
	}
	return rep, nil
}

// fetchOne GETs u, follows its redirects by hand (checking each Location),
// and returns the links of the final page when it is in scope.
func fetchOne(ctx context.Context, client *http.Client, u *url.URL, from, origin string, opt CrawlOptions, rep *CrawlReport) ([]string, int, error) {
	cur := u
	for hop := 0; ; hop++ {
		if hop > 10 {
			return nil, 0, fmt.Errorf("more than 10 redirects")
		}
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		req, err := http.NewRequestWithContext(rctx, http.MethodGet, cur.String(), nil)
		if err != nil {
			cancel()
			return nil, 0, fmt.Errorf("building request: %w", err)
		}
		resp, err := client.Do(req)
		if err != nil {
			cancel()
			return nil, 0, fmt.Errorf("GET %s: %w", cur, err)
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
		resp.Body.Close()
		cancel()
		if resp.Uncompressed {
			rep.Compressed++
		}
		if err != nil {
			return nil, resp.StatusCode, fmt.Errorf("reading %s: %w", cur, err)
		}
		// The index tells gateway admins where discovery looks (a master's
		// or a log's address, by design); every other page, and the index
		// of anyone else, must name no driver.
		adminIndex := cur.Path == "/" && bytes.Contains(body, []byte("shown to gateway admins only"))
		for _, n := range opt.Needles {
			if !adminIndex && bytes.Contains(body, []byte(n)) {
				rep.Leaks = append(rep.Leaks, Link{URL: cur.String(), From: from, Status: resp.StatusCode, Why: fmt.Sprintf("body names %s", n)})
			}
		}
		if resp.StatusCode >= 300 && resp.StatusCode < 400 {
			loc := resp.Header.Get("Location")
			if loc == "" {
				return nil, resp.StatusCode, fmt.Errorf("redirect without Location")
			}
			next, err := cur.Parse(loc)
			if err != nil {
				return nil, resp.StatusCode, fmt.Errorf("bad Location %q: %w", loc, err)
			}
			if next.Scheme+"://"+next.Host != origin || containsAny(loc, opt.Needles) {
				rep.Leaks = append(rep.Leaks, Link{URL: cur.String(), From: from, Status: resp.StatusCode, Why: "redirect leaves the origin: " + loc})
				return nil, resp.StatusCode, nil
			}
			if isKillPath(next.Path) {
				rep.KillLinks = append(rep.KillLinks, Link{URL: next.String(), From: cur.String(), Why: "redirect to kill endpoint"})
				return nil, resp.StatusCode, nil
			}
			cur = next
			continue
		}
		if resp.StatusCode >= 400 || !inScope(cur.Path, opt.Scope) {
			return nil, resp.StatusCode, nil
		}
		mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		if mt != "text/html" {
			return nil, resp.StatusCode, nil
		}
		return extractLinks(body), resp.StatusCode, nil
	}
}

// extractLinks returns every href, src and action attribute value (any tag,
// so <link rel=…> of every rel is included).
func extractLinks(body []byte) []string {
	var out []string
	z := html.NewTokenizer(bytes.NewReader(body))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return out
		case html.StartTagToken, html.SelfClosingTagToken:
			for {
				k, v, more := z.TagAttr()
				switch string(k) {
				case "href", "src", "action":
					if s := strings.TrimSpace(string(v)); s != "" && !strings.HasPrefix(s, "#") {
						out = append(out, s)
					}
				}
				if !more {
					break
				}
			}
		}
	}
}

// browserEscape percent-encodes what a browser encodes in a query before
// sending it: Spark renders sort links with a raw space
// ("activeJob.sort=Job Id"), which Go would send as is and Jetty refuses
// with 400, while every browser sends %20.
func browserEscape(u *url.URL) {
	u.RawQuery = queryEscaper.Replace(u.RawQuery)
}

var queryEscaper = strings.NewReplacer(" ", "%20", "\"", "%22", "<", "%3C", ">", "%3E", "`", "%60")

func inScope(path string, scope []string) bool {
	if len(scope) == 0 {
		return true
	}
	for _, p := range scope {
		if strings.Contains(path, p) {
			return true
		}
	}
	return false
}

// isKillPath reports whether path ends in a kill endpoint (/jobs/job/kill,
// /stages/stage/kill, /app/kill, /driver/kill, /workers/kill), with or
// without a trailing slash.
func isKillPath(path string) bool {
	p := strings.TrimSuffix(path, "/")
	return strings.HasSuffix(p, "/kill")
}

func containsAny(s string, needles []string) bool {
	for _, n := range needles {
		if n != "" && strings.Contains(s, n) {
			return true
		}
	}
	return false
}

// NoRedirectClient returns a client that hands redirects back to the caller,
// sharing jar (may be nil).
func NoRedirectClient(jar http.CookieJar) *http.Client {
	return &http.Client{
		Jar:     jar,
		Timeout: 60 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}
