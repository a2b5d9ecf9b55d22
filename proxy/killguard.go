package proxy

import "strings"

// Reasons Guard.Check gives. The server maps ReasonMethod to 405 and the
// others to 403.
const (
	ReasonMethod        = "method not allowed"
	ReasonStateChanging = "state-changing endpoint (kill, hold, resume, decommission) is not available through the gateway"
	ReasonHeapHistogram = "heap histograms are disabled on this gateway"
	ReasonThreadDump    = "thread dumps are disabled on this gateway"
)

// Guard refuses paths that reach state-changing or app-disturbing handlers.
//
// Its zero value is the safe default: heap histograms (which run
// "jmap -histo:live" and force a full GC on the executor) and thread dumps
// (which pause threads and can reveal data in stack frames) are both
// refused. Configuration that wants Spark's own defaults sets
// AllowThreadDump (Spark's spark.ui.threadDumpsEnabled defaults to true).
type Guard struct {
	AllowHeapHistogram bool
	AllowThreadDump    bool
}

// Check judges a canonical upstream path (as in Route.Path) and the method.
// Only GET and HEAD are ever let through. A segment that spells a word of
// killWords in any disguise isKillSegment sees through ("kill.",
// "kill\u200b", "k\u0131ll", fullwidth letters) refuses the path. The other
// segments are trimmed of white space (strings.TrimSpace) and compared with
// strings.EqualFold.
func (g Guard) Check(method, canonicalPath string) (blocked bool, reason string) {
	inAPI := false
	rest := canonicalPath
	for rest != "" {
		var seg string
		seg, rest, _ = strings.Cut(rest, "/")
		if isKillSegment(seg) {
			return true, ReasonStateChanging
		}
		// Surrounding white space ("threadDump%20") is refused with the
		// word: a server that trims it would route to the handler.
		seg = strings.TrimSpace(seg)
		if seg == "" {
			continue
		}
		switch {
		case strings.EqualFold(seg, "heapHistogram"):
			if !g.AllowHeapHistogram {
				return true, ReasonHeapHistogram
			}
		case strings.EqualFold(seg, "threadDump"), strings.EqualFold(seg, "taskThreadDump"),
			inAPI && strings.EqualFold(seg, "threads"):
			if !g.AllowThreadDump {
				return true, ReasonThreadDump
			}
		case strings.EqualFold(seg, "api"):
			inAPI = true
		}
	}
	if method != "GET" && method != "HEAD" {
		return true, ReasonMethod
	}
	return false, ""
}

// KillTarget returns whether canonicalPath is a driver kill endpoint
// (/jobs/job/kill or /stages/stage/kill, with or without a trailing slash)
// and which: "job" or "stage". It is for an optional flow in which the
// gateway itself checks modify permission before a kill; it matches only
// the exact paths Spark registers.
func KillTarget(canonicalPath string) (kind string, ok bool) {
	switch strings.TrimSuffix(canonicalPath, "/") {
	case "/jobs/job/kill":
		return "job", true
	case "/stages/stage/kill":
		return "stage", true
	}
	return "", false
}
