package proxy

import (
	"context"
	"errors"
	"fmt"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/sparkgate/sparkgate/proxy/diagnosis"
	"github.com/sparkgate/sparkgate/proxy/discovery"
)

// A finished app's index badges come from its History Server, which must
// load the app's event log to answer anything about it: reading them on
// an index view would load every listed app's. Discovery has the server
// load each completed attempt once anyway, to read its ACLs; right after
// that read it calls VisitFinished (discovery.HistoryVisit), which reads
// the attempt's summary as a live row's (the four lists and the task
// summaries of diagnosis.index_stage_summaries stages) and keeps it. An
// index view only looks the summaries up.

// maxFinishedSummaries bounds the summaries kept (a few hundred bytes
// each); past it the least recently shown go, and their rows show no
// badge.
const maxFinishedSummaries = 20000

// finishedSummaries holds the summaries of completed attempts by History
// Server, app id and attempt. A completed attempt does not change: they
// never expire.
type finishedSummaries struct {
	cache *lru.Cache[string, diagnosis.Summary]
}

func newFinishedSummaries() *finishedSummaries {
	c, err := lru.New[string, diagnosis.Summary](maxFinishedSummaries)
	if err != nil {
		panic(err) // only for a size below 1
	}
	return &finishedSummaries{cache: c}
}

func finishedKey(server, appID, attempt string) string {
	return server + "\x00" + appID + "\x00" + attempt
}

var _ discovery.HistoryVisit = (*Server)(nil).VisitFinished

// VisitFinished reads and keeps the index summary of a completed attempt
// that History Server server has just loaded (a discovery.HistoryVisit).
// It asks nothing for an attempt it already has or a server it does not
// proxy to.
func (s *Server) VisitFinished(ctx context.Context, server, appID, attempt string) error {
	base, ok := s.hs[server]
	if !ok {
		return nil
	}
	key := finishedKey(server, appID, attempt)
	if s.finished.cache.Contains(key) {
		return nil
	}
	rest := "/api/v1/applications/" + appID
	if attempt != "" {
		rest += "/" + attempt
	}
	src := diagSource{base: base, rest: rest, label: "History Server " + server}
	ctx, cancel := context.WithTimeout(ctx, s.diag.cfg.FetchTimeout)
	defer cancel()
	res, err := s.diag.compute(ctx, appID, src, false)
	s.metrics.observeFinishedSummary(err == nil)
	if errors.Is(err, errDiagBusy) {
		return fmt.Errorf("summarizing %s for the index: %w: %w", appID, discovery.ErrVisitSoon, err)
	}
	if err != nil {
		return fmt.Errorf("summarizing %s for the index: %w", appID, err)
	}
	s.finished.cache.Add(key, res.summary)
	return nil
}

// finishedStats is the index row's badges of a finished app as shown by
// History Server ref, nil until its summary has been read.
func (s *Server) finishedStats(appID string, ref *discovery.HistoryRef) *indexStats {
	if ref == nil || !ref.Completed {
		return nil
	}
	sum, ok := s.finished.cache.Get(finishedKey(ref.Server, appID, firstAttempt(ref)))
	if !ok {
		return nil
	}
	st := findingStats(sum)
	if len(st.Badges) == 0 && st.Failed == 0 {
		// Read, and healthy: unlike a row not read yet.
		st.Text = "no finding"
	}
	return st
}
