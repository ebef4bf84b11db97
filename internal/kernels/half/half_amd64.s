//go:build !noasm

#include "textflag.h"

// The slice conversions, 16 elements per step, the tail under a mask (the
// masked-off lanes are neither read nor written). Rounding to bfloat16 is
// done with integer operations, exactly as BF16 does: add 0x7fff plus the
// lowest kept bit, keep the high half; NaN lanes keep their high half with
// the quiet bit set. (VCVTNEPS2BF16 would flush subnormal inputs to zero.)

#define BF16ROUND \
	VPSRLD $16, Z0, Z1 \
	VPANDD Z21, Z1, Z1 \
	VPADDD Z20, Z1, Z1 \
	VPADDD Z0, Z1, Z1 \
	VPANDD Z22, Z0, Z2 \
	VPCMPUD $6, Z23, Z2, K2 \
	VPORD Z24, Z0, K2, Z1 \
	VPSRLD $16, Z1, Z1

// func bf16FromFloat32sAVX512(dst *uint16, src *float32, n int)
TEXT ·bf16FromFloat32sAVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	MOVL $0x7fff, AX
	VPBROADCASTD AX, Z20
	MOVL $1, AX
	VPBROADCASTD AX, Z21
	MOVL $0x7fffffff, AX
	VPBROADCASTD AX, Z22
	MOVL $0x7f800000, AX
	VPBROADCASTD AX, Z23
	MOVL $0x00400000, AX
	VPBROADCASTD AX, Z24
bfloop:
	CMPQ CX, $16
	JLT bftail
	VMOVDQU32 (SI), Z0
	BF16ROUND
	VPMOVDW Z1, (DI)
	ADDQ $64, SI
	ADDQ $32, DI
	SUBQ $16, CX
	JMP bfloop
bftail:
	TESTQ CX, CX
	JZ bfdone
	MOVL $1, AX
	SHLL CX, AX
	DECL AX
	KMOVW AX, K1
	VMOVDQU32.Z (SI), K1, Z0
	BF16ROUND
	VPMOVDW Z1, K1, (DI)
bfdone:
	VZEROUPPER
	RET

// func bf16ToFloat32sAVX512(dst *float32, src *uint16, n int)
TEXT ·bf16ToFloat32sAVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
btloop:
	CMPQ CX, $16
	JLT bttail
	VPMOVZXWD (SI), Z0
	VPSLLD $16, Z0, Z0
	VMOVDQU32 Z0, (DI)
	ADDQ $32, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JMP btloop
bttail:
	TESTQ CX, CX
	JZ btdone
	MOVL $1, AX
	SHLL CX, AX
	DECL AX
	KMOVW AX, K1
	VPMOVZXWD.Z (SI), K1, Z0
	VPSLLD $16, Z0, Z0
	VMOVDQU32 Z0, K1, (DI)
btdone:
	VZEROUPPER
	RET

// func f16FromFloat32sAVX512(dst *uint16, src *float32, n int)
TEXT ·f16FromFloat32sAVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
hfloop:
	CMPQ CX, $16
	JLT hftail
	VMOVUPS (SI), Z0
	VCVTPS2PH $0, Z0, (DI)
	ADDQ $64, SI
	ADDQ $32, DI
	SUBQ $16, CX
	JMP hfloop
hftail:
	TESTQ CX, CX
	JZ hfdone
	MOVL $1, AX
	SHLL CX, AX
	DECL AX
	KMOVW AX, K1
	VMOVUPS.Z (SI), K1, Z0
	VCVTPS2PH $0, Z0, K1, (DI)
hfdone:
	VZEROUPPER
	RET

// func f16ToFloat32sAVX512(dst *float32, src *uint16, n int)
TEXT ·f16ToFloat32sAVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
htloop:
	CMPQ CX, $16
	JLT httail
	VCVTPH2PS (SI), Z0
	VMOVUPS Z0, (DI)
	ADDQ $32, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JMP htloop
httail:
	TESTQ CX, CX
	JZ htdone
	MOVL $1, AX
	SHLL CX, AX
	DECL AX
	KMOVW AX, K1
	VCVTPH2PS.Z (SI), K1, Z0
	VMOVUPS Z0, K1, (DI)
htdone:
	VZEROUPPER
	RET
