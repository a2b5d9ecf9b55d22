package proxy

import (
	"bytes"
	"io"
	"sync"

	"golang.org/x/net/html"
)

// This file is the stripper's fast path: a streaming scanner that follows
// x/net/html's tokenizer exactly as far as token boundaries go (data, tags
// with their quoted attributes, comments, doctypes and bogus comments,
// raw text up to its end tag, script data with its escape states,
// plaintext), jumps between the bytes that matter by their marks in the
// buffer's index (byteIndex) or with bytes.IndexByte, and copies
// everything else through in place.
//
// Only tags that matter are judged, by the same code as the
// tokenizer-based stripper (stripState, judgeControl): a tag that may be a
// kill control (an <a>, <form>, <button>, <input>, <area> or <meta> whose
// raw bytes pass mayBeKill), and every tag inside an element being
// removed. Its attributes are read by rawTag, which reads them exactly as
// the tokenizer does without its allocations (FuzzRawTag), or, for a tag
// with a character reference, carriage return or NUL in a value judged,
// by one tokenizer per stream fed that tag alone; text, comments and raw
// text inside a removed element are dropped by the scanner. A page is
// copied with no tokenizer and no allocation (the buffer is pooled) unless
// such a tag is in it.
//
// Its output equals the tokenizer-based stripper's for every input whose
// tokens are shorter than maxTokenBuf (FuzzStripperDifferential), and for
// the longer ones TestStripperMatchesReferenceLargeTokens tries. A tag
// longer than that goes, with the rest of the stream, to the
// tokenizer-based stripper (which removes an oversized control), and
// comes back at the next token boundary in data with no element being
// removed; text, raw text and comments of any length stream through.

// scanBufSize is the size of a pooled scan buffer: one read from src.
const scanBufSize = 32 << 10

// scanMem is what a stream's fast path uses, pooled: its scan buffer,
// room for the buffer's index, and room for the buffers of its stripState
// (a page with kill controls allocates none for them).
type scanMem struct {
	buf   [scanBufSize]byte
	masks [3 * (scanBufSize>>blockShift + 1)]uint64
	bufs  stripBufs
}

var scanMemPool = sync.Pool{New: func() any { return new(scanMem) }}

// scanState is where the tokenizer would be.
type scanState uint8

const (
	inData      scanState = iota // data: text and the start of any token
	inUntilGT                    // a bogus comment, doctype or "</ " token: ends at '>'
	inComment                    // "<!--" comment data
	inRawText                    // raw text or RCDATA of rawTag, up to "</rawTag"
	inScript                     // script data (scr holds the escape state)
	inPlaintext                  // everything to EOF
)

// Script data states, as in x/net/html's readScript.
const (
	sData uint8 = iota
	sLessThan
	sEndTagOpen
	sEscapeStart
	sEscapeStartDash
	sEscaped
	sEscapedDash
	sEscapedDashDash
	sEscapedLessThan
	sEscapedEndTagOpen
	sDoubleEscapeStart
	sDoubleEscaped
	sDoubleEscapedDash
	sDoubleEscapedDashDash
	sDoubleEscapedLessThan
	sDoubleEscapeEnd
)

// fastStripper is the stripping reader NewStrippingReader and
// NewConfirmLinkReader return.
type fastStripper struct {
	src io.ReadCloser
	in  stickyReader // src, with its first error kept
	mem *scanMem     // pooled buffer and index; nil once closed
	buf []byte
	idx byteIndex // of buf[:end]
	// buf[out:ready] is decided output not yet returned; buf[ready:end] is
	// read but undecided; scanning resumes at pos (ready <= pos <= end).
	out, ready, pos, end int
	// wait says the scanner needs more input to decide anything more.
	wait bool

	state  scanState
	rawTag string // for inRawText
	scr    uint8  // script data state, for inScript
	// Comment data seen so far: all dashes, the dashes at its end, and
	// whether it ends in "!" after two or more dashes.
	cBegin bool
	cDash  int
	cBang  bool
	// inTag says buf[ready:end] is an unfinished start or end tag (dropped,
	// as the tokenizer drops it, if src fails).
	inTag bool

	err error // sticky result once everything is returned

	// st is what the stripper remembers between tokens, shared with the
	// tokenizer-based stripper's code; j (taken on first use) reads the
	// tags fed to it, one at a time; extra is output that is not in buf (a
	// judged tag, a confirmation link), returned before buf[out:ready].
	st    stripState
	j     *judgeTok // from judgePool, once needed
	extra []byte
	lname [16]byte // a lower-cased tag name
	// attrs reads a judged tag's attributes, unless the tag needs the
	// judge tokenizer (see rawTag).
	attrs rawTag
	// bufsTaken says st's buffers are mem.bufs, taken when a tag is
	// first judged.
	bufsTaken bool
	// drained is a start tag read and found to need judging, buf[lt:end],
	// whose judging waits for the output before it to be returned: the
	// scan resumes at lt and judges it without reading it again. end is 0
	// when there is none.
	drained struct{ lt, end int }

	// slow is the tokenizer-based stripper the stream was handed to; it
	// hands it back (slow.yielded) once it is at a token boundary in data
	// with no element being removed.
	slow *strippingReader
}

