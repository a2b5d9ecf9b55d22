package main

import (
	"bytes"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
)

// lockedBuffer is a bytes.Buffer the log's flushing goroutine and the test
// may share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.FieldsFunc(l.b.String(), func(r rune) bool { return r == '\n' })
}

func TestLogsBufferRequestLinesInOrder(t *testing.T) {
	for _, format := range []string{"console", "json"} {
		t.Run(format, func(t *testing.T) {
			var out lockedBuffer
			lg, err := newLogs(LogConfig{Format: format, Level: "info"}, &out, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			defer lg.close()
			access := lg.requests.Named("access")
			access.Info("request one")
			access.Debug("below the level")
			access.Info("request two")
			if got := out.lines(); len(got) != 0 {
				t.Fatalf("lines after two request lines = %q; want them buffered", got)
			}
			lg.main.Named("discovery").Info("driver found")
			got := out.lines()
			want := []string{"request one", "request two", "driver found"}
			if len(got) != len(want) {
				t.Fatalf("lines after a discovery line = %q; want %d lines", got, len(want))
			}
			for i, w := range want {
				if !strings.Contains(got[i], w) {
					t.Errorf("line %d = %q; want it to hold %q", i, got[i], w)
				}
			}

			// An error of the request path is written at once, after the
			// request lines before it.
			access.Info("request three")
			access.Error("panic serving request", zap.String("request_id", "x"))
			got = out.lines()
			if n := len(got); n != 5 || !strings.Contains(got[3], "request three") || !strings.Contains(got[4], "panic serving request") {
				t.Fatalf("lines after an error = %q; want request three, then the error", got)
			}

			access.Info("request four")
			lg.close()
			if got := out.lines(); len(got) != 6 || !strings.Contains(got[5], "request four") {
				t.Fatalf("lines after close = %q; want request four written", got)
			}
		})
	}
}

func TestLogsRefuseBadLevel(t *testing.T) {
	if _, err := newLogs(LogConfig{Format: "console", Level: "loud"}, &lockedBuffer{}, time.Second); err == nil {
		t.Fatal("newLogs(level loud) = nil error")
	}
}

// BenchmarkAccessLine is one access line written to a file as a request
// writes it: "buffered" through the request logger, "direct" through the
// main logger (one write(2) per line, as every line was before).
func BenchmarkAccessLine(b *testing.B) {
	for _, name := range []string{"buffered", "direct"} {
		b.Run(name, func(b *testing.B) {
			f, err := os.CreateTemp(b.TempDir(), "log")
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			lg, err := newLogs(LogConfig{Format: "console", Level: "info"}, f, flushEvery)
			if err != nil {
				b.Fatal(err)
			}
			defer lg.close()
			l := lg.main
			if name == "buffered" {
				l = lg.requests
			}
			l = l.Named("access").WithOptions(zap.WithCaller(false))
			b.ReportAllocs()
			for b.Loop() {
				l.Info("request", zap.String("request_id", "0123456789ab-1"), zap.String("method", "GET"),
					zap.String("path", "/app/app-20240101000000-0001/jobs/"), zap.String("app_id", "app-20240101000000-0001"),
					zap.String("user", "alice"), zap.Int("status", 200), zap.Int64("bytes", 18046), zap.Duration("duration", 1234567))
			}
		})
	}
}
