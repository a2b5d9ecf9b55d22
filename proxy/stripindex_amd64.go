package proxy

import "golang.org/x/sys/cpu"

var hasAVX2 = cpu.X86.HasAVX2

// markBlocks sets, for each 64-byte block of b (len(b) is a multiple of
// 64), the bits of its '<', '"' and '\” bytes in lt, dq and sq.
func markBlocks(b []byte, lt, dq, sq []uint64) {
	if !hasAVX2 {
		markBlocksGeneric(b, lt, dq, sq)
		return
	}
	if n := len(b) >> blockShift; n > 0 {
		_, _, _ = lt[n-1], dq[n-1], sq[n-1]
		markAVX2(&b[0], n, &lt[0], &dq[0], &sq[0])
	}
}

// markAVX2 is markBlocks for n (> 0) blocks at b, with AVX2.
//
//go:noescape
func markAVX2(b *byte, n int, lt, dq, sq *uint64)
