package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"golang.org/x/net/html"
)

// maxForms bounds the sign-in: the development provider shows a login form
// and a consent form.
const maxForms = 6

// result is where a sign-in ended.
type result struct {
	final  *url.URL
	status int
	forms  int
}

// signIn GETs start and, while the answer is a provider interaction page
// with a form, submits that form (filling login and password), following
// redirects with client's cookie jar.
func signIn(ctx context.Context, client *http.Client, start, user string) (result, error) {
	method, target, form := http.MethodGet, start, url.Values(nil)
	for n := 0; n <= maxForms; n++ {
		var body io.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		}
		req, err := http.NewRequestWithContext(ctx, method, target, body)
		if err != nil {
			return result{}, fmt.Errorf("building request: %w", err)
		}
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		resp, err := client.Do(req)
		if err != nil {
			return result{}, fmt.Errorf("%s %s: %w", method, target, err)
		}
		page, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
		_ = resp.Body.Close() // read-only body, already drained into page
		if err != nil {
			return result{}, fmt.Errorf("reading %s: %w", target, err)
		}
		final := resp.Request.URL
		action, fields, ok := firstForm(page)
		if !ok || !strings.Contains(final.Path, "/interaction/") {
			return result{final: final, status: resp.StatusCode, forms: n}, nil
		}
		if _, has := fields["login"]; has {
			fields.Set("login", user)
			fields.Set("password", "any")
		}
		next, err := final.Parse(action)
		if err != nil {
			return result{}, fmt.Errorf("form action %q: %w", action, err)
		}
		method, target, form = http.MethodPost, next.String(), fields
	}
	return result{}, fmt.Errorf("sign-in did not finish after %d forms", maxForms)
}

// firstForm returns the action and the named input fields (with their
// values) of the first form in page.
func firstForm(page []byte) (action string, fields url.Values, ok bool) {
	z := html.NewTokenizer(strings.NewReader(string(page)))
	fields = url.Values{}
	in := false
	for {
		switch z.Next() {
		case html.ErrorToken:
			return action, fields, ok
		case html.StartTagToken, html.SelfClosingTagToken:
			name, _ := z.TagName()
			attrs := attributes(z)
			switch string(name) {
			case "form":
				if ok {
					continue
				}
				in, ok, action = true, true, attrs["action"]
			case "input":
				if in && attrs["name"] != "" {
					fields.Set(attrs["name"], attrs["value"])
				}
			}
		case html.EndTagToken:
			if name, _ := z.TagName(); string(name) == "form" && in {
				return action, fields, ok
			}
		}
	}
}

func attributes(z *html.Tokenizer) map[string]string {
	m := map[string]string{}
	for {
		k, v, more := z.TagAttr()
		if len(k) > 0 {
			m[string(k)] = string(v)
		}
		if !more {
			return m
		}
	}
}
