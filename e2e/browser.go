//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// ChromiumPath is Debian's chromium; CHROMIUM overrides it.
func ChromiumPath() string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	return "/usr/bin/chromium"
}

// Browser is one headless Chromium with a fresh profile.
type Browser struct {
	ctx    context.Context
	cancel func()
}

// NewBrowser starts headless Chromium with a new user-data-dir under dir.
// Its lifetime is parent's. extra adds flags (e.g. host-resolver-rules).
func NewBrowser(parent context.Context, dir string, extra ...chromedp.ExecAllocatorOption) (*Browser, error) {
	profile, err := os.MkdirTemp(dir, "chromium-")
	if err != nil {
		return nil, fmt.Errorf("creating profile dir: %w", err)
	}
	actx, acancel := chromedp.NewExecAllocator(parent, append([]chromedp.ExecAllocatorOption{
		chromedp.ExecPath(ChromiumPath()),
		chromedp.UserDataDir(profile),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
	}, extra...)...)
	ctx, cancel := chromedp.NewContext(actx)
	// The first Run starts the browser; it must not carry a timeout.
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		acancel()
		return nil, fmt.Errorf("starting chromium: %w", err)
	}
	return &Browser{ctx: ctx, cancel: func() { cancel(); acancel() }}, nil
}

// Close stops the browser.
func (b *Browser) Close() { b.cancel() }

// SetCookies copies cookies (e.g. a gateway session from a Go cookie jar)
// into the browser for pageURL's origin.
func (b *Browser) SetCookies(pageURL string, cookies []*http.Cookie) error {
	for _, c := range cookies {
		ck := c
		err := chromedp.Do(b.ctx, func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
			_, err := cdp.Call(ctx, t, network.SetCookie, network.SetCookieParams{
				Name: ck.Name, Value: ck.Value, URL: pageURL, Path: "/",
			})
			return chromedp.Void{}, err
		})
		if err != nil {
			return fmt.Errorf("setting cookie %s: %w", c.Name, err)
		}
	}
	return nil
}

