package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/sparkgate/sparkgate/auth"
	"github.com/sparkgate/sparkgate/policy"
	"github.com/sparkgate/sparkgate/proxy"
	"github.com/sparkgate/sparkgate/proxy/discovery"
)

// run wires the parts together and serves until ctx is done.
func run(ctx context.Context, cfg Config) error {
	lg, err := newLogs(cfg.Log, os.Stderr, flushEvery)
	if err != nil {
		return err
	}
	defer lg.close()
	logger := lg.main
	setMemoryLimit(logger)

	authn, err := auth.New(ctx, cfg.Auth, cfg.PublicURL, logger.Named("auth"))
	if err != nil {
		return fmt.Errorf("starting auth: %w", err)
	}

	defer func() {
		if err := authn.Close(); err != nil {
			logger.Warn("closing the session store", zap.Error(err))
		}
	}()
	csrf, err := csrfKey(cfg.Auth.Session)
	if err != nil {
		return err
	}

	reg := discovery.NewRegistry()
	disc := discovery.New(cfg.Discovery, reg, logger.Named("discovery"))

	historyURLs := make(map[string]*url.URL, len(cfg.Discovery.History))
	historyRules := make(map[string]policy.HistoryRules, len(cfg.Discovery.History))
	for _, h := range cfg.Discovery.History {
		u, err := url.Parse(h.URL)
		if err != nil {
			return fmt.Errorf("discovery.history %s: %w", h.Name, err)
		}
		historyURLs[h.Name] = u
		historyRules[h.Name] = policy.HistoryRules{
			Name: h.Name, Enabled: h.ACLsEnable, Admins: h.AdminACLs, AdminGroups: h.AdminACLsGroups,
		}
	}

	var metrics *proxy.Metrics
	var metricsSrv *http.Server
	if cfg.MetricsListen != "" {
		if metrics, metricsSrv, err = newMetricsServer(cfg.MetricsListen, cfg.DebugPprof, reg, disc, logger, storeCollector{authn}); err != nil {
			return err
		}
	}

	srv, err := proxy.New(proxy.Options{
		Config:         cfg.Proxy,
		Registry:       reg,
		Authn:          authnAdapter{authn},
		Authz:          newAuthorizer(cfg.Policy, historyRules),
		HistoryServers: historyURLs,
		Ready:          disc.Ready,
		Suspect:        disc.Suspect,
		Confirm:        disc.Confirm,
		ClaimOnce:      authn.ClaimOnce,
		WantACLs:       disc.WantACLs,
		IsAdmin:        isAdmin(cfg.Policy, cfg.Auth.Mode == auth.ModeLocal),
		Sources:        describeSources(cfg.Discovery),
		SourceHealth:   disc.Sources,
		CSRFKey:        csrf,
		SecureCookies:  strings.HasPrefix(cfg.PublicURL, "https://"),
		Logger:         logger.Named("proxy"),
		Audit:          lg.requests.Named("audit"),
		Metrics:        metrics,
		PublicURL:      cfg.PublicURL,
		Diagnosis:      cfg.Diagnosis,
		Masters:        cfg.Masters,
		// Workers of the masters discovery reads serve executor logs too.
		StandaloneMasters: standaloneURLs(cfg.Discovery),
		// NodeManagers of the ResourceManagers discovery reads serve
		// container logs.
		ResourceManagers: yarnURLs(cfg.Discovery),
		// The Kubernetes source serves its apps' pod logs.
		Pods: podLogs(disc),
	})
	if err != nil {
		return fmt.Errorf("starting proxy: %w", err)
	}
	// Finished apps' index badges are read as discovery has their History
	// Server load them for their ACLs (proxy/index_finished.go).
	disc.OnHistoryVisit(srv.VisitFinished)

	// Not an http.ServeMux: it cleans paths and redirects ("//" -> "/")
	// before the proxy sees them, and the kill guard must judge the path the
	// client sent, refusing ambiguous spellings with 400 rather than
	// rewriting them.
	// Sign-in pages get the isolation headers of the gateway's own pages.
	authHandler := proxy.PageHeaders(authn.Handler())
	app := authn.Middleware(srv)
	if cfg.Proxy.Compress {
		if app, err = proxy.Compress(app); err != nil {
			return err
		}
	}
	mux := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// An app's own host (proxy.app_domain) serves that app alone.
		if strings.HasPrefix(r.URL.Path, "/oauth2/") && !srv.IsAppHost(r.Host) {
			authHandler.ServeHTTP(w, r)
			return
		}
		app.ServeHTTP(w, r)
	})

	hs := &http.Server{
		Addr:    cfg.Listen,
		Handler: proxy.Middleware(mux, lg.requests.Named("access"), metrics),
		// Headers must arrive promptly: slow-header clients hold a goroutine each.
		ReadHeaderTimeout: 10 * time.Second,
		// Spark UI requests have no bodies worth waiting for.
		ReadTimeout: 30 * time.Second,
		// No WriteTimeout: Spark pages and event-log downloads stream for as
		// long as they take; upstream timeouts bound the waiting instead,
		// and proxy.Middleware drops a client that reads nothing for a
		// minute (writeStallTimeout).
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       zap.NewStdLog(logger.Named("http")),
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", cfg.Listen, err)
	}

	if metricsSrv != nil {
		mln, err := net.Listen("tcp", metricsSrv.Addr)
		if err != nil {
			_ = ln.Close()
			return fmt.Errorf("metrics_listen %s: %w", metricsSrv.Addr, err)
		}
		go func() {
			if err := metricsSrv.Serve(mln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				logger.Error("metrics server stopped", zap.Error(err))
			}
		}()
		defer func() { _ = metricsSrv.Close() }()
		logger.Info("serving metrics", zap.String("listen", mln.Addr().String()))
	}

	discCtx, cancelDisc := context.WithCancel(ctx)
	defer cancelDisc()
	discDone := make(chan error, 1)
	go func() { discDone <- disc.Run(discCtx) }()

	serveErr := make(chan error, 1)
	go func() {
		if cfg.TLS.CertFile != "" {
			serveErr <- hs.ServeTLS(ln, cfg.TLS.CertFile, cfg.TLS.KeyFile)
			return
		}
		serveErr <- hs.Serve(ln)
	}()
	logger.Info("sparkgate started", zap.String("listen", ln.Addr().String()),
		zap.String("public_url", cfg.PublicURL), zap.String("auth_mode", cfg.Auth.Mode), zap.String("version", version))
	if u := authn.LocalLoginURL(); u != "" {
		// Printed, not logged: like Jupyter, the person who started the
		// gateway opens this URL once; it is the only way in.
		fmt.Fprintf(os.Stderr, "\n    sparkgate is running in local mode. Open this URL to sign in:\n\n        %s\n\n", u)
	}

	select {
	case err := <-serveErr:
		if !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("serving: %w", err)
		}
	case <-ctx.Done():
		logger.Info("shutting down")
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdownCtx); err != nil {
		logger.Warn("graceful shutdown incomplete", zap.Error(err))
	}
	cancelDisc()
	if err := <-discDone; err != nil && !errors.Is(err, context.Canceled) {
		logger.Warn("discovery stopped with an error", zap.Error(err))
	}
	return nil
}

