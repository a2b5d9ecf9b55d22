package discovery

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

func capAll(t testing.TB, in []byte, limit int, oneByte bool) []byte {
	t.Helper()
	var r io.Reader = bytes.NewReader(in)
	if oneByte {
		r = iotest.OneByteReader(r)
	}
	out, err := io.ReadAll(newStringCapper(r, limit))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestStringCapperCutsLongNames: a master's list with one app named with
// 2 MiB of text (plain, and escapes of every kind) decodes with every id
// whole and the long names cut to about max bytes; short strings, numbers
// and structure are untouched.
func TestStringCapperCutsLongNames(t *testing.T) {
	for _, unit := range []string{"A", `\"`, `\u00e9`, "é", `\\`, `\n`} {
		long := strings.Repeat(unit, (2<<20)/len(unit))
		in := `{"activeapps":[{"id":"app-20260101000000-0001","name":"etl","cores":4},` +
			`{"id":"app-20260101000000-0002","name":"` + long + `","user":"mallory"},` +
			`{"id":"app-20260101000000-0003","name":"x\"y\\z"}],"status":"ALIVE"}`
		for _, oneByte := range []bool{false, true} {
			if oneByte && unit != `\u00e9` {
				continue // one-byte reads of 2 MiB: once is enough
			}
			out := capAll(t, []byte(in), 1<<10, oneByte)
			var got struct {
				ActiveApps []struct{ ID, Name, User string } `json:"activeapps"`
				Status     string                            `json:"status"`
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("unit %q: capped list does not decode: %v", unit, err)
			}
			if len(got.ActiveApps) != 3 || got.Status != "ALIVE" || got.ActiveApps[1].User != "mallory" {
				t.Fatalf("unit %q: %+v", unit, got)
			}
			for i, a := range got.ActiveApps {
				if a.ID != "app-20260101000000-000"+string(rune('1'+i)) {
					t.Errorf("unit %q: app %d id %q", unit, i, a.ID)
				}
			}
			if got.ActiveApps[0].Name != "etl" || got.ActiveApps[2].Name != `x"y\z` {
				t.Errorf("unit %q: short names changed: %q %q", unit, got.ActiveApps[0].Name, got.ActiveApps[2].Name)
			}
			if n := len(got.ActiveApps[1].Name); n == 0 || n > 1<<10+8 || len(out) > 2<<10 {
				t.Errorf("unit %q: long name cut to %d bytes, list %d bytes; want about 1 KiB", unit, n, len(out))
			}
		}
	}
}

// FuzzStringCapper: any text whose strings all fit passes through
// unchanged, in any split of reads; valid JSON stays valid JSON with the
// same shape, whatever is cut.
func FuzzStringCapper(f *testing.F) {
	for _, s := range []string{
		`{"activeapps":[{"id":"app-1","name":"abcdefgh"}],"status":"ALIVE"}`,
		`["\u00e9\u00e9\u00e9","\\\\\\\\","\"\"\"\"",1,true,null,{"k\tk":"v"}]`,
		`{"a":"` + strings.Repeat("é", 20) + `"}`, `"unterminated \`, `{"a":1}`,
	} {
		f.Add([]byte(s), uint8(3), false)
		f.Add([]byte(s), uint8(64), true)
	}
	f.Fuzz(func(t *testing.T, in []byte, limit uint8, oneByte bool) {
		m := int(limit%32) + 1
		out := capAll(t, in, m, oneByte)
		if !oneByte {
			// The same cut, read a byte at a time.
			if again := capAll(t, in, m, true); !bytes.Equal(again, out) {
				t.Fatalf("split reads differ:\n%q\n%q", out, again)
			}
		}
		if !json.Valid(in) {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("valid %q became invalid %q (max %d)", in, out, m)
		}
		if shape(in) != shape(out) {
			t.Fatalf("shape changed: %q -> %q", in, out)
		}
		if longestRaw(in) <= m && !bytes.Equal(in, out) {
			t.Fatalf("nothing to cut, yet %q -> %q", in, out)
		}
	})
}

// shape is the JSON text's token stream with every string, key or value,
// written as s: what a cut must not change.
func shape(in []byte) string {
	d := json.NewDecoder(bytes.NewReader(in))
	d.UseNumber()
	var b strings.Builder
	for {
		tok, err := d.Token()
		if err != nil {
			return b.String()
		}
		if _, ok := tok.(string); ok {
			tok = "s"
		}
		fmt.Fprintf(&b, "%v ", tok)
	}
}

// longestRaw is the length of the longest string in a JSON text as
// written, escapes and all.
func longestRaw(in []byte) int {
	n, cur, inStr, esc := 0, 0, false, false
	for _, c := range in {
		switch {
		case !inStr:
			if c == '"' {
				inStr, cur = true, 0
			}
		case esc:
			esc = false
			cur++
		case c == '\\':
			esc = true
			cur++
		case c == '"':
			inStr = false
			n = max(n, cur)
		default:
			cur++
		}
	}
	return n
}

// TestMasterListWithHugeAppName: anyone may name an app with more bytes
// than a list may hold (listBodyMax; 1 MiB here, so that the test does not
// race the call's deadline under -race), of plain letters or of what JSON
// escapes (a backslash is sent as two bytes, U+0001 as six). The master's
// list stays readable: the other apps on it are found, and the poll
// answers in full.
func TestMasterListWithHugeAppName(t *testing.T) {
	for _, unit := range []string{"n", `\\`, `\u0001`} {
		t.Run(unit, func(t *testing.T) { masterListWithHugeAppName(t, unit) })
	}
}

func masterListWithHugeAppName(t *testing.T, unit string) {
	const x, big = "app-20260101000000-0001", "app-20260101000000-0002"
	const limit = 1 << 20
	huge := strings.Repeat(unit, (limit+(1<<20))/len(unit))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/json/":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"activeapps":[{"id":%q,"name":"etl"},{"id":%q,"name":"%s"}],"status":"ALIVE"}`, x, big, huge)
		case "/app/":
			fmt.Fprintf(w, `<a href="http://10.0.0.5:%d">Application Detail UI</a>`, map[string]int{x: 4040, big: 4041}[r.URL.Query().Get("appId")])
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	c := newClient(nil)
	c.listMax = limit
	m := newMasterSource(mustURL(t, srv.URL), c)
	cands, err := m.candidates(context.Background())
	if err != nil {
		t.Fatalf("master with one huge app name: %v", err)
	}
	var ids []string
	for _, c := range cands {
		ids = append(ids, c.appID+"@"+u2s(c.url))
	}
	if want := []string{x + "@http://10.0.0.5:4040", big + "@http://10.0.0.5:4041"}; !slices.Equal(ids, want) {
		t.Errorf("found %v; want %v", ids, want)
	}
}

// BenchmarkStringCapper: a History Server's list of 10,000 apps as it is
// read each interval, through the capper and plainly (io.Copy).
func BenchmarkStringCapper(b *testing.B) {
	var list bytes.Buffer
	list.WriteString("[")
	for i := range 10000 {
		if i > 0 {
			list.WriteString(",")
		}
		fmt.Fprintf(&list, `{"id":"application_1764000000000_%05d","name":"nightly \"etl\" job %d","attempts":[{"attemptId":"1","startTime":"2026-12-01T10:00:00.000GMT","endTime":"2026-12-01T11:00:00.000GMT","lastUpdated":"2026-12-01T11:00:00.000GMT","duration":3600000,"sparkUser":"alice","completed":true,"appSparkVersion":"3.5.9","startTimeEpoch":1764583200000,"endTimeEpoch":1764586800000,"lastUpdatedEpoch":1764586800000}]}`, i, i)
	}
	list.WriteString("]")
	in := list.Bytes()
	for _, capped := range []bool{true, false} {
		b.Run(map[bool]string{true: "capper", false: "io.Copy"}[capped], func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			var out bytes.Buffer
			for b.Loop() {
				out.Reset()
				var r io.Reader = bytes.NewReader(in)
				if capped {
					r = newStringCapper(r, listStringMax)
				}
				if _, err := out.ReadFrom(r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestHistoryListOfManyLongStrings: each cut string still takes
// listStringMax bytes, so the cut must be short for a list of many long
// strings to fit: 600 attempts each with a user of 16 KiB (an event log
// anyone who may write the log directory can forge; on a master, 600 apps
// with such names) in a list that may hold 1 MiB (listBodyMax is 64 MiB:
// 1,025 strings cut to 64 KiB would not fit in it). Cut to listStringMax,
// the list is read, and the other apps on it are listed.
func TestHistoryListOfManyLongStrings(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(`[{"id":"app-20260101000000-0001","name":"victim","attempts":[{"sparkUser":"alice","completed":true,"startTimeEpoch":1}]},`)
	b.WriteString(`{"id":"app-20260101000000-0666","name":"x","attempts":[`)
	user := strings.Repeat("m", 16<<10)
	for i := range 600 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"attemptId":"%d","sparkUser":"%s","completed":true,"startTimeEpoch":%d}`, i, user, i+2)
	}
	b.WriteString(`]}]`)
	body := b.Bytes()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/applications" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	c := newClient(nil)
	c.listMax = 1 << 20
	h, err := newHistorySource(HistorySource{Name: "hs", URL: srv.URL}, c, DefaultInterval)
	if err != nil {
		t.Fatal(err)
	}
	apps, _, err := h.poll(context.Background())
	if err != nil || len(apps) == 0 || apps[0].Name != "victim" {
		t.Fatalf("the victim's app is hidden: %d apps, %v", len(apps), err)
	}
}
