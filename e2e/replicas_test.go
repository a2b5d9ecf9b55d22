//go:build e2e

package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestReplicas runs three gateway replicas from one config (OIDC with the
// real provider, the same session keys, auth.session.store redis on a real
// redis-server) behind nginx, round-robin, in front of one real Spark
// driver with a long job:
//
//   - sign in through the load balancer; browsing through it reaches all
//     three replicas (each one's metrics count app requests);
//   - a SIGHUP does not stop a replica (the systemd unit has no
//     ExecReload; the gateway ignores the signal);
//   - another sign-in's cookie, copied, works on each replica; after
//     sign-out through the load balancer the copy is refused by each
//     replica, asked directly, while the first sign-in still works;
//   - a kill confirmation opened on one replica is accepted by another
//     (and a forged one refused by the third): the job is killed;
//   - with ID tokens of 40 s and a provider that rotates refresh tokens
//     (and ends the grant when a spent one comes back), a session due for
//     renewal, asked for at once on all three replicas, is renewed once;
//     every request, and the old and the renewed cookie afterwards, are
//     signed in;
//   - one replica is stopped (SIGTERM) in the middle of a crawl through the
//     load balancer; the crawl finishes with no broken link.
func TestReplicas(t *testing.T) {
	s := newSuite(t)
	s.requireGateway(t)
	home := s.sparkHomes(t)[0]
	ctx := ctxFor(t, 10*time.Minute)
	dir := s.freshDir(t, "replicas")

	rdir := filepath.Join(dir, "redis")
	if err := mkdir(rdir); err != nil {
		t.Fatal(err)
	}
	rs, err := StartRedis(ctx, rdir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rs.Stop() })

	// The provider knows the load balancer's URL: users reach the
	// gateway there, and so do its redirects.
	const secret = "e2e-client-secret-not-secret"
	// ID tokens of 40 s: a session is due for renewal 10 s after sign-in
	// (30 s before the ID token expires), so sessions are renewed during
	// the test; and the provider rotates refresh tokens and ends the grant
	// when a spent one is presented again.
	t.Setenv("OIDC_ID_TOKEN_TTL", "40")
	t.Setenv("OIDC_ROTATE_REFRESH_TOKEN", "1")
	op, lbPort, lbURL := s.providerFor(ctx, t, dir, secret)

	d, err := StartDriver(ctx, s.root, home, DriverOptions{
		Name:     "replicas",
		EventDir: filepath.Join(dir, "events"), LogDir: filepath.Join(dir, "driver-logs"), WorkDir: filepath.Join(dir, "driver"),
		LongJob: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Kill)

	key := base64.StdEncoding.EncodeToString([]byte("replicas-share-this-key-32-bytes"))
	opt := GatewayOptions{
		PublicURL: lbURL,
		LogGlobs:  []string{filepath.Join(dir, "driver-logs", "*.log")},
		Auth: map[string]any{
			"mode": "oidc",
			"oidc": map[string]any{"issuer": op.Issuer, "client_id": "sparkgate", "audiences": []string{"sparkgate"}},
			"session": map[string]any{
				"keys":  []string{key},
				"store": "redis",
				// A generous timeout: this machine runs the whole suite on 2
				// cores, and a store error here would be a false one.
				"redis": map[string]any{"addr": rs.Addr, "key_prefix": "e2e-replicas:", "timeout": "2s"},
			},
		},
		Policy: map[string]any{"admins": []string{"alice"}},
		Proxy:  map[string]any{"kill": "modify-acl"},
		Env:    []string{"SPARKGATE_OIDC_CLIENT_SECRET=" + secret},
	}
	var gws [3]*Gateway
	var ups []string
	for i := range gws {
		gdir := filepath.Join(dir, fmt.Sprintf("gateway-%d", i))
		if err := mkdir(gdir); err != nil {
			t.Fatal(err)
		}
		g, err := StartGateway(ctx, s.gwBin, gdir, opt)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(g.Stop)
		gws[i] = g
		ups = append(ups, strings.TrimPrefix(g.URL, "http://"))
	}
	ldir := filepath.Join(dir, "nginx")
	if err := mkdir(ldir); err != nil {
		t.Fatal(err)
	}
	lb, err := StartLoadBalancer(ctx, ldir, lbPort, ups)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lb.Stop() })

	if err := d.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	jobID, _, err := LongJob(ctx, d)
	if err != nil {
		t.Fatal(err)
	}

	alice := signInThrough(ctx, t, lbURL, "alice")
	bob := signInThrough(ctx, t, lbURL, "bob")
	bobSignedIn := time.Now()
	for _, g := range gws {
		if _, _, err := g.WaitListed(ctx, alice, func(id string) bool { return id == d.AppID }); err != nil {
			t.Fatalf("replica %s: %v", g.URL, err)
		}
	}
	appBase := "/app/" + d.AppID

	t.Run("browse reaches every replica", func(t *testing.T) {
		for i := range 9 {
			page := []string{"/jobs/", "/stages/", "/environment/"}[i%3]
			a, err := Get(ctx, alice, lbURL+appBase+page, nil)
			if err != nil || a.Status != http.StatusOK {
				t.Fatalf("GET %s through the load balancer = %d, %v; want 200", page, a.Status, err)
			}
		}
		for i, g := range gws {
			n, err := g.Metric(ctx, "sparkgate_http_requests_total", `route="app"`, `code="200"`)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("replica %d answered %v app pages", i, n)
			if n == 0 {
				t.Errorf("replica %d (%s) answered no app page; want round-robin to reach it", i, g.URL)
			}
			up, _ := g.Metric(ctx, "sparkgate_session_store_up")
			errs, _ := g.Metric(ctx, "sparkgate_session_store_errors_total")
			if up != 1 || errs != 0 {
				t.Errorf("replica %d: sparkgate_session_store_up = %v, errors = %v; want 1 and 0", i, up, errs)
			}
		}
	})

	t.Run("SIGHUP does not stop a replica", func(t *testing.T) {
		if err := gws[0].Proc.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond) // a stopping gateway closes its listener at once
		if a, err := Get(ctx, alice, gws[0].URL+"/_/healthz", nil); err != nil || a.Status != http.StatusOK || gws[0].Proc.Exited() {
			t.Errorf("replica 0 after SIGHUP: %d, %v, exited %v; want still serving", a.Status, err, gws[0].Proc.Exited())
		}
	})

	t.Run("sign-out holds on every replica", func(t *testing.T) {
		other := signInThrough(ctx, t, lbURL, "alice")
		lbu, _ := url.Parse(lbURL)
		stolenJar, _ := cookiejar.New(nil)
		stolenJar.SetCookies(lbu, other.Jar.Cookies(lbu))
		stolen := NoRedirectClient(stolenJar)
		for i, g := range gws {
			if a, err := Get(ctx, stolen, g.URL+"/api/v1/applications", nil); err != nil || a.Status != http.StatusOK {
				t.Fatalf("copied cookie on replica %d before sign-out = %d, %v; want 200", i, a.Status, err)
			}
		}
		// The sign-out button's POST, through the load balancer, then the
		// provider's end-session confirmation.
		if final, body, err := SignOut(ctx, &http.Client{Jar: other.Jar, Timeout: 60 * time.Second}, lbURL); err != nil {
			t.Fatalf("sign-out through the load balancer: %v (at %s: %.300s)", err, final, body)
		}
		for i, g := range gws {
			a, err := Get(ctx, stolen, g.URL+"/api/v1/applications", nil)
			if err != nil || a.Status != http.StatusUnauthorized {
				t.Errorf("copied cookie on replica %d after sign-out = %d, %v; want 401", i, a.Status, err)
			}
			if a, err := Get(ctx, alice, g.URL+"/api/v1/applications", nil); err != nil || a.Status != http.StatusOK {
				t.Errorf("the other sign-in on replica %d after the sign-out = %d, %v; want 200", i, a.Status, err)
			}
		}
	})

	t.Run("kill confirmation from one replica accepted by another", func(t *testing.T) {
		killPath := fmt.Sprintf("%s/jobs/job/kill/?id=%d", appBase, jobID)
		resp, err := getNoFollow(ctx, alice, gws[0].URL+killPath)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m := reConfirmToken.FindSubmatch(body)
		if resp.StatusCode != http.StatusOK || m == nil {
			t.Fatalf("confirmation page on replica 0 = %d; want 200 with a token: %.300q", resp.StatusCode, body)
		}
		token := html.UnescapeString(string(m[1]))
		post := func(g *Gateway, tok string) int {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.URL+killPath, strings.NewReader(url.Values{"csrf": {tok}}.Encode()))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			resp, err := alice.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		if code := post(gws[2], token[:len(token)-1]+flipChar(token[len(token)-1])); code != http.StatusForbidden {
			t.Errorf("altered token on replica 2 = %d; want 403", code)
		}
		if j := driverJob(ctx, t, d, jobID); j.Status != "RUNNING" {
			t.Fatalf("job %d is %s after a refused confirmation; want RUNNING", jobID, j.Status)
		}
		if code := post(gws[1], token); code != http.StatusSeeOther {
			t.Fatalf("confirmation opened on replica 0, posted to replica 1 = %d; want 303", code)
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			j := driverJob(ctx, t, d, jobID)
			if j.Status != "RUNNING" {
				t.Logf("the driver reports job %d %s after the confirmation on another replica", jobID, j.Status)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("job %d still RUNNING 20 s after the confirmed kill", jobID)
			}
			time.Sleep(250 * time.Millisecond)
		}
	})

	t.Run("refresh rotates once across replicas", func(t *testing.T) {
		// bob's session is due 10 s after his sign-in; then nine requests
		// with the same cookie reach the three replicas at once.
		time.Sleep(time.Until(bobSignedIn.Add(11 * time.Second)))
		lbu, _ := url.Parse(lbURL)
		var cookies []string
		for _, ck := range bob.Jar.Cookies(lbu) {
			cookies = append(cookies, ck.Name+"="+ck.Value)
		}
		oldCookie := strings.Join(cookies, "; ")
		type answer struct {
			status  int
			renewed string
		}
		answers := make(chan answer, 9)
		var wg sync.WaitGroup
		for i := range 9 {
			g := gws[i%3]
			wg.Go(func() {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, g.URL+"/api/v1/applications", nil)
				req.Header.Set("Cookie", oldCookie)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					answers <- answer{status: -1}
					return
				}
				resp.Body.Close()
				a := answer{status: resp.StatusCode}
				for _, ck := range resp.Cookies() {
					if strings.HasPrefix(ck.Name, "_sparkgate_session") && ck.Value != "" {
						a.renewed = ck.Name + "=" + ck.Value
					}
				}
				answers <- a
			})
		}
		wg.Wait()
		close(answers)
		renewed := ""
		for a := range answers {
			if a.status != http.StatusOK {
				t.Errorf("a request during the renewal on three replicas = %d; want 200", a.status)
			}
			if a.renewed != "" {
				renewed = a.renewed
			}
		}
		if renewed == "" {
			t.Fatal("no answer carried the renewed session cookie")
		}
		// The spent cookie (its renewal is shared) and the renewed one
		// both work on every replica: the grant was not ended by a
		// refresh token presented twice.
		for i, g := range gws {
			for name, ck := range map[string]string{"old": oldCookie, "renewed": renewed} {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, g.URL+"/api/v1/applications", nil)
				req.Header.Set("Cookie", ck)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Errorf("bob's %s cookie on replica %d after the renewal = %d; want 200", name, i, resp.StatusCode)
				}
			}
		}
		n := 0
		for _, g := range gws {
			b, _ := os.ReadFile(g.Proc.Log)
			for line := range strings.SplitSeq(string(b), "\n") {
				if strings.Contains(line, "session refreshed") && strings.Contains(line, `"user": "bob"`) {
					n++
				}
			}
		}
		t.Logf("bob's session renewed %d time(s) across the three replicas", n)
		if n != 1 {
			t.Errorf("bob's session was renewed %d times across the replicas; want 1", n)
		}
	})

	t.Run("replica stopped mid-crawl", func(t *testing.T) {
		const stopAfter = 40
		var n atomic.Int64
		var stopOnce sync.Once
		stopped := make(chan struct{})
		var afterStop atomic.Int64
		c := NoRedirectClient(alice.Jar)
		c.Transport = roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if n.Add(1) == stopAfter {
				stopOnce.Do(func() {
					go func() {
						_ = gws[2].Proc.Stop(20 * time.Second)
						close(stopped)
					}()
				})
			}
			select {
			case <-stopped:
				afterStop.Add(1)
			default:
			}
			return http.DefaultTransport.RoundTrip(r)
		})
		t0 := time.Now()
		rep, err := Crawl(ctx, c, lbURL+appBase+"/", CrawlOptions{
			Scope: []string{appBase + "/"}, Skip: skipLogout, Needles: d.HostPorts(),
		})
		if err != nil {
			t.Fatal(err)
		}
		took := time.Since(t0)
		logCrawl(t, "three replicas, one stopped", rep)
		// With proxy.kill modify-acl, alice (who may modify the app) sees
		// each active job's and stage's kill control as a plain link to
		// the gateway's confirmation page; the crawler lists such links
		// and never follows them. Any other kill link is a failure.
		var other []Link
		for _, l := range rep.KillLinks {
			u, err := url.Parse(l.URL)
			if err != nil || u.Host != lb.Host() || !strings.HasPrefix(u.Path, appBase+"/") ||
				(!strings.HasSuffix(u.Path, "/jobs/job/kill/") && !strings.HasSuffix(u.Path, "/stages/stage/kill/")) {
				other = append(other, l)
			}
		}
		rep.KillLinks = other
		requireCleanCrawl(t, rep, 60)
		select {
		case <-stopped:
		case <-time.After(30 * time.Second):
			t.Fatal("replica 2 did not stop")
		}
		if !gws[2].Proc.Exited() || afterStop.Load() == 0 {
			t.Errorf("replica 2 exited %v, %d requests after it stopped; want it stopped mid-crawl", gws[2].Proc.Exited(), afterStop.Load())
		}
		retried := countRetried(t, lb.AccessLog)
		if afterStop.Load() >= int64(len(gws)) && retried == 0 {
			// Round-robin sends one of any three requests to the stopped
			// replica: nginx must have met the refused connection and
			// retried on the next one, or the test proved nothing.
			t.Errorf("nginx retried no request on the next replica; want at least one")
		}
		t.Logf("crawl: %d pages in %v; replica 2 stopped after request %d, %d requests after; nginx retried %d on the next replica",
			rep.Pages, took.Round(time.Millisecond), stopAfter, afterStop.Load(), retried)
		_ = RecordFigure(s.outDir, "replicas_crawl_pages", rep.Pages)
		_ = RecordFigure(s.outDir, "replicas_crawl_duration", took)
		_ = RecordFigure(s.outDir, "replicas_crawl_retried_on_next_replica", retried)
	})
}

// signInThrough signs user in at base (the load balancer) with the
// provider's login form and returns a client holding the session that
// does not follow redirects.
func signInThrough(ctx context.Context, t *testing.T, base, user string) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 60 * time.Second}
	final, body, err := BrowserlessLogin(ctx, c, base+"/", user)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(final.String(), base+"/") {
		t.Fatalf("sign-in ended at %s; want the load balancer (page: %.300s)", final, body)
	}
	return NoRedirectClient(jar)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// countRetried counts the requests nginx sent to more than one upstream
// (its $upstream_addr lists them with commas).
func countRetried(t *testing.T, accessLog string) int {
	t.Helper()
	b, err := os.ReadFile(accessLog)
	if err != nil {
		t.Errorf("reading the load balancer's access log: %v", err)
		return 0
	}
	n := 0
	for line := range strings.SplitSeq(string(b), "\n") {
		if _, rest, ok := strings.Cut(line, "upstream="); ok {
			addrs, _, _ := strings.Cut(rest, " ")
			if strings.Contains(addrs, ",") {
				n++
			}
		}
	}
	return n
}
