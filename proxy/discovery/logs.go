package discovery

import (
	"context"
	"time"
)

// Driver logs: the follower runs on its own goroutine and hands the
// changes of the followed files to Run, which offers their UI URLs as
// candidates and checks the apps a "stopped" line names.

// followLogs runs the follower and hands its changes to Run.
func (d *Discoverer) followLogs(ctx context.Context) {
	defer d.follower.closeAll()
	dw := newDirWatch(d.log)
	defer dw.close()
	first := true
	d.follower.run(ctx, dw, func(changes []logCandidates) {
		if len(changes) > 0 || first {
			at := d.now()
			isFirst := first
			d.send(ctx, func() { d.onLogs(changes, at, isFirst) })
			first = false
		}
	})
}

func (d *Discoverer) onLogs(changes []logCandidates, at time.Time, first bool) {
	if first {
		d.logsDone = true
	}
	for _, ch := range changes {
		prev := d.logCands[ch.path]
		var cs []candidate
		for _, u := range ch.urls {
			cs = append(cs, candidate{url: u, source: "log:" + ch.path, appID: ch.appHint})
		}
		if len(cs) == 0 {
			delete(d.logCands, ch.path)
		} else {
			d.logCands[ch.path] = cs
		}
		if ch.stopped {
			// The UI said it stopped: check its apps now, ending them on
			// the first refused connection.
			for _, c := range prev {
				if t := d.targets[c.key()]; t != nil && t.appID != "" {
					d.checkApp(t.appID, true)
				}
			}
		}
		for _, c := range cs {
			t := d.targets[c.key()]
			if t != nil && t.appID != "" {
				if a := d.apps[t.appID]; a == nil || a.key == c.key() {
					// A new UI line for a URL we know: maybe a new driver on a
					// reused port. The check tells, whatever id the log names
					// (anyone's driver log may name any address and any id).
					d.checkApp(t.appID, false)
					continue
				}
				// A second address of the app (checkApp asks only its
				// own): verify what answers here again, which never ends
				// the app.
				t.appID = ""
			}
			if t != nil {
				t.retryAt = time.Time{} // fresh evidence beats backoff
			}
			d.offer(c)
			if t = d.targets[c.key()]; t != nil {
				t.fromLogAt = at
			}
		}
	}
}
