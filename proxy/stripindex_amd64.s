#include "textflag.h"

// MASK sets DST to the 64-bit mask of the bytes of Y3:Y4 equal to the
// bytes of YC, using Y5, Y6 and BX.
#define MASK(YC, DST) \
	VPCMPEQB YC, Y3, Y5; \
	VPCMPEQB YC, Y4, Y6; \
	VPMOVMSKB Y5, DST; \
	VPMOVMSKB Y6, BX; \
	SHLQ $32, BX; \
	ORQ BX, DST

// func markAVX2(b *byte, n int, lt, dq, sq *uint64)
TEXT ·markAVX2(SB), NOSPLIT, $0-40
	MOVQ b+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ lt+16(FP), R8
	MOVQ dq+24(FP), R9
	MOVQ sq+32(FP), R10
	MOVL $0x3c, AX // '<'
	MOVQ AX, X0
	VPBROADCASTB X0, Y0
	MOVL $0x22, AX // '"'
	MOVQ AX, X1
	VPBROADCASTB X1, Y1
	MOVL $0x27, AX // '\''
	MOVQ AX, X2
	VPBROADCASTB X2, Y2

loop:
	VMOVDQU (SI), Y3
	VMOVDQU 32(SI), Y4
	MASK(Y0, AX)
	MOVQ AX, (R8)
	MASK(Y1, AX)
	MOVQ AX, (R9)
	MASK(Y2, AX)
	MOVQ AX, (R10)

	ADDQ $64, SI
	ADDQ $8, R8
	ADDQ $8, R9
	ADDQ $8, R10
	DECQ CX
	JNZ  loop

	VZEROUPPER
	RET
