package proxy

import (
	"errors"
	"io"

	"golang.org/x/net/html"
)

// maxTokenBuf bounds what the tokenizer may hold for one token, and the
// longest tag the fast path reads itself. Spark pages have large inline
// scripts (timeline data) but no single token near this; a longer token is
// passed through in pieces (see next).
const maxTokenBuf = 1 << 20

var errStripperClosed = errors.New("html stripper: read after close")

// NewStrippingReader returns a reader of the HTML read from src with the
// kill/hold/resume controls removed; Close closes src. It reads src only
// when asked for output and holds at most one tag beside a pooled 32 KiB
// buffer, so memory stays bounded whatever the page size, and it starts no
// goroutine. It is a streaming scanner (stripscan.go) whose output is, byte
// for byte, that of the tokenizer-based stripper below (its reference).
//
// Everything kept is copied byte for byte, so
// output equals input except for the removed elements:
//   - an <a> whose class list has kill-link (also hold-link, resume-link), or
//     whose href has a path segment kill, killall, hold, resume or
//     decommission (the segments Guard refuses), with its content;
//   - a <form> whose action has such a segment (the Standalone Master's
//     "app/kill/" and "driver/kill/" forms), with its content;
//   - a <button> with such a formaction or class, with its content, an
//     <input> or <area> with such a formaction or href (also xlink:href on
//     SVG anchors), and a <meta> refresh to such a URL.
//
// An element being removed ends at its own end tag, at an end tag of an
// element it did not open (its parent closing), at EOF, and an <a> also at
// the next <a> start tag, as an HTML parser would end it. Text inside
// script, style and other raw-text elements is never inspected.
//
// A tag longer than maxTokenBuf (1 MiB) goes to the tokenizer-based
// stripper, which cannot judge a longer start tag of <a>, <form> or
// <button> and removes its element, and copies any other longer tag with
// its tail read as text. Text, scripts and comments of any length stream
// through.
//
// Read fills p with kept bytes, but returns early rather than read src
// when what it has read is used up. When src pauses inside a tag, the
// output of that tag waits for its end (text is passed on as it comes). A
// trailing partial token is copied unchanged at EOF. An error from src
// other than io.EOF is returned as is once the output before it is read
// (an unfinished tag before it is dropped, as the tokenizer drops it), and
// then again on every Read.
func NewStrippingReader(src io.ReadCloser) io.ReadCloser {
	return newFastStripper(src, false, "")
}

// NewConfirmLinkReader returns a reader like NewStrippingReader's, for a
// user who may kill jobs and stages of the app (proxy.kill modify-acl):
// each removed element that is a driver's job or stage kill control, with
// its id, is replaced by a plain link to the gateway's confirmation page
// under prefix (the app's public prefix, "/app/<id>"):
//
//	<a href="<prefix>/jobs/job/kill/?id=N" class="kill-link">(kill)</a>
//
// (/stages/stage/kill/ for a stage), with no script. The controls are
// Spark 3.5's "(kill)" anchor (an href ending in /jobs/job/kill/ or
// /stages/stage/kill/ with a numeric id in its query) and Spark 4.0.5's
// POST form (an action ending so, with the id in an <input name="id">),
// which is replaced whole. Every other control is removed as
// NewStrippingReader removes it, and so is a kill control whose id cannot
// be read; everything else is copied byte for byte. The link is written
// where the removed element was, once it has ended (at EOF an unfinished
// element gets none).
func NewConfirmLinkReader(src io.ReadCloser, prefix string) io.ReadCloser {
	return newFastStripper(src, true, html.EscapeString(prefix))
}

// newReferenceStripper returns the tokenizer-based stripper alone: what
// NewStrippingReader (rewrite false) or NewConfirmLinkReader (rewrite
// true, linkPrefix HTML-escaped) return, without the fast path. It is the
// oracle the fast path is tested against (FuzzStripperDifferential), and
// where the fast path hands a tag longer than maxTokenBuf.
func newReferenceStripper(src io.ReadCloser, rewrite bool, linkPrefix string) *strippingReader {
	r := &strippingReader{src: src}
	r.in.src = src
	r.z = newTokenizer(&r.in)
	r.st.rewrite, r.st.linkPrefix = rewrite, linkPrefix
	return r
}

func newTokenizer(r io.Reader) *html.Tokenizer {
	z := html.NewTokenizer(r)
	z.SetMaxBuf(maxTokenBuf)
	return z
}