// tagFeeder gives the judge tokenizer one tag at a time. The tokenizer
// reads nothing past a tag's '>', so it asks for more only at its next
// Next, once the next tag is in; asking earlier is a bug, answered with an
// error that the judge notices.
type tagFeeder struct{ b []byte }

func (t *tagFeeder) Read(p []byte) (int, error) {
	if len(t.b) == 0 {
		return 0, io.ErrNoProgress
	}
	n := copy(p, t.b)
	t.b = t.b[n:]
	return n, nil
}

// scanResult says why scan stopped.
type scanResult uint8

const (
	scanWait    scanResult = iota // it needs more input (f.wait)
	scanDrain                     // output must be returned before it goes on
	scanHandOff                   // the tag at ready goes to the tokenizer-based stripper
)

// stickyReader reads r until its first error, then returns that error.
type stickyReader struct {
	r   io.Reader
	err error
}

func (s *stickyReader) Read(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.r.Read(p)
	s.err = err
	return n, err
}

func newFastStripper(src io.ReadCloser, rewrite bool, linkPrefix string) *fastStripper {
	mem := scanMemPool.Get().(*scanMem)
	f := &fastStripper{src: src, mem: mem, buf: mem.buf[:], wait: true}
	f.idx.use(mem.masks[:])
	f.in.r = src
	f.st.rewrite, f.st.linkPrefix = rewrite, linkPrefix
	return f
}

// Read returns kept bytes. Like the tokenizer-based stripper it returns
// what is decided rather than wait on src for more.
func (f *fastStripper) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if len(f.extra) > 0 {
			c := copy(p[n:], f.extra)
			f.extra = f.extra[c:]
			n += c
			continue
		}
		if f.out < f.ready {
			c := copy(p[n:], f.buf[f.out:f.ready])
			f.out += c
			n += c
			continue
		}
		if f.err != nil {
			break
		}
		if f.slow != nil {
			k, err := f.slow.Read(p[n:])
			n += k
			if f.slow.yielded {
				f.takeBack()
				continue
			}
			if err != nil {
				f.err = err
			}
			if err != nil || k == 0 {
				break
			}
			continue
		}
		if !f.wait {
			if f.scan() == scanHandOff {
				f.handOff()
			}
			continue
		}
		if f.in.err != nil {
			f.finish()
			continue
		}
		if n > 0 {
			break
		}
		f.fill()
	}
	if n > 0 || len(p) == 0 {
		return n, nil
	}
	return 0, f.err
}

// finish decides the rest once src has ended: at EOF an unfinished token
// is copied as is; on a failure an unfinished tag is dropped (the
// tokenizer returns no token for it) and the rest copied.
func (f *fastStripper) finish() {
	if f.in.err != io.EOF && f.inTag { //nolint:errorlint // io.EOF itself, from src
		f.end = f.ready
	}
	f.ready, f.pos = f.end, f.end
	if f.st.skip != "" {
		// An element being removed takes the rest with it.
		f.out = f.ready
	}
	if f.out == f.ready {
		f.err = f.in.err
	}
}

// fill reads src once into the buffer, after moving the undecided bytes
// to its front (growing it only while one tag is longer than it).
func (f *fastStripper) fill() {
	f.drained.end = 0 // a drained tag is judged before any fill; never after one
	from := f.end
	if f.out > 0 {
		from = 0
		n := copy(f.buf, f.buf[f.out:f.end])
		f.ready -= f.out
		f.pos -= f.out
		f.end = n
		f.out = 0
	}
	if f.end == len(f.buf) {
		nb := make([]byte, 2*len(f.buf))
		copy(nb, f.buf[:f.end])
		f.buf = nb
	}
	k, _ := f.in.Read(f.buf[f.end:])
	f.end += k
	f.idx.mark(f.buf[:f.end], from)
	f.wait = false
}

