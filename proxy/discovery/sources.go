package discovery

import (
	"context"
	"fmt"
	"net/url"
	"strings"
)

// candidate is a URL that may be a driver UI. Nothing about it is trusted
// until the UI itself answers /api/v1/applications.
type candidate struct {
	url    *url.URL
	source string // for App.Source and logs
	// yarn marks RM web-proxy URLs, whose apps link under /proxy/<appId>
	// even if the environment does not say so.
	yarn bool
	// appID is the id the source itself gives the app at this URL (the
	// ResourceManager's, the pod's spark-app-selector label, the master's
	// list, the log's app-id line), "" when it names none. The driver must
	// report exactly this id, or the candidate is refused.
	appID string
}

func (c candidate) key() string { return c.url.String() }

// pollSource lists candidates once per interval.
type pollSource interface {
	// name identifies the source in logs.
	name() string
	// candidates lists what the source sees now; an error means the source
	// could not be read this time.
	candidates(ctx context.Context) ([]candidate, error)
}

// pushSource is a poll source that also reports changes as they happen
// (the Kubernetes watch).
type pushSource interface {
	pollSource
	// run pushes changes until ctx is done.
	run(ctx context.Context, push func(pushed))
}

// pushed is one change from a pushSource: a candidate to verify now, a
// candidate that is gone (its app ends now), or, with no candidate, news
// for the published snapshot (a SparkApplication's state).
type pushed struct {
	c      candidate
	gone   bool
	reason string
}

var _ pushSource = (*kubeSource)(nil)

var (
	_ pollSource = staticSource(nil)
	_ pollSource = (*probeSource)(nil)
	_ pollSource = (*masterSource)(nil)
	_ pollSource = (*kubeSource)(nil)
	_ pollSource = (*yarnSource)(nil)
)

// staticSource is the configured list of UI URLs.
type staticSource []*url.URL

func (s staticSource) name() string { return "static" }

func (s staticSource) candidates(context.Context) ([]candidate, error) {
	out := make([]candidate, len(s))
	for i, u := range s {
		out[i] = candidate{url: u, source: "static"}
	}
	return out, nil
}

// parseCandidateURL parses a URL found by a source (log line, master page,
// RM answer) as a UI root: http(s), a host, no credentials, query or
// fragment, no trailing slash.
func parseCandidateURL(s string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil {
		return nil, fmt.Errorf("parsing UI URL: %w", err)
	}
	u.RawQuery, u.Fragment, u.ForceQuery = "", "", false
	if err := checkRootURL(u.String()); err != nil {
		return nil, err
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	return u, nil
}
