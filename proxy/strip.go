package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"

	"golang.org/x/net/html"
)

// maxTokenBuf bounds what the tokenizer may hold for one token. Spark pages
// have large inline scripts (timeline data) but no single token near this;
// a longer token is passed through in pieces (see run).
const maxTokenBuf = 1 << 20

// outBuf coalesces the many small token writes into larger writes to dst.
// It is flushed at the end of every Write, so no output waits for later input
// except the one token the tokenizer is still reading.
const outBuf = 32 << 10

// outPool holds the output buffers: a page is small next to 32 KiB, so
// allocating one per response would dominate the stripper's allocations.
var outPool = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, outBuf) }}

var (
	errStripperClosed = errors.New("html stripper: write after close")
	errAbandoned      = errors.New("html stripper: abandoned without Close")
)

// NewStripper returns a writer that copies HTML to dst while removing
// kill/hold/resume controls; Close flushes. Memory stays bounded whatever
// the page size.
//
// Everything kept is copied byte for byte (the tokenizer's Raw bytes), so
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
// The tokenizer holds one token at a time, and at most maxTokenBuf (1 MiB)
// of it: a longer text or script token is copied through in pieces; a
// longer start tag of <a>, <form> or <button> cannot be judged and its
// element is removed; any other longer tag is copied and its tail is read
// as text.
//
// dst is written only from inside Write and Close, never concurrently with
// the caller. The caller must call Close, also on error paths; a stripper
// that is dropped without Close stops its goroutine when it is collected.
// Writes after an error from dst return that error.
func NewStripper(dst io.Writer) io.WriteCloser {
	in := make(chan []byte)
	idle := make(chan struct{})
	done := make(chan struct{})
	abort := make(chan struct{})
	w := outPool.Get().(*bufio.Writer)
	w.Reset(dst)
	st := &stripState{w: w}
	r := &chanReader{in: in, idle: idle, abort: abort, flush: w.Flush}
	s := &stripper{in: in, idle: idle, done: done, st: st}
	go func() {
		// The goroutine must not reference s, or the cleanup never runs.
		st.err = st.run(r)
		w.Reset(nil)
		outPool.Put(w)
		close(done)
	}()
	runtime.AddCleanup(s, func(c chan struct{}) { close(c) }, abort)
	return s
}

// stripper hands the bytes of each Write to the tokenizer goroutine and
// waits until the goroutine asks for more, so that the tokenizer works on a
// push stream without buffering it and dst is never written concurrently
// with the caller.
type stripper struct {
	in     chan<- []byte
	idle   <-chan struct{}
	done   <-chan struct{}
	st     *stripState
	closed bool
}

func (s *stripper) Write(p []byte) (int, error) {
	if s.closed {
		return 0, errStripperClosed
	}
	if len(p) == 0 {
		return 0, nil
	}
	select {
	case s.in <- p:
	case <-s.done:
		return 0, s.err()
	}
	select {
	case <-s.idle:
		return len(p), nil
	case <-s.done:
		if err := s.err(); err != nil {
			return 0, err
		}
		return len(p), nil
	}
}

// Close flushes what is left (a trailing partial token is copied unchanged)
// and returns the first error from dst.
func (s *stripper) Close() error {
	if s.closed {
		return s.err()
	}
	s.closed = true
	close(s.in)
	<-s.done
	return s.err()
}

// err is valid once done is closed.
func (s *stripper) err() error {
	if s.st.err != nil {
		return fmt.Errorf("stripping kill controls: %w", s.st.err)
	}
	return nil
}

// chanReader is the tokenizer's input: it reads the chunk of the pending
// Write and, when that is used up, flushes the output and tells Write it may
// return before waiting for the next chunk.
type chanReader struct {
	pre   []byte // bytes to re-read after a tokenizer restart
	cur   []byte
	in    <-chan []byte
	idle  chan<- struct{}
	abort <-chan struct{}
	flush func() error
	began bool
	eof   bool
}