// handOff gives the stream from f.ready (the start of a tag the tokenizer
// must judge) to a tokenizer-based stripper.
func (f *fastStripper) handOff() {
	r := &strippingReader{src: f.src, handBack: true}
	// pre stays in f.buf, which the fast path leaves alone until takeBack.
	r.in.pre, r.in.src = f.buf[f.ready:f.end], &f.in
	r.st = f.st
	r.st.rawCtx, r.st.dropFake = "", false
	r.z = newTokenizer(&r.in)
	f.slow = r
	f.end, f.pos = f.ready, f.ready
}

// takeBack resumes scanning, in data, on the bytes the tokenizer-based
// stripper has not tokenized.
func (f *fastStripper) takeBack() {
	r := f.slow
	f.slow = nil
	f.st = r.st
	rest, pre := r.z.Buffered(), r.in.pre
	f.out, f.ready, f.pos = 0, 0, 0
	f.state, f.inTag, f.wait = inData, false, false
	if need := len(rest) + len(pre); need > len(f.buf) {
		f.buf = make([]byte, need)
	}
	// pre may lie in f.buf: move it first (copy is memmove).
	copy(f.buf[len(rest):], pre)
	copy(f.buf, rest)
	f.end = len(rest) + len(pre)
	f.idx.mark(f.buf[:f.end], 0)
	f.wait = f.end == 0
}

// Close closes src; later Reads fail.
func (f *fastStripper) Close() error {
	if f.err == nil || f.err == io.EOF { //nolint:errorlint // sentinel set here
		f.err = errStripperClosed
	}
	f.out, f.ready, f.pos, f.end = 0, 0, 0, 0
	f.slow, f.extra = nil, nil
	if f.j != nil {
		if f.j.z.Err() == nil && len(f.j.feeder.b) == 0 {
			judgePool.Put(f.j)
		}
		f.j = nil
	}
	if f.mem != nil {
		scanMemPool.Put(f.mem)
		f.mem, f.buf, f.idx = nil, nil, byteIndex{}
	}
	return f.src.Close()
}

// scan advances over buf[pos:end], moving ready up to what is decided
// (and, while an element is being removed, out with it: what is decided
// then is dropped), until it needs more input, output must be returned
// first, or the tag at ready must go to the tokenizer-based stripper.
func (f *fastStripper) scan() (res scanResult) {
	defer func() {
		if f.st.skip != "" {
			f.out = f.ready
		}
	}()
	b := f.buf[:f.end]
	for f.pos < len(b) {
		switch f.state {
		case inData:
			lt := next(f.idx.lt, f.pos, len(b))
			if lt < 0 {
				f.pos, f.ready = len(b), len(b)
				break
			}
			f.ready = lt
			if lt+1 >= len(b) {
				return f.waitAt(lt)
			}
			switch c := b[lt+1]; {
			case isASCIILetter(c):
				nameEnd := tagNameEnd(b, lt+1)
				var candidate bool
				var rc string
				if mayClassify(b[lt+1 : nameEnd]) {
					candidate, rc = classifyTag(b[lt+1 : nameEnd])
				}
				end, may, ok := nameEnd+1, false, true
				switch {
				case f.drained.end != 0 && f.drained.lt == lt:
					end, may = f.drained.end, true
					f.drained.end = 0
				case nameEnd < len(b) && b[nameEnd] == '>':
					// <td>, <tr>: no call.
				default:
					end, may, ok = scanAttrs(b, &f.idx, nameEnd, candidate && f.st.skip == "")
				}
				if !ok {
					return f.tagWait(lt)
				}
				res := scanWait
				if f.st.skip != "" || may {
					if res = f.judge(b, lt, end, false); res == scanHandOff || f.pos == lt {
						return res
					}
				}
				f.pos, f.ready = end, end
				if rc != "" {
					f.rawTag = rc
					switch rc {
					case "script":
						f.state, f.scr = inScript, sData
					case "plaintext":
						f.state = inPlaintext
					default:
						f.state = inRawText
					}
				}
				if res == scanDrain {
					return res
				}
			case c == '/':
				if lt+2 >= len(b) {
					return f.waitAt(lt)
				}
				switch c2 := b[lt+2]; {
				case c2 == '>':
					f.pos, f.ready = lt+3, lt+3
				case isASCIILetter(c2):
					end, ok := scanTag(b, &f.idx, lt+2)
					if !ok {
						return f.tagWait(lt)
					}
					if f.st.skip != "" {
						if res := f.judge(b, lt, end, true); res != scanWait {
							return res
						}
						continue
					}
					f.pos, f.ready = end, end
				default:
					f.state, f.pos = inUntilGT, lt+2
				}
			case c == '!':
				if lt+3 >= len(b) {
					return f.waitAt(lt)
				}
				if b[lt+2] == '-' && b[lt+3] == '-' {
					f.state, f.pos = inComment, lt+4
					f.cBegin, f.cDash, f.cBang = true, 0, false
				} else {
					f.state, f.pos = inUntilGT, lt+2
				}
			case c == '?':
				f.state, f.pos = inUntilGT, lt+1
			default:
				f.pos = lt + 1
			}
		case inUntilGT:
			if i := bytes.IndexByte(b[f.pos:], '>'); i < 0 {
				f.pos = len(b)
			} else {
				f.pos += i + 1
				f.state = inData
			}
			f.ready = f.pos
		case inComment:
			f.scanComment(b)
			f.ready = f.pos
		case inRawText:
			if f.scanRawText(b) {
				return f.waitAt(f.pos)
			}
		case inScript:
			if f.scanScript(b) {
				return f.waitAt(f.pos)
			}
		case inPlaintext:
			f.pos, f.ready = len(b), len(b)
		}
	}
	f.wait, f.inTag = true, false
	return scanWait
}

