package proxy

import (
	"bytes"
	"io"
)

// The back bar is a thin strip the gateway adds at the top of every HTML
// page it serves from Spark (driver, History Server), with a link back to
// the index and to the app's diagnosis: Spark's pages link only within the
// app, so without it a user who followed a bookmark has no way back.
//
// It is a normal block, first in <body>, not a fixed overlay: Spark's
// navbar and everything below move down by its height and keep their own
// layout, and nothing of Spark's is covered. Its style comes from the
// gateway's own file (/_/static/bar.css, same origin, also on app hosts),
// never an inline style, so a page whose CSP allows styles from 'self'
// only still shows it; it carries no script.
const (
	barOpen = `<div class="sparkgate-bar" role="navigation" aria-label="sparkgate">` +
		`<link rel="stylesheet" href="/_/static/bar.css"><a class="sg-home" href="`
	barHome    = `">&#8592; All Spark applications</a>`
	barDiag    = `<a class="sg-diag" href="`
	barDiagEnd = `/_/diagnosis">Diagnosis of this application</a>`
	barEnd     = `</div>`
	// barScanLimit is how far into a page the <body> tag is looked for;
	// past it the page is passed on untouched (Spark's <head> is a few KiB).
	barScanLimit = 64 << 10
)

// withBackBar returns src with the back bar inserted right after the
// first <body ...> start tag. home is the index's URL; appID, when not
// "", adds a link to the app's diagnosis at diagBase+appID+"/_/diagnosis".
// home, diagBase and appID must be safe in a double-quoted attribute
// (ValidAppID ids and the gateway's own URLs are).
//
// It copies src through unchanged except for that insertion, holds no
// bytes of the page (until the tag is found it reads at most len(p) minus
// the bar's length, so the bar is written into the caller's buffer), and
// allocates nothing per Read; past the tag, or barScanLimit bytes without
// one, Read is src's Read. Comments, end tags, and the text of <script>
// and <style> are skipped, so a "<body" in them is not taken for the tag.
func withBackBar(src io.ReadCloser, home, diagBase, appID string) io.ReadCloser {
	b := &backBar{src: src}
	b.parts = [...]string{barOpen, home, barHome, "", "", "", "", barEnd}
	if appID != "" {
		b.parts[3], b.parts[4], b.parts[5], b.parts[6] = barDiag, diagBase, appID, barDiagEnd
	}
	for _, s := range b.parts {
		b.size += len(s)
	}
	return b
}

// backBar adds the back bar to a page of the request's app: on an app's
// own host the links lead to the main origin.
func (s *Server) backBar(body io.ReadCloser, st *reqState) io.ReadCloser {
	home, diag := "/", "/app/"
	if st.onAppHost && s.publicURL != nil {
		origin := s.publicURL.Scheme + "://" + s.publicURL.Host
		home, diag = origin+"/", origin+"/app/"
	}
	id := st.route.AppID
	if !ValidAppID(id) {
		id = ""
	}
	return withBackBar(body, home, diag, id)
}

// Scanner states of backBar.
const (
	bbText = iota
	bbLT   // after '<'
	bbBang // after "<!"
	bbBangDash
	bbComment // inside <!-- -->; match counts the '-' seen
	bbSkipTag // an end tag or declaration, to its '>'
	bbName    // a start tag's name
	bbAttrs   // a start tag's attributes
	bbQuoted  // a quoted attribute value; quote is its quote
	bbRaw     // script or style text, to its end tag; match counts the bytes of it seen
)

// attrStop marks the bytes that end a run of an attribute's name or
// unquoted value.
var attrStop = [256]bool{'"': true, '\'': true, '>': true, '=': true, ' ': true, '\t': true, '\n': true, '\r': true, '\f': true}

// Start tag kinds.
const (
	tagOther = iota
	tagBody
	tagScript
	tagStyle
)

type backBar struct {
	src   io.ReadCloser
	parts [8]string
	size  int // total length of parts
	// pending: parts[next][off:] and the parts after it are still to be
	// written; inserting says the tag was found.
	next, off int
	inserting bool
	done      bool // inserted, or gave up: pass src through
	err       error

	scanned int
	state   uint8
	kind    uint8
	match   uint8
	quote   byte
	afterEq bool
	name    [6]byte
	nameLen uint8
}

func (b *backBar) Read(p []byte) (int, error) {
	if b.inserting {
		n := b.drain(p)
		if n == 0 && b.err != nil {
			return 0, b.err
		}
		return n, nil
	}
	if b.done {
		if b.err != nil {
			return 0, b.err
		}
		return b.src.Read(p)
	}
	if len(p) == 0 {
		return 0, nil
	}
	// Leave room for the bar after what is read; with a small p, read one
	// byte at a time so the tag always ends the read.
	q := p[:1]
	if len(p) > 2*b.size {
		q = p[:len(p)-b.size]
	}
	n, err := b.src.Read(q)
	i, found := b.scan(q[:n])
	if !found {
		b.scanned += n
		if b.scanned > barScanLimit {
			b.done = true
		}
		return n, err
	}
	b.done, b.inserting, b.err = true, true, err
	if i == n || len(p) < n+b.size {
		// The tag ends the read (always so for one-byte reads): the bar
		// follows in the next Reads.
		return n, nil
	}
	copy(p[i+b.size:], p[i:n])
	w := i
	for _, s := range b.parts {
		w += copy(p[w:], s)
	}
	b.next, b.inserting = len(b.parts), false
	return n + b.size, err
}