// strippingReader drives the tokenizer over src, one token per step, and
// hands out the kept bytes of each.
type strippingReader struct {
	src io.ReadCloser
	in  prefixReader
	z   *html.Tokenizer
	st  stripState
	// out is the kept output not yet returned: the Raw bytes of the last
	// token (valid until the next z.Next) or st.scratch.
	out []byte
	err error // sticky: io.EOF, the failure, or errStripperClosed

	// handBack says the fast path handed the stream over: Read stops and
	// sets yielded at the first token boundary after a token in data with
	// no element being removed, so that the fast path takes it back
	// (z.Buffered, then in.pre).
	handBack bool
	yielded  bool
	consumed int // bytes of the tokens read
}

// prefixReader is the tokenizer's input: bytes to re-read after a
// tokenizer restart, then src.
type prefixReader struct {
	pre []byte
	src io.Reader
}

func (r *prefixReader) Read(b []byte) (int, error) {
	if len(r.pre) > 0 {
		n := copy(b, r.pre)
		r.pre = r.pre[n:]
		return n, nil
	}
	return r.src.Read(b)
}

func (r *strippingReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if len(r.out) > 0 {
			c := copy(p[n:], r.out)
			r.out = r.out[c:]
			n += c
			continue
		}
		if r.err != nil {
			break
		}
		if r.handBack && r.consumed > 0 && r.st.skip == "" && r.st.rawCtx == "" && !r.st.dropFake {
			r.yielded = true
			break
		}
		// Hand out what is ready rather than wait on src for the next
		// token: the tokenizer reads src when it has no bytes left.
		if n > 0 && len(r.z.Buffered()) == 0 && len(r.in.pre) == 0 {
			break
		}
		r.out = r.next()
	}
	if n > 0 || len(p) == 0 {
		return n, nil
	}
	return 0, r.err
}

// Close closes src; later Reads fail.
func (r *strippingReader) Close() error {
	if r.err == nil || r.err == io.EOF { //nolint:errorlint // sentinel set here
		r.err = errStripperClosed
	}
	r.out = nil
	return r.src.Close()
}

// next reads one token and returns the bytes to pass on for it (often
// none); at the end it sets r.err.
func (r *strippingReader) next() []byte {
	z, st := r.z, &r.st
	tt := z.Next()
	if tt != html.ErrorToken {
		r.consumed += len(z.Raw())
		return st.token(z, tt, z.Raw())
	}
	err := z.Err()
	switch {
	case err == io.EOF: //nolint:errorlint // the tokenizer returns io.EOF itself
		r.err = io.EOF
		// A trailing partial token is not a token: copy it as is.
		if st.skip != "" {
			return nil
		}
		st.scratch = append(append(st.scratch[:0], z.Raw()...), z.Buffered()...)
		return st.scratch
	case errors.Is(err, html.ErrBufferExceeded):
		// One token longer than maxTokenBuf: what was read of it is passed
		// on here; a new tokenizer starts in the same raw-text context on
		// the bytes not yet tokenized. The tokenizer's fragment mode reads
		// script and style as plaintext, so the context is restored by a
		// synthetic start tag that is dropped again (script escape states
		// are lost).
		var out []byte
		if raw := z.Raw(); st.skip == "" {
			// An oversized start tag of a control cannot be judged:
			// remove the element rather than risk passing it.
			if name := oversizedControl(raw); name != "" {
				st.startSkip(name)
			} else {
				out = raw // the old tokenizer's buffer stays ours
			}
		}
		var pre []byte
		if st.rawCtx != "" {
			pre = append(pre, "<"+st.rawCtx+">"...)
			st.dropFake = true
		}
		r.in.pre = append(append(pre, z.Buffered()...), r.in.pre...)
		r.z = newTokenizer(&r.in)
		return out
	default:
		// src's own error, unwrapped: the reverse proxy compares it with
		// context.Canceled to tell a client gone from a broken upstream.
		r.err = err
		return nil
	}
}

// stripState is what the stripper remembers between tokens.
type stripState struct {
	// skip is the name of the element being removed ("" when none); inner
	// holds the names of the elements opened inside it (innerNames,
	// delimited by innerEnds), so that their end tags are told apart from
	// the end tag of an ancestor.
	skip          string
	innerNames    []byte
	innerEnds     []int
	innerOverflow int

	// rawCtx is the raw-text element ("script", "style", ...) the tokenizer
	// is inside, for restarting it after an oversized token.
	rawCtx string

	// dropFake says the next token is the synthetic start tag of a restart.
	dropFake bool

	// scratch holds a candidate tag's raw bytes while it is judged (TagName
	// and TagAttr lower-case and unescape in place), and the tail at EOF.
	scratch []byte

	// rewrite says kill controls of jobs and stages become confirmation
	// links under linkPrefix (HTML-escaped) instead of vanishing.
	rewrite    bool
	linkPrefix string
	// owed is the confirmation link the element being removed turns into
	// when it ends: its kind (killJob, killStage or killNone) and id; owedBad
	// says its form named two different ids.
	owed    killKind
	owedID  [maxKillID]byte
	owedLen int
	owedBad bool
	// link holds a confirmation link and the token output after it.
	link []byte
	// mayKill says the caller has found, with mayBeKill on the values
	// judgeControl reads, that the start tag being handled outside any
	// removed element may be a kill control: judge need not search the
	// whole tag again (mayBeKill is sound, so a tag it would pass over is
	// never a kill control either way).
	mayKill bool
}

