//go:build amd64 && !noasm

#include "textflag.h"

// func affineAVX512(dst *float32, n int, bias, scale, shift, floor float32)
//
// x = max((x + bias)·scale + shift, floor), one rounding per operation;
// VMAXPS with the floor first keeps x wherever floor > x is false (x NaN
// or equal to the floor). Four vectors a step, then one, then a masked
// tail.
TEXT ·affineAVX512(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ n+8(FP), CX
	VBROADCASTSS bias+16(FP), Z28
	VBROADCASTSS scale+20(FP), Z29
	VBROADCASTSS shift+24(FP), Z30
	VBROADCASTSS floor+28(FP), Z31
loop4:
	CMPQ CX, $64
	JL   loop1
	VMOVUPS 0(DI), Z0
	VADDPS Z28, Z0, Z0
	VMULPS Z29, Z0, Z0
	VADDPS Z30, Z0, Z0
	VMAXPS Z0, Z31, Z0
	VMOVUPS Z0, 0(DI)
	VMOVUPS 64(DI), Z1
	VADDPS Z28, Z1, Z1
	VMULPS Z29, Z1, Z1
	VADDPS Z30, Z1, Z1
	VMAXPS Z1, Z31, Z1
	VMOVUPS Z1, 64(DI)
	VMOVUPS 128(DI), Z2
	VADDPS Z28, Z2, Z2
	VMULPS Z29, Z2, Z2
	VADDPS Z30, Z2, Z2
	VMAXPS Z2, Z31, Z2
	VMOVUPS Z2, 128(DI)
	VMOVUPS 192(DI), Z3
	VADDPS Z28, Z3, Z3
	VMULPS Z29, Z3, Z3
	VADDPS Z30, Z3, Z3
	VMAXPS Z3, Z31, Z3
	VMOVUPS Z3, 192(DI)
	ADDQ $256, DI
	SUBQ $64, CX
	JMP  loop4
loop1:
	CMPQ CX, $16
	JL   tail
	VMOVUPS 0(DI), Z0
	VADDPS Z28, Z0, Z0
	VMULPS Z29, Z0, Z0
	VADDPS Z30, Z0, Z0
	VMAXPS Z0, Z31, Z0
	VMOVUPS Z0, 0(DI)
	ADDQ $64, DI
	SUBQ $16, CX
	JMP  loop1
tail:
	TESTQ CX, CX
	JZ   done
	MOVL $1, AX
	SHLL CX, AX
	DECL AX
	KMOVW AX, K1
	VMOVUPS.Z 0(DI), K1, Z0
	VADDPS Z28, Z0, Z0
	VMULPS Z29, Z0, Z0
	VADDPS Z30, Z0, Z0
	VMAXPS Z0, Z31, Z0
	VMOVUPS Z0, K1, 0(DI)
done:
	VZEROUPPER
	RET