// loggerConfig is zap's configuration for c (see newLogs).
func loggerConfig(c LogConfig) (zap.Config, error) {
	var zc zap.Config
	if c.Format == "json" {
		zc = zap.NewProductionConfig()
	} else {
		zc = zap.NewDevelopmentConfig()
		zc.Development = false
		zc.DisableStacktrace = true
		zc.EncoderConfig.EncodeLevel = zapcore.CapitalLevelEncoder
	}
	lvl, err := zapcore.ParseLevel(c.Level)
	if err != nil {
		return zc, fmt.Errorf("log.level: %w", err)
	}
	zc.Level = zap.NewAtomicLevelAt(lvl)
	zc.Sampling = nil
	return zc, nil
}

// describeSources says, for the index page's empty state, where discovery
// looks for apps.
func describeSources(c discovery.Config) []string {
	var out []string
	for _, l := range c.Logs {
		out = append(out, "driver logs "+strings.Join(l.Paths, ", "))
	}
	for _, p := range c.Probe {
		out = append(out, "port probe of "+strings.Join(p.Hosts, ", ")+" ports "+p.Ports)
	}
	for _, m := range c.Standalone {
		out = append(out, "standalone master "+m.URL)
	}
	if len(c.Static) > 0 {
		out = append(out, "static list "+strings.Join(c.Static, ", "))
	}
	if c.Kubernetes != nil {
		out = append(out, "Kubernetes driver pods ("+c.Kubernetes.LabelSelector+")")
	}
	for _, y := range c.YARN {
		out = append(out, "YARN ResourceManager "+y.URL)
	}
	for _, h := range c.History {
		out = append(out, "History Server "+h.Name+" at "+h.URL)
	}
	return out
}

// csrfKey derives the kill-confirmation CSRF key from the session keys,
// wherever they were configured (the file or SPARKGATE_SESSION_KEYS), so
// that replicas sharing them accept each other's confirmation forms.
// Without session keys (local mode) it is nil and the proxy picks a random
// key.
func csrfKey(c auth.SessionConfig) ([]byte, error) {
	return auth.DeriveKey(c, "kill-confirmation csrf")
}

// standaloneURLs are the standalone masters discovery reads (validated by
// discovery.Config.Validate).
func standaloneURLs(c discovery.Config) []*url.URL {
	var out []*url.URL
	for _, m := range c.Standalone {
		if u, err := url.Parse(m.URL); err == nil {
			out = append(out, u)
		}
	}
	return out
}

// yarnURLs are the ResourceManagers discovery reads.
func yarnURLs(c discovery.Config) []*url.URL {
	var out []*url.URL
	for _, y := range c.YARN {
		if u, err := url.Parse(y.URL); err == nil {
			out = append(out, u)
		}
	}
	return out
}

// podLogs is the Kubernetes source's pod logs, nil without one.
func podLogs(d *discovery.Discoverer) proxy.PodLogSource {
	if !d.HasKubernetes() {
		return nil
	}
	return d
}