func (r *chanReader) Read(b []byte) (int, error) {
	if len(r.pre) > 0 {
		n := copy(b, r.pre)
		r.pre = r.pre[n:]
		return n, nil
	}
	for len(r.cur) == 0 {
		if r.eof {
			return 0, io.EOF
		}
		if r.began {
			if err := r.flush(); err != nil {
				return 0, err
			}
			r.cur = nil // the caller may reuse its buffer once we signal
			r.idle <- struct{}{}
		}
		r.began = true
		select {
		case chunk, ok := <-r.in:
			if !ok {
				r.eof = true
				return 0, io.EOF
			}
			r.cur = chunk
		case <-r.abort:
			return 0, errAbandoned
		}
	}
	n := copy(b, r.cur)
	r.cur = r.cur[n:]
	return n, nil
}

// stripState is the tokenizer goroutine's state.
type stripState struct {
	w   *bufio.Writer
	err error // set when run returns

	// skip is the name of the element being removed ("" when none); inner
	// holds the elements opened inside it, so that their end tags are told
	// apart from the end tag of an ancestor.
	skip          string
	inner         []string
	innerOverflow int

	// rawCtx is the raw-text element ("script", "style", ...) the tokenizer
	// is inside, for restarting it after an oversized token.
	rawCtx string

	// dropFake says the next token is the synthetic start tag of a restart.
	dropFake bool

	scratch []byte
}

func (st *stripState) run(r *chanReader) error {
	z := html.NewTokenizer(r)
	z.SetMaxBuf(maxTokenBuf)
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			err := z.Err()
			switch {
			case err == io.EOF:
				// A trailing partial token is not a token: copy it as is.
				if st.skip == "" {
					st.emit(z.Raw())
					st.emit(z.Buffered())
				}
				return st.w.Flush()
			case errors.Is(err, html.ErrBufferExceeded):
				// One token longer than maxTokenBuf: what was read of it has
				// been emitted (or is emitted here); start a new tokenizer in
				// the same raw-text context on the bytes not yet tokenized.
				// The tokenizer's fragment mode reads script and style as
				// plaintext, so the context is restored by a synthetic start
				// tag that is dropped again (script escape states are lost).
				if raw := z.Raw(); st.skip == "" {
					// An oversized start tag of a control cannot be judged:
					// remove the element rather than risk passing it.
					if name := oversizedControl(raw); name != "" {
						st.skip = name
						st.inner = st.inner[:0]
						st.innerOverflow = 0
					} else {
						st.emit(raw)
					}
				}
				var pre []byte
				if st.rawCtx != "" {
					pre = append(pre, "<"+st.rawCtx+">"...)
					st.dropFake = true
				}
				r.pre = append(append(pre, z.Buffered()...), r.pre...)
				z = html.NewTokenizer(r)
				z.SetMaxBuf(maxTokenBuf)
				continue
			default:
				return err
			}
		}
		st.token(z, tt)
	}
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
	return string(name)
}

func (st *stripState) emit(b []byte) {
	if len(b) > 0 {
		// A write error sticks in the bufio.Writer and is returned by the
		// flush in chanReader.Read or at the end of run.
		_, _ = st.w.Write(b)
	}
}

// token handles one token; tt is not ErrorToken.
func (st *stripState) token(z *html.Tokenizer, tt html.TokenType) {
	raw := z.Raw()
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
			return
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
		if !st.skipToken(tt, name) {
			return
		}
		// The removed element ended before this token; judge it afresh.
	}

	if (tt == html.StartTagToken || tt == html.SelfClosingTagToken) && isControlCandidate(name) && mayBeKill(raw) {
		// TagName and TagAttr lower-case and unescape in place: keep the
		// original bytes first.
		st.scratch = append(st.scratch[:0], raw...)
		if isKillControl(z, string(name)) {
			if !isVoid(name) {
				st.skip = string(name)
				st.inner = st.inner[:0]
				st.innerOverflow = 0
			}
			return
		}
		st.emit(st.scratch)
		return
	}
	st.emit(raw)
}

