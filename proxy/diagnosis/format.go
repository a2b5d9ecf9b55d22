package diagnosis

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// bytesStr prints a byte count as Spark's UI does: "37.6 MiB".
func bytesStr(b float64) string {
	const unit = 1024
	if b < unit {
		return fmt.Sprintf("%.0f B", b)
	}
	units := "KMGTPE"
	i := -1
	for b >= unit && i < len(units)-1 {
		b /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", b, units[i])
}

// msStr prints milliseconds: "850 ms", "17.7 s", "3.2 min", "1.5 h".
func msStr(ms float64) string {
	d := time.Duration(ms * float64(time.Millisecond))
	switch {
	case d < time.Second:
		return fmt.Sprintf("%.0f ms", ms)
	case d < time.Minute:
		return fmt.Sprintf("%.1f s", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%.1f min", d.Minutes())
	default:
		return fmt.Sprintf("%.1f h", d.Hours())
	}
}

func pct(share float64) string { return strconv.FormatFloat(share*100, 'f', 1, 64) + " %" }

// stagePage is the Spark UI page of a stage attempt.
func stagePage(k StageKey) string {
	return "stages/stage/?id=" + strconv.Itoa(k.StageID) + "&attempt=" + strconv.Itoa(k.AttemptID)
}

func sqlPage(id int64) string { return "SQL/execution/?id=" + strconv.FormatInt(id, 10) }

func jobPage(id int) string { return "jobs/job/?id=" + strconv.Itoa(id) }

// stageLabel names a stage for a sentence: `stage 3 (attempt 0, "collect at x.py:12")`.
func stageLabel(s *Stage) string {
	name := s.Description
	if name == "" {
		name = s.Name
	}
	return fmt.Sprintf("stage %d (attempt %d, %q)", s.StageID, s.AttemptID, clip(name, 80))
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// exceptionLine matches the line of an error message that names the
// exception: Python's "ValueError: ...", Java's "java.io.IOException: ..."
// or "Caused by: ...".
var exceptionLine = regexp.MustCompile(`^(Caused by: .*|[A-Za-z_][\w.$]*(Error|Exception)\b.*)$`)

// shortMessage keeps what a reader needs of an error message (often a
// whole stack trace): its first line and, when the cause is deeper (a
// Python exception under a PythonException, a "Caused by:"), the last
// line that names an exception.
func shortMessage(msg string) string {
	lines := strings.Split(strings.TrimSpace(msg), "\n")
	first := strings.TrimSpace(lines[0])
	var cause string
	for _, l := range lines[1:] {
		l = strings.TrimSpace(l)
		if exceptionLine.MatchString(l) {
			cause = l
		}
	}
	out := clip(first, 300)
	if cause != "" && cause != first {
		out += " … " + clip(cause, 300)
	}
	return out
}

// addMessage appends a shortened message unless it is already there,
// keeping at most five.
func addMessage(msgs []string, msg string) []string {
	if msg == "" || len(msgs) >= 5 {
		return msgs
	}
	m := shortMessage(msg)
	for _, have := range msgs {
		if have == m {
			return msgs
		}
	}
	return append(msgs, m)
}
