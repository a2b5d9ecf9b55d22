package discovery

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"
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
	// yarnName and yarnQueue are the ResourceManager's application name
	// and queue of a yarn candidate, yarnUser the user it admitted the app
	// as (authenticated, on a secure cluster): the driver must report
	// that user, its own claim being anyone's (SPARK_USER).
	yarnName, yarnQueue, yarnUser string
	// seen is when the source began the read that found it (zero: when
	// offered): an offer vouches for what was there then, not later.
	seen time.Time
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

// rootURL is the one check of every URL discovery dials: the configured
// roots (History Servers, masters, ResourceManagers, static UIs, the
// Kubernetes API server) and every candidate a source finds (log lines,
// master pages, RM answers, probes, pods). It accepts an absolute http(s)
// URL with a host and no credentials, query or fragment, and returns a copy
// without trailing slashes, ready for JoinPath. A candidate is carried as
// this *url.URL from its source to the registry (App.UIURL).
func rootURL(u *url.URL) (*url.URL, error) {
	s := u.Redacted()
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("%q: scheme must be http or https", s)
	case u.Opaque != "" || u.Host == "" || u.Hostname() == "":
		return nil, fmt.Errorf("%q has no host", s)
	case u.User != nil:
		return nil, fmt.Errorf("%q must not carry credentials", s)
	case u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return nil, fmt.Errorf("%q must not have a query or fragment", s)
	}
	c := *u
	c.Path = strings.TrimRight(c.Path, "/")
	c.RawPath = ""
	return &c, nil
}

// parseRootURL parses s, surrounding spaces ignored, and checks it with
// rootURL.
func parseRootURL(s string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil {
		return nil, fmt.Errorf("%q is not a URL: %w", s, err)
	}
	return rootURL(u)
}
