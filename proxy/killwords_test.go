package proxy

import (
	"io"
	"strings"
	"testing"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// killDisguises are spellings of a kill word, as a decoded segment, that
// Guard refuses; %s is the word.
var killDisguises = []struct{ name, format string }{
	{"plain", "%s"},
	{"upper", "%U"},
	{"trailing dot", "%s."},
	{"trailing dots", "%s.."},
	{"leading dot", ".%s"},
	{"trailing space", "%s "},
	{"leading space", " %s"},
	{"trailing no-break space", "%s\u00a0"},
	{"trailing ideographic space", "%s\u3000"},
	{"trailing ideographic full stop", "%s\u3002"},
	{"trailing fullwidth full stop", "%s\uff0e"},
	{"trailing zero-width space", "%s\u200b"},
	{"leading zero-width space", "\u200b%s"},
	{"zero-width joiner inside", "%1\u200d%r"},
	{"zero-width non-joiner inside", "%1\u200c%r"},
	{"soft hyphen inside", "%1\u00ad%r"},
	{"word joiner", "%s\u2060"},
	{"byte order mark", "\ufeff%s"},
	{"variation selector", "%s\ufe0f"},
	{"combining grapheme joiner", "%1\u034f%r"},
	{"Hangul filler", "%s\u3164"},
	{"bidi override", "\u202e%s"},
	{"dot and zero-width space", "%s.\u200b"},
	{"fullwidth", "%W"},
	{"fullwidth upper", "%X"},
	{"dotless i", "%I\u0131"},
	{"dotted capital I", "%J\u0130"},
	{"combining dot above", "%I\u0069\u0307"},
	{"Kelvin sign", "%K"},
	{"fullwidth solidus before", "x\uff0f%s"},
}

// disguise spells word as format says: %s the word, %U upper case, %W
// fullwidth, %X fullwidth upper, %1 and %r the first letter and the rest,
// %I and %J the word with each i replaced by what follows the verb
// (lower and upper case word), %K the word with k as the Kelvin sign.
func disguise(format, word string) string {
	fw := func(s string) string {
		return strings.Map(func(r rune) rune { return r - '!' + '\uff01' }, s)
	}
	switch {
	case strings.Contains(format, "%I"), strings.Contains(format, "%J"):
		w := word
		if strings.Contains(format, "%J") {
			w = strings.ToUpper(word)
		}
		rep := strings.NewReplacer("%I", "", "%J", "").Replace(format)
		if !strings.ContainsAny(word, "i") {
			return ""
		}
		return strings.NewReplacer("i", rep, "I", rep).Replace(w)
	case strings.Contains(format, "%K"):
		if !strings.HasPrefix(word, "k") {
			return ""
		}
		return "\u212a" + word[1:]
	}
	return strings.NewReplacer("%s", word, "%U", strings.ToUpper(word), "%W", fw(word), "%X", fw(strings.ToUpper(word)),
		"%1", word[:1], "%r", word[1:]).Replace(format)
}

// TestKillDisguises: every word of killWords in every disguise is
// refused by Guard and seen by the stripper's isKillURL and prefilter.
func TestKillDisguises(t *testing.T) {
	t.Parallel()
	for _, w := range killWords {
		for _, d := range killDisguises {
			seg := disguise(d.format, w)
			if seg == "" {
				continue
			}
			t.Run(w+"/"+d.name, func(t *testing.T) {
				if !spellsKillWord(seg) {
					t.Fatalf("test oracle: spellsKillWord(%q) = false", seg)
				}
				if !isKillSegment(seg) {
					t.Errorf("isKillSegment(%q) = false", seg)
				}
				for _, p := range []string{"/jobs/job/" + seg + "/", "/" + seg, "/x/" + seg} {
					if blocked, reason := (Guard{}).Check("GET", p); !blocked || reason != ReasonStateChanging {
						t.Errorf("Guard.Check(GET, %q) = %v, %q; want refused", p, blocked, reason)
					}
				}
				href := []byte(`<a href="/app/x/jobs/job/` + seg + `/?id=1">`)
				if !mayBeKill(href) {
					t.Errorf("mayBeKill(%q) = false", href)
				}
				if !isKillURL([]byte("/app/x/jobs/job/" + seg + "/?id=1")) {
					t.Errorf("isKillURL of %q = false", seg)
				}
			})
		}
	}
}

// TestMayBeKillEveryCase: mayBeKill finds every kill stem in every ASCII
// case, at the start, in the middle and at the very end of what it reads
// (it compares a stem's first four bytes at once).
func TestMayBeKillEveryCase(t *testing.T) {
	t.Parallel()
	for _, w := range killStems {
		for mask := 0; mask < 1<<len(w); mask++ {
			b := []byte(w)
			for i := range b {
				if mask&(1<<i) != 0 {
					b[i] -= 'a' - 'A'
				}
			}
			for _, raw := range []string{string(b), "/x" + string(b), "/jobs/" + string(b) + "/?id=1", "a" + string(b)} {
				if !mayBeKill([]byte(raw)) {
					t.Errorf("mayBeKill(%q) = false", raw)
				}
			}
		}
		// One letter short at the end, or one changed, is not a stem.
		for _, raw := range []string{"/x" + w[:len(w)-1], "/x" + w[:len(w)-1] + "_"} {
			if mayBeKill([]byte(raw)) {
				t.Errorf("mayBeKill(%q) = true", raw)
			}
		}
	}
}

// TestKillDisguisesThroughRoute sends percent-encoded disguises through
// ParseRoute and the guard on every route that proxies.
func TestKillDisguisesThroughRoute(t *testing.T) {
	t.Parallel()
	spellings := []string{
		"kill.", "kill..", "kill%2E", "kill%E2%80%8B", "%E2%80%8Bkill", "ki%E2%80%8Cll", "kill%C2%AD",
		"k%C4%B1ll", "K%C4%B0LL", "%EF%BD%8B%EF%BD%89%EF%BD%8C%EF%BD%8C", "%EF%BC%AB%EF%BC%A9%EF%BC%AC%EF%BC%AC",
		"%E2%84%AAill", "kill%E3%80%82", "kill%20.", "killall.", "hold%E2%80%8B", "Res%C3%BAme", "%EF%BD%88old",
		"decommiss%C4%B1on", "RESUME.",
	}
	prefixes := []string{
		"/app/local-1700000000000/jobs/job/", "/proxy/application_1_1/stages/stage/",
		"/hs/main/history/app-1/jobs/job/", "/history/app-1/jobs/job/", "/api/v1/applications/app-1/jobs/",
	}
	g := Guard{AllowThreadDump: true, AllowHeapHistogram: true}
	for _, sp := range spellings {
		for _, pre := range prefixes {
			in := pre + sp + "/"
			r, err := ParseRoute(in)
			if err != nil {
				t.Errorf("ParseRoute(%q): %v; want a route the guard refuses", in, err)
				continue
			}
			if blocked, reason := g.Check("GET", r.Path); !blocked || reason != ReasonStateChanging {
				t.Errorf("ParseRoute(%q).Path = %q: Check = %v, %q; want refused", in, r.Path, blocked, reason)
			}
		}
	}
}

// TestKillWordsNotOrdinaryPages: segments that only resemble a kill word,
// and every Spark page path the crawl visits, pass.
func TestKillWordsNotOrdinaryPages(t *testing.T) {
	t.Parallel()
	for _, seg := range []string{
		"killer", "kill.png", "kill-link", "k.i.l.l", "skill", "holdstatus", "resumes", "decommissioned",
		"ki ll", "ki.ll", "jobs", "stages", "executors", "environment", "storage", "SQL", "pool", "job", "stage",
		"\u00e9", "\u4e2d\u6587", "local-1700000000000", "kil", "kil\u0142",
	} {
		if isKillSegment(seg) {
			t.Errorf("isKillSegment(%q) = true", seg)
		}
	}
}

// spellsKillWord is the tests' own, independent reading of a disguised
// kill word: NFKC, drop format characters, marks and other ignorables,
// trim dots and white space, then compare rune by rune, each rune
// matching a letter of the word when it is in the letter's case-folding
// orbit (or is a Turkish i).
func spellsKillWord(seg string) bool {
	var rs []rune
	for _, r := range norm.NFKC.String(seg) {
		if unicode.In(r, unicode.Cf, unicode.Mn, unicode.Me, unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point) {
			continue
		}
		rs = append(rs, r)
	}
	for len(rs) > 0 && (rs[0] == '.' || rs[0] == '\u3002' || unicode.IsSpace(rs[0])) {
		rs = rs[1:]
	}
	for len(rs) > 0 && (rs[len(rs)-1] == '.' || rs[len(rs)-1] == '\u3002' || unicode.IsSpace(rs[len(rs)-1])) {
		rs = rs[:len(rs)-1]
	}
	// Normalisation may have made a slash: judge each part.
	var parts [][]rune
	start := 0
	for i, r := range rs {
		if r == '/' || r == '\\' {
			parts = append(parts, rs[start:i])
			start = i + 1
		}
	}
	parts = append(parts, rs[start:])
	for _, p := range parts {
		for _, w := range killWords {
			if len(p) != len(w) {
				continue
			}
			ok := true
			for i, c := range w {
				if !sameLetter(p[i], c) {
					ok = false
					break
				}
			}
			if ok {
				return true
			}
		}
	}
	return false
}

// sameLetter reports whether r folds to the ASCII letter c.
func sameLetter(r, c rune) bool {
	if c == 'i' && (r == '\u0131' || r == '\u0130') {
		return true
	}
	for f := r; ; {
		if f == c {
			return true
		}
		if f = unicode.SimpleFold(f); f == r {
			return false
		}
	}
}

// TestStripperKillDisguises: links whose path spells a kill word in a
// disguise, also behind character references, are removed.
func TestStripperKillDisguises(t *testing.T) {
	t.Parallel()
	for _, href := range []string{
		"/app/x/jobs/job/kill./?id=1", "/app/x/jobs/job/kill%E2%80%8B/?id=1", "/app/x/jobs/job/k&imath;ll/?id=1",
		"/app/x/jobs/job/k&#305;ll/?id=1", "/app/x/jobs/job/kill&ZeroWidthSpace;/?id=1", "/app/x/jobs/job/kill&period;/",
		"/app/x/jobs/job/\uff4b\uff49\uff4c\uff4c/?id=1", "/app/x/jobs/job/K\u0130LL/", "/app/x/jobs/hold&shy;/",
		"/app/x/jobs/resume%20./",
	} {
		in := `<p>a<a href="` + href + `">(kill)</a>b</p>`
		out, err := io.ReadAll(NewStrippingReader(io.NopCloser(strings.NewReader(in))))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := string(out), "<p>ab</p>"; got != want {
			t.Errorf("strip(%q) = %q; want %q", in, got, want)
		}
	}
	// "kill&" is not a kill word: the link stays.
	in := `<a href="/app/x/jobs/job/kill&amp;/">x</a>`
	if out, _ := io.ReadAll(NewStrippingReader(io.NopCloser(strings.NewReader(in)))); string(out) != in {
		t.Errorf("strip(%q) = %q; want it unchanged", in, out)
	}
}

// FuzzKillURL holds isKillURL's one-pass judging to its definition: the
// path before '?' or '#', split at '/' and '\', each segment
// percent-decoded once and judged by isKillSegmentBytes.
func FuzzKillURL(f *testing.F) {
	for _, s := range []string{"/app/local-1/jobs/job/kill/?id=1", "/x/KILL.", `\kill`, "/ki%6Cl/", "/k%C4%B1ll", "/resume#kill", "/hold?x", "kill", "/%", "/a%2Fkill"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, u string) {
		want := false
		path, _, _ := strings.Cut(u, "?")
		path, _, _ = strings.Cut(path, "#")
		for _, seg := range strings.FieldsFunc(path, func(r rune) bool { return r == '/' || r == '\\' }) {
			b := []byte(seg)
			if strings.Contains(seg, "%") {
				b = appendPercentDecodedLoose(nil, b)
			}
			want = want || isKillSegmentBytes(b)
		}
		if got := isKillURL([]byte(u)); got != want {
			t.Fatalf("isKillURL(%q) = %v, want %v", u, got, want)
		}
	})
}