// judge runs the tag b[lt:end] through stripState.token, with its
// attributes read by rawTag when token reads them or only they tell
// whether it is self-closing, or by the judge tokenizer when rawTag
// declines the tag. It needs all output before the tag
// returned first: until then it leaves f.pos at lt and asks for a drain.
// Afterwards the tag's bytes are consumed (f.out, f.ready and f.pos at
// end) and what is kept of it, with any confirmation link, is in f.extra
// (scanDrain), or nothing is (scanWait, scanning goes on).
func (f *fastStripper) judge(b []byte, lt, end int, endTag bool) scanResult {
	if f.st.skip != "" {
		f.out = lt // dropped
	}
	if f.out < lt || len(f.extra) > 0 {
		f.pos, f.ready = lt, lt
		if !endTag {
			f.drained.lt, f.drained.end = lt, end
		}
		return scanDrain
	}
	raw := b[lt:end]
	if !f.bufsTaken {
		f.bufsTaken = true
		bufs := &f.mem.bufs
		f.st.scratch, f.st.link = bufs.scratch[:0], bufs.link[:0]
		f.st.innerNames, f.st.innerEnds = bufs.innerNames[:0], bufs.innerEnds[:0]
	}
	var kept []byte
	switch {
	case endTag:
		kept = f.st.token(nil, html.EndTagToken, raw)
	case f.st.skip != "" && f.skipsUnread(raw):
		kept = f.st.token(nil, html.StartTagToken, raw)
	case f.st.skip == "" && f.st.firstAttrKills(raw):
		// Removed, unread: kept is nil.
	case f.attrs.read(raw):
		// Outside a removed element the tag is judged because scanAttrs
		// found it may be a kill control.
		f.st.mayKill = f.st.skip == ""
		kept = f.st.token(&f.attrs, f.attrs.tt, raw)
		f.st.mayKill = false
	default:
		z := f.judgeTokenizer()
		f.j.feeder.b = raw
		tt := z.Next()
		if tt == html.ErrorToken || len(z.Raw()) != len(raw) || len(f.j.feeder.b) != 0 {
			// The tokenizer read the tag otherwise: let it have the stream.
			f.dropJudge()
			f.pos, f.ready = lt, lt
			return scanHandOff
		}
		kept = f.st.token(z, tt, raw)
		z.NextIsNotRawText()
	}
	f.out, f.ready, f.pos = end, end, end
	if len(kept) > 0 {
		f.extra = kept
		return scanDrain
	}
	return scanWait
}