// drain writes what is left of the bar into p.
func (b *backBar) drain(p []byte) int {
	n := 0
	for n < len(p) && b.next < len(b.parts) {
		c := copy(p[n:], b.parts[b.next][b.off:])
		n += c
		b.off += c
		if b.off == len(b.parts[b.next]) {
			b.next++
			b.off = 0
		}
	}
	if b.next == len(b.parts) {
		b.inserting = false
	}
	return n
}

// scan advances the scanner over buf; found says a <body> start tag ended
// at buf[i-1].
func (b *backBar) scan(buf []byte) (i int, found bool) {
	for i < len(buf) {
		c := buf[i]
		i++
		switch b.state {
		case bbText:
			// Most of a page is text and attributes: jump to the next '<'.
			if c != '<' {
				j := bytes.IndexByte(buf[i:], '<')
				if j < 0 {
					return len(buf), false
				}
				i += j + 1
			}
			b.state = bbLT
		case bbLT:
			switch {
			case c == '!':
				b.state = bbBang
			case c == '/' || c == '?':
				b.state = bbSkipTag
			case barLetter(c):
				b.name[0], b.nameLen, b.state = barLower(c), 1, bbName
			case c == '<':
			default:
				b.state = bbText
			}
		case bbBang:
			b.state = bbSkipTag
			if c == '-' {
				b.state = bbBangDash
			}
		case bbBangDash:
			b.state, b.match = bbSkipTag, 0
			if c == '-' {
				b.state = bbComment
			}
		case bbComment:
			switch {
			case c == '-':
				b.match = min(b.match+1, 2)
			case c == '>' && b.match == 2:
				b.state = bbText
			default:
				b.match = 0
			}
		case bbSkipTag:
			if c != '>' {
				j := bytes.IndexByte(buf[i:], '>')
				if j < 0 {
					return len(buf), false
				}
				i += j + 1
			}
			b.state = bbText
		case bbName:
			if c == '>' || c == '/' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' {
				b.kind = b.tagKind()
				b.state, b.quote, b.afterEq = bbAttrs, 0, false
				if c == '>' && b.endTag() {
					return i, true
				}
				continue
			}
			if int(b.nameLen) < len(b.name) {
				b.name[b.nameLen] = barLower(c)
			}
			b.nameLen = min(b.nameLen+1, uint8(len(b.name)+1))
		case bbAttrs:
			// A quote opens a value only right after '=' (and spaces), as
			// an HTML tokenizer reads it; elsewhere it is part of a name
			// or of an unquoted value.
			switch c {
			case '>':
				if b.endTag() {
					return i, true
				}
			case '=':
				b.afterEq = true
			case ' ', '\t', '\n', '\r', '\f':
			case '"', '\'':
				if b.afterEq {
					j := bytes.IndexByte(buf[i:], c)
					if j < 0 {
						b.state, b.quote = bbQuoted, c
						return len(buf), false
					}
					i += j + 1
				}
				b.afterEq = false
			default:
				b.afterEq = false
				for i < len(buf) && !attrStop[buf[i]] {
					i++
				}
			}
		case bbQuoted:
			j := bytes.IndexByte(buf[i-1:], b.quote)
			if j < 0 {
				return len(buf), false
			}
			i += j
			b.state, b.quote, b.afterEq = bbAttrs, 0, false
		case bbRaw:
			end := "</script"
			if b.kind == tagStyle {
				end = "</style"
			}
			if b.match == 0 && c != '<' {
				j := bytes.IndexByte(buf[i:], '<')
				if j < 0 {
					return len(buf), false
				}
				i += j + 1
				c = '<'
			}
			switch {
			case barLower(c) == end[b.match]:
				b.match++
				if int(b.match) == len(end) {
					b.state = bbSkipTag
				}
			case c == '<':
				b.match = 1
			default:
				b.match = 0
			}
		}
	}
	return i, false
}

// endTag moves past a start tag's '>' and reports whether it was <body>.
func (b *backBar) endTag() bool {
	switch b.kind {
	case tagBody:
		return true
	case tagScript, tagStyle:
		b.state, b.match = bbRaw, 0
	default:
		b.state = bbText
	}
	return false
}

func (b *backBar) tagKind() uint8 {
	switch string(b.name[:min(int(b.nameLen), len(b.name))]) {
	case "body":
		if b.nameLen == 4 {
			return tagBody
		}
	case "script":
		if b.nameLen == 6 {
			return tagScript
		}
	case "style":
		if b.nameLen == 5 {
			return tagStyle
		}
	}
	return tagOther
}

func (b *backBar) Close() error { return b.src.Close() }

func barLetter(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }

func barLower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c | 0x20
	}
	return c
}
