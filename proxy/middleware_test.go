package proxy

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

func TestMiddlewareRequestIDAndAccessLog(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	var seenID string
	h := Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seenID = r.Header.Get("X-Request-Id")
		if st := stateFrom(r.Context()); st != nil {
			st.appID, st.user = "local-1", "alice"
		}
		w.WriteHeader(http.StatusTeapot)
		_, _ = w.Write([]byte("12345"))
	}), zap.New(core), nil)

	tests := []struct {
		name, sent string
		keep       bool
	}{
		{"none", "", false},
		{"valid", "abcdef-0123456789", true},
		{"too short", "abc", false},
		{"log forging", "abcdefgh\"\nuser=root", false},
		{"too long", strings.Repeat("a", 65), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/app/local-1/jobs/", nil)
			if tt.sent != "" {
				r.Header.Set("X-Request-Id", tt.sent)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			got := w.Header().Get("X-Request-Id")
			if (got == tt.sent) != tt.keep || got == "" || got != seenID {
				t.Errorf("X-Request-Id sent %q: response %q, handler saw %q; keep=%v", tt.sent, got, seenID, tt.keep)
			}
			entries := logs.TakeAll()
			if len(entries) != 1 {
				t.Fatalf("access log has %d lines; want 1", len(entries))
			}
			m := entries[0].ContextMap()
			want := map[string]any{"request_id": got, "method": "GET", "path": "/app/local-1/jobs/", "app_id": "local-1", "user": "alice", "status": int64(418), "bytes": int64(5)}
			for k, v := range want {
				if m[k] != v {
					t.Errorf("access log %s = %v; want %v", k, m[k], v)
				}
			}
			if _, ok := m["duration"]; !ok {
				t.Error("access log has no duration")
			}
		})
	}
}

func TestMiddlewareRecoversPanic(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	h := Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }), zap.New(core), nil)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
	if w.Code != http.StatusInternalServerError {
		t.Errorf("panic answered %d; want 500", w.Code)
	}
	if n := logs.FilterMessage("panic serving request").Len(); n != 1 {
		t.Errorf("panic logged %d times; want 1", n)
	}
	defer func() {
		if p := recover(); p != http.ErrAbortHandler { //nolint:errorlint // sentinel
			t.Errorf("ErrAbortHandler recovered as %v; want it re-panicked", p)
		}
	}()
	Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) }), zap.NewNop(), nil).
		ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
}