// maxKillID is the longest id a confirmation link carries (isDigits).
const maxKillID = 10

// maxInner bounds the elements remembered inside a removed one; deeper ones
// are only counted.
const maxInner = 256

func (st *stripState) startSkip(name string) {
	st.skip = name
	st.innerNames = st.innerNames[:0]
	st.innerEnds = st.innerEnds[:0]
	st.innerOverflow = 0
	st.owed, st.owedLen, st.owedBad = killNone, 0, false
}

// owe records, in rewrite mode, the confirmation link a removed <a> or
// <form> turns into; u is its href or action.
func (st *stripState) owe(name string, u []byte) {
	if !st.rewrite || (name != "a" && name != "form") {
		return
	}
	kind := driverKillKind(u)
	if kind == killNone {
		return
	}
	if name == "a" {
		// Spark 3.5: the id is in the anchor's own query.
		id := queryID(u)
		if !isKillID(id) {
			return
		}
		st.owedLen = copy(st.owedID[:], id)
	}
	st.owed = kind
}

// oweID records an id a removed kill form submits (Spark 4.0.5's hidden
// <input name="id">); the tag's name must not have been read yet.
func (st *stripState) oweID(z tagAttrs) {
	_, more := z.TagName()
	var name, val []byte
	hasName := false
	for more {
		var k, v []byte
		k, v, more = z.TagAttr()
		switch string(k) {
		case "name":
			if !hasName {
				name, hasName = v, true
			}
		case "value":
			if val == nil {
				val = v
			}
		}
	}
	if string(name) != "id" {
		return
	}
	switch {
	case !isKillID(val):
		st.owedBad = true
	case st.owedLen == 0:
		st.owedLen = copy(st.owedID[:], val)
	case string(st.owedID[:st.owedLen]) != string(val):
		st.owedBad = true
	}
}

// payLink returns the confirmation link owed by the removed element that
// has just ended (in st.link), or nil.
func (st *stripState) payLink() []byte {
	kind, n, bad := st.owed, st.owedLen, st.owedBad
	st.owed, st.owedLen, st.owedBad = killNone, 0, false
	if kind == killNone || n == 0 || bad {
		return nil
	}
	st.link = append(st.link[:0], `<a href="`...)
	st.link = append(st.link, st.linkPrefix...)
	st.link = append(st.link, kind.path()...)
	st.link = append(st.link, "?id="...)
	st.link = append(st.link, st.owedID[:n]...)
	st.link = append(st.link, `" class="kill-link">(kill)</a>`...)
	return st.link
}

// oversizedControl returns the name of the element whose start tag raw
// begins, if it is one that may be a kill control and has content.
func oversizedControl(raw []byte) string {
	if len(raw) < 2 || raw[0] != '<' || !('a' <= raw[1]|0x20 && raw[1]|0x20 <= 'z') {
		return ""
	}
	var lname [16]byte
	name := lowerName(lname[:0], raw[1:])
	if !isControlCandidate(name) || isVoid(name) {
		return ""
	}
	return controlName(name)
}

// token handles one token (tt is not ErrorToken) and returns the bytes to
// pass on for it.
//
// raw is the token's raw bytes. z reads its attributes: the tokenizer
// that has just read the token, or the fast path's rawTag; the fast path
// passes nil for a token whose attributes are not read (needsAttrs).
func (st *stripState) token(z tagAttrs, tt html.TokenType, raw []byte) []byte {
	var name []byte
	var lname [16]byte
	switch tt {
	case html.StartTagToken, html.SelfClosingTagToken:
		name = lowerName(lname[:0], raw[1:])
		if rc := rawTextElement(name); rc != "" {
			st.rawCtx = rc
		}
		if st.dropFake {
			st.dropFake = false
			return nil
		}
	case html.EndTagToken:
		name = lowerName(lname[:0], raw[2:])
		st.rawCtx = ""
	case html.TextToken:
		// Text in a raw-text element: the tokenizer stays in that context
		// until its end tag, so rawCtx is kept.
	default:
		st.rawCtx = ""
	}

	if st.skip != "" {
		if !st.skipToken(z, tt, name) {
			if st.skip == "" {
				// Ended at its own end tag.
				return st.payLink()
			}
			return nil
		}
		// The removed element ended before this token; judge it afresh,
		// after the link it may have become.
		if link := st.payLink(); link != nil {
			out := st.judge(z, tt, name, raw)
			st.link = append(link, out...)
			return st.link
		}
	}
	return st.judge(z, tt, name, raw)
}

