//go:build amd64 && !noasm

#include "textflag.h"

// func flushSubnormalAVX512(dst, x *float32, n int)
//
// Lanes whose exponent field is zero (zeros and subnormals) keep only
// their sign bit; the others are copied. Integer operations only, so the
// result does not depend on MXCSR.
TEXT ·flushSubnormalAVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	MOVL $0x7f800000, AX
	VPBROADCASTD AX, Z30
	MOVL $0x80000000, AX
	VPBROADCASTD AX, Z31
loop:
	CMPQ CX, $16
	JL   tail
	VMOVDQU32 0(SI), Z0
	VPTESTMD Z30, Z0, K1
	VPANDD Z31, Z0, Z1
	VMOVDQU32 Z0, K1, Z1
	VMOVDQU32 Z1, 0(DI)
	ADDQ $64, DI
	ADDQ $64, SI
	SUBQ $16, CX
	JMP  loop
tail:
	TESTQ CX, CX
	JZ   done
	MOVL $1, AX
	SHLL CX, AX
	DECL AX
	KMOVW AX, K2
	VMOVDQU32.Z 0(SI), K2, Z0
	VPTESTMD Z30, Z0, K1
	VPANDD Z31, Z0, Z1
	VMOVDQU32 Z0, K1, Z1
	VMOVDQU32 Z1, K2, 0(DI)
done:
	VZEROUPPER
	RET
