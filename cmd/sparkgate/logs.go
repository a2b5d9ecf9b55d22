package main

import (
	"io"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// logs holds the gateway's two loggers over one output. Every request
// logs two lines (access and authorization); written one write(2) each,
// they were a measurable share of a proxied page's CPU time. Those lines
// (Info and below of requests) are buffered and written at least every
// flushEvery; every other line, and anything of requests above Info,
// is written at once, after the buffered lines before it, so the output
// keeps its order and what operators and tests watch for (drivers found,
// errors) shows at once.
type logs struct {
	main     *zap.Logger
	requests *zap.Logger
	buf      *zapcore.BufferedWriteSyncer
}

// Buffer of the per-request lines: some hundred lines, and the longest
// they wait.
const (
	logBufferSize = 64 << 10
	flushEvery    = time.Second
)

// newLogs builds the loggers for c, writing to w; buffered lines wait at
// most every (flushEvery).
func newLogs(c LogConfig, w io.Writer, every time.Duration) (*logs, error) {
	zc, err := loggerConfig(c)
	if err != nil {
		return nil, err
	}
	var enc zapcore.Encoder
	if zc.Encoding == "json" {
		enc = zapcore.NewJSONEncoder(zc.EncoderConfig)
	} else {
		enc = zapcore.NewConsoleEncoder(zc.EncoderConfig)
	}
	// The destination is never fsynced: Sync means write out the buffer.
	buf := &zapcore.BufferedWriteSyncer{WS: zapcore.AddSync(struct{ io.Writer }{w}), Size: logBufferSize, FlushInterval: every}
	now := flushingWriter{buf}
	lvl := zc.Level
	// zap.Config.Build for its options (caller, stack traces, error
	// output), with the core replaced.
	main, err := zc.Build(zap.WrapCore(func(zapcore.Core) zapcore.Core { return zapcore.NewCore(enc, now, lvl) }))
	if err != nil {
		return nil, err
	}
	requests := main.WithOptions(zap.WrapCore(func(zapcore.Core) zapcore.Core {
		return zapcore.NewTee(
			zapcore.NewCore(enc, buf, zap.LevelEnablerFunc(func(l zapcore.Level) bool { return l <= zapcore.InfoLevel && lvl.Enabled(l) })),
			zapcore.NewCore(enc, now, zap.LevelEnablerFunc(func(l zapcore.Level) bool { return l > zapcore.InfoLevel && lvl.Enabled(l) })),
		)
	}))
	return &logs{main: main, requests: requests, buf: buf}, nil
}

// close writes out what is buffered and stops the flushing goroutine.
func (l *logs) close() {
	_ = l.main.Sync()
	_ = l.buf.Stop()
}

// flushingWriter writes a line at once, after what buf holds.
type flushingWriter struct{ buf *zapcore.BufferedWriteSyncer }

func (f flushingWriter) Write(p []byte) (int, error) {
	n, err := f.buf.Write(p)
	if err != nil {
		return n, err
	}
	return n, f.buf.Sync()
}

func (f flushingWriter) Sync() error { return f.buf.Sync() }
