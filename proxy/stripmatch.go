package proxy

import (
	"bytes"
	"encoding/binary"
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file judges one start tag: is it a kill control? Everything works
// on the tokenizer's byte slices and allocates nothing.

// mayBeKill is a cheap, sound pre-check on a tag's raw bytes: a kill
// control's class or URL spells one of killStems (the words of killWords
// no other word contains) in ASCII letters, unless it hides letters or
// adds disguises (see isKillSegment) behind a percent-escape, a non-ASCII
// byte, or a character reference other than the five that stand for
// ASCII punctuation ("&amp;" is common in Spark's query strings).
func mayBeKill(raw []byte) bool {
	// One pass: the scanner calls this on every <a> and <input> of a page.
	for i := 0; i < len(raw); i++ {
		switch k := mayBeKillClass[raw[i]]; k {
		case 0:
		case mkYes:
			return true
		case mkAmp:
			if isDisguisingReference(raw[i+1:]) {
				return true
			}
		default:
			if len(raw)-i < minStemLen {
				continue
			}
			// The stems are lower-case ASCII letters: OR-ing 0x20 into a
			// byte folds its case exactly when the other side is a letter.
			head := binary.LittleEndian.Uint32(raw[i:]) | 0x20202020
			for _, w := range killStemsByFirst[k-mkStem] {
				if head == w.head && len(raw)-i >= len(w.s) && asciiEqualFold(raw[i+4:i+len(w.s)], w.s[4:]) {
					return true
				}
			}
		}
	}
	return false
}

// Classes of mayBeKill's bytes: mkYes ('%' and non-ASCII bytes) makes a
// tag a candidate outright, mkAmp starts a character reference, and
// mkStem+i starts the words of killStemsByFirst[i].
const (
	mkYes = 1 + iota
	mkAmp
	mkStem
)

// stem is a word of killStems with its first four letters as mayBeKill
// loads them.
type stem struct {
	s    string
	head uint32
}

// minStemLen is the length of the shortest stem (each is at least this
// long, and all letters: see killStemsByFirst).
const minStemLen = 4

var killStemsByFirst, mayBeKillClass = func() ([][]stem, [256]uint8) {
	var byFirst [][]stem
	var class [256]uint8
	class['%'], class['&'] = mkYes, mkAmp
	for c := 0x80; c < 0x100; c++ {
		class[c] = mkYes
	}
	for _, w := range killStems {
		c := w[0]
		if class[c] == 0 {
			class[c] = mkStem + uint8(len(byFirst))
			class[c-('a'-'A')] = class[c]
			byFirst = append(byFirst, nil)
		}
		if len(w) < minStemLen || strings.Trim(w, "abcdefghijklmnopqrstuvwxyz") != "" {
			panic("kill stem " + w + " is not lower-case letters, at least 4")
		}
		i := class[c] - mkStem
		byFirst[i] = append(byFirst[i], stem{s: w, head: binary.LittleEndian.Uint32([]byte(w))})
	}
	return byFirst, class
}()

// isDisguisingReference reports whether b, what follows a '&', is a
// character reference that may stand for a letter or an ignorable
// character when an attribute value is decoded: a numeric one, or a named
// one other than amp, lt, gt, quot and apos. In an attribute a name
// without ';' is decoded only when it is one of the legacy names (at most
// six letters long) and not followed by '=', so Spark's "&activeJob.sort="
// query strings are not references.
func isDisguisingReference(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	if b[0] == '#' {
		return true
	}
	n := 0
	for n < len(b) && (isASCIILetter(b[n]) || '0' <= b[n] && b[n] <= '9') {
		n++
	}
	if n == 0 {
		return false
	}
	switch string(b[:n]) {
	case "amp", "lt", "gt", "quot", "apos":
		return false
	}
	if n < len(b) && b[n] == ';' {
		return true
	}
	return n <= longestLegacyReference && (n == len(b) || b[n] != '=')
}

// longestLegacyReference is the longest name of a character reference
// that HTML decodes without its ';' ("middot", "brvbar").
const longestLegacyReference = 6

func isASCIILetter(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }

// indexFold returns the index of the first instance of the lower-case ASCII
// word w in b, in any ASCII case, or -1. Non-ASCII letters that fold to
// ASCII (the Kelvin sign) are not matched here; a link spelled so does not
// reach Spark's handler, whose path Jetty matches exactly.
func indexFold(b []byte, w string) int {
	if len(w) == 0 {
		return 0
	}
	first, upper := w[0], w[0]
	if 'a' <= upper && upper <= 'z' {
		upper -= 'a' - 'A'
	}
	for i := 0; i+len(w) <= len(b); i++ {
		// Find the next possible first byte quickly.
		j := bytes.IndexByte(b[i:len(b)-len(w)+1], first)
		if upper != first {
			if k := bytes.IndexByte(b[i:len(b)-len(w)+1], upper); k >= 0 && (j < 0 || k < j) {
				j = k
			}
		}
		if j < 0 {
			return -1
		}
		i += j
		if asciiEqualFold(b[i:i+len(w)], w) {
			return i
		}
	}
	return -1
}

// killClasses are class names of controls that change an application.
// Spark 3.5 and 4.0 use kill-link; the hold/resume names are guesses for
// later releases that cost nothing when absent.
var killClasses = []string{"kill-link", "hold-link", "resume-link"}

// judgeControl reads the current tag's attributes (the tag name must not
// have been read yet) and reports whether it is a kill control. name is the
// lower-case tag name. u is the tag's first href (for <a>) or action (for
// <form>), the URL a confirmation link is made from; it points into the
// tag's bytes (or the tokenizer's buffer) and is valid until the next
// token. Reading stops at the verdict, once u is known if wantURL: the
// tokenizer's TagAttr copies attributes, and Spark's onclick is long.
func judgeControl(z tagAttrs, name string, wantURL bool) (kill bool, u []byte) {
	_, more := z.TagName()
	seenURL := !wantURL || (name != "a" && name != "form")
	for more && !(kill && seenURL) {
		var key, val []byte
		key, val, more = z.TagAttr()
		switch string(key) {
		case "class":
			if hasKillClass(val) {
				kill = true
			}
		case "href", "xlink:href":
			if (name == "a" || name == "area") && isKillURL(val) {
				kill = true
			}
			if name == "a" && string(key) == "href" && !seenURL {
				u, seenURL = val, true
			}
		case "content":
			// <meta http-equiv="refresh" content="0; url=...">
			if name == "meta" {
				if i := indexFold(val, "url="); i >= 0 && isKillURL(bytes.Trim(val[i+4:], "'\" ")) {
					kill = true
				}
			}
		case "action":
			if name == "form" && isKillURL(val) {
				kill = true
			}
			if name == "form" && !seenURL {
				u, seenURL = val, true
			}
		case "formaction":
			if (name == "button" || name == "input") && isKillURL(val) {
				kill = true
			}
		}
	}
	return kill, u
}

// killKind is what a driver kill control kills.
type killKind uint8

const (
	killNone killKind = iota
	killJob
	killStage
)

// path is the kill path the gateway's confirmation page is served at,
// under an app's prefix.
func (k killKind) path() string {
	if k == killStage {
		return "/stages/stage/kill/"
	}
	return "/jobs/job/kill/"
}

// driverKillKind reads the URL of a driver kill control as Spark renders
// it ("<uiRoot>/jobs/job/kill/?id=N", "<uiRoot>/stages/stage/kill/"): the
// path, exactly, ends in one of the two handlers KillTarget names, with or
// without the trailing slash (relative paths too).
func driverKillKind(u []byte) killKind {
	if i := indexEither(u, '?', '#'); i >= 0 {
		u = u[:i]
	}
	u = bytes.TrimSuffix(u, []byte("/"))
	switch {
	case endsInPath(u, "jobs/job/kill"):
		return killJob
	case endsInPath(u, "stages/stage/kill"):
		return killStage
	}
	return killNone
}

// endsInPath reports whether the path u is p or ends in "/"+p.
func endsInPath(u []byte, p string) bool {
	return bytes.HasSuffix(u, []byte(p)) && (len(u) == len(p) || u[len(u)-len(p)-1] == '/')
}

// queryID returns the value of the first id parameter of u's query, as
// Spark's request.getParameter("id") reads it (undecoded here: an escaped
// id is not a number and makes no link), or nil.
func queryID(u []byte) []byte {
	i := bytes.IndexByte(u, '?')
	if i < 0 {
		return nil
	}
	q := u[i+1:]
	if j := bytes.IndexByte(q, '#'); j >= 0 {
		q = q[:j]
	}
	for len(q) > 0 {
		var p []byte
		if j := bytes.IndexByte(q, '&'); j >= 0 {
			p, q = q[:j], q[j+1:]
		} else {
			p, q = q, nil
		}
		if v, ok := bytes.CutPrefix(p, []byte("id=")); ok {
			return v
		}
	}
	return nil
}

// isKillID reports whether b is an id the confirmation page takes: one to
// maxKillID ASCII digits (the test isDigits makes).
func isKillID(b []byte) bool {
	if len(b) == 0 || len(b) > maxKillID {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// hasKillClass reports whether the white-space separated list val (split
// as strings.Fields splits) has one of killClasses, in any ASCII case.
func hasKillClass(val []byte) bool {
	for _, k := range killClasses {
		for off := 0; off < len(val); {
			i := indexFold(val[off:], k)
			if i < 0 {
				break
			}
			i += off
			j := i + len(k)
			if spaceBefore(val[:i]) && spaceAfter(val[j:]) {
				return true
			}
			off = i + 1
		}
	}
	return false
}

// spaceBefore reports whether b is empty or ends in a white-space rune.
func spaceBefore(b []byte) bool {
	if len(b) == 0 {
		return true
	}
	r, _ := utf8.DecodeLastRune(b)
	return unicode.IsSpace(r)
}

// spaceAfter reports whether b is empty or starts with a white-space rune.
func spaceAfter(b []byte) bool {
	if len(b) == 0 {
		return true
	}
	r, _ := utf8.DecodeRune(b)
	return unicode.IsSpace(r)
}

// isKillURL reports whether a link's path (before '?' or '#') has a segment
// Guard refuses (isKillSegment). Browsers read '\' as '/' in http URLs,
// and the segment is percent-decoded once, as the gateway would decode it.
func isKillURL(u []byte) bool {
	if i := indexEither(u, '?', '#'); i >= 0 {
		u = u[:i]
	}
	// Spark's own kill controls end in a plain "kill" segment
	// (".../jobs/job/kill/", ".../stages/stage/kill"): that segment alone
	// decides, without a pass over the path (which would find it too).
	t := u
	if n := len(t); n > 0 && urlClass[t[n-1]] == ucSep {
		t = t[:n-1]
	}
	if n := len(t); n >= 5 && urlClass[t[n-5]] == ucSep && asciiEqualFold(t[n-4:], "kill") {
		return true
	}
	var dec [64]byte
	// One pass over the path: a segment of ASCII without '%', the most
	// common, is judged where it lies.
	start, plain := 0, true
	for i := 0; i <= len(u); i++ {
		if i < len(u) {
			switch urlClass[u[i]] {
			case ucSep:
			case ucEscaped:
				plain = false
				continue
			default:
				continue
			}
		}
		seg := u[start:i]
		start = i + 1
		if plain {
			if isKillWordASCII(trimASCIIDotsSpaces(seg)) {
				return true
			}
			continue
		}
		plain = true
		if bytes.IndexByte(seg, '%') >= 0 {
			seg = appendPercentDecodedLoose(dec[:0], seg)
		}
		if isKillSegmentBytes(seg) {
			return true
		}
	}
	return false
}

// asciiEqualFold is strings.EqualFold restricted to ASCII letters, as
// mayBeKill is, and as the tokenizer compares attribute keys.
func asciiEqualFold[S, T string | []byte](s S, t T) bool {
	if len(s) != len(t) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if asciiLower[s[i]] != asciiLower[t[i]] {
			return false
		}
	}
	return true
}

// asciiLower maps A-Z to a-z and every other byte to itself.
var asciiLower = func() (t [256]byte) {
	for i := range t {
		t[i] = byte(i)
	}
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = byte(c) + 'a' - 'A'
	}
	return t
}()

// appendPercentDecodedLoose appends s to dst with valid %XX escapes
// decoded and anything else kept.
func appendPercentDecodedLoose(dst, s []byte) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			c = unhex(s[i+1])<<4 | unhex(s[i+2])
			i += 2
		}
		dst = append(dst, c)
	}
	return dst
}

// indexEither returns the index of the first a or b in s, or -1: what
// bytes.IndexAny(s, string(a)+string(b)) returns for two ASCII bytes,
// without its per-call set (the stripper asks this of every URL it judges).
func indexEither(s []byte, a, b byte) int {
	// Two vector searches cost less than one loop over a URL's bytes.
	i := bytes.IndexByte(s, a)
	if i < 0 {
		return bytes.IndexByte(s, b)
	}
	if j := bytes.IndexByte(s[:i], b); j >= 0 {
		return j
	}
	return i
}

// Classes of a URL's path bytes, as isKillURL reads them: a segment
// separator ('/', and '\' as browsers read it), or a byte that makes the
// segment one to decode ('%', non-ASCII).
const (
	ucSep = 1 + iota
	ucEscaped
)

var urlClass = func() (t [256]uint8) {
	t['/'], t['\\'], t['%'] = ucSep, ucSep, ucEscaped
	for c := utf8.RuneSelf; c < 0x100; c++ {
		t[c] = ucEscaped
	}
	return t
}()
