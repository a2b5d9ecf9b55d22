package proxy

import (
	"encoding/binary"
	"math/bits"
)

// byteIndex marks, per 64-byte block of the scan buffer, where its '<',
// '"' and '\” bytes are, one bit per byte. The scanner jumps to the next
// of them by reading these masks rather than by searching the bytes again:
// on Spark's pages most jumps are of a few dozen bytes (from one tag to
// the next, across a quoted attribute value), where the call and set-up of
// bytes.IndexByte cost more than the search. Marking a buffer costs a few
// instructions per 64 bytes with AVX2 (markBlocks), a few per byte
// without. (A mask of the tag delimiters, to find the ends of names and
// keys, measured slower than the loops over their few bytes.)
type byteIndex struct {
	lt, dq, sq []uint64
}

// blockShift is log2 of the bytes one mask word covers.
const blockShift = 6

// mark marks b[from:], and the rest of the block from is in: the bytes
// before from must be marked already (they have not moved since). It grows
// the masks, allocating, only while b is longer than they cover.
func (x *byteIndex) mark(b []byte, from int) {
	// One word more than b needs: next may look at the word at len(b).
	words := len(b)>>blockShift + 1
	if words > len(x.lt) {
		old := *x
		x.use(make([]uint64, 3*words))
		copy(x.lt, old.lt)
		copy(x.dq, old.dq)
		copy(x.sq, old.sq)
	}
	w := from >> blockShift
	whole := len(b) >> blockShift
	if whole > w {
		markBlocks(b[w<<blockShift:whole<<blockShift], x.lt[w:whole], x.dq[w:whole], x.sq[w:whole])
		w = whole
	}
	if tail := b[w<<blockShift:]; len(tail) > 0 {
		var block [64]byte
		copy(block[:], tail)
		markBlocksGeneric(block[:], x.lt[w:w+1], x.dq[w:w+1], x.sq[w:w+1])
	}
}

// use makes m, in three equal parts, the index's masks (their marks are
// lost).
func (x *byteIndex) use(m []uint64) {
	n := len(m) / 3
	x.lt, x.dq, x.sq = m[:n:n], m[n:2*n:2*n], m[2*n:]
}

// next returns the index of the first byte marked in m at or after p and
// before end, or -1. end must not pass the bytes marked, nor p pass end.
// It is small enough to inline: the scanner calls it for every tag.
func next(m []uint64, p, end int) int {
	w := p >> blockShift
	left := m[w] >> (uint(p) & 63) << (uint(p) & 63)
	for left == 0 {
		w++
		if w<<blockShift >= end {
			return -1
		}
		left = m[w]
	}
	if i := w<<blockShift + bits.TrailingZeros64(left); i < end {
		return i
	}
	return -1
}

// markBlocksGeneric is markBlocks in plain Go.
func markBlocksGeneric(b []byte, lt, dq, sq []uint64) {
	for w := range lt {
		block := b[w<<blockShift : (w+1)<<blockShift]
		var l, d, s uint64
		for k := range 8 {
			x := binary.LittleEndian.Uint64(block[8*k:])
			l |= uint64(zeroBytes(x^('<'*ones))) << (8 * k)
			d |= uint64(zeroBytes(x^('"'*ones))) << (8 * k)
			s |= uint64(zeroBytes(x^('\''*ones))) << (8 * k)
		}
		lt[w], dq[w], sq[w] = l, d, s
	}
}

const (
	ones = 0x0101010101010101
	lo7  = 0x7f7f7f7f7f7f7f7f
)

// zeroBytes returns a bit per byte of x, bit k set when byte k (little
// endian) is zero. The test is exact: no carry crosses from one byte to
// the next.
func zeroBytes(x uint64) uint8 {
	t := ^(((x & lo7) + lo7) | x | lo7) // the high bit of each zero byte
	// Gather the eight high bits into the top byte: each lands at its own
	// position, so no two products overlap or carry.
	return uint8(((t >> 7) * 0x0102040810204080) >> 56)
}
