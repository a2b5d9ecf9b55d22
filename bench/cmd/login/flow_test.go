package main

import (
	"net/url"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFirstForm(t *testing.T) {
	tests := []struct {
		name       string
		page       string
		wantAction string
		wantFields url.Values
		wantOK     bool
	}{
		{
			name: "login form of the development interactions",
			page: `<html><body><form autocomplete="off" action="/interaction/abc/login" method="post">
<input type="hidden" name="prompt" value="login"/><input required type="text" name="login" placeholder="Enter any login" autofocus="on">
<input required type="password" name="password" placeholder="and password"><button type="submit">Sign-in</button></form>
<form action="/interaction/abc/abort"><input name="x" value="y"></form></body></html>`,
			wantAction: "/interaction/abc/login",
			wantFields: url.Values{"prompt": {"login"}, "login": {""}, "password": {""}},
			wantOK:     true,
		},
		{
			name:       "consent form",
			page:       `<form action="/interaction/abc/confirm" method="post"><input type="hidden" name="prompt" value="consent"/><button>Continue</button></form>`,
			wantAction: "/interaction/abc/confirm",
			wantFields: url.Values{"prompt": {"consent"}},
			wantOK:     true,
		},
		{name: "no form", page: `<p>signed in</p><input name="stray" value="1">`, wantFields: url.Values{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			action, fields, ok := firstForm([]byte(tt.page))
			if action != tt.wantAction || ok != tt.wantOK {
				t.Errorf("firstForm() = %q, %v; want %q, %v", action, ok, tt.wantAction, tt.wantOK)
			}
			if d := cmp.Diff(tt.wantFields, fields); d != "" {
				t.Errorf("firstForm() fields (-want +got):\n%s", d)
			}
		})
	}
}
