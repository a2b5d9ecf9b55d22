package main

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/sparkgate/sparkgate/proxy"
	"github.com/sparkgate/sparkgate/proxy/discovery"
)

// newMetricsServer builds the gateway's metrics (plus the Go runtime's and
// the process's) and the server that exposes them at /metrics on addr.
func newMetricsServer(addr string, apps *discovery.Registry, logger *zap.Logger) (*proxy.Metrics, *http.Server, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m, err := proxy.NewMetrics(reg, apps)
	if err != nil {
		return nil, nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog: zap.NewStdLog(logger.Named("metrics")),
		Timeout:  10 * time.Second,
	}))
	srv := &http.Server{
		Addr:              addr,
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		WriteTimeout:      30 * time.Second,
		ErrorLog:          zap.NewStdLog(logger.Named("metrics")),
	}
	return m, srv, nil
}
