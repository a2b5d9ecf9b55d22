package proxy

import (
	"bytes"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"
)

// This file judges one start tag: is it a kill control? Everything works
// on the tokenizer's byte slices and allocates nothing.

// mayBeKill is a cheap, sound pre-check on a tag's raw bytes: a kill
// control's class or URL spells one of the words of stateChanging, unless
// it hides letters behind a percent-escape or a numeric character reference
// or "&percnt;" (no named reference stands for an ASCII letter, so "&amp;"
// in query strings needs no closer look).
func mayBeKill(raw []byte) bool {
	if bytes.IndexByte(raw, '%') >= 0 || bytes.Contains(raw, []byte("&#")) || bytes.Contains(raw, []byte("&percnt")) {
		return true
	}
	for _, w := range mayBeKillWords {
		if indexFold(raw, w) >= 0 {
			return true
		}
	}
	return false
}

// mayBeKillWords cover stateChanging and killClasses ("killall" contains
// "kill").
var mayBeKillWords = []string{"kill", "hold", "resume", "decommission"}

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

// isKillControl reads the current tag's attributes (the tag name must not
// have been read yet). name is the lower-case tag name.
func isKillControl(z *html.Tokenizer, name string) bool {
	_, more := z.TagName()
	for more {
		var key, val []byte
		key, val, more = z.TagAttr()
		switch string(key) {
		case "class":
			if hasKillClass(val) {
				return true
			}
		case "href", "xlink:href":
			if (name == "a" || name == "area") && isKillURL(val) {
				return true
			}
		case "content":
			// <meta http-equiv="refresh" content="0; url=...">
			if name == "meta" {
				if i := indexFold(val, "url="); i >= 0 && isKillURL(bytes.Trim(val[i+4:], "'\" ")) {
					return true
				}
			}
		case "action":
			if name == "form" && isKillURL(val) {
				return true
			}
		case "formaction":
			if (name == "button" || name == "input") && isKillURL(val) {
				return true
			}
		}
	}
	return false
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

// maxKillSegment bounds the length of a path segment that may spell one of
// stateChanging: a percent-escape turns three bytes into one.
var maxKillSegment = func() int {
	n := 0
	for _, w := range stateChanging {
		n = max(n, 3*len(w))
	}
	return n
}()

// isKillURL reports whether a link's path (before '?' or '#') has a segment
// Guard refuses. Browsers read '\' as '/' in http URLs, and the segment is
// percent-decoded once, as the gateway would decode it.
func isKillURL(u []byte) bool {
	if i := bytes.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	var dec [64]byte
	for len(u) > 0 {
		i := bytes.IndexAny(u, "/\\")
		seg := u
		if i >= 0 {
			seg, u = u[:i], u[i+1:]
		} else {
			u = nil
		}
		seg = bytes.TrimSpace(seg)
		if len(seg) > maxKillSegment {
			continue
		}
		if bytes.IndexByte(seg, '%') >= 0 {
			seg = appendPercentDecodedLoose(dec[:0], seg)
		}
		for _, w := range stateChanging {
			if asciiEqualFold(seg, w) {
				return true
			}
		}
	}
	return false
}

// asciiEqualFold is strings.EqualFold restricted to ASCII letters, as
// mayBeKill is.
func asciiEqualFold(s []byte, t string) bool {
	if len(s) != len(t) {
		return false
	}
	for i := 0; i < len(s); i++ {
		a, b := s[i], t[i]
		if 'A' <= a && a <= 'Z' {
			a += 'a' - 'A'
		}
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		if a != b {
			return false
		}
	}
	return true
}

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
