package proxy

import (
	"bytes"

	"golang.org/x/net/html"
)

// tagAttrs is what the stripper reads of a start tag: html.Tokenizer's
// TagName and TagAttr, after the tokenizer has read the tag. The
// tokenizer-based stripper reads them from its tokenizer; the fast path
// from rawTag, which reads a tag's raw bytes the same way without the
// tokenizer's allocations (FuzzStripperDifferential holds them equal).
type tagAttrs interface {
	// TagName returns the tag's name and whether it has attributes; it
	// must be called before TagAttr. Callers use only hasAttr.
	TagName() (name []byte, hasAttr bool)
	// TagAttr returns the next attribute: its key (lower-case when it is
	// one the stripper reads, see judgedKeys) and its value, unescaped.
	TagAttr() (key, val []byte, moreAttr bool)
}

// maxRawAttrs is the most attributes rawTag reads, and maxRawTag the
// longest tag; a tag with more goes to the tokenizer (Spark's tags have
// up to about six attributes and a few hundred bytes).
const (
	maxRawAttrs = 16
	maxRawTag   = 1<<16 - 1
)

// rawTag reads the attributes of one complete start tag (as scanTag
// accepts it) from its raw bytes, exactly as x/net/html's tokenizer reads
// them: the same key and value boundaries, the first of two keys equal in
// ASCII case kept, empty keys dropped, and its token type (self-closing or
// not). Values are returned raw: read declines a tag whose attribute
// that the stripper reads has a value the tokenizer would change (a
// character reference, a carriage return, a NUL byte), and the tokenizer
// reads that tag instead. Nothing is allocated: keys and values are
// slices of the tag.
type rawTag struct {
	raw     []byte
	nameEnd int
	// attr holds, per kept attribute, the key's start and end and the
	// value's start and end in raw, as the tokenizer's spans.
	attr [maxRawAttrs][4]uint16
	n    int // attributes kept
	next int // the next one TagAttr returns
	tt   html.TokenType
}

// judgedKeys are the attribute keys judgeControl and oweID read, in lower
// case: rawTag returns these keys so (any other key as it is in the tag).
var judgedKeys = [][]byte{
	[]byte("class"), []byte("href"), []byte("xlink:href"), []byte("content"),
	[]byte("action"), []byte("formaction"), []byte("name"), []byte("value"),
}

// judgedKey returns the lower-case form of key if it is one of judgedKeys
// in any ASCII case, else nil.
func judgedKey(key []byte) []byte {
	var k []byte
	switch len(key) {
	case 4:
		k = judgedKeys[1] // href
		if key[0]|0x20 == 'n' {
			k = judgedKeys[6] // name
		}
	case 5:
		k = judgedKeys[0] // class
		if key[0]|0x20 == 'v' {
			k = judgedKeys[7] // value
		}
	case 6:
		k = judgedKeys[4] // action
	case 7:
		k = judgedKeys[3] // content
	case 10:
		k = judgedKeys[2] // xlink:href
		if key[0]|0x20 == 'f' {
			k = judgedKeys[5] // formaction
		}
	default:
		return nil
	}
	if asciiEqualFold(key, k) {
		return k
	}
	return nil
}

// plainValue reports whether the tokenizer returns the attribute value v
// as it is: it has no character reference to unescape, no carriage return
// to convert and no NUL byte to replace.
func plainValue(v []byte) bool {
	for _, c := range v {
		if c == '&' || c == '\r' || c == 0 {
			return false
		}
	}
	return true
}

// skipTagSpace returns the index of the first byte at or after p in b that
// is not white space as the tokenizer skips it.
func skipTagSpace(b []byte, p int) int {
	for p < len(b) && tagClass[b[p]] == tcSpace {
		p++
	}
	return p
}

// read reads raw, a complete start tag ("<" name ... ">") as scanTag
// accepts it, following the tokenizer's readTag, readTagName,
// readTagAttrKey, readTagAttrVal and readStartTag. It returns false when
// the tokenizer must read the tag instead (see rawTag).
func (t *rawTag) read(raw []byte) bool {
	t.raw, t.n, t.next = raw, 0, 0
	if len(raw) > maxRawTag {
		return false
	}
	// Name: up to white space (consumed), '/' or '>'.
	p := 1
	for p < len(raw) && tagClass[raw[p]]&(tcSpace|tcSlash|tcGT) == 0 {
		p++
	}
	t.nameEnd = p
	if p < len(raw) && tagClass[raw[p]] == tcSpace {
		p++
	}
	p = skipTagSpace(raw, p)
	for p < len(raw) && raw[p] != '>' {
		// Key: a leading '=' is part of it.
		ks := p
		if raw[p] == '=' {
			p++
		}
		for p < len(raw) && tagClass[raw[p]] == 0 {
			p++
		}
		ke := p
		// Value: the tokenizer's span starts and ends where the key ends
		// unless a value is read.
		vs, ve := p, p
		p = skipTagSpace(raw, p)
		if p < len(raw) {
			switch raw[p] {
			case '/':
				p++
			case '=':
				p = skipTagSpace(raw, p+1)
				if p >= len(raw) {
					return false
				}
				switch q := raw[p]; q {
				case '>':
				case '"', '\'':
					i := bytes.IndexByte(raw[p+1:], q)
					if i < 0 {
						return false
					}
					vs, ve = p+1, p+1+i
					p = ve + 1
				default:
					vs = p
					p++
					for p < len(raw) && tagClass[raw[p]]&(tcSpace|tcGT) == 0 {
						p++
					}
					ve = p
					if p < len(raw) && tagClass[raw[p]] == tcSpace {
						p++
					}
				}
			}
		}
		if ke > ks && !t.has(raw[ks:ke]) {
			if t.n == maxRawAttrs {
				return false
			}
			if judgedKey(raw[ks:ke]) != nil && !plainValue(raw[vs:ve]) {
				return false
			}
			t.attr[t.n] = [4]uint16{uint16(ks), uint16(ke), uint16(vs), uint16(ve)} //nolint:gosec // offsets into raw, at most maxRawTag (checked above)
			t.n++
		}
		p = skipTagSpace(raw, p)
	}
	if p != len(raw)-1 {
		return false // not the tag scanTag read
	}
	// Self-closing, as readStartTag tells: "/>" at the end that is not
	// the end of the last attribute's value.
	t.tt = html.StartTagToken
	if end := len(raw) - 1; raw[end-1] == '/' && (t.n == 0 || end != int(t.attr[t.n-1][3])) {
		t.tt = html.SelfClosingTagToken
	}
	return true
}

// has reports whether a kept attribute's key equals key.
func (t *rawTag) has(key []byte) bool {
	for i := range t.n {
		a := t.attr[i]
		if asciiEqualFold(t.raw[a[0]:a[1]], key) {
			return true
		}
	}
	return false
}

// TagName is html.Tokenizer's TagName, but the name keeps its case.
func (t *rawTag) TagName() (name []byte, hasAttr bool) {
	return t.raw[1:t.nameEnd], t.n > 0
}

// TagAttr is html.Tokenizer's TagAttr: only keys of judgedKeys are
// lowered.
func (t *rawTag) TagAttr() (key, val []byte, moreAttr bool) {
	if t.next >= t.n {
		return nil, nil, false
	}
	a := t.attr[t.next]
	t.next++
	key = t.raw[a[0]:a[1]]
	if k := judgedKey(key); k != nil {
		key = k
	}
	return key, t.raw[a[2]:a[3]], t.next < t.n
}
