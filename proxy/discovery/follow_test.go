package discovery

import (
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
)

const (
	portLine    = "26/11/29 13:57:10 INFO Utils: Successfully started service 'SparkUI' on port %s.\n"
	hostLine    = "26/11/29 13:57:10 INFO BlockManagerMaster: Registering BlockManager BlockManagerId(driver, 10.9.8.7, 40777, None)\n"
	stoppedLine = "26/11/29 13:57:14 INFO SparkUI: Stopped Spark web UI at http://10.9.8.7:%s\n"
)

func line(format, port string) string { return strings.Replace(format, "%s", port, 1) }

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func urlStrings(us []*url.URL) []string {
	var out []string
	for _, u := range us {
		out = append(out, u.String())
	}
	return out
}

// urlsOf returns the candidates for path after one poll.
func urlsOf(fl *follower, path string) (urls []string, stopped, changed bool) {
	for _, c := range fl.poll() {
		if c.path == path {
			return urlStrings(c.urls), c.stopped, true
		}
	}
	for _, c := range fl.current() {
		if c.path == path {
			return urlStrings(c.urls), false, false
		}
	}
	return nil, false, false
}

func TestFollowerGrowthHostAndStop(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "driver.log")
	fl := newFollower([]LogSource{{Paths: []string{filepath.Join(dir, "*.log")}, Host: "127.0.0.1"}}, zaptest.NewLogger(t))
	defer fl.closeAll()

	if got := fl.poll(); len(got) != 0 {
		t.Fatalf("poll() on an empty dir = %v; want nothing", got)
	}
	appendFile(t, p, "noise\n"+line(portLine, "4047")[:30]) // a partial line
	if urls, _, _ := urlsOf(fl, p); len(urls) != 0 {
		t.Fatalf("after a partial line: urls = %v; want none", urls)
	}
	appendFile(t, p, line(portLine, "4047")[30:])
	urls, _, changed := urlsOf(fl, p)
	if want := []string{"http://127.0.0.1:4047"}; !changed || !cmp.Equal(urls, want) {
		t.Fatalf("after the port line: urls = %v (changed %v); want %v", urls, changed, want)
	}
	appendFile(t, p, hostLine)
	urls, _, _ = urlsOf(fl, p)
	if want := []string{"http://10.9.8.7:4047", "http://127.0.0.1:4047"}; !cmp.Equal(urls, want) {
		t.Fatalf("after the host hint: urls = %v; want %v", urls, want)
	}
	if got := fl.poll(); len(got) != 0 {
		t.Errorf("poll() without new bytes = %v; want no change", got)
	}
	appendFile(t, p, line(stoppedLine, "4047"))
	urls, stopped, changed := urlsOf(fl, p)
	if !changed || !stopped || len(urls) != 0 {
		t.Errorf("after Stopped: urls = %v, stopped = %v, changed = %v; want none, true, true", urls, stopped, changed)
	}
}

func TestFollowerRotation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "driver.log")
	fl := newFollower([]LogSource{{Paths: []string{p}, Host: "127.0.0.1"}}, zaptest.NewLogger(t))
	defer fl.closeAll()

	appendFile(t, p, line(portLine, "4040"))
	if urls, _, _ := urlsOf(fl, p); !cmp.Equal(urls, []string{"http://127.0.0.1:4040"}) {
		t.Fatalf("urls = %v; want port 4040", urls)
	}
	// The old file gets a last line after the poll, then is renamed away
	// and a new file starts: both lines must be read.
	appendFile(t, p, line(stoppedLine, "4040"))
	if err := os.Rename(p, p+".1"); err != nil {
		t.Fatal(err)
	}
	appendFile(t, p, line(portLine, "4050"))
	var sawStop bool
	var last []string
	for _, c := range fl.poll() {
		if c.path == p {
			sawStop = sawStop || c.stopped
			last = urlStrings(c.urls)
		}
	}
	if want := []string{"http://127.0.0.1:4050"}; !cmp.Equal(last, want) {
		t.Errorf("after rotation: urls = %v; want %v", last, want)
	}
	if !sawStop {
		t.Errorf("the Stopped line written to the old file before rotation was not read")
	}
}

