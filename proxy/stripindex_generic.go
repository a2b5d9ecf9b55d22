//go:build !amd64

package proxy

// markBlocks sets, for each 64-byte block of b (len(b) is a multiple of
// 64), the bits of its '<', '"' and '\” bytes in lt, dq and sq.
func markBlocks(b []byte, lt, dq, sq []uint64) { markBlocksGeneric(b, lt, dq, sq) }
