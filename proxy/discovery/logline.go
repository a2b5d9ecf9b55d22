package discovery

import (
	"encoding/json"
	"net"
	"net/url"
	"path"
	"strconv"
	"strings"
)

// EventKind says what a driver log line revealed.
type EventKind int

const (
	// EventNone is a line that says nothing discovery cares about.
	EventNone EventKind = iota
	// EventUIPort is `Successfully started service 'SparkUI' on port N.`;
	// Port and Scheme are set, Host is not (Spark 3.3+ logs no host).
	EventUIPort
	// EventUIURL is a line carrying the UI URL (Bound…started at, Started
	// SparkUI at, Spark context Web UI available at); URL is set.
	EventUIURL
	// EventUIStopped is `Stopped Spark web UI at <url>`; URL is set.
	EventUIStopped
	// EventUIRetry is `Service 'SparkUI' could not bind on port P.`; Port is
	// the port that failed (0 for a random port).
	EventUIRetry
	// EventPreBind is `Start Jetty <host>:<port> for SparkUI`, logged before
	// the bind with the requested port; never the real address.
	EventPreBind
	// EventAppID is a hint of the app id (AppID). Only a hint: the registry
	// takes ids from the verified REST answer alone.
	EventAppID
	// EventHost gives the driver's host (Host), e.g. from its BlockManagerId.
	EventHost
)

var kindNames = [...]string{"none", "ui_port", "ui_url", "ui_stopped", "ui_retry", "pre_bind", "app_id", "host"}

