package proxy

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// killWords is the kill vocabulary: path segments that make a path
// refused whatever the method, and the words the stripper looks for in a
// link. Every Spark kill/hold/resume handler has one of them as a segment:
// driver /jobs/job/kill, /stages/stage/kill and (after 4.0) /jobs/hold,
// /jobs/resume; Master /app/kill, /driver/kill, /workers/kill (which
// decommissions workers), /app/hold, /app/resume; REST submission kill and
// killall. No read-only Spark page has one as a whole segment (the REST
// API's "holdstatus" is not "hold"), so the words apply on every route.
//
// It is the one declaration both Guard and the stripper's prefilter read.
var killWords = [...]string{"kill", "killall", "hold", "resume", "decommission"}

// killStems are the words of killWords that contain no other word: a text
// without any of them, in any ASCII case, contains no word of killWords
// ("killall" contains "kill").
var killStems = func() []string {
	var out []string
	for _, w := range killWords {
		stem := true
		for _, o := range killWords {
			if o != w && strings.Contains(w, o) {
				stem = false
			}
		}
		if stem {
			out = append(out, w)
		}
	}
	return out
}()

// isKillSegment reports whether seg, one decoded path segment, spells a
// word of killWords in some disguise a server, a browser or a user agent
// might see through. The segment is read as loosely as anything could
// read it, because refusing more costs nothing here:
//
//   - compatibility-normalised (NFKD, then NFKC): fullwidth "ｋｉｌｌ" and
//     ligatures are their ASCII letters;
//   - default-ignorable code points (zero-width space and joiners, the
//     soft hyphen, BOM, variation selectors, Hangul fillers) and combining
//     marks are dropped anywhere in it: "ki\u200bll", "K\u0130LL" (whose
//     "\u0130" decomposes to I and a combining dot);
//   - Unicode case folding (x/text/cases), then each rune mapped to the
//     lower case of its upper case, as Java's String.equalsIgnoreCase
//     compares: so the dotless "\u0131" is i, the long s is s, the Kelvin
//     sign is k;
//   - dots and white space trimmed from both ends ("kill.", " kill ",
//     "kill\u3002"), as file systems and some servers trim them;
//   - split again at '/' and '\' that normalisation made (fullwidth
//     solidus), each part judged.
//
// ASCII segments take a fast path with no allocation.
func isKillSegment(seg string) bool {
	for i := 0; i < len(seg); i++ {
		if seg[i] >= utf8.RuneSelf {
			return isKillFolded(foldSegment(seg))
		}
	}
	return isKillWordASCII(trimASCIIDotsSpaces(seg))
}

// isKillSegmentBytes is isKillSegment for a byte slice; it allocates only
// for a segment with non-ASCII bytes.
func isKillSegmentBytes(seg []byte) bool {
	for _, c := range seg {
		if c >= utf8.RuneSelf {
			return isKillFolded(foldSegment(string(seg)))
		}
	}
	return isKillWordASCII(trimASCIIDotsSpaces(seg))
}

// isKillFolded judges a folded segment, part by part.
func isKillFolded(folded string) bool {
	for part := range strings.FieldsFuncSeq(folded, func(r rune) bool { return r == '/' || r == '\\' }) {
		if isKillWordASCII(strings.TrimFunc(part, isTrimmed)) {
			return true
		}
	}
	return false
}

// isKillWordASCII reports whether s equals a word of killWords in any
// ASCII case.
func isKillWordASCII[S string | []byte](s S) bool {
	if len(s) >= len(killWordsByLen) {
		return false
	}
	for _, w := range killWordsByLen[len(s)] {
		if asciiEqualFold(s, w) {
			return true
		}
	}
	return false
}

// killWordsByLen are the words of killWords by length: most path
// segments are no word's length.
var killWordsByLen = func() [][]string {
	n := 0
	for _, w := range killWords {
		n = max(n, len(w))
	}
	t := make([][]string, n+1)
	for _, w := range killWords {
		t[len(w)] = append(t[len(w)], w)
	}
	return t
}()

// trimASCIIDotsSpaces trims ASCII dots and white space from both ends.
func trimASCIIDotsSpaces[S string | []byte](s S) S {
	isCut := func(c byte) bool {
		switch c {
		case '.', ' ', '\t', '\n', '\v', '\f', '\r':
			return true
		}
		return false
	}
	for len(s) > 0 && isCut(s[0]) {
		s = s[1:]
	}
	for len(s) > 0 && isCut(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	return s
}

// foldSegment returns seg compatibility-decomposed, without ignorable
// code points and combining marks, case-folded and recomposed (see
// isKillSegment).
func foldSegment(seg string) string {
	s := norm.NFKD.String(seg)
	s = strings.Map(func(r rune) rune {
		if isIgnorable(r) {
			return -1
		}
		return r
	}, s)
	// A Caser keeps state: one per call (this path is rare).
	s = cases.Fold().String(s)
	s = strings.Map(func(r rune) rune { return unicode.ToLower(unicode.ToUpper(r)) }, s)
	return norm.NFKC.String(s)
}

// isIgnorable reports whether r is dropped before comparing: format
// characters (Cf: zero-width space, joiners, soft hyphen, BOM, bidi
// controls), combining marks, variation selectors and the other
// default-ignorable code points (Hangul fillers, the combining grapheme
// joiner).
func isIgnorable(r rune) bool {
	return unicode.In(r, unicode.Cf, unicode.Mn, unicode.Me, unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point)
}

// isTrimmed reports whether r is trimmed from the ends of a folded
// segment: dots (also the ideographic full stops, which NFKC keeps) and
// white space.
func isTrimmed(r rune) bool {
	switch r {
	case '.', '\u3002', '\uff61':
		return true
	}
	return unicode.IsSpace(r) || isIgnorable(r)
}