// judge handles a token outside any removed element and returns the bytes
// to pass on for it.
func (st *stripState) judge(z tagAttrs, tt html.TokenType, name, raw []byte) []byte {
	if (tt == html.StartTagToken || tt == html.SelfClosingTagToken) && isControlCandidate(name) && (st.mayKill || mayBeKill(raw)) {
		st.scratch = append(st.scratch[:0], raw...)
		cn := controlName(name)
		if kill, u := judgeControl(z, cn, st.rewrite); kill {
			if !isVoid(name) {
				st.startSkip(cn)
				st.owe(cn, u)
			}
			return nil
		}
		return st.scratch
	}
	return raw
}

// needsAttrs reports whether token reads the attributes of the start tag
// raw (lower-case name) through its tokenizer: when it is judged as a
// possible kill control (outside a removed element, or at the start tag
// that ends one) or is an <input> whose id a removed form owes.
func (st *stripState) needsAttrs(name, raw []byte) bool {
	if st.skip != "" && st.owed != killNone && st.skip == "form" && string(name) == "input" {
		return true
	}
	if st.skip != "" && !((st.skip == "a" || st.skip == "button") && string(name) == st.skip) {
		// Inside the removed element, and this tag does not end it: it
		// is not judged (an end tag of an ancestor that ends it is not
		// a start tag).
		return false
	}
	return isControlCandidate(name) && mayBeKill(raw)
}

// skipToken consumes a token inside a removed element. It returns true when
// the removed element ended before this token, which must then be handled
// as an ordinary token.
func (st *stripState) skipToken(z tagAttrs, tt html.TokenType, name []byte) bool {
	switch tt {
	case html.StartTagToken, html.SelfClosingTagToken:
		if st.owed != killNone && st.skip == "form" && string(name) == "input" {
			st.oweID(z)
		}
		switch {
		case (st.skip == "a" || st.skip == "button") && string(name) == st.skip:
			// A new <a> (or <button>) closes the open one, as the HTML
			// tree builder does.
			st.skip = ""
			return true
		case st.skip == "form" && string(name) == "form":
			// Parsers ignore a <form> inside a form.
		case isVoid(name) || tt == html.SelfClosingTagToken:
		case len(st.innerEnds) < maxInner:
			st.innerNames = append(st.innerNames, name...)
			st.innerEnds = append(st.innerEnds, len(st.innerNames))
		default:
			st.innerOverflow++
		}
		return false
	case html.EndTagToken:
		if string(name) == st.skip {
			st.skip = ""
			return false
		}
		if st.innerOverflow > 0 {
			st.innerOverflow--
			return false
		}
		for i := len(st.innerEnds) - 1; i >= 0; i-- {
			start := 0
			if i > 0 {
				start = st.innerEnds[i-1]
			}
			if string(st.innerNames[start:st.innerEnds[i]]) == string(name) {
				st.innerNames = st.innerNames[:start]
				st.innerEnds = st.innerEnds[:i]
				return false
			}
		}
		// The end tag of an element the removed one is inside.
		st.skip = ""
		return true
	}
	return false
}

// controlName returns the constant string for a name isControlCandidate
// accepts, without allocating.
func controlName(name []byte) string {
	for _, c := range controlNames {
		if string(name) == c {
			return c
		}
	}
	return string(name)
}

var controlNames = []string{"a", "form", "button", "input", "area", "meta"}

// lowerName appends to dst the lower-cased tag name at the start of b, read
// as the tokenizer reads it: up to white space, '/' or '>'.
func lowerName(dst, b []byte) []byte {
	for _, c := range b {
		switch c {
		case ' ', '\n', '\r', '\t', '\f', '/', '>':
			return dst
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// rawTextElement returns name if the tokenizer reads the element's content
// as raw text (the same list as the tokenizer's), else "".
func rawTextElement(name []byte) string {
	_, rc := classifyTag(name)
	return rc
}

func isControlCandidate(name []byte) bool {
	switch string(name) {
	case "a", "form", "button", "input", "area", "meta":
		return true
	}
	return false
}

func isVoid(name []byte) bool {
	switch string(name) {
	case "area", "base", "br", "col", "embed", "hr", "img", "input", "keygen", "link", "meta", "param", "source", "track", "wbr":
		return true
	}
	return false
}