// firstAttrKills handles, as token would, a start tag outside any removed
// element that begins as Spark writes its kill controls, the 3.5 anchor
// and the 4.0 form: an <a> whose first attribute is ` href="..."`, or a
// <form> whose first is ` action="..."`, with a value the tokenizer
// returns as it is (plainValue) that isKillURL refuses. judgeControl reads
// attributes in their order and stops at that first one, the verdict
// (kill) and the URL known, whatever follows it and whichever of rawTag
// or the tokenizer reads the tag: so the tag is not read, and its element
// is removed with its confirmation link owed. Any other tag is left alone
// (false), to be judged in full.
func (st *stripState) firstAttrKills(raw []byte) bool {
	var name, key string
	switch {
	case len(raw) > 3 && raw[1]|0x20 == 'a' && raw[2] == ' ':
		name, key = "a", "href"
	case len(raw) > 6 && asciiEqualFold(raw[1:5], "form") && raw[5] == ' ':
		name, key = "form", "action"
	default:
		return false
	}
	// The key ends at its '=': nothing else is in it.
	ks := len(name) + 2
	ke := ks + len(key)
	if len(raw) < ke+2 || !asciiEqualFold(raw[ks:ke], key) || raw[ke] != '=' || raw[ke+1] != '"' {
		return false
	}
	n := bytes.IndexByte(raw[ke+2:], '"')
	if n < 0 {
		return false
	}
	u := raw[ke+2 : ke+2+n]
	if !plainValue(u) || !isKillURL(u) {
		return false
	}
	st.startSkip(name)
	st.owe(name, u)
	return true
}

// skipsUnread reports whether the start tag raw, inside a removed
// element, can be handled with its attributes unread: when token does not
// read them (needsAttrs) and whether it is self-closing does not matter,
// which it does not for a void element (skipToken opens nothing for
// either) nor for a tag that does not end in "/>".
func (f *fastStripper) skipsUnread(raw []byte) bool {
	name := lowerName(f.lname[:0], raw[1:])
	return !f.st.needsAttrs(name, raw) && (raw[len(raw)-2] != '/' || isVoid(name))
}

// stripBufs is room for the buffers of a stream's stripState.
type stripBufs struct {
	scratch    [512]byte
	link       [256]byte
	innerNames [64]byte
	innerEnds  [16]int
}

// judgeTokenizer returns the stream's judge tokenizer, from a pool: it
// holds no state of a stream between tags.
func (f *fastStripper) judgeTokenizer() *html.Tokenizer {
	if f.j == nil {
		f.j = judgePool.Get().(*judgeTok)
	}
	return f.j.z
}

// dropJudge forgets a judge tokenizer that may be in any state.
func (f *fastStripper) dropJudge() { f.j = nil }

// judgeTok is a tokenizer that reads the tags fed to it.
type judgeTok struct {
	z      *html.Tokenizer
	feeder *tagFeeder
}

var judgePool = sync.Pool{New: func() any {
	j := &judgeTok{feeder: new(tagFeeder)}
	j.z = newTokenizer(j.feeder)
	return j
}}

// waitAt stops scanning at pos until more input is in; what is before pos
// is decided.
func (f *fastStripper) waitAt(pos int) scanResult {
	f.pos, f.ready, f.wait, f.inTag = pos, pos, true, false
	return scanWait
}

// tagWait stops scanning at the '<' of a tag that does not end in the
// buffer: it is read again from there once more input is in. A tag longer
// than maxTokenBuf goes to the tokenizer, which removes an oversized
// control as it always has.
func (f *fastStripper) tagWait(lt int) scanResult {
	f.waitAt(lt)
	f.inTag = true
	if f.end-lt >= maxTokenBuf {
		f.wait = false
		return scanHandOff
	}
	return scanWait
}

// classifyTag tells, from a start tag's name (any case), whether it may
// be a kill control (isControlCandidate) and which raw-text element it
// opens (rawTextElement), without copying it.
func classifyTag(name []byte) (candidate bool, rawText string) {
	switch len(name) {
	case 1:
		return name[0]|0x20 == 'a', ""
	case 3:
		if asciiEqualFold(name, "xmp") {
			return false, "xmp"
		}
	case 4:
		return asciiEqualFold(name, "form") || asciiEqualFold(name, "area") || asciiEqualFold(name, "meta"), ""
	case 5:
		switch {
		case asciiEqualFold(name, "input"):
			return true, ""
		case asciiEqualFold(name, "style"):
			return false, "style"
		case asciiEqualFold(name, "title"):
			return false, "title"
		}
	case 6:
		switch {
		case asciiEqualFold(name, "button"):
			return true, ""
		case asciiEqualFold(name, "script"):
			return false, "script"
		case asciiEqualFold(name, "iframe"):
			return false, "iframe"
		}
	case 7:
		if asciiEqualFold(name, "noembed") {
			return false, "noembed"
		}
	case 8:
		switch {
		case asciiEqualFold(name, "noframes"):
			return false, "noframes"
		case asciiEqualFold(name, "noscript"):
			return false, "noscript"
		case asciiEqualFold(name, "textarea"):
			return false, "textarea"
		}
	case 9:
		if asciiEqualFold(name, "plaintext") {
			return false, "plaintext"
		}
	}
	return false, ""
}

