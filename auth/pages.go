package auth

import (
	"encoding/json"
	"errors"
	"html/template"
	"net/http"

	"go.uber.org/zap"
)

// httpError is a failed sign-in step: the status and a message safe to
// show, and the cause for the log only.
type httpError struct {
	status int
	msg    string
	err    error
}

func (e *httpError) Error() string {
	if e.err == nil {
		return e.msg
	}
	return e.msg + ": " + e.err.Error()
}

func (e *httpError) Unwrap() error { return e.err }

func newHTTPError(status int, msg string, err error) *httpError {
	return &httpError{status: status, msg: msg, err: err}
}

// handle adapts a handler that returns an error: one place turns errors
// into pages and log lines.
func (a *Authenticator) handle(f func(http.ResponseWriter, *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		err := f(w, r)
		if err == nil {
			return
		}
		var he *httpError
		if !errors.As(err, &he) {
			he = newHTTPError(http.StatusInternalServerError, "Sign-in failed because of an internal error.", err)
		}
		level := zap.InfoLevel
		if he.status >= 500 {
			level = zap.ErrorLevel
		}
		if ce := a.logger.Check(level, "sign-in request failed"); ce != nil {
			ce.Write(zap.String("path", r.URL.Path), zap.Int("status", he.status), zap.Error(err))
		}
		a.renderPage(w, he.status, "Sign-in failed", he.msg, a.basePath+"/oauth2/login", "Sign in again")
	})
}

var pageTemplate = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}} - sparkgate</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font-family:sans-serif;max-width:40em;margin:4em auto;padding:0 1em;color:#222}</style>
</head><body><h1>{{.Title}}</h1><p>{{.Message}}</p>{{if .Link}}<p><a href="{{.Link}}">{{.LinkText}}</a></p>{{end}}</body></html>
`))

// renderPage writes a small HTML page; all values are escaped.
func (a *Authenticator) renderPage(w http.ResponseWriter, status int, title, msg, link, linkText string) {
	pageHeaders(w)
	w.WriteHeader(status)
	_ = pageTemplate.Execute(w, struct{ Title, Message, Link, LinkText string }{title, msg, link, linkText})
}

// pageHeaders sets the headers of every page auth writes. The CSP has no
// form-action: the sign-out form's answer may redirect to the provider.
func pageHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")
	w.Header().Set("X-Frame-Options", "DENY")
}

// writeJSONError writes {"error": msg} with the status.
func writeJSONError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}
