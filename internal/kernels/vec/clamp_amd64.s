//go:build amd64 && !noasm

#include "textflag.h"

// The AVX-512 twins of clampGo and hardswishGo (clamp.go), written by hand:
// VMAXPS and VMINPS alone return their second operand for NaN and for two
// zeros, which is not Go's min and max, so each bound is applied as masked
// selects over the comparisons Go's semantics are made of. One 16-lane
// loop and a masked tail, so there is no scalar remainder.

// CLAMP16 computes Z2 = min(max(Z0, lo=Z30), hi=Z31).
//   max: Z1 = x AND lo (the answer for x == lo, ±0 included: +0 unless
//   both are -0); x where x > lo or x is NaN (predicate 6, NLE_US); lo
//   where x < lo (predicate 1, LT_OS).
//   min: Z2 = m OR hi (-0 unless both are +0); m where m < hi or m is NaN
//   (predicate 9, NGE_US); hi where m > hi (predicate 14, GT_OS).
#define CLAMP16 \
	VANDPS    Z0, Z30, Z1       \
	VCMPPS    $6, Z30, Z0, K2   \
	VMOVAPS   Z0, K2, Z1        \
	VCMPPS    $1, Z30, Z0, K3   \
	VMOVAPS   Z30, K3, Z1       \
	VORPS     Z1, Z31, Z2       \
	VCMPPS    $9, Z31, Z1, K2   \
	VMOVAPS   Z1, K2, Z2        \
	VCMPPS    $14, Z31, Z1, K3  \
	VMOVAPS   Z31, K3, Z2

// func clampAVX512(dst, x *float32, n int, lo, hi float32)
TEXT ·clampAVX512(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS lo+24(FP), Z30
	VBROADCASTSS hi+28(FP), Z31
loop:
	CMPQ CX, $16
	JL   tail
	VMOVUPS 0(SI), Z0
	CLAMP16
	VMOVUPS Z2, 0(DI)
	ADDQ $64, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JMP  loop
tail:
	TESTQ CX, CX
	JZ   done
	MOVL $1, AX
	SHLL CX, AX
	DECL AX
	KMOVW AX, K1
	VMOVUPS.Z 0(SI), K1, Z0
	CLAMP16
	VMOVUPS Z2, K1, 0(DI)
done:
	VZEROUPPER
	RET

// HSWISH16 computes Z1 = hardswish(Z0) with Z28 = 3, Z29 = -3, Z30 = 6,
// Z31 = 0: x·(x+3)/6, then 0 where x <= -3 (predicate 2, LE_OS) and x
// where x >= 3 (predicate 13, GE_OS). NaN fails both and stays NaN.
#define HSWISH16 \
	VADDPS  Z28, Z0, Z1       \
	VMULPS  Z1, Z0, Z1        \
	VDIVPS  Z30, Z1, Z1       \
	VCMPPS  $2, Z29, Z0, K2   \
	VMOVAPS Z31, K2, Z1       \
	VCMPPS  $13, Z28, Z0, K3  \
	VMOVAPS Z0, K3, Z1

// func hardswishAVX512(dst, x *float32, n int)
TEXT ·hardswishAVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	MOVL $0x40400000, AX // 3
	VPBROADCASTD AX, Z28
	MOVL $0xc0400000, AX // -3
	VPBROADCASTD AX, Z29
	MOVL $0x40c00000, AX // 6
	VPBROADCASTD AX, Z30
	VPXORD Z31, Z31, Z31
loop:
	CMPQ CX, $16
	JL   tail
	VMOVUPS 0(SI), Z0
	HSWISH16
	VMOVUPS Z1, 0(DI)
	ADDQ $64, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JMP  loop
tail:
	TESTQ CX, CX
	JZ   done
	MOVL $1, AX
	SHLL CX, AX
	DECL AX
	KMOVW AX, K1
	VMOVUPS.Z 0(SI), K1, Z0
	HSWISH16
	VMOVUPS Z1, K1, 0(DI)
done:
	VZEROUPPER
	RET
