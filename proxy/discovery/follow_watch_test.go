package discovery

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap/zaptest"
)

// watchRun runs fl with dw on a goroutine until the test ends and returns
// the channel of the changes its polls report.
func watchRun(t *testing.T, fl *follower, dw *dirWatch) <-chan logCandidates {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan logCandidates, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		fl.run(ctx, dw, func(cs []logCandidates) {
			for _, c := range cs {
				out <- c
			}
		})
	}()
	t.Cleanup(func() { cancel(); <-done; dw.close(); fl.closeAll() })
	return out
}

// expectURLs waits for the change of path and checks its URLs. The wait
// is a bound for a failing test, not a figure.
func expectURLs(t *testing.T, ch <-chan logCandidates, path string, want ...string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case c := <-ch:
			if c.path != path {
				continue
			}
			if got := urlStrings(c.urls); !cmp.Equal(got, want) {
				t.Errorf("%s: urls = %v; want %v", path, got, want)
			}
			return
		case <-deadline:
			t.Fatalf("%s: no change seen (want %v)", path, want)
		}
	}
}

// TestFollowerWatch: with every directory watched and the idle poll an
// hour away, the follower polls only when a directory changes, and sees
// every kind of change at once: a log written, appended to, created in a
// directory a wildcard matches later, in a directory created after the
// follower started, and through a symbolic link into another directory.
func TestFollowerWatch(t *testing.T) {
	t.Parallel()
	if !watchable {
		t.Skip("no file system watch on this platform")
	}
	dir := t.TempDir()
	if !localFS(dir) {
		t.Skipf("%s is not on a local file system: the follower polls it", dir)
	}
	for _, d := range []string{"flat", "links", "target"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	fl := newFollower([]LogSource{{Paths: []string{
		filepath.Join(dir, "flat", "*.log"),
		filepath.Join(dir, "apps", "*", "driver.log"),
		filepath.Join(dir, "later", "sub", "*.log"),
		filepath.Join(dir, "links", "*.log"),
	}, Host: "127.0.0.1"}}, zaptest.NewLogger(t))
	fl.idle = time.Hour
	dw := newDirWatch(zaptest.NewLogger(t))
	if dw == nil {
		t.Skip("no inotify here")
	}
	ch := watchRun(t, fl, dw)
	// Watched, and read once more for what came before the watch.
	eventually(t, "the directories to be watched", func() bool { return fl.watched.Load() && fl.polls.Load() >= 2 })

	// Idle: no poll at all.
	p0 := fl.polls.Load()
	time.Sleep(300 * time.Millisecond)
	if p := fl.polls.Load(); p != p0 {
		t.Errorf("%d polls while nothing changed and every directory is watched; want 0", p-p0)
	}

	a := filepath.Join(dir, "flat", "a.log")
	appendFile(t, a, line(portLine, "4040"))
	expectURLs(t, ch, a, "http://127.0.0.1:4040")
	appendFile(t, a, line(stoppedLine, "4040")+line(portLine, "4041"))
	expectURLs(t, ch, a, "http://127.0.0.1:4041")

	// A directory the wildcard matches, created after the follower
	// started, then the log in it.
	mkdirWatched(t, dw, filepath.Join(dir, "apps", "app-7"))
	d := filepath.Join(dir, "apps", "app-7", "driver.log")
	appendFile(t, d, line(portLine, "4050"))
	expectURLs(t, ch, d, "http://127.0.0.1:4050")

	// A pattern's directory two levels below what existed.
	mkdirWatched(t, dw, filepath.Join(dir, "later", "sub"))
	l := filepath.Join(dir, "later", "sub", "x.log")
	appendFile(t, l, line(portLine, "4060"))
	expectURLs(t, ch, l, "http://127.0.0.1:4060")

	// A link into a directory no pattern names: its target is written to.
	target := filepath.Join(dir, "target", "t.log")
	appendFile(t, target, "starting\n")
	link := filepath.Join(dir, "links", "t.log")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the link's target directory to be watched", func() bool {
		return slices.Contains(dw.w.WatchList(), filepath.Join(dir, "target"))
	})
	appendFile(t, target, line(portLine, "4070"))
	expectURLs(t, ch, link, "http://127.0.0.1:4070")
}

// mkdirWatched creates dir (and its parents) and waits until the follower
// watches it.
func mkdirWatched(t *testing.T, dw *dirWatch, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	eventually(t, dir+" to be watched", func() bool { return slices.Contains(dw.w.WatchList(), dir) })
}

// TestFollowerPollsSharedFS: a directory on a file system other hosts
// write to is not trusted to the watch: the follower keeps polling it and
// sees a log's lines without any event.
func TestFollowerPollsSharedFS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fl := newFollower([]LogSource{{Paths: []string{filepath.Join(dir, "*.log")}, Host: "127.0.0.1"}}, zaptest.NewLogger(t))
	fl.idle = time.Hour
	dw := newDirWatch(zaptest.NewLogger(t))
	if dw != nil {
		dw.local = func(string) bool { return false }
	}
	ch := watchRun(t, fl, dw)
	p0 := fl.polls.Load()
	eventually(t, "polls without any change", func() bool { return fl.polls.Load() >= p0+3 })
	if fl.watched.Load() {
		t.Error("a shared file system's directory counts as watched")
	}
	if dw != nil && len(dw.w.WatchList()) != 0 {
		t.Errorf("watching %v on a shared file system", dw.w.WatchList())
	}
	a := filepath.Join(dir, "a.log")
	appendFile(t, a, line(portLine, "4040"))
	expectURLs(t, ch, a, "http://127.0.0.1:4040")
}

// TestWantDirs: the directories a pattern needs watched, from what exists.
func TestWantDirs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, d := range []string{"a/x", "a/y", "b", "c/file.log"} {
		p := filepath.Join(dir, d)
		if filepath.Ext(p) == ".log" {
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				t.Fatal(err)
			}
			appendFile(t, p, "")
			continue
		}
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	fl := newFollower([]LogSource{{Paths: []string{
		filepath.Join(dir, "*", "*", "driver.log"), // dir, then a/, b/, c/, then a/x, a/y
		filepath.Join(dir, "b", "*.log"),
		filepath.Join(dir, "none", "deeper", "*.log"), // not there: its nearest ancestor
	}}}, zaptest.NewLogger(t))
	got := slices.Sorted(maps.Keys(fl.wantDirs()))
	want := []string{dir}
	for _, d := range []string{"a", "a/x", "a/y", "b", "c"} {
		want = append(want, filepath.Join(dir, d))
	}
	if !cmp.Equal(got, want) {
		t.Errorf("wantDirs = %v; want %v", got, want)
	}
}

func TestLocalFS(t *testing.T) {
	t.Parallel()
	if localFS(filepath.Join(t.TempDir(), "missing")) {
		t.Error("a missing directory counts as local")
	}
	if watchable && localFS("/proc") {
		t.Error("/proc counts as a local file system to watch")
	}
}
