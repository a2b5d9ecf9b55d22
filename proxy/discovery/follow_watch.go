package discovery

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	"go.uber.org/zap"
)

// followIdle is the wait between two polls while every directory the
// follower needs is watched (follower.idle): the watch wakes it at each change, so this
// poll only catches what no event reported.
const followIdle = time.Second

// dirWatch wakes the follower when a directory it follows changes, so
// that an idle follower polls once a second instead of twenty times. It
// watches only directories on local file systems: inotify does not see
// what other hosts write to a shared one (NFS, CIFS, FUSE and the like),
// whose logs keep the fast poll, as GNU tail -f does.
type dirWatch struct {
	w      *fsnotify.Watcher
	local  func(dir string) bool
	logger *zap.Logger
	warned bool
}

// newDirWatch returns a watch, or nil where the platform has none (the
// follower then polls as often as followPoll says).
func newDirWatch(logger *zap.Logger) *dirWatch {
	if !watchable {
		return nil
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		logger.Info("driver logs are polled: no file system watch", zap.Error(err))
		return nil
	}
	return &dirWatch{w: w, local: localFS, logger: logger}
}

func (dw *dirWatch) close() {
	if dw != nil {
		_ = dw.w.Close() // only releases the inotify descriptor
	}
}

// events and errors are the watch's channels, nil (never ready) without
// a watch.
func (dw *dirWatch) events() <-chan fsnotify.Event {
	if dw == nil {
		return nil
	}
	return dw.w.Events
}

func (dw *dirWatch) errors() <-chan error {
	if dw == nil {
		return nil
	}
	return dw.w.Errors
}

// update makes dirs (a set) the watched set and reports whether every one of them
// is watched (false when one is on a shared file system, or the kernel's
// limit on watches is reached) and whether it began to watch any: what
// changed there between the last poll and now has sent no event.
func (dw *dirWatch) update(dirs map[string]bool) (covered, added bool) {
	if dw == nil {
		return false, false
	}
	have := map[string]bool{}
	for _, d := range dw.w.WatchList() {
		have[d] = true
		if !dirs[d] {
			_ = dw.w.Remove(d) // gone already when the directory was removed
		}
	}
	covered = true
	for d := range dirs {
		if have[d] {
			continue
		}
		if !dw.local(d) {
			covered = false
			continue
		}
		if err := dw.w.Add(d); err != nil {
			covered = false
			if !os.IsNotExist(err) && !dw.warned {
				dw.logger.Warn("cannot watch a driver log directory; polling it", zap.String("dir", d), zap.Error(err))
				dw.warned = true
			}
			continue
		}
		added = true
	}
	return covered, added
}

// wantDirs is every directory whose changes can change what the follower
// reads: each followed file's directory and, for a symbolic link, its
// target's; each pattern's directory or, while that does not exist, its
// nearest existing ancestor; for a pattern with wildcards in its
// directories, every directory its levels match, so that a log created in
// a new directory is seen at once too.
func (fl *follower) wantDirs() map[string]bool {
	dirs := map[string]bool{}
	add := func(d string) {
		if d != "" {
			dirs[d] = true
		}
	}
	for i := range fl.sources {
		for _, pat := range fl.sources[i].Paths {
			dir := filepath.Clean(filepath.Dir(pat))
			if !hasMeta(dir) {
				add(existingAncestor(dir))
				continue
			}
			// Each level from the first with a wildcard down to the
			// pattern's directory.
			elems := strings.Split(dir, string(filepath.Separator))
			first := slices.IndexFunc(elems, hasMeta)
			add(existingAncestor(strings.Join(elems[:first], string(filepath.Separator))))
			for k := first + 1; k <= len(elems); k++ {
				ms, _ := filepath.Glob(strings.Join(elems[:k], string(filepath.Separator)))
				for _, m := range ms {
					if fi, err := os.Stat(m); err == nil && fi.IsDir() {
						add(m)
					}
				}
			}
		}
	}
	for _, st := range fl.files {
		add(filepath.Dir(st.path))
		add(st.realDir)
	}
	return dirs
}

// existingAncestor returns dir, or the nearest of its ancestors that
// exists: its creation is then seen as a change.
func existingAncestor(dir string) string {
	if dir == "" {
		dir = string(filepath.Separator)
	}
	for {
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			return ""
		}
		dir = up
	}
}

// run polls the follower until ctx ends, handing each poll's changes to
// onPoll: after a change the watch reports (but no sooner than
// followPoll after the last poll, so that a busy log is not read more
// often than without a watch), and every followIdle while every directory
// needed is watched, every followPoll otherwise.
func (fl *follower) run(ctx context.Context, dw *dirWatch, onPoll func([]logCandidates)) {
	tick := time.NewTimer(time.Hour) // reset after each poll
	defer tick.Stop()
	var (
		covered, rewatch, added bool
		lastWatch               time.Time
	)
	for {
		fl.polls.Add(1)
		fl.filesChanged = false
		lastPoll := time.Now()
		onPoll(fl.poll())
		if dw != nil && (rewatch || fl.filesChanged || lastPoll.Sub(lastWatch) >= followIdle) {
			was := covered
			covered, added = dw.update(fl.wantDirs())
			fl.watched.Store(covered)
			if covered != was || lastWatch.IsZero() {
				fl.logger.Debug("following driver logs", zap.Bool("watched", covered))
			}
			rewatch, lastWatch = false, lastPoll
		}
		gap := followPoll(len(fl.files))
		wait := gap
		if covered && !added {
			// (A directory watched only since the poll is read once
			// more, for what it gained in between.)
			wait = fl.idle
		}
		added = false
		tick.Reset(wait)
	waiting:
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				break waiting
			case ev := <-dw.events():
				if ev.Has(fsnotify.Create) || ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
					rewatch = true
				}
				if left := time.Until(lastPoll.Add(gap)); left > 0 {
					tick.Reset(left)
					continue
				}
				break waiting
			case err := <-dw.errors():
				// A lost event (the kernel's queue overflowed): read
				// everything again.
				fl.logger.Debug("driver log watch", zap.Error(err))
				rewatch = true
				break waiting
			}
		}
	}
}