func (k EventKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Event is what ParseLine found in one line.
type Event struct {
	Kind   EventKind
	Scheme string // "http" or "https" for EventUIPort
	Port   int    // EventUIPort, EventUIRetry, EventPreBind
	Host   string // EventHost, EventPreBind
	URL    string // EventUIURL, EventUIStopped: scheme://host:port[/path], no trailing slash
	AppID  string // EventAppID
}

const (
	svcStarted   = "Successfully started service '"
	couldNotBind = "Service 'SparkUI' could not bind on "
)

// ParseLine reads one driver log line, in the default log4j text pattern,
// any other pattern that keeps the message intact, shell stdout, or Spark
// 4's structured JSON layout. It never allocates for lines it ignores.
func ParseLine(line string) (Event, bool) {
	if len(line) > 0 && (line[0] == '{' || line[0] == ' ' || line[0] == '\t') {
		if t := strings.TrimLeft(line, " \t"); len(t) > 0 && t[0] == '{' {
			return parseJSONLine(t)
		}
	}
	return parseText(line)
}

// parseText looks for each known message. Order matters only where one
// message contains another's marker.
func parseText(line string) (Event, bool) {
	if i := strings.Index(line, svcStarted); i >= 0 {
		return parseStarted(line[i+len(svcStarted):])
	}
	if i := strings.Index(line, couldNotBind); i >= 0 {
		rest := line[i+len(couldNotBind):]
		if strings.HasPrefix(rest, "a random free port") {
			return Event{Kind: EventUIRetry}, true
		}
		if p, ok := leadingPort(strings.TrimPrefix(rest, "port ")); ok && strings.HasPrefix(rest, "port ") {
			return Event{Kind: EventUIRetry, Port: p}, true
		}
		return Event{}, false
	}
	if i := strings.Index(line, "SparkUI"); i >= 0 {
		if ev, ok := parseSparkUILine(line); ok {
			return ev, true
		}
	}
	if i := strings.Index(line, "Web UI available at "); i >= 0 && strings.Contains(line[:i], "Spark context") {
		return urlEvent(EventUIURL, line[i+len("Web UI available at "):])
	}
	if i := strings.Index(line, "Stopped Spark web UI at "); i >= 0 {
		return urlEvent(EventUIStopped, line[i+len("Stopped Spark web UI at "):])
	}
	if i := strings.Index(line, "BlockManagerId(driver, "); i >= 0 {
		rest := line[i+len("BlockManagerId(driver, "):]
		if j := strings.IndexByte(rest, ','); j > 0 {
			if h := rest[:j]; validHost(h) {
				return Event{Kind: EventHost, Host: h}, true
			}
		}
		return Event{}, false
	}
	if i := strings.Index(line, "Starting executor ID driver on host "); i >= 0 {
		if h := firstField(line[i+len("Starting executor ID driver on host "):]); validHost(h) {
			return Event{Kind: EventHost, Host: h}, true
		}
		return Event{}, false
	}
	return parseAppIDLine(line)
}

// parseStarted handles the text after "Successfully started service '".
func parseStarted(rest string) (Event, bool) {
	j := strings.IndexByte(rest, '\'')
	if j < 0 {
		return Event{}, false
	}
	scheme := ""
	switch rest[:j] {
	case "SparkUI":
		scheme = "http"
	case "SparkUI (HTTPS)":
		scheme = "https"
	default: // sparkDriver, BlockManager transfer service, HistoryServerUI, MasterUI, …
		return Event{}, false
	}
	rest = rest[j+1:]
	if !strings.HasPrefix(rest, " on port ") {
		return Event{}, false
	}
	p, ok := leadingPort(rest[len(" on port "):])
	if !ok {
		return Event{}, false
	}
	return Event{Kind: EventUIPort, Scheme: scheme, Port: p}, true
}

// parseSparkUILine handles the lines that name SparkUI but are not the
// port line: the pre-3.3 "Bound SparkUI to", the 1.x "Started SparkUI at",
// and the 3.4+ pre-bind "Start Jetty … for SparkUI".
func parseSparkUILine(line string) (Event, bool) {
	if i := strings.Index(line, "Bound SparkUI to "); i >= 0 {
		rest := line[i:]
		if j := strings.Index(rest, "started at "); j >= 0 {
			return urlEvent(EventUIURL, rest[j+len("started at "):])
		}
		return Event{}, false
	}
	if i := strings.Index(line, "Started SparkUI at "); i >= 0 {
		return urlEvent(EventUIURL, line[i+len("Started SparkUI at "):])
	}
	if i := strings.Index(line, "Start Jetty "); i >= 0 {
		rest := line[i+len("Start Jetty "):]
		hp := firstField(rest)
		if !strings.HasPrefix(rest[len(hp):], " for SparkUI") {
			return Event{}, false
		}
		h, p, err := net.SplitHostPort(hp)
		if err != nil {
			return Event{}, false
		}
		port, ok := leadingPort(p)
		if !ok && p != "0" {
			return Event{}, false
		}
		return Event{Kind: EventPreBind, Host: h, Port: port}, true
	}
	return Event{}, false
}

func parseAppIDLine(line string) (Event, bool) {
	if i := strings.Index(line, "Connected to Spark cluster with app ID "); i >= 0 {
		return appIDEvent(firstField(line[i+len("Connected to Spark cluster with app ID "):]))
	}
	if i := strings.Index(line, "Submitting application application_"); i >= 0 {
		return appIDEvent(firstField(line[i+len("Submitting application "):]))
	}
	if i := strings.Index(line, "Application application_"); i >= 0 && strings.Contains(line[i:], " has started running") {
		return appIDEvent(firstField(line[i+len("Application "):]))
	}
	if i := strings.Index(line, "Spark context available as 'sc' ("); i >= 0 {
		rest := line[i:]
		if j := strings.Index(rest, "app id = "); j >= 0 {
			id := rest[j+len("app id = "):]
			if k := strings.IndexByte(id, ')'); k >= 0 {
				return appIDEvent(id[:k])
			}
		}
		return Event{}, false
	}
	if i := strings.Index(line, "Logging events to "); i >= 0 {
		return appIDEvent(eventLogAppID(firstField(line[i+len("Logging events to "):])))
	}
	return Event{}, false
}

// eventLogAppID turns an event log path into the sanitized base name,
// which is the lower-cased app id (plus _<attempt> on YARN cluster mode).
func eventLogAppID(p string) string {
	if u, err := url.Parse(p); err == nil && u.Scheme != "" {
		p = u.Path
	}
	base := path.Base(p)
	base = strings.TrimSuffix(base, ".inprogress")
	if strings.HasPrefix(base, "events_") {
		// A rolling log's file (Spark 4's default):
		// eventlog_v2_<app>/events_<n>_<app>[.codec]; the directory
		// names the app without an index to strip.
		if dir := path.Base(path.Dir(p)); strings.HasPrefix(dir, "eventlog_v2_") {
			base = dir
		}
	}
	base = strings.TrimPrefix(base, "eventlog_v2_")
	for _, codec := range []string{".lz4", ".lzf", ".snappy", ".zstd"} {
		base = strings.TrimSuffix(base, codec)
	}
	return base
}

func appIDEvent(id string) (Event, bool) {
	id = strings.TrimRight(id, ".,;")
	if !validAppIDHint(id) {
		return Event{}, false
	}
	return Event{Kind: EventAppID, AppID: id}, true
}

// validAppIDHint accepts the characters Spark app ids are made of, and
// no dot segment: an id is put into REST paths as one segment, and "."
// would make /api/v1/applications/./<attempt> another app's path.
func validAppIDHint(id string) bool {
	if id == "" || len(id) > 128 || id == "." || id == ".." {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// validAttemptID accepts an attempt id that a source reported ("": none):
// what an event log or a driver says, put into REST paths as one segment
// after the app id. "../<other app>/1" would read another app's REST, its
// environment, jobs and executors' logs, under this app's ACLs. Spark's
// are decimal (YARN's) or absent; others keep to an app id's characters.
func validAttemptID(id string) bool {
	return id == "" || validAppIDHint(id)
}

// urlEvent parses the first field of s as a UI URL.
func urlEvent(kind EventKind, s string) (Event, bool) {
	u, ok := cleanUIURL(firstField(s))
	if !ok {
		return Event{}, false
	}
	return Event{Kind: kind, URL: u}, true
}

// cleanUIURL accepts http(s)://host:port[/path] and returns it without a
// trailing slash, query or fragment.
func cleanUIURL(s string) (string, bool) {
	s = strings.TrimRight(s, ".,;)")
	if !strings.HasPrefix(s, "http://") && !strings.HasPrefix(s, "https://") {
		return "", false
	}
	u, err := url.Parse(s)
	if err != nil || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", false
	}
	if !validHost(u.Hostname()) {
		return "", false
	}
	if p := u.Port(); p != "" {
		if _, ok := leadingPort(p); !ok {
			return "", false
		}
	}
	return u.Scheme + "://" + u.Host + strings.TrimRight(u.EscapedPath(), "/"), true
}

// validHost accepts host names and IP literals (no brackets).
func validHost(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	if net.ParseIP(h) != nil {
		return true
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
			return false
		}
	}
	return true
}

// leadingPort parses the decimal port at the start of s, which must end
// there or continue with a non-digit.
func leadingPort(s string) (int, bool) {
	n, i := 0, 0
	for ; i < len(s) && i < 6 && s[i] >= '0' && s[i] <= '9'; i++ {
		n = n*10 + int(s[i]-'0')
	}
	if i == 0 || (i < len(s) && s[i] >= '0' && s[i] <= '9') || n < 1 || n > 65535 {
		return 0, false
	}
	return n, true
}

// firstField returns s up to the first space, tab or end.
func firstField(s string) string {
	if i := strings.IndexAny(s, " \t\r"); i >= 0 {
		return s[:i]
	}
	return s
}

// jsonLine is Spark 4's structured log layout (SparkLayout.json).
type jsonLine struct {
	Msg     string         `json:"msg"`
	Context map[string]any `json:"context"`
}

func parseJSONLine(line string) (Event, bool) {
	// Skip the decoder for JSON lines that cannot matter.
	if !strings.Contains(line, "SparkUI") && !strings.Contains(line, "Spark web UI") &&
		!strings.Contains(line, "BlockManagerId(driver") && !strings.Contains(line, "app ID") &&
		!strings.Contains(line, "application_") && !strings.Contains(line, "Logging events to") &&
		!strings.Contains(line, "executor ID driver") && !strings.Contains(line, "Web UI available") {
		return Event{}, false
	}
	var j jsonLine
	if err := json.Unmarshal([]byte(line), &j); err != nil || j.Msg == "" {
		return Event{}, false
	}
	ev, ok := parseText(j.Msg)
	if !ok {
		return ev, false
	}
	// The MDC port is the authority when present; the message is built
	// from the same value, so a mismatch means a forged or broken line.
	if ev.Kind == EventUIPort {
		if svc, has := j.Context["service_name"].(string); has {
			name := strings.Trim(strings.TrimSpace(svc), "'")
			if name != "SparkUI" && name != "SparkUI (HTTPS)" {
				return Event{}, false
			}
		}
		if p, has := j.Context["port"]; has {
			var ps string
			switch v := p.(type) {
			case string:
				ps = v
			case float64:
				ps = strconv.FormatFloat(v, 'f', -1, 64)
			}
			if n, ok := leadingPort(ps); !ok || n != ev.Port || len(ps) != len(strconv.Itoa(n)) {
				return Event{}, false
			}
		}
	}
	return ev, true
}