// TableRows opens pageURL and waits until selector (e.g.
// "#active-executors-table tbody tr") matches at least one row that is not a
// DataTables "no data" row. Spark's tables are filled once by JS at load, so
// the page is reloaded every 10 s until timeout (a task may start later). It
// returns the row count and the final URL.
func (b *Browser) TableRows(pageURL, selector string, timeout time.Duration) (int, string, error) {
	ctx, cancel := context.WithTimeout(b.ctx, timeout+15*time.Second)
	defer cancel()
	sel := strconv.Quote(selector)
	expr := `(() => { const rows = document.querySelectorAll(` + sel + `);
		if (rows.length === 0 || document.querySelector(` + sel + ` + " td.dataTables_empty")) return 0;
		return rows.length; })()`
	deadline := time.Now().Add(timeout)
	for {
		if err := chromedp.Do(ctx, chromedp.Navigate(pageURL)); err != nil {
			return 0, "", fmt.Errorf("navigating to %s: %w", pageURL, err)
		}
		round := time.Until(deadline)
		if round > 10*time.Second {
			round = 10 * time.Second
		}
		n, err := chromedp.Run(ctx, chromedp.Poll[int](expr, chromedp.WithPollingInterval(200*time.Millisecond), chromedp.WithPollingTimeout(round)))
		loc, _ := chromedp.Run(ctx, chromedp.Location())
		if err == nil {
			return n, loc, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText.slice(0, 600) : ""`))
			return 0, loc, fmt.Errorf("waiting for %s on %s (now at %s): %w; page text: %q", selector, pageURL, loc, err, body)
		}
	}
}

// Login opens startURL (a gateway page), and while the browser is on
// providerOrigin fills the provider's development login form (login = user,
// any password) or confirms its consent form, like a person clicking
// through. It returns the URL the browser ends on.
func (b *Browser) Login(startURL, providerOrigin, user string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(b.ctx, timeout)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(startURL)); err != nil {
		return "", fmt.Errorf("navigating to %s: %w", startURL, err)
	}
	return b.finishLogin(ctx, providerOrigin, user, timeout)
}

// Tab opens another tab of the same browser (the same profile and
// cookies); it closes with the browser.
func (b *Browser) Tab() (*Browser, error) {
	ctx, cancel := chromedp.NewContext(b.ctx)
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		return nil, fmt.Errorf("opening a tab: %w", err)
	}
	return &Browser{ctx: ctx, cancel: cancel}, nil
}

// StartLogin opens startURL (a gateway page) and waits until the browser
// is on providerOrigin's sign-in form, without filling it (FinishLogin
// does), so that a test can start several sign-ins at once.
func (b *Browser) StartLogin(startURL, providerOrigin string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(b.ctx, timeout)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(startURL)); err != nil {
		return "", fmt.Errorf("navigating to %s: %w", startURL, err)
	}
	loc, err := chromedp.Run(ctx, chromedp.Poll[string](`document.readyState === "complete" && location.href`,
		chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(timeout)))
	if err != nil {
		return "", fmt.Errorf("waiting for a page: %w", err)
	}
	if !strings.HasPrefix(loc, providerOrigin+"/") {
		return loc, fmt.Errorf("%s led to %s, not to the provider", startURL, loc)
	}
	return loc, nil
}

// FinishLogin fills the provider's forms on the page StartLogin left the
// browser on and returns the URL it ends on.
func (b *Browser) FinishLogin(providerOrigin, user string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(b.ctx, timeout)
	defer cancel()
	return b.finishLogin(ctx, providerOrigin, user, timeout)
}

// finishLogin fills the provider's development login form (login = user,
// any password) and confirms its consent form while the browser is on
// providerOrigin, and returns the URL it ends on.
func (b *Browser) finishLogin(ctx context.Context, providerOrigin, user string, timeout time.Duration) (string, error) {
	submit := `(() => { const f = document.forms[0]; if (!f) return "";
		if (f.elements.login) f.elements.login.value = ` + strconv.Quote(user) + `;
		if (f.elements.password) f.elements.password.value = "any-password";
		const btn = f.querySelector("button[type=submit], button, input[type=submit]");
		window.__e2eSubmitted = true;
		if (btn) btn.click(); else f.submit();
		return location.href; })()`
	for step := 0; step < 6; step++ {
		loc, err := chromedp.Run(ctx, chromedp.Poll[string](`document.readyState === "complete" && location.href`,
			chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(timeout)))
		if err != nil {
			return "", fmt.Errorf("waiting for a page: %w", err)
		}
		if !strings.HasPrefix(loc, providerOrigin+"/") {
			return loc, nil
		}
		was, err := chromedp.Run(ctx, chromedp.Evaluate[string](submit))
		if err != nil || was == "" {
			return loc, fmt.Errorf("no form to submit at %s (last error: %s)", loc, lastErr(err))
		}
		// Wait for the next document: the marker is gone from it (the URL
		// may be the same, as for the provider's consent page). Evaluations
		// fail while the page navigates; retry them.
		for {
			fresh, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!window.__e2eSubmitted && document.readyState === "complete"`))
			if err == nil && fresh {
				break
			}
			if ctx.Err() != nil {
				return loc, fmt.Errorf("form at %s went nowhere: %w", loc, ctx.Err())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return "", fmt.Errorf("still at the provider after 6 forms")
}

// Text returns the visible text of the current page.
func (b *Browser) Text() (string, error) {
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
}

// Poll opens pageURL and evaluates expr every 200 ms until it returns a
// non-empty string (for example JSON of what the page has drawn), which it
// returns. When prepare is not "", it is evaluated on the first load
// (for example to set localStorage) and the page is loaded again.
func (b *Browser) Poll(pageURL, prepare, expr string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(b.ctx, timeout)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(pageURL)); err != nil {
		return "", fmt.Errorf("navigating to %s: %w", pageURL, err)
	}
	if prepare != "" {
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[any](prepare)); err != nil {
			return "", fmt.Errorf("preparing %s: %w", pageURL, err)
		}
		if err := chromedp.Do(ctx, chromedp.Navigate(pageURL)); err != nil {
			return "", fmt.Errorf("navigating again to %s: %w", pageURL, err)
		}
	}
	out, err := chromedp.Run(ctx, chromedp.Poll[string](expr, chromedp.WithPollingInterval(200*time.Millisecond), chromedp.WithPollingTimeout(timeout)))
	if err != nil {
		tctx, tcancel := context.WithTimeout(b.ctx, 5*time.Second)
		defer tcancel()
		body, _ := chromedp.Run(tctx, chromedp.Evaluate[string](`document.body ? document.body.innerText.slice(0, 600) : ""`))
		return "", fmt.Errorf("waiting on %s: %w; page text: %q", pageURL, err, body)
	}
	return out, nil
}
