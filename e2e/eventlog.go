package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// ReadEventLog returns the lines of appID's event log in dir: a single
// file <appID>[.zstd], or the rolling directory eventlog_v2_<appID> that
// Spark 4 writes by default (its events_<n>_<appID>[.zstd] files in order).
func ReadEventLog(dir, appID string) ([][]byte, error) {
	for _, name := range []string{appID, appID + ".zstd"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return readLogFile(filepath.Join(dir, name))
		}
	}
	roll := filepath.Join(dir, "eventlog_v2_"+appID)
	names, err := filepath.Glob(filepath.Join(roll, "events_*_"+appID+"*"))
	if err != nil {
		return nil, fmt.Errorf("event log of %s: %w", appID, err)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no event log of %s in %s", appID, dir)
	}
	index := func(p string) int {
		n, _ := strconv.Atoi(strings.SplitN(filepath.Base(p), "_", 3)[1])
		return n
	}
	slices.SortFunc(names, func(a, b string) int { return index(a) - index(b) })
	var lines [][]byte
	for _, n := range names {
		l, err := readLogFile(n)
		if err != nil {
			return nil, err
		}
		lines = append(lines, l...)
	}
	return lines, nil
}

// readLogFile reads the lines of one event log file, plain or zstd.
func readLogFile(path string) ([][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	// App ids hold no dot: an extension is a codec (or .inprogress).
	switch ext := filepath.Ext(path); ext {
	case "":
	case ".zstd":
		zr, err := zstd.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		defer zr.Close()
		r = zr
	default:
		return nil, fmt.Errorf("%s: %s is not an event log this harness reads", path, ext)
	}
	var lines [][]byte
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		lines = append(lines, bytes.Clone(sc.Bytes()))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return lines, nil
}

// AttemptLog is how WriteAttemptLog turns one app's event log into an
// attempt of another app.
type AttemptLog struct {
	AppID, Attempt string
	User           string            // the attempt's sparkUser
	ShiftMS        int64             // added to the start and end timestamps
	Props          map[string]string // Spark properties set (overriding) in the environment update
}

// WriteAttemptLog writes lines (an event log of app fromID) as attempt
// a.Attempt ("": one without an id) of app a.AppID, by a.User, into dir as
// a plain single file named as Spark names attempt logs
// (<appId>[_<attempt>]). The file appears
// whole (written aside, then renamed), so a History Server never reads
// half of it.
func WriteAttemptLog(dir, fromID string, lines [][]byte, a AttemptLog) error {
	var out bytes.Buffer
	for _, l := range lines {
		l = bytes.ReplaceAll(l, []byte(fromID), []byte(a.AppID))
		var head struct{ Event string }
		if json.Unmarshal(l, &head) != nil {
			return fmt.Errorf("event log of %s: a line that is not JSON: %.100s", fromID, l)
		}
		switch head.Event {
		case "SparkListenerApplicationStart", "SparkListenerApplicationEnd", "SparkListenerEnvironmentUpdate":
			d := json.NewDecoder(bytes.NewReader(l))
			d.UseNumber()
			var ev map[string]any
			if err := d.Decode(&ev); err != nil {
				return fmt.Errorf("event log of %s: %w", fromID, err)
			}
			if err := a.rewrite(head.Event, ev); err != nil {
				return err
			}
			// The History Server picks the lines it replays for its
			// listing by their prefix {"Event":"…": the name goes first.
			delete(ev, "Event")
			rest, err := json.Marshal(ev)
			if err != nil {
				return err
			}
			l = append([]byte(`{"Event":"`+head.Event+`",`), rest[1:]...)
		}
		out.Write(l)
		out.WriteByte('\n')
	}
	name := a.AppID
	if a.Attempt != "" {
		name += "_" + a.Attempt
	}
	tmp := filepath.Join(filepath.Dir(dir), "."+name+".tmp")
	if err := os.WriteFile(tmp, out.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, name))
}

func (a AttemptLog) rewrite(event string, ev map[string]any) error {
	shift := func() error {
		ts, err := ev["Timestamp"].(json.Number).Int64()
		if err != nil {
			return fmt.Errorf("%s without a Timestamp: %w", event, err)
		}
		ev["Timestamp"] = ts + a.ShiftMS
		return nil
	}
	switch event {
	case "SparkListenerApplicationStart":
		delete(ev, "App Attempt ID")
		if a.Attempt != "" {
			ev["App Attempt ID"] = a.Attempt
		}
		ev["User"] = a.User
		return shift()
	case "SparkListenerApplicationEnd":
		return shift()
	default: // SparkListenerEnvironmentUpdate
		props, ok := ev["Spark Properties"].(map[string]any)
		if !ok {
			return fmt.Errorf("environment update without Spark Properties")
		}
		for k, v := range a.Props {
			props[k] = v
		}
		return nil
	}
}