func TestFollowerTruncation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "driver.log")
	fl := newFollower([]LogSource{{Paths: []string{p}, Host: "127.0.0.1"}}, zaptest.NewLogger(t))
	defer fl.closeAll()

	appendFile(t, p, strings.Repeat("some long preamble line\n", 20)+line(portLine, "4040"))
	if urls, _, _ := urlsOf(fl, p); !cmp.Equal(urls, []string{"http://127.0.0.1:4040"}) {
		t.Fatalf("urls = %v; want port 4040", urls)
	}
	// `2> driver.log` again: same inode, truncated, shorter content.
	if err := os.WriteFile(p, []byte(line(portLine, "4052")), 0o600); err != nil {
		t.Fatal(err)
	}
	if urls, _, _ := urlsOf(fl, p); !cmp.Equal(urls, []string{"http://127.0.0.1:4052"}) {
		t.Errorf("after truncation: urls = %v; want port 4052", urls)
	}
}

// TestFollowerRewrittenPastOffset: the next run reuses `2> driver.log` and
// writes more than the old run had before the follower polls again. The
// size never drops below the old offset, so only the changed head shows it.
func TestFollowerRewrittenPastOffset(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "driver.log")
	fl := newFollower([]LogSource{{Paths: []string{p}, Host: "127.0.0.1"}}, zaptest.NewLogger(t))
	defer fl.closeAll()

	appendFile(t, p, "26/11/29 14:00:01 INFO SparkContext: Running Spark version 3.5.9\n"+line(portLine, "4040"))
	if urls, _, _ := urlsOf(fl, p); !cmp.Equal(urls, []string{"http://127.0.0.1:4040"}) {
		t.Fatalf("urls = %v; want port 4040", urls)
	}
	// The new run's port line sits before the old offset; what follows it
	// grows the file past that offset before the next poll.
	next := "26/11/29 14:05:07 INFO SparkContext: Running Spark version 3.5.9\n" + line(portLine, "4052") +
		strings.Repeat("26/11/29 14:05:08 INFO ResourceUtils: ==============\n", 10)
	if err := os.WriteFile(p, []byte(next), 0o600); err != nil {
		t.Fatal(err)
	}
	if urls, _, _ := urlsOf(fl, p); !cmp.Equal(urls, []string{"http://127.0.0.1:4052"}) {
		t.Errorf("after the file was rewritten past the old offset: urls = %v; want port 4052", urls)
	}
}

func TestFollowerLongLineAndGlobChanges(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fl := newFollower([]LogSource{{Paths: []string{filepath.Join(dir, "*.log")}, Host: "h1"}}, zaptest.NewLogger(t))
	defer fl.closeAll()
	p := filepath.Join(dir, "a.log")
	// A line far over the limit, then a real one: the real one must count,
	// the long one must not be taken for a port line from its tail.
	long := strings.Repeat("x", 3*maxLineLen) + line(portLine, "4999")
	appendFile(t, p, long+line(portLine, "4041"))
	if urls, _, _ := urlsOf(fl, p); !cmp.Equal(urls, []string{"http://h1:4041"}) {
		t.Fatalf("urls = %v; want only port 4041", urls)
	}
	if len(fl.files[p].partial) != 0 {
		t.Errorf("partial buffer holds %d bytes after complete lines", len(fl.files[p].partial))
	}
	// A file appearing later is picked up by the glob.
	q := filepath.Join(dir, "b.log")
	appendFile(t, q, line(portLine, "4042"))
	if urls, _, _ := urlsOf(fl, q); !cmp.Equal(urls, []string{"http://h1:4042"}) {
		t.Errorf("new file: urls = %v; want port 4042", urls)
	}
	// A deleted file is forgotten.
	os.Remove(q)
	fl.poll()
	if _, ok := fl.files[q]; ok {
		t.Errorf("deleted file %s is still followed", q)
	}
}

