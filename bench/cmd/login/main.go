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
	"sync"
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
	n := fs.Int("n", 1, "sign in `n` distinct users (the -user name with a number appended when n > 1), one cookie line each")
	parallel := fs.Int("parallel", 8, "sign-ins at once when n > 1")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *start == "" || *prefix == "" {
		return fmt.Errorf("-start and -cookie are required")
	}
	if *n > 1 {
		return many(*start, *user, *prefix, *n, *parallel, *timeout)
	}
	line, err := one(*start, *user, *prefix, *timeout)
	if err != nil {
		return err
	}
	fmt.Println(line)
	return nil
}

// many signs in n users, parallel at a time, and prints their cookies in
// order, one line each.
func many(start, user, prefix string, n, parallel int, timeout time.Duration) error {
	lines := make([]string, n)
	errs := make(chan error, n)
	sem := make(chan struct{}, max(parallel, 1))
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			l, err := one(start, fmt.Sprintf("%s%04d", user, i), prefix, timeout)
			if err != nil {
				errs <- err
				return
			}
			lines[i] = l
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	fmt.Println(strings.Join(lines, "\n"))
	return nil
}

// one signs in user and returns the Cookie header of the gateway's session.
func one(start, user, prefix string, timeout time.Duration) (string, error) {
	jar, err := cookiejar.New(nil)
	if err != nil {
		return "", fmt.Errorf("cookie jar: %w", err)
	}
	client := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	res, err := signIn(ctx, client, start, user)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(os.Stderr, "login: signed in as %s after %d form(s); final %d %s\n", user, res.forms, res.status, res.final.Redacted())
	// Cookies are per host, not per port: the provider's cookies share the
	// jar entry of 127.0.0.1, hence the name filter.
	var parts []string
	for _, c := range jar.Cookies(res.final) {
		if strings.HasPrefix(c.Name, prefix) {
			parts = append(parts, c.Name+"="+c.Value)
		}
	}
	if len(parts) == 0 {
		return "", fmt.Errorf("no cookie named %s* after signing in (final %d %s)", prefix, res.status, res.final.Redacted())
	}
	return strings.Join(parts, "; "), nil
}
