package discovery

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Follower limits.
const (
	followFast    = 50 * time.Millisecond  // poll period while few files are followed
	followSlow    = 200 * time.Millisecond // and while many are (a few syscalls per file per poll)
	followFastMax = 128                    // files followed at followFast at most
	maxLineLen    = 16 << 10               // longer lines are cut; no UI line comes near (held per file: 64 MiB for maxFollowed)
	readPerPoll   = 16 << 20               // per file, so a huge backlog cannot stall a poll
	maxFollowed   = 4096                   // open files; more matches wait, shared fairly between owners (makeRoom)
	readChunkSize = 64 << 10
)

// logCandidates is what the follower currently believes about one log file:
// the UI URLs to try, best first. Empty means no live UI (none seen yet or
// the last one was stopped).
type logCandidates struct {
	path    string
	urls    []*url.URL // checked by rootURL
	stopped bool       // the change was a Stopped line
	appHint string     // the app id the log names, "" until its line; the driver must report it
}

// fileState follows one path.
type fileState struct {
	path    string
	src     *LogSource
	owner   uint32 // the file's owner (uid) when first followed
	f       *os.File
	info    os.FileInfo // of the open file, for rotation checks
	offset  int64
	partial []byte
	discard bool // inside an over-long line: drop until newline
	// head is the file's first bytes as read, a fingerprint: a file that
	// was truncated and has grown past offset again between two polls
	// (`2> driver.log` reused by the next run) has a different head.
	head []byte

	hostHint string
	uiURL    string // from a URL line
	uiPort   int    // from a port line
	scheme   string
	appHint  string // from the log's own app-id line (event log name, master or RM id)
	lastSent []string
	changed  bool
	stopped  bool
	// mtime is the path's modification time as the last read found it
	// (zero: unknown), readAt when that read began (unchanged).
	mtime, readAt time.Time
	// realDir is the directory of the file opened, when path is a
	// symbolic link to another: watched too (wantDirs).
	realDir string
}

// follower reads driver logs. It is driven by poll and is not safe for
// concurrent use.
type follower struct {
	sources []LogSource
	files   map[string]*fileState
	globs   map[string]globbed // by pattern (glob)
	seen    map[string]bool    // poll's, kept for the next poll's use
	logger  *zap.Logger
	buf     []byte
	warned  bool
	// owners counts the followed files by owner; waiting holds the owner
	// of each match left waiting for room (while it matches), so that a
	// full follower stats it once, not every poll.
	owners  map[uint32]int
	waiting map[string]uint32
	ownerOf func(path string) uint32
	// filesChanged: a poll began or stopped following a file, or opened
	// one anew (run watches their directories again).
	filesChanged bool
	polls        atomic.Int64 // polls run, for tests and figures
	watched      atomic.Bool  // every directory needed is watched (run)
	idle         time.Duration
}

// followPoll is the wait between two polls while n files are followed:
// short when few are, so that a new SparkUI line is read within 50 ms,
// longer when reading every file that often would cost real CPU.
func followPoll(n int) time.Duration {
	if n <= followFastMax {
		return followFast
	}
	return followSlow
}

func newFollower(sources []LogSource, logger *zap.Logger) *follower {
	return &follower{sources: sources, files: map[string]*fileState{}, globs: map[string]globbed{}, seen: map[string]bool{}, logger: logger, buf: make([]byte, readChunkSize), idle: followIdle,
		owners: map[uint32]int{}, waiting: map[string]uint32{}, ownerOf: pathOwner}
}

