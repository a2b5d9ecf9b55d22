package main

import (
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/sparkgate/sparkgate/proxy"
	"github.com/sparkgate/sparkgate/proxy/discovery"
)

// newMetricsServer builds the gateway's metrics (plus discovery's, the Go
// runtime's and the process's) and the server that exposes them at
// /metrics on addr, with Go's profiles at /debug/pprof/ if withPprof.
// extra are further collectors (the session store's).
func newMetricsServer(addr string, withPprof bool, apps *discovery.Registry, disc *discovery.Discoverer, logger *zap.Logger, extra ...prometheus.Collector) (*proxy.Metrics, *http.Server, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		sourcesCollector{disc})
	reg.MustRegister(extra...)
	m, err := proxy.NewMetrics(reg, apps)
	if err != nil {
		return nil, nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog: zap.NewStdLog(logger.Named("metrics")),
		Timeout:  10 * time.Second,
	}))
	writeTimeout := 30 * time.Second
	if withPprof {
		mountPprof(mux)
		// A CPU profile or trace writes nothing until it is done: room for
		// pprof's default 30 s and more.
		writeTimeout = pprofWriteTimeout
	}
	srv := &http.Server{
		Addr:              addr,
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		WriteTimeout:      writeTimeout,
		ErrorLog:          zap.NewStdLog(logger.Named("metrics")),
	}
	return m, srv, nil
}

// pprofWriteTimeout bounds a profile's answer: ?seconds= of a CPU profile
// or trace must stay below it, as net/http/pprof checks.
const pprofWriteTimeout = 2 * time.Minute

// mountPprof serves net/http/pprof's handlers on mux, not on
// http.DefaultServeMux, which the gateway's own listener must never show.
func mountPprof(mux *http.ServeMux) {
	mux.HandleFunc("/debug/pprof/", pprof.Index) // and every named profile: heap, goroutine, allocs, ...
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
}

var (
	sourceUpDesc = prometheus.NewDesc("sparkgate_discovery_source_up",
		"1 when the discovery source's last poll answered, 0 when it failed (standalone masters, Kubernetes, YARN, History Servers, probes, static lists).",
		[]string{"source"}, nil)
	sourceFailuresDesc = prometheus.NewDesc("sparkgate_discovery_source_failures_total",
		"Failed polls of the discovery source since start.",
		[]string{"source"}, nil)
	historyListsDesc = prometheus.NewDesc("sparkgate_history_lists_total",
		"App lists asked of each History Server since start, by read: whole, or part (its running apps and those that ended lately; the whole list is read every few minutes).",
		[]string{"source", "read"}, nil)
	conflictsDesc = prometheus.NewDesc("sparkgate_discovery_conflicts_total",
		"Drivers' claims to an app id that discovery refused: a History Server, the source itself or the app's first verified owner contradicts them. The source label is the kind of source (probe, log, yarn, kubernetes, master, static).",
		[]string{"source"}, nil)
)

// sourcesCollector reads the discovery sources' health at each scrape. The
// source label is the configured source ("yarn:http://rm:8088",
// "history:main"), so there are as many series as configured sources.
type sourcesCollector struct{ d *discovery.Discoverer }

func (c sourcesCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- sourceUpDesc
	ch <- sourceFailuresDesc
	ch <- conflictsDesc
	ch <- historyListsDesc
}

func (c sourcesCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.d.Sources() {
		up := 0.0
		if s.Up {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(sourceUpDesc, prometheus.GaugeValue, up, s.Name)
		ch <- prometheus.MustNewConstMetric(sourceFailuresDesc, prometheus.CounterValue, float64(s.Failures), s.Name)
	}
	for _, l := range c.d.HistoryLists() {
		ch <- prometheus.MustNewConstMetric(historyListsDesc, prometheus.CounterValue, float64(l.Whole), l.Source, "whole")
		ch <- prometheus.MustNewConstMetric(historyListsDesc, prometheus.CounterValue, float64(l.Parts), l.Source, "part")
	}
	for kind, n := range c.d.Conflicts() {
		ch <- prometheus.MustNewConstMetric(conflictsDesc, prometheus.CounterValue, float64(n), kind)
	}
}