// mayClassify reports whether classifyTag may find anything in a start
// tag's name: most names are told apart by their length and first letter
// alone (td, tr, div, span, li, label; a table or strong is compared).
func mayClassify(name []byte) bool {
	return len(name) < len(classifyFirst) && classifyFirst[len(name)]>>(name[0]&31)&1 != 0
}

// classifyFirst holds, per name length, a bit for the first letter (its
// low five bits, any case) of each name classifyTag tells apart.
var classifyFirst = func() (t [10]uint32) {
	for _, name := range []string{"a", "xmp", "form", "area", "meta", "input", "style", "title",
		"button", "script", "iframe", "noembed", "noframes", "noscript", "textarea", "plaintext"} {
		t[len(name)] |= 1 << (name[0] & 31)
	}
	return t
}()

// isJudgedAttr reports whether judgeControl reads the attribute key (any
// ASCII case, as the tokenizer lower-cases keys).
func isJudgedAttr(key []byte) bool {
	switch len(key) {
	case 4:
		return asciiEqualFold(key, "href")
	case 5:
		return asciiEqualFold(key, "class")
	case 6:
		return asciiEqualFold(key, "action")
	case 7:
		return asciiEqualFold(key, "content")
	case 10:
		return asciiEqualFold(key, "xlink:href") || asciiEqualFold(key, "formaction")
	}
	return false
}

// Byte classes of a tag, as readTag reads them.
const (
	tcSpace = 1 << iota // ' ', '\n', '\r', '\t', '\f'
	tcSlash
	tcGT
	tcEq
)

var tagClass = func() (t [256]uint8) {
	for _, c := range " \n\r\t\f" {
		t[c] = tcSpace
	}
	t['/'], t['>'], t['='] = tcSlash, tcGT, tcEq
	return t
}()

// scanTag reads a start or end tag as the tokenizer's readTag does, from
// its name's first byte at p: it returns the index after its '>', or ok
// false if b ends first.
func scanTag(b []byte, x *byteIndex, p int) (end int, ok bool) {
	p = tagNameEnd(b, p)
	if p < len(b) && b[p] == '>' {
		return p + 1, true // most end tags: no call
	}
	end, _, ok = scanAttrs(b, x, p, false)
	return end, ok
}

// tagNameEnd returns the end of the tag name whose first byte is at p: the
// first white space, '/' or '>' after it, or len(b).
func tagNameEnd(b []byte, p int) int {
	p++
	for p < len(b) && tagClass[b[p]]&(tcSpace|tcSlash|tcGT) == 0 {
		p++
	}
	return p
}

// scanAttrs reads a tag's attributes from the end of its name at p, as
// readTag does: it returns the index after the tag's '>', or ok false if
// b ends first. With judge, may says whether mayBeKill holds for the
// value of an attribute judgeControl reads (class, href, xlink:href,
// content, action, formaction): Spark's long onclick and style values are
// not searched.
func scanAttrs(b []byte, x *byteIndex, p int, judge bool) (end int, may, ok bool) {
	// First the attributes as Spark writes them, ` key="value"`, each
	// read as the loop below reads it, with fewer questions; at anything
	// else the loop takes over, at the start of an attribute or between
	// attributes, where it reads as it would have from the tag's start.
	for {
		if p >= len(b) {
			return 0, false, false
		}
		if b[p] == '>' {
			return p + 1, may, true
		}
		if b[p] != ' ' {
			break
		}
		ks := p + 1
		ke := ks
		for ke < len(b) && tagClass[b[ke]] == 0 {
			ke++
		}
		if ke == ks || ke+1 >= len(b) || b[ke] != '=' || b[ke+1] != '"' {
			p = ks
			break
		}
		i := next(x.dq, ke+2, len(b))
		if i < 0 {
			return 0, false, false
		}
		if judge && !may && isJudgedAttr(b[ks:ke]) {
			may = mayBeKill(b[ke+2 : i])
		}
		p = i + 1
	}
	for {
		for p < len(b) && tagClass[b[p]] == tcSpace {
			p++
		}
		if p >= len(b) {
			return 0, false, false
		}
		if b[p] == '>' {
			return p + 1, may, true
		}
		// Attribute key: a leading '=' is part of it.
		ks := p
		if b[p] == '=' {
			p++
		}
		for p < len(b) && tagClass[b[p]] == 0 {
			p++
		}
		ke := p
		// Attribute value.
		for p < len(b) && tagClass[b[p]] == tcSpace {
			p++
		}
		if p >= len(b) {
			return 0, false, false
		}
		switch b[p] {
		case '/':
			p++
			continue
		case '=':
			p++
		default:
			continue
		}
		for p < len(b) && tagClass[b[p]] == tcSpace {
			p++
		}
		if p >= len(b) {
			return 0, false, false
		}
		vs := p
		switch q := b[p]; q {
		case '>':
			continue
		case '"', '\'':
			m := x.dq
			if q == '\'' {
				m = x.sq
			}
			i := next(m, p+1, len(b))
			if i < 0 {
				return 0, false, false
			}
			vs, p = p+1, i+1
			if judge && !may && isJudgedAttr(b[ks:ke]) {
				may = mayBeKill(b[vs : p-1])
			}
			continue
		}
		p++
		for p < len(b) && tagClass[b[p]]&(tcSpace|tcGT) == 0 {
			p++
		}
		if p >= len(b) {
			return 0, false, false
		}
		if judge && !may && isJudgedAttr(b[ks:ke]) {
			may = mayBeKill(b[vs:p])
		}
		if tagClass[b[p]] == tcSpace {
			p++
		}
	}
}