// poll re-evaluates the globs, reads what each file gained and returns the
// files whose candidates changed.
func (fl *follower) poll() []logCandidates {
	seen := fl.seen
	clear(seen)
	var out []logCandidates
	for i := range fl.sources {
		src := &fl.sources[i]
		for _, pat := range src.Paths {
			matches, err := fl.glob(pat)
			if err != nil {
				continue // Validate rejects bad patterns
			}
			for _, p := range matches {
				if seen[p] {
					continue
				}
				seen[p] = true
				st := fl.files[p]
				if st == nil {
					owner, known := fl.waiting[p]
					if !known {
						owner = fl.ownerOf(p)
					}
					if len(fl.files) >= maxFollowed && !fl.makeRoom(owner, &out) {
						if !fl.warned {
							fl.logger.Warn("too many log files; the rest wait for room", zap.Int("limit", maxFollowed))
							fl.warned = true
						}
						fl.waiting[p] = owner
						continue
					}
					delete(fl.waiting, p)
					st = &fileState{path: p, src: src, owner: owner}
					fl.files[p] = st
					fl.owners[owner]++
					fl.filesChanged = true
				}
				fl.readFile(st)
			}
		}
	}
	for p := range fl.waiting {
		if !seen[p] {
			delete(fl.waiting, p)
		}
	}
	for p, st := range fl.files {
		if !seen[p] {
			// Gone from the globs: read what is left, then forget it.
			fl.readFile(st)
			fl.forget(st, &out)
			continue
		}
		if st.changed {
			st.changed = false
			urls := st.candidates()
			if !slices.Equal(urls, st.lastSent) || st.stopped {
				out = append(out, logCandidates{path: p, urls: rootURLs(urls), stopped: st.stopped, appHint: st.appHint})
				st.lastSent = urls
			}
			st.stopped = false
		}
	}
	return out
}

// makeRoom makes room, in a full follower, for a file of owner by
// forgetting one of the owner's with the most files, if that owner has
// two more than owner: the files are shared fairly between the users who
// write logs where the gateway looks, and one who created thousands no
// longer hides every other team's new driver logs. It prefers a file
// that names no UI, and reports whether it made room.
func (fl *follower) makeRoom(owner uint32, out *[]logCandidates) bool {
	top, most := owner, fl.owners[owner]
	for o, n := range fl.owners {
		if n > most {
			top, most = o, n
		}
	}
	if most < fl.owners[owner]+2 {
		return false
	}
	var drop *fileState
	for _, st := range fl.files {
		if st.owner == top && (drop == nil || len(st.lastSent) == 0) {
			drop = st
			if len(st.lastSent) == 0 {
				break
			}
		}
	}
	fl.forget(drop, out)
	return true
}

// forget stops following st, withdrawing the UIs it named.
func (fl *follower) forget(st *fileState, out *[]logCandidates) {
	st.close()
	delete(fl.files, st.path)
	if fl.owners[st.owner]--; fl.owners[st.owner] == 0 {
		delete(fl.owners, st.owner)
	}
	fl.filesChanged = true
	if len(st.lastSent) > 0 {
		*out = append(*out, logCandidates{path: st.path})
	}
}

// globbed is a pattern's matches as last listed, with the modification
// time its directory had then and when that listing began.
type globbed struct {
	matches       []string
	mtime, listAt time.Time
}

// glob is filepath.Glob, but a pattern whose wildcards are all in its
// last element is listed again only when its directory changed (created,
// removed or renamed a name): one stat a poll for an idle directory of
// hundreds of logs, not a read of all its names.
func (fl *follower) glob(pat string) ([]string, error) {
	dir := filepath.Dir(pat)
	if hasMeta(dir) || !hasMeta(filepath.Base(pat)) {
		return filepath.Glob(pat)
	}
	listAt := time.Now()
	fi, err := os.Stat(dir)
	if err != nil {
		delete(fl.globs, pat)
		return filepath.Glob(pat)
	}
	m := fi.ModTime()
	if g, ok := fl.globs[pat]; ok && m.Equal(g.mtime) && m.Before(g.listAt.Add(-racyWindow)) {
		return g.matches, nil
	}
	matches, err := filepath.Glob(pat)
	if err == nil {
		fl.globs[pat] = globbed{matches: matches, mtime: m, listAt: listAt}
	}
	return matches, err
}

