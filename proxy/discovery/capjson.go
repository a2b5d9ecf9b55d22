package discovery

import (
	"bytes"
	"io"
)

// stringCapper passes a JSON text through, cutting every string (key or
// value) to its first max bytes as written, an escape sequence begun
// within them kept whole. Lists that masters, ResourceManagers and
// History Servers serve carry app names that users choose: one app named
// with hundreds of megabytes would otherwise make the whole list
// unreadable (too large, or too slow to hold) and hide every app on it.
// A cut keeps escape sequences whole, so that valid JSON stays valid; it
// may split a UTF-8 sequence, which the decoder reads as U+FFFD. Ids and
// users are far shorter than max: only a string no real one matches is
// cut. Text that is not JSON passes through as garbled as it came.
type stringCapper struct {
	r   io.Reader
	max int

	inString bool
	n        int  // bytes of the current string passed on
	esc      int  // escape bytes still to come: -1 after '\', 1-4 after "\u"
	escKeep  bool // whether the escape under way is passed on
}

func newStringCapper(r io.Reader, limit int) *stringCapper {
	return &stringCapper{r: r, max: limit}
}

// Read filters what it reads from the underlying reader in place, reading
// again while a whole read was cut away.
func (c *stringCapper) Read(p []byte) (int, error) {
	for {
		n, err := c.r.Read(p)
		w := c.filter(p[:n])
		if w > 0 || err != nil || n == 0 {
			return w, err
		}
	}
}

// filter compacts b to the bytes passed on and returns their count. Each
// byte is looked at a bounded number of times: the next quote is found
// once and kept while the escapes before it are passed (a name of
// backslashes would otherwise have the rest of b searched again after
// each one).
func (c *stringCapper) filter(b []byte) int {
	w, i := 0, 0
	quote := -1 // index in b of the next '"' at or after i; -1: not known
	keep := func(k []byte) {
		w += copy(b[w:], k)
	}
	for i < len(b) {
		if !c.inString {
			q := bytes.IndexByte(b[i:], '"')
			if q < 0 {
				keep(b[i:])
				return w
			}
			keep(b[i : i+q+1])
			i += q + 1
			c.inString, c.n = true, 0
			continue
		}
		if c.esc != 0 {
			ch := b[i]
			i++
			if c.escKeep {
				b[w] = ch
				w++
				c.n++
			}
			switch {
			case c.esc == -1 && ch == 'u':
				c.esc = 4
			case c.esc == -1:
				c.esc = 0
			default:
				c.esc--
			}
			continue
		}
		// A run of plain bytes up to the next quote or backslash.
		if quote < i {
			quote = len(b)
			if q := bytes.IndexByte(b[i:], '"'); q >= 0 {
				quote = i + q
			}
		}
		end := quote
		if s := bytes.IndexByte(b[i:end], '\\'); s >= 0 {
			end = i + s
		}
		run := b[i:end]
		if room := c.max - c.n; room > 0 {
			k := run[:min(len(run), room)]
			keep(k)
			c.n += len(k)
		}
		i = end
		if i == len(b) {
			break
		}
		switch b[i] {
		case '"':
			keep(b[i : i+1])
			c.inString = false
		case '\\':
			c.esc, c.escKeep = -1, c.n < c.max
			if c.escKeep {
				b[w] = '\\'
				w++
				c.n++
			}
		}
		i++
	}
	return w
}