func TestFollowPoll(t *testing.T) {
	t.Parallel()
	tests := []struct {
		files int
		want  time.Duration
	}{
		{0, followFast}, {1, followFast}, {followFastMax, followFast},
		{followFastMax + 1, followSlow}, {maxFollowed, followSlow},
	}
	for _, tt := range tests {
		if got := followPoll(tt.files); got != tt.want {
			t.Errorf("followPoll(%d) = %v; want %v", tt.files, got, tt.want)
		}
	}
	if followFast > 50*time.Millisecond {
		t.Errorf("followFast = %v; a new SparkUI line should be read within 50 ms", followFast)
	}
}

// current returns the candidates of every followed file.
func (fl *follower) current() []logCandidates {
	out := make([]logCandidates, 0, len(fl.files))
	for p, st := range fl.files {
		if len(st.lastSent) > 0 {
			out = append(out, logCandidates{path: p, urls: rootURLs(st.lastSent), appHint: st.appHint})
		}
	}
	return out
}

// BenchmarkFollowerIdle is one poll of 128 driver logs, none of which
// changed: what following them costs while nothing happens (followFast
// polls 20 times a second).
func BenchmarkFollowerIdle(b *testing.B) {
	dir := b.TempDir()
	for i := range followFastMax {
		p := filepath.Join(dir, "driver-"+strconv.Itoa(i)+".log")
		if err := os.WriteFile(p, []byte(strings.Repeat("26/11/29 13:57:09 INFO SparkContext: preamble\n", 40)+line(portLine, strconv.Itoa(4040+i))), 0o600); err != nil {
			b.Fatal(err)
		}
		old := time.Now().Add(-time.Minute)
		if err := os.Chtimes(p, old, old); err != nil {
			b.Fatal(err)
		}
	}
	old := time.Now().Add(-time.Minute)
	if err := os.Chtimes(dir, old, old); err != nil {
		b.Fatal(err)
	}
	fl := newFollower([]LogSource{{Paths: []string{filepath.Join(dir, "*.log")}, Host: "127.0.0.1"}}, zap.NewNop())
	defer fl.closeAll()
	if got := len(fl.poll()); got != followFastMax {
		b.Fatalf("first poll: %d files with candidates; want %d", got, followFastMax)
	}
	b.ReportAllocs()
	for b.Loop() {
		if got := fl.poll(); len(got) != 0 {
			b.Fatalf("an idle poll reported %d changes", len(got))
		}
	}
}

