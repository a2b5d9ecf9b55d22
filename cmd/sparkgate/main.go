// Command sparkgate is one signed-in gateway in front of every Spark driver
// UI and History Server: it discovers apps, routes /app/<appId>/ to the right
// driver, enforces Spark's own view/modify ACLs, refuses kill endpoints and
// falls back to the History Server when an app has finished.
//
// Without a config file it runs in a safe local mode: loopback only, this
// machine's drivers, and a one-time login URL printed at start.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	if err := mainErr(os.Args[1:]); err != nil {
		var ce configErrors
		if errors.As(err, &ce) {
			fmt.Fprintln(os.Stderr, ce.Error())
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "sparkgate:", err)
		os.Exit(1)
	}
}

func mainErr(args []string) error {
	fs := flag.NewFlagSet("sparkgate", flag.ContinueOnError)
	configPath := fs.String("config", os.Getenv("SPARKGATE_CONFIG"), "YAML config `file` (env SPARKGATE_CONFIG); none: safe local mode")
	checkOnly := fs.Bool("check-config", false, "validate the configuration, report every problem, and exit")
	listen := fs.String("listen", "", "override the listen address (host:port)")
	showVersion := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *showVersion {
		fmt.Println("sparkgate", version)
		return nil
	}
	cfg, err := loadConfig(*configPath)
	if err != nil {
		return err
	}
	if *listen != "" {
		if cfg.PublicURL == "http://"+cfg.Listen || cfg.PublicURL == "https://"+cfg.Listen {
			cfg.PublicURL = ""
		}
		cfg.Listen = *listen
		cfg.SetDefaults()
	}
	if errs := cfg.Validate(); len(errs) > 0 {
		return configErrors(errs)
	}
	if *checkOnly {
		fmt.Println("config ok")
		return nil
	}
	// The configuration is not reloaded in place: a SIGHUP (sent by habit,
	// or by a closed terminal) must not stop the gateway.
	signal.Ignore(syscall.SIGHUP)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return run(ctx, cfg)
}

// configErrors is every problem found in a configuration.
type configErrors []error

func (e configErrors) Error() string {
	s := fmt.Sprintf("sparkgate: invalid configuration (%d problem(s)):", len(e))
	for _, err := range e {
		s += "\n  - " + err.Error()
	}
	return s
}