// scanComment advances over comment data to its end, as readComment ends
// it: at a '>' right after the "<!--", after only dashes, after two or
// more dashes, or after two or more dashes and a '!'.
func (f *fastStripper) scanComment(b []byte) {
	for f.pos < len(b) {
		i := bytes.IndexByte(b[f.pos:], '>')
		seg := b[f.pos:]
		if i >= 0 {
			seg = seg[:i]
		}
		f.commentData(seg)
		f.pos += len(seg)
		if i < 0 {
			return
		}
		f.pos++ // the '>'
		if f.cBegin || f.cDash >= 2 || f.cBang {
			f.state = inData
			return
		}
		f.cBegin, f.cDash, f.cBang = false, 0, false
	}
}

// commentData updates the comment state for seg, comment data without '>'.
func (f *fastStripper) commentData(seg []byte) {
	if len(seg) == 0 {
		return
	}
	prev := f.cDash
	// Dashes at the end of seg.
	k := 0
	for k < len(seg) && seg[len(seg)-1-k] == '-' {
		k++
	}
	if k == len(seg) {
		f.cDash += k
		f.cBang = false
		return
	}
	f.cBegin = false
	if k > 0 {
		f.cDash, f.cBang = k, false
		return
	}
	// seg ends in something else; a '!' counts after two or more dashes.
	f.cDash = 0
	f.cBang = false
	if seg[len(seg)-1] == '!' {
		d := 0
		for d < len(seg)-1 && seg[len(seg)-2-d] == '-' {
			d++
		}
		if d == len(seg)-1 {
			d += prev
		}
		f.cBang = d >= 2
	}
}

// scanRawText advances over raw text (or RCDATA) to the "</" of its end
// tag: "</" and rawTag in any ASCII case, then white space, '/' or '>'. It
// returns true when it must wait at f.pos for more input to tell.
func (f *fastStripper) scanRawText(b []byte) (wait bool) {
	for {
		lt := next(f.idx.lt, f.pos, len(b))
		if lt < 0 {
			f.pos, f.ready = len(b), len(b)
			return false
		}
		f.ready = lt
		switch rawEndTag(b[lt:], f.rawTag) {
		case rawEndYes:
			f.pos, f.state = lt, inData
			return false
		case rawEndMore:
			f.pos = lt
			return true
		}
		f.pos = lt + 1
	}
}

type rawEnd uint8

const (
	rawEndNo rawEnd = iota
	rawEndYes
	rawEndMore // b ends before it can tell
)

// rawEndTag tells whether b, at a '<', starts the end tag of name as
// readRawEndTag reads it.
func rawEndTag(b []byte, name string) rawEnd {
	if len(b) < 2 {
		return rawEndMore
	}
	if b[1] != '/' {
		return rawEndNo
	}
	return rawEndName(b[2:], name)
}

// rawEndName tells whether b starts with name (ASCII case-insensitively)
// and one of white space, '/' or '>'.
func rawEndName(b []byte, name string) rawEnd {
	for i := 0; i < len(name); i++ {
		if i >= len(b) {
			return rawEndMore
		}
		if c := b[i]; c != name[i] && c != name[i]-('a'-'A') {
			return rawEndNo
		}
	}
	if len(b) <= len(name) {
		return rawEndMore
	}
	switch b[len(name)] {
	case ' ', '\n', '\r', '\t', '\f', '/', '>':
		return rawEndYes
	}
	return rawEndNo
}