// skipToken consumes a token inside a removed element. It returns true when
// the removed element ended before this token, which must then be handled
// as an ordinary token.
func (st *stripState) skipToken(tt html.TokenType, name []byte) bool {
	switch tt {
	case html.StartTagToken, html.SelfClosingTagToken:
		switch {
		case (st.skip == "a" || st.skip == "button") && string(name) == st.skip:
			// A new <a> (or <button>) closes the open one, as the HTML
			// tree builder does.
			st.skip = ""
			return true
		case st.skip == "form" && string(name) == "form":
			// Parsers ignore a <form> inside a form.
		case isVoid(name) || tt == html.SelfClosingTagToken:
		case len(st.inner) < 256:
			st.inner = append(st.inner, string(name))
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
		for i := len(st.inner) - 1; i >= 0; i-- {
			if st.inner[i] == string(name) {
				st.inner = st.inner[:i]
				return false
			}
		}
		// The end tag of an element the removed one is inside.
		st.skip = ""
		return true
	}
	return false
}

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
	for _, e := range rawTextElements {
		if string(name) == e {
			return e
		}
	}
	return ""
}

var rawTextElements = []string{"iframe", "noembed", "noframes", "noscript", "plaintext", "script", "style", "textarea", "title", "xmp"}

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
		if containsFold(raw, w) {
			return true
		}
	}
	return false
}

// mayBeKillWords cover stateChanging and killClasses ("killall" contains
// "kill").
var mayBeKillWords = []string{"kill", "hold", "resume", "decommission"}

// containsFold reports whether b contains the lower-case ASCII word w in
// any ASCII case. Non-ASCII letters that fold to ASCII (the Kelvin sign) are
// not matched here; isKillURL compares with EqualFold, but a link spelled so
// does not reach Spark's handler, whose path Jetty matches exactly.
func containsFold(b []byte, w string) bool {
	for i := 0; i+len(w) <= len(b); i++ {
		j := 0
		for ; j < len(w); j++ {
			c := b[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != w[j] {
				break
			}
		}
		if j == len(w) {
			return true
		}
	}
	return false
}

// killClasses are class names of controls that change an application.
// Spark 3.5 and 4.0 use kill-link; the hold/resume names are guesses for
// later releases that cost nothing when absent.
var killClasses = []string{"kill-link", "hold-link", "resume-link"}

// isKillControl reads the current tag's attributes (the tag name must not
// have been read yet).
func isKillControl(z *html.Tokenizer, name string) bool {
	_, more := z.TagName()
	for more {
		var key, val []byte
		key, val, more = z.TagAttr()
		switch string(key) {
		case "class":
			for _, c := range strings.Fields(string(val)) {
				for _, k := range killClasses {
					if asciiEqualFold(c, k) {
						return true
					}
				}
			}
		case "href", "xlink:href":
			if (name == "a" || name == "area") && isKillURL(string(val)) {
				return true
			}
		case "content":
			// <meta http-equiv="refresh" content="0; url=...">
			if name == "meta" {
				v := string(val)
				if i := strings.Index(strings.ToLower(v), "url="); i >= 0 && isKillURL(strings.Trim(v[i+4:], "'\" ")) {
					return true
				}
			}
		case "action":
			if name == "form" && isKillURL(string(val)) {
				return true
			}
		case "formaction":
			if (name == "button" || name == "input") && isKillURL(string(val)) {
				return true
			}
		}
	}
	return false
}

// isKillURL reports whether a link's path (before '?' or '#') has a segment
// Guard refuses. Browsers read '\' as '/' in http URLs, and the segment is
// percent-decoded once, as the gateway would decode it.
func isKillURL(u string) bool {
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	for u != "" {
		i := strings.IndexAny(u, "/\\")
		seg := u
		if i >= 0 {
			seg, u = u[:i], u[i+1:]
		} else {
			u = ""
		}
		seg = strings.TrimSpace(seg)
		if strings.Contains(seg, "%") {
			seg = percentDecodeLoose(seg)
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
func asciiEqualFold(s, t string) bool {
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

// percentDecodeLoose decodes valid %XX escapes and keeps anything else.
func percentDecodeLoose(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			c = unhex(s[i+1])<<4 | unhex(s[i+2])
			i += 2
		}
		b.WriteByte(c)
	}
	return b.String()
}