// hasMeta reports whether path holds any of filepath.Match's special
// characters.
func hasMeta(path string) bool { return strings.ContainsAny(path, `*?[\`) }

func (fl *follower) closeAll() {
	for _, st := range fl.files {
		st.close()
	}
}

func (st *fileState) close() {
	if st.f != nil {
		_ = st.f.Close() // opened read-only; nothing to lose
		st.f = nil
	}
}

// racyWindow is how long before a read a file's modification time must
// lie for the time to vouch that nothing changed since: a write in the
// same tick of a coarse file-system clock keeps it (git's "racy" rule).
const racyWindow = time.Second

// readFile reads new bytes, following rotation and truncation.
func (fl *follower) readFile(st *fileState) {
	if st.f == nil {
		if !fl.open(st) {
			return
		}
	} else if fl.unchanged(st) {
		return
	}
	readAt := time.Now()
	defer func() { st.readAt = readAt }()
	if fl.rewritten(st) {
		st.offset, st.partial, st.discard, st.head = 0, st.partial[:0], false, st.head[:0]
	}
	// Drain the open file first: after a rename-rotation its tail belongs
	// to the same driver.
	fl.drain(st)
	fl.keepHead(st)
	cur, err := os.Stat(st.path)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			fl.logger.Debug("stat log", zap.String("path", st.path), zap.Error(err))
		}
		return
	}
	st.mtime = cur.ModTime()
	if !os.SameFile(cur, st.info) {
		st.mtime = time.Time{}
		fl.flushPartial(st)
		st.close()
		if fl.open(st) {
			fl.drain(st)
		}
		return
	}
	if fi, err := st.f.Stat(); err == nil && fi.Size() < st.offset {
		// Truncated in place (copytruncate, or `2> file` reopened by a
		// new run): start again from the top.
		st.offset, st.partial, st.discard, st.head = 0, st.partial[:0], false, st.head[:0]
		fl.drain(st)
		fl.keepHead(st)
	}
}

// unchanged reports, from one stat of its path, that st's file has not
// changed since it was last read: the same file, of the size read, last
// modified well before that read. An idle log then costs one system call a
// poll, not the five of a read.
func (fl *follower) unchanged(st *fileState) bool {
	cur, err := os.Stat(st.path)
	if err != nil || st.mtime.IsZero() {
		return false
	}
	m := cur.ModTime()
	return os.SameFile(cur, st.info) && cur.Size() == st.offset && m.Equal(st.mtime) && m.Before(st.readAt.Add(-racyWindow))
}

// headLen is how much of a file's start is kept as its fingerprint: enough
// to reach past a constant first line into timestamped ones.
const headLen = 1024

// rewritten reports whether the open file's first bytes differ from those
// read before: it was truncated in place and written anew, possibly past
// the old offset, so the size check alone would miss it.
func (fl *follower) rewritten(st *fileState) bool {
	if len(st.head) == 0 {
		return false
	}
	buf := fl.buf[:len(st.head)]
	n, err := st.f.ReadAt(buf, 0)
	if n < len(st.head) {
		return err == nil || errors.Is(err, io.EOF)
	}
	return !bytes.Equal(buf, st.head)
}

// keepHead records up to headLen bytes of the file's start once read.
func (fl *follower) keepHead(st *fileState) {
	want := min(int64(headLen), st.offset)
	if int64(len(st.head)) >= want {
		return
	}
	buf := make([]byte, want)
	if n, _ := st.f.ReadAt(buf, 0); int64(n) == want {
		st.head = buf
	}
}

func (fl *follower) open(st *fileState) bool {
	f, err := os.Open(st.path)
	if err != nil {
		return false
	}
	info, err := f.Stat()
	if err != nil || !info.Mode().IsRegular() {
		_ = f.Close() // opened read-only; nothing to lose
		return false
	}
	st.f, st.info, st.offset, st.partial, st.discard, st.head = f, info, 0, st.partial[:0], false, nil
	realDir := ""
	if target, err := filepath.EvalSymlinks(st.path); err == nil && filepath.Dir(target) != filepath.Dir(st.path) {
		realDir = filepath.Dir(target)
	}
	if realDir != st.realDir {
		st.realDir, fl.filesChanged = realDir, true
	}
	return true
}

// drain reads from offset to EOF (up to readPerPoll) and parses whole lines.
func (fl *follower) drain(st *fileState) {
	var total int
	for total < readPerPoll {
		n, err := st.f.ReadAt(fl.buf, st.offset)
		if n > 0 {
			st.offset += int64(n)
			total += n
			fl.feed(st, fl.buf[:n])
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				fl.logger.Debug("read log", zap.String("path", st.path), zap.Error(err))
			}
			return
		}
	}
}

func (fl *follower) feed(st *fileState, b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			if !st.discard {
				room := maxLineLen - len(st.partial)
				if len(b) > room {
					// Keep the head (where every message we want starts)
					// and drop the rest of the line.
					st.partial = append(st.partial, b[:room]...)
					st.discard = true
				} else {
					st.partial = append(st.partial, b...)
				}
			}
			return
		}
		if st.discard {
			fl.line(st, st.partial)
			st.partial, st.discard = st.partial[:0], false
		} else if len(st.partial) > 0 {
			st.partial = append(st.partial, b[:min(i, maxLineLen-len(st.partial))]...)
			fl.line(st, st.partial)
			st.partial = st.partial[:0]
		} else {
			fl.line(st, b[:min(i, maxLineLen)])
		}
		b = b[i+1:]
	}
}

// flushPartial parses a last line that ended without a newline, when its
// file is rotated away.
func (fl *follower) flushPartial(st *fileState) {
	if len(st.partial) > 0 {
		fl.line(st, st.partial)
		st.partial, st.discard = st.partial[:0], false
	}
}

func (fl *follower) line(st *fileState, b []byte) {
	b = bytes.TrimRight(b, "\r")
	ev, ok := ParseLine(string(b))
	if !ok {
		return
	}
	switch ev.Kind {
	case EventUIPort:
		// A new UI is a new app: its id line comes after the UI line.
		st.uiURL, st.uiPort, st.scheme, st.appHint = "", ev.Port, ev.Scheme, ""
		st.changed = true
	case EventUIURL:
		st.uiURL, st.uiPort, st.appHint = ev.URL, 0, ""
		st.changed = true
	case EventUIStopped:
		st.uiURL, st.uiPort, st.appHint = "", 0, ""
		st.changed, st.stopped = true, true
	case EventHost:
		if st.hostHint != ev.Host {
			st.hostHint = ev.Host
			st.changed = true
		}
	case EventAppID:
		// The log names its app: the driver at its UI must report this id.
		if st.appHint != ev.AppID {
			st.appHint = ev.AppID
			st.changed = true
		}
	}
}

// candidates lists the URLs to try, best first: the URL from the line,
// then the same port on the log's host hint, then on the source's host.
func (st *fileState) candidates() []string {
	var out []string
	add := func(s string) {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	port, scheme := st.uiPort, st.scheme
	if st.uiURL != "" {
		add(st.uiURL)
		if u, ok := splitURLPort(st.uiURL); ok {
			port, scheme = u.port, u.scheme
		}
	}
	if port == 0 {
		return out
	}
	hostURL := func(h string) string {
		if h == "" {
			return ""
		}
		return scheme + "://" + net.JoinHostPort(h, strconv.Itoa(port))
	}
	add(hostURL(st.hostHint))
	add(hostURL(st.src.Host))
	return out
}

// rootURLs parses the URLs that pass rootURL and drops the others.
func rootURLs(ss []string) []*url.URL {
	var out []*url.URL
	for _, s := range ss {
		if u, err := parseRootURL(s); err == nil {
			out = append(out, u)
		}
	}
	return out
}

type schemePort struct {
	scheme string
	port   int
}

// splitURLPort returns the scheme and port of a root UI URL (no path);
// URLs with a path (a master's /proxy/<id>) get no host alternatives.
func splitURLPort(s string) (schemePort, bool) {
	for _, sc := range []string{"http", "https"} {
		rest, ok := strings.CutPrefix(s, sc+"://")
		if !ok {
			continue
		}
		_, p, err := net.SplitHostPort(rest)
		if err != nil {
			return schemePort{}, false
		}
		n, ok := leadingPort(p)
		if !ok || strconv.Itoa(n) != p {
			return schemePort{}, false
		}
		return schemePort{sc, n}, true
	}
	return schemePort{}, false
}
