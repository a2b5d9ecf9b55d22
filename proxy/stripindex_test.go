package proxy

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// checkIndex fails unless x marks exactly the '<', '"', '\” and
// delimiter bytes of b, and next finds in each mask what a search of the
// bytes finds, from every start to every end.
func checkIndex(t *testing.T, x *byteIndex, b []byte) {
	t.Helper()
	masks := []struct {
		name string
		m    []uint64
		is   func(c byte) bool
	}{
		{"lt", x.lt, func(c byte) bool { return c == '<' }},
		{"dq", x.dq, func(c byte) bool { return c == '"' }},
		{"sq", x.sq, func(c byte) bool { return c == '\'' }},
	}
	for _, k := range masks {
		for i, c := range b {
			if got := k.m[i>>blockShift]>>(i&63)&1 == 1; got != k.is(c) {
				t.Fatalf("%s mask of byte %d (%q) of %q: %v", k.name, i, c, b, got)
			}
		}
		for p := 0; p <= len(b); p++ {
			for end := p; end <= len(b); end += 1 + end/7 {
				want := -1
				for i := p; i < end; i++ {
					if k.is(b[i]) {
						want = i
						break
					}
				}
				if got := next(k.m, p, end); got != want {
					t.Fatalf("next(%s, %d, %d) in %q = %d, want %d", k.name, p, end, b, got, want)
				}
			}
		}
	}
}

// indexInput returns n bytes in which the marked ones are common.
func indexInput(r *rand.Rand, n int) []byte {
	const alphabet = "<\"'= \t\n\r\f/>a-Z\x00\x80\xff\xbc\xa2\xa7\x1c\x02\x07"
	b := make([]byte, n)
	for i := range b {
		if r.IntN(3) == 0 {
			b[i] = byte(r.IntN(256))
		} else {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
	}
	return b
}

// TestByteIndex checks the index against the bytes, marked whole and as
// fill marks them (the new bytes after those marked, the masks growing),
// every byte value in every lane of a block, and each way of marking (AVX2
// where the machine has it, and plain Go) against the other.
func TestByteIndex(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		b := indexInput(r, r.IntN(300))
		var x byteIndex
		x.mark(b, 0)
		checkIndex(t, &x, b)

		var y byteIndex
		k := 0
		for k < len(b) {
			n := k + 1 + r.IntN(80)
			n = min(n, len(b))
			y.mark(b[:n], k)
			k = n
		}
		checkIndex(t, &y, b)
	}

	// Every byte value at every position of a block.
	all := make([]byte, 0, 256*64)
	for c := range 256 {
		all = append(all, bytes.Repeat([]byte{byte(c)}, 64)...)
	}
	for shift := range 64 {
		b := append(bytes.Repeat([]byte{'x'}, shift), all...)
		var x byteIndex
		x.mark(b, 0)
		checkIndex(t, &x, b[:min(len(b), 600)])
		for i, c := range b {
			if got := x.lt[i>>blockShift]>>(i&63)&1 == 1; got != (c == '<') {
				t.Fatalf("lt mask of byte %d (%#x): %v", i, c, got)
			}
		}
	}

	b := indexInput(r, 64*100)
	n := len(b) >> blockShift
	gen := [3][]uint64{make([]uint64, n), make([]uint64, n), make([]uint64, n)}
	fast := [3][]uint64{make([]uint64, n), make([]uint64, n), make([]uint64, n)}
	markBlocksGeneric(b, gen[0], gen[1], gen[2])
	markBlocks(b, fast[0], fast[1], fast[2])
	for k := range gen {
		for w := range gen[k] {
			if gen[k][w] != fast[k][w] {
				t.Fatalf("mask %d word %d: markBlocks %#x, markBlocksGeneric %#x", k, w, fast[k][w], gen[k][w])
			}
		}
	}
}

// TestMayClassify checks that every name classifyTag tells apart, in
// every ASCII case, passes mayClassify.
func TestMayClassify(t *testing.T) {
	names := []string{"a", "xmp", "form", "area", "meta", "input", "style", "title",
		"button", "script", "iframe", "noembed", "noframes", "noscript", "textarea", "plaintext"}
	for _, n := range names {
		for v := range 1 << len(n) {
			b := []byte(n)
			for i := range b {
				if v>>i&1 == 1 {
					b[i] -= 'a' - 'A'
				}
			}
			if c, rc := classifyTag(b); !c && rc == "" {
				t.Fatalf("classifyTag(%q) finds nothing", b)
			}
			if !mayClassify(b) {
				t.Fatalf("mayClassify(%q) = false", b)
			}
		}
	}
	for _, n := range []string{"td", "tr", "div", "span", "li", "label"} {
		if mayClassify([]byte(n)) {
			t.Errorf("mayClassify(%q) = true: the filter passes everything", n)
		}
	}
}
