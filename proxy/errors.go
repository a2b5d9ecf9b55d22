package proxy

import (
	"errors"
	"fmt"
	"net/http"
)

// httpError is an error a handler returns to have the adapter answer it.
// Msg is safe to show to the client; Cause is for the log only and may
// hold addresses or upstream messages the client must not see.
type httpError struct {
	Status int
	Msg    string
	AppID  string
	Cause  error

	// Optional parts of the page, used by some statuses.
	Title      string   // page heading; defaults to the status text
	Reasons    []string // 403: why the policy said no
	Grant      string   // 403: how access is granted
	Ask        []string // 403: who may grant it or help
	User       string   // 403: who was judged
	Groups     []string // 403: the groups judged
	RetryAfter int      // 503: seconds; also makes the HTML page refresh itself
	Allow      string   // 405: the Allow header
}

func (e *httpError) Error() string {
	if e.Cause != nil {
		return fmt.Sprintf("%d %s: %v", e.Status, e.Msg, e.Cause)
	}
	return fmt.Sprintf("%d %s", e.Status, e.Msg)
}

func (e *httpError) Unwrap() error { return e.Cause }

// errorf builds an httpError with a client-safe message.
func errorf(status int, format string, args ...any) *httpError {
	return &httpError{Status: status, Msg: fmt.Sprintf(format, args...)}
}

// asHTTPError turns any handler error into an httpError: a RequestError
// from routing keeps its status and message, anything else is a 500 whose
// cause is logged but not shown.
func asHTTPError(err error) *httpError {
	var he *httpError
	if errors.As(err, &he) {
		return he
	}
	var re *RequestError
	if errors.As(err, &re) {
		return &httpError{Status: re.Status, Msg: re.Msg}
	}
	return &httpError{Status: http.StatusInternalServerError, Msg: "internal error", Cause: err}
}
