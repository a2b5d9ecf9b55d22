//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/net/html"
)

// OIDCProvider is e2e/oidc/server.mjs (npm oidc-provider) running on loopback.
type OIDCProvider struct {
	Proc   *Proc
	Issuer string
	Secret string // client secret of both "sparkgate" and "api-client"
}

// StartOIDC copies server.mjs next to the node_modules that
// scripts/setup-oidc.sh installed in .cache/oidc and runs it on a free port.
func StartOIDC(ctx context.Context, root, dir, secret string, redirectURIs, postLogoutURIs []string) (*OIDCProvider, error) {
	cache := filepath.Join(root, ".cache", "oidc")
	if _, err := os.Stat(filepath.Join(cache, "node_modules", "oidc-provider")); err != nil {
		return nil, fmt.Errorf("oidc-provider is not installed; run scripts/setup-oidc.sh: %w", err)
	}
	src, err := os.ReadFile(filepath.Join(root, "e2e", "oidc", "server.mjs"))
	if err != nil {
		return nil, fmt.Errorf("reading server.mjs: %w", err)
	}
	script := filepath.Join(cache, "server.mjs")
	if err := os.WriteFile(script, src, 0o644); err != nil {
		return nil, fmt.Errorf("writing %s: %w", script, err)
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("node", script, fmt.Sprint(port))
	cmd.Dir = cache
	cmd.Env = append(os.Environ(),
		"OIDC_CLIENT_SECRET="+secret,
		"OIDC_REDIRECT_URIS="+strings.Join(redirectURIs, ","),
		"OIDC_POST_LOGOUT_REDIRECT_URIS="+strings.Join(postLogoutURIs, ","),
	)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	p, err := StartProc("oidc-provider", cmd, filepath.Join(dir, "oidc.log"))
	if err != nil {
		return nil, err
	}
	o := &OIDCProvider{Proc: p, Issuer: fmt.Sprintf("http://127.0.0.1:%d", port), Secret: secret}
	if err := waitHTTP(ctx, o.Issuer+"/.well-known/openid-configuration", p.Exited); err != nil {
		_ = p.Stop(5 * time.Second)
		return nil, fmt.Errorf("oidc provider: %w", err)
	}
	return o, nil
}

// Stop ends the provider.
func (o *OIDCProvider) Stop() error { return o.Proc.Stop(5 * time.Second) }

// ClientCredentialsToken gets a JWT access token (aud sparkgate, identity
// svc-reporter in group analysts) for the client "api-client".
func (o *OIDCProvider) ClientCredentialsToken(ctx context.Context) (string, error) {
	return o.ClientCredentialsTokenFor(ctx, "api-client")
}

// ClientCredentialsTokenFor gets a JWT access token (aud sparkgate) for the
// client clientID: "api-client" (svc-reporter, group analysts) or
// "api-client-eng" (svc-builder, group eng).
func (o *OIDCProvider) ClientCredentialsTokenFor(ctx context.Context, clientID string) (string, error) {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, o.Issuer+"/token",
		strings.NewReader(url.Values{"grant_type": {"client_credentials"}}.Encode()))
	if err != nil {
		return "", fmt.Errorf("building token request: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(clientID, o.Secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("token request: %w", err)
	}
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil {
		return "", fmt.Errorf("decoding token response: %w", err)
	}
	if tok.AccessToken == "" {
		return "", fmt.Errorf("token endpoint: %s: %s %s", resp.Status, tok.Error, tok.Description)
	}
	return tok.AccessToken, nil
}

// BrowserlessLogin follows a login that starts at startURL (a gateway page)
// through the provider's development login and consent forms as user, with
// client (which must follow redirects and hold a cookie jar). It returns the
// final response's URL and body.
func BrowserlessLogin(ctx context.Context, client *http.Client, startURL, user string) (*url.URL, []byte, error) {
	method, target, form := http.MethodGet, startURL, url.Values(nil)
	for step := 0; step < 6; step++ {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		var body io.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		}
		req, err := http.NewRequestWithContext(rctx, method, target, body)
		if err != nil {
			cancel()
			return nil, nil, fmt.Errorf("building request: %w", err)
		}
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		resp, err := client.Do(req)
		if err != nil {
			cancel()
			return nil, nil, fmt.Errorf("%s %s: %w", method, target, err)
		}
		page, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		if err != nil {
			return nil, nil, fmt.Errorf("reading %s: %w", target, err)
		}
		final := resp.Request.URL
		action, fields, ok := firstForm(page)
		if !ok || !strings.Contains(final.Path, "/interaction/") && !strings.Contains(final.Path, "/session/") {
			return final, page, nil
		}
		if _, has := fields["login"]; has || bytes.Contains(page, []byte(`name="login"`)) {
			fields.Set("login", user)
			fields.Set("password", "any")
		}
		next, err := final.Parse(action)
		if err != nil {
			return nil, nil, fmt.Errorf("form action %q: %w", action, err)
		}
		method, target, form = http.MethodPost, next.String(), fields
	}
	return nil, nil, fmt.Errorf("login did not finish after 6 form submissions")
}

// firstForm returns the action and the named inputs of the first <form>.
func firstForm(page []byte) (string, url.Values, bool) {
	z := html.NewTokenizer(bytes.NewReader(page))
	var action string
	in := false
	vals := url.Values{}
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			return action, vals, in
		case html.StartTagToken, html.SelfClosingTagToken:
			name, _ := z.TagName()
			attrs := map[string]string{}
			for {
				k, v, more := z.TagAttr()
				attrs[string(k)] = string(v)
				if !more {
					break
				}
			}
			switch string(name) {
			case "form":
				if in {
					continue
				}
				in = true
				action = attrs["action"]
			case "input", "button":
				if in && attrs["name"] != "" && attrs["type"] != "checkbox" {
					vals.Set(attrs["name"], attrs["value"])
				}
			}
		case html.EndTagToken:
			if name, _ := z.TagName(); string(name) == "form" && in {
				return action, vals, true
			}
		}
	}
}
