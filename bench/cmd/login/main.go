// Command login signs in to a gateway without a browser, for the
// benchmarks: it follows the redirects from a start URL (sparkgate's
// /oauth2/login or local token URL, oauth2-proxy's /oauth2/start) through
// the OpenID provider's development login and consent forms back to the
// gateway, and prints the gateway's session cookies as one Cookie header
// value. Only for the test provider of e2e/oidc, whose login form takes any
// password.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"os"
	"strings"
	"time"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "login:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("login", flag.ContinueOnError)
	start := fs.String("start", "", "`URL` that starts the sign-in")
	user := fs.String("user", "alice", "user name for the provider's login form")
	prefix := fs.String("cookie", "", "print only cookies whose name starts with this `prefix` (the gateway's session)")
	timeout := fs.Duration("timeout", time.Minute, "bound on the whole sign-in")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *start == "" || *prefix == "" {
		return fmt.Errorf("-start and -cookie are required")
	}
	jar, err := cookiejar.New(nil)
	if err != nil {
		return fmt.Errorf("cookie jar: %w", err)
	}
	client := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	res, err := signIn(ctx, client, *start, *user)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "login: signed in as %s after %d form(s); final %d %s\n", *user, res.forms, res.status, res.final.Redacted())
	// Cookies are per host, not per port: the provider's cookies share the
	// jar entry of 127.0.0.1, hence the name filter.
	var parts []string
	for _, c := range jar.Cookies(res.final) {
		if strings.HasPrefix(c.Name, *prefix) {
			parts = append(parts, c.Name+"="+c.Value)
		}
	}
	if len(parts) == 0 {
		return fmt.Errorf("no cookie named %s* after signing in (final %d %s)", *prefix, res.status, res.final.Redacted())
	}
	fmt.Println(strings.Join(parts, "; "))
	return nil
}