// TestFollowerIdleStat: a log and a directory last modified long ago are
// not read again while their stat is unchanged, yet every change shows:
// lines appended, a log added, and a log rewritten within the clock tick
// of its last read (same size, same modification time: the racy case).
func TestFollowerIdleStat(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "a.log")
	appendFile(t, p, line(portLine, "4040"))
	old := time.Now().Add(-time.Hour)
	for _, x := range []string{p, dir} {
		if err := os.Chtimes(x, old, old); err != nil {
			t.Fatal(err)
		}
	}
	fl := newFollower([]LogSource{{Paths: []string{filepath.Join(dir, "*.log")}, Host: "127.0.0.1"}}, zaptest.NewLogger(t))
	defer fl.closeAll()
	if urls, _, _ := urlsOf(fl, p); !cmp.Equal(urls, []string{"http://127.0.0.1:4040"}) {
		t.Fatalf("urls = %v; want port 4040", urls)
	}
	if st := fl.files[p]; !fl.unchanged(st) {
		t.Errorf("a log untouched for an hour is read again each poll (mtime %v, read at %v)", st.mtime, st.readAt)
	}
	if got := fl.poll(); len(got) != 0 {
		t.Errorf("an idle poll reported %v", got)
	}
	// Appended: the size and the time move.
	appendFile(t, p, line(stoppedLine, "4040")+line(portLine, "4041"))
	if urls, _, _ := urlsOf(fl, p); !cmp.Equal(urls, []string{"http://127.0.0.1:4041"}) {
		t.Errorf("after appending: urls = %v; want port 4041", urls)
	}
	// A log added to a directory listed an hour ago.
	q := filepath.Join(dir, "b.log")
	appendFile(t, q, line(portLine, "4050"))
	if urls, _, _ := urlsOf(fl, q); !cmp.Equal(urls, []string{"http://127.0.0.1:4050"}) {
		t.Errorf("new log: urls = %v; want port 4050", urls)
	}
	// Rewritten in place, the same size, and its time set back to what the
	// last read saw, as a coarse clock would leave it within one tick: the
	// last read was within the tick, so the log is read again and the
	// changed head shows the rewrite.
	mtime := fl.files[q].mtime
	if err := os.WriteFile(q, []byte(line(portLine, "4051")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(q, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	if urls, _, _ := urlsOf(fl, q); !cmp.Equal(urls, []string{"http://127.0.0.1:4051"}) {
		t.Errorf("rewritten within the clock tick of the last read: urls = %v; want port 4051", urls)
	}
}

// TestLogFloodWaitsItsTurn: the followed files are capped at maxFollowed.
// First come, first served, one user who may write where the gateway
// looks (their own drivers' logs must be found there) created that many
// empty files, and every other team's new driver log was skipped from then
// on. A full follower now shares the files between owners: another
// owner's log takes the place of one of the flooder's (one naming no UI),
// and the flooder's own next files wait.
func TestLogFloodWaitsItsTurn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	flood := func(i int) string { return filepath.Join(dir, "a"+strconv.Itoa(i)+".log") }
	for i := range maxFollowed + 1 {
		if err := os.WriteFile(flood(i), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// One of the flooder's files names a UI, which stays followed.
	appendFile(t, flood(0), line(portLine, "4040"))
	fl := newFollower([]LogSource{{Paths: []string{filepath.Join(dir, "*.log")}, Host: "127.0.0.1"}}, zap.NewNop())
	fl.ownerOf = func(p string) uint32 {
		if strings.HasPrefix(filepath.Base(p), "a") {
			return 1000
		}
		return 1001
	}
	fl.poll()
	if len(fl.files) != maxFollowed {
		t.Fatalf("following %d files; want %d", len(fl.files), maxFollowed)
	}
	victim := filepath.Join(dir, "victim.log")
	appendFile(t, victim, line(portLine, "4041"))
	time.Sleep(racyWindow + 100*time.Millisecond) // past the directory listing's racy window
	var got []logCandidates
	for range 3 {
		got = append(got, fl.poll()...)
	}
	found := false
	for _, c := range got {
		found = found || (c.path == victim && len(c.urls) > 0)
		if c.path != victim {
			t.Errorf("the poll withdrew or sent %s's UIs; want only victim.log's", c.path)
		}
	}
	if !found {
		t.Errorf("victim.log's SparkUI line was not read: %d files of one owner fill the follower", maxFollowed)
	}
	if len(fl.files) != maxFollowed || fl.owners[1000] != maxFollowed-1 || fl.owners[1001] != 1 {
		t.Errorf("following %d files, %v by owner; want %d, one the victim's", len(fl.files), fl.owners, maxFollowed)
	}
	if fl.files[flood(0)] == nil {
		t.Errorf("the flooder's file that names a UI was dropped; want one naming none")
	}
	// The flooder's own file waits: one owner does not displace itself.
	if err := os.WriteFile(flood(maxFollowed+1), []byte(line(portLine, "4042")), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(racyWindow + 100*time.Millisecond)
	fl.poll()
	if fl.files[flood(maxFollowed+1)] != nil || fl.files[victim] == nil {
		t.Errorf("a new file of the owner with the most took a place")
	}
}
