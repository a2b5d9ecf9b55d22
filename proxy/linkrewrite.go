package proxy

import (
	"bytes"
	"errors"
	"io"

	"golang.org/x/net/html"
)

// linkAttrs are the attributes whose value is a URL a click, a form or a
// load would follow.
var linkAttrs = map[string]bool{"href": true, "src": true, "action": true, "formaction": true, "xlink:href": true, "poster": true, "background": true}

// linkRewriter streams HTML, passing every token through unchanged except
// start tags with a URL attribute, whose value is mapped by link: a new
// value, or (false) the attribute removed. It holds one token at a time.
type linkRewriter struct {
	src  io.ReadCloser
	z    *html.Tokenizer
	link func(string) (string, bool)
	out  []byte
	err  error
}

func newLinkRewriter(src io.ReadCloser, link func(string) (string, bool)) io.ReadCloser {
	return &linkRewriter{src: src, z: newTokenizer(src), link: link}
}

func (r *linkRewriter) Read(p []byte) (int, error) {
	for len(r.out) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		tt := r.z.Next()
		switch tt {
		case html.ErrorToken:
			r.err = r.z.Err()
			if errors.Is(r.err, html.ErrBufferExceeded) {
				// A tag too long to judge is not passed on unjudged.
				r.err = errors.New("link rewriter: token too long")
			}
			r.out = append(r.out[:0], r.z.Raw()...)
		case html.StartTagToken, html.SelfClosingTagToken:
			r.out = r.tag(tt)
		default:
			r.out = append(r.out[:0], r.z.Raw()...)
		}
	}
	n := copy(p, r.out)
	r.out = r.out[n:]
	return n, nil
}

// tag returns the current start tag, rebuilt if a URL in it changes.
func (r *linkRewriter) tag(tt html.TokenType) []byte {
	raw := append([]byte(nil), r.z.Raw()...)
	name, hasAttr := r.z.TagName()
	if !hasAttr {
		return raw
	}
	type attr struct{ key, val string }
	var attrs []attr
	changed := false
	for more := true; more; {
		var k, v []byte
		k, v, more = r.z.TagAttr()
		a := attr{string(k), string(v)}
		if linkAttrs[a.key] {
			nv, ok := r.link(a.val)
			if !ok {
				changed = true
				continue
			}
			if nv != a.val {
				a.val, changed = nv, true
			}
		}
		attrs = append(attrs, a)
	}
	if !changed {
		return raw
	}
	var b bytes.Buffer
	b.WriteByte('<')
	b.Write(name)
	for _, a := range attrs {
		b.WriteByte(' ')
		b.WriteString(a.key)
		b.WriteString(`="`)
		b.WriteString(html.EscapeString(a.val))
		b.WriteByte('"')
	}
	if tt == html.SelfClosingTagToken {
		b.WriteString(" /")
	}
	b.WriteByte('>')
	return b.Bytes()
}

func (r *linkRewriter) Close() error { return r.src.Close() }
