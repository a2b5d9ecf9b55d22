//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"
)

// LogWatch follows a growing log file and remembers when each line was first
// seen, so tests can time what happens after a line is written.
type LogWatch struct {
	path string
	mu   sync.Mutex
	seen []seenLine
	stop chan struct{}
}

type seenLine struct {
	text string
	at   time.Time
}

// WatchLog starts following path every 20 ms until Close.
func WatchLog(path string) *LogWatch {
	w := &LogWatch{path: path, stop: make(chan struct{})}
	go w.loop()
	return w
}

func (w *LogWatch) loop() {
	var off int64
	var partial string
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		off, partial = w.readFrom(off, partial)
		select {
		case <-w.stop:
			return
		case <-t.C:
		}
	}
}

func (w *LogWatch) readFrom(off int64, partial string) (int64, string) {
	f, err := os.Open(w.path)
	if err != nil {
		return off, partial
	}
	defer f.Close()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return off, partial
	}
	data, err := io.ReadAll(bufio.NewReader(f))
	if err != nil || len(data) == 0 {
		return off, partial
	}
	now := time.Now()
	text := partial + string(data)
	lines := strings.Split(text, "\n")
	partial = lines[len(lines)-1]
	w.mu.Lock()
	for _, l := range lines[:len(lines)-1] {
		w.seen = append(w.seen, seenLine{text: l, at: now})
	}
	w.mu.Unlock()
	return off + int64(len(data)), partial
}

// Find returns the first submatches of re among the lines seen so far and
// when that line was seen.
func (w *LogWatch) Find(re *regexp.Regexp) ([]string, time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, l := range w.seen {
		if m := re.FindStringSubmatch(l.text); m != nil {
			return m, l.at, true
		}
	}
	return nil, time.Time{}, false
}

// WaitFor waits until a line matches re; exited, when not nil, ends the wait
// early with an error (the process died).
func (w *LogWatch) WaitFor(ctx context.Context, re *regexp.Regexp, exited func() bool) ([]string, time.Time, error) {
	for {
		if m, at, ok := w.Find(re); ok {
			return m, at, nil
		}
		if exited != nil && exited() {
			// One more read: the line may have been written just before exit.
			time.Sleep(50 * time.Millisecond)
			if m, at, ok := w.Find(re); ok {
				return m, at, nil
			}
			return nil, time.Time{}, fmt.Errorf("process exited before %q appeared in %s", re, w.path)
		}
		select {
		case <-ctx.Done():
			return nil, time.Time{}, fmt.Errorf("waiting for %q in %s: %w", re, w.path, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Tail returns the last n lines seen, for failure messages.
func (w *LogWatch) Tail(n int) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	start := len(w.seen) - n
	if start < 0 {
		start = 0
	}
	var b strings.Builder
	for _, l := range w.seen[start:] {
		b.WriteString(l.text)
		b.WriteByte('\n')
	}
	return b.String()
}

// Close stops following the file.
func (w *LogWatch) Close() { close(w.stop) }