// scanScript advances over script data, following readScript's states,
// to the "</" of its end tag. It returns true when it must wait at f.pos
// for more input to tell. Only the states that follow a '<' look ahead:
// scanning resumes at the '<' (cp) with the state it had there, which for
// every state before a '<' gives the same next state.
func (f *fastStripper) scanScript(b []byte) (wait bool) {
	p, st := f.pos, f.scr
	cp, cpSt := p, st
	for p < len(b) {
		switch st {
		case sData, sEscaped, sEscapedDash, sEscapedDashDash, sDoubleEscaped, sDoubleEscapedDash, sDoubleEscapedDashDash:
			cp, cpSt = p, st
		}
		if st == sData {
			lt := next(f.idx.lt, p, len(b))
			if lt < 0 {
				p = len(b)
				cp = p
				break
			}
			cp, cpSt = lt, sData
			p, st = lt+1, sLessThan
			continue
		}
		c := b[p]
		switch st {
		case sLessThan:
			switch c {
			case '/':
				st, p = sEndTagOpen, p+1
			case '!':
				st, p = sEscapeStart, p+1
			default:
				st = sData // reconsume
			}
		case sEndTagOpen, sEscapedEndTagOpen, sDoubleEscapeEnd:
			switch rawEndName(b[p:], "script") {
			case rawEndMore:
				f.pos, f.ready, f.scr = cp, cp, cpSt
				return true
			case rawEndYes:
				if st == sDoubleEscapeEnd {
					st, p = sEscaped, p-2+len("</script>")
					continue
				}
				f.pos, f.ready, f.state = p-2, p-2, inData
				return false
			}
			// Reconsume from the first byte that did not match.
			p += matchedPrefix(b[p:], "script")
			switch st {
			case sEndTagOpen:
				st = sData
			case sEscapedEndTagOpen:
				st = sEscaped
			default:
				st = sDoubleEscaped
			}
		case sEscapeStart:
			if c == '-' {
				st, p = sEscapeStartDash, p+1
			} else {
				st = sData
			}
		case sEscapeStartDash:
			if c == '-' {
				st, p = sEscapedDashDash, p+1
			} else {
				st = sData
			}
		case sEscaped, sEscapedDash, sEscapedDashDash:
			p++
			switch {
			case c == '-' && st == sEscaped:
				st = sEscapedDash
			case c == '-':
				st = sEscapedDashDash
			case c == '<':
				st = sEscapedLessThan
			case c == '>' && st == sEscapedDashDash:
				st = sData
			default:
				st = sEscaped
			}
		case sEscapedLessThan:
			switch {
			case c == '/':
				st, p = sEscapedEndTagOpen, p+1
			case isASCIILetter(c):
				st = sDoubleEscapeStart // reconsume
			default:
				st = sData // reconsume
			}
		case sDoubleEscapeStart:
			switch rawEndName(b[p:], "script") {
			case rawEndMore:
				f.pos, f.ready, f.scr = cp, cp, cpSt
				return true
			case rawEndYes:
				st, p = sDoubleEscaped, p+len("script")+1
			default:
				st, p = sEscaped, p+matchedPrefix(b[p:], "script")
			}
		case sDoubleEscaped, sDoubleEscapedDash, sDoubleEscapedDashDash:
			p++
			switch {
			case c == '-' && st == sDoubleEscaped:
				st = sDoubleEscapedDash
			case c == '-':
				st = sDoubleEscapedDashDash
			case c == '<':
				st = sDoubleEscapedLessThan
			case c == '>' && st == sDoubleEscapedDashDash:
				st = sData
			default:
				st = sDoubleEscaped
			}
		case sDoubleEscapedLessThan:
			if c == '/' {
				st, p = sDoubleEscapeEnd, p+1
			} else {
				st = sDoubleEscaped // reconsume
			}
		}
	}
	switch st {
	case sData, sEscaped, sEscapedDash, sEscapedDashDash, sDoubleEscaped, sDoubleEscapedDash, sDoubleEscapedDashDash:
		f.pos, f.ready, f.scr = p, p, st
		return false
	}
	f.pos, f.ready, f.scr = cp, cp, cpSt
	return true
}

// matchedPrefix returns how many bytes at the start of b match name in
// ASCII case-insensitively (fewer than len(name)+1).
func matchedPrefix(b []byte, name string) int {
	i := 0
	for i < len(name) && i < len(b) && (b[i] == name[i] || b[i] == name[i]-('a'-'A')) {
		i++
	}
	return i
}
