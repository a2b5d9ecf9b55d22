package discovery

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"golang.org/x/net/html"
)

const masterPageMax = 4 << 20

// masterSource reads a standalone master: /json lists active app ids but
// no UI URL (JsonProtocol.writeApplicationInfo has none), so the URL is
// taken from the "Application Detail UI" link on /app/?appId=<id>.
type masterSource struct {
	base *url.URL
	c    *client
	// uis caches the UI URL per active app id; entries leave with the app.
	uis map[string]*url.URL
}

func newMasterSource(base *url.URL, c *client) *masterSource {
	return &masterSource{base: base, c: c, uis: map[string]*url.URL{}}
}

func (m *masterSource) name() string { return "master:" + m.base.String() }

func (m *masterSource) candidates(ctx context.Context) ([]candidate, error) {
	var state struct {
		ActiveApps []struct {
			ID string `json:"id"`
		} `json:"activeapps"`
	}
	// "json/", not "json": MasterPage's JSON is a servlet context at /json,
	// and Jetty redirects the bare context path to the slash form.
	if err := m.c.getListJSON(ctx, m.base, "json/", &state); err != nil {
		return nil, fmt.Errorf("reading master %s: %w", m.base.Redacted(), err)
	}
	active := map[string]bool{}
	var out []candidate
	var firstErr error
	for _, a := range state.ActiveApps {
		if !validAppIDHint(a.ID) {
			continue
		}
		active[a.ID] = true
		ui := m.uis[a.ID]
		if ui == nil {
			var err error
			ui, err = m.appUI(ctx, a.ID)
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				continue
			}
			m.uis[a.ID] = ui
		}
		out = append(out, candidate{url: ui, source: m.name(), appID: a.ID})
	}
	for id := range m.uis {
		if !active[id] {
			delete(m.uis, id)
		}
	}
	if firstErr != nil {
		// Only apps never resolved are missing: an app found before has
		// its UI cached (m.uis) while the master lists it.
		return out, partialListError{firstErr}
	}
	return out, nil
}

// partialListError is a source's answer that lists every app it named
// before, missing only some it never could (an app page with no UI link):
// enough to tell which of those it no longer lists (endUnlisted).
type partialListError struct{ error }

func (e partialListError) Unwrap() error { return e.error }

// appUI fetches the master's app page and returns the UI link.
func (m *masterSource) appUI(ctx context.Context, id string) (*url.URL, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	page := m.base.JoinPath("app/")
	page.RawQuery = url.Values{"appId": {id}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, page.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("building request: %w", err)
	}
	resp, err := m.c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching %s: %w", page.Redacted(), err)
	}
	defer func() { _ = resp.Body.Close() }() // read-only body; a close error loses nothing
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetching %s: status %d", page.Redacted(), resp.StatusCode)
	}
	href, err := detailUILink(io.LimitReader(resp.Body, masterPageMax))
	if err != nil {
		return nil, fmt.Errorf("app page %s: %w", page.Redacted(), err)
	}
	// In reverse-proxy mode the link is relative (/proxy/<id>/) to the master.
	ref, err := url.Parse(href)
	if err != nil {
		return nil, fmt.Errorf("app page %s: link %q: %w", page.Redacted(), href, err)
	}
	return rootURL(m.base.ResolveReference(ref))
}

// detailUILink finds <a href=…>Application Detail UI</a> (ApplicationPage
// in 3.5 and 4.0) in a master's app page.
func detailUILink(r io.Reader) (string, error) {
	z := html.NewTokenizer(r)
	var href string
	inA := false
	var text strings.Builder
	for {
		switch z.Next() {
		case html.ErrorToken:
			if errors.Is(z.Err(), io.EOF) {
				return "", fmt.Errorf("no Application Detail UI link (UI disabled or app finished)")
			}
			return "", fmt.Errorf("parsing html: %w", z.Err())
		case html.StartTagToken:
			name, hasAttr := z.TagName()
			if string(name) != "a" {
				continue
			}
			inA, href = true, ""
			text.Reset()
			for hasAttr {
				var k, v []byte
				k, v, hasAttr = z.TagAttr()
				if string(k) == "href" {
					href = string(v)
				}
			}
		case html.TextToken:
			if inA && text.Len() < 200 {
				text.Write(z.Text())
			}
		case html.EndTagToken:
			if name, _ := z.TagName(); string(name) == "a" && inA {
				inA = false
				if strings.TrimSpace(text.String()) == "Application Detail UI" && href != "" {
					return href, nil
				}
			}
		}
	}
}
