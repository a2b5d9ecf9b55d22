package discovery

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func TestHealthRecordChanges(t *testing.T) {
	t.Parallel()
	down := errors.New("connection refused")
	t0 := time.Unix(1000, 0)
	var h health
	steps := []struct {
		err  error
		want change
	}{
		{down, wentDown}, // the first poll fails: an outage starts
		{down, unchanged},
		{down, unchanged},
		{nil, cameBack},
		{nil, unchanged},
		{down, wentDown},
		{nil, cameBack},
	}
	for i, s := range steps {
		if got := h.record("history:main", s.err, t0.Add(time.Duration(i)*time.Second)); got != s.want {
			t.Errorf("step %d: record(%v) = %v; want %v", i, s.err, got, s.want)
		}
	}
	var h2 health
	if got := h2.record("yarn:x", nil, t0); got != unchanged {
		t.Errorf("first record(nil) = %v; want unchanged (a source that answers from the start is not news)", got)
	}
	h.record("history:main", down, t0.Add(time.Minute))
	h.record("history:main", down, t0.Add(2*time.Minute))
	if s := h.m["history:main"]; !s.DownSince.Equal(t0.Add(time.Minute)) || s.Up {
		t.Errorf("after two failures: %+v; want down since the first", *s)
	}
}

// TestSourceOutageLoggedOnce: a source that fails round after round (here
// an unreachable History Server, as in the default config, and a YARN
// ResourceManager that answers 503) is one warning, not one per interval;
// its recovery is one info line.
func TestSourceOutageLoggedOnce(t *testing.T) {
	t.Parallel()
	var up atomic.Bool
	rm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if !up.Load() {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"apps":null}`))
	}))
	t.Cleanup(rm.Close)
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close() // nothing listens there now

	core, logs := observer.New(zap.DebugLevel)
	d := New(Config{
		Interval: time.Duration(20 * time.Millisecond),
		YARN:     []URLSource{{URL: rm.URL}},
		History:  []HistorySource{{Name: "main", URL: gone.URL}},
	}, NewRegistry(), zap.New(core))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	yarn := "yarn:" + rm.URL
	source := func(name string) SourceHealth {
		for _, s := range d.Sources() {
			if s.Name == name {
				return s
			}
		}
		return SourceHealth{}
	}
	eventually := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; sources: %+v", what, d.Sources())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	count := func(level zapcore.Level, msgPart, name string) int {
		n := 0
		for _, e := range logs.All() {
			if e.Level == level && strings.Contains(e.Message, msgPart) && e.ContextMap()["source"] == name {
				n++
			}
		}
		return n
	}
	warn, info := zapcore.WarnLevel, zapcore.InfoLevel

	eventually("five failed rounds of each source", func() bool {
		return source(yarn).Failures >= 5 && source("history:main").Failures >= 5
	})
	for _, name := range []string{yarn, "history:main"} {
		if n := count(warn, "down", name); n != 1 {
			t.Errorf("%s: %d warnings over %d failed rounds; want 1", name, n, source(name).Failures)
		}
	}
	if s := source("history:main"); s.Up || s.DownSince.IsZero() || s.LastError == "" {
		t.Errorf("unreachable History Server: %+v; want down, since when, and why", s)
	}

	up.Store(true)
	eventually("the RM answering", func() bool { return source(yarn).Up })
	first := source(yarn).LastSuccess
	eventually("two more answered rounds", func() bool {
		s := source(yarn)
		return s.Up && s.LastSuccess.After(first) && source("history:main").Failures >= 10
	})
	if n := count(info, "answers again", yarn); n != 1 {
		t.Errorf("%s: %d recovery lines; want 1", yarn, n)
	}
	for _, name := range []string{yarn, "history:main"} {
		if n := count(warn, "down", name); n != 1 {
			t.Errorf("%s: %d warnings in all; want 1", name, n)
		}
	}
	if s := source(yarn); !s.DownSince.IsZero() {
		t.Errorf("recovered RM still has DownSince %v", s.DownSince)
	}
}
