//go:build amd64 && !noasm

#include "textflag.h"

// The 2×2 stride-2 pooling kernels of pool2x2.go, one plane per call. Each
// step takes 16 outputs: two 32-element stretches of a row pair, reduced
// down the columns first (one vector op per 16 pairs), then split into even
// and odd columns with VPERMI2PS and reduced across. The last outputs of a
// row load and store under masks, so nothing past the windows is touched.
//
// max(a, b) with Go's meaning — NaN if either is NaN, +0 over -0 — is
// VMAXPS both ways round ANDed (the two differ only for zeros of both signs,
// whose AND is +0, or where a NaN is involved), then a+b (a NaN) wherever
// the pair is unordered.

// func maxPool2x2AVX512(dst, src *float32, outH, outW, w int)
TEXT ·maxPool2x2AVX512(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ outH+16(FP), R8
	MOVQ outW+24(FP), R9
	MOVQ w+32(FP), DX
	SHLQ $2, DX
	VMOVUPS poolEven<>(SB), Z30
	VMOVUPS poolOdd<>(SB), Z31
	VBROADCASTSS poolQuarter<>(SB), Z29
row:
	TESTQ R8, R8
	JZ   done
	MOVQ SI, R10
	MOVQ DI, R11
	MOVQ R9, CX
col:
	CMPQ CX, $16
	JL   tail
	VMOVUPS 0(R10), Z0
	VMOVUPS 64(R10), Z1
	VMOVUPS 0(R10)(DX*1), Z2
	VMOVUPS 64(R10)(DX*1), Z3
	VMAXPS Z2, Z0, Z4
	VMAXPS Z0, Z2, Z8
	VANDPS Z8, Z4, Z4
	VCMPPS $3, Z2, Z0, K4
	VADDPS Z2, Z0, K4, Z4
	VMAXPS Z3, Z1, Z5
	VMAXPS Z1, Z3, Z9
	VANDPS Z9, Z5, Z5
	VCMPPS $3, Z3, Z1, K5
	VADDPS Z3, Z1, K5, Z5
	VMOVAPS Z30, Z6
	VPERMI2PS Z5, Z4, Z6
	VMOVAPS Z31, Z7
	VPERMI2PS Z5, Z4, Z7
	VMAXPS Z7, Z6, Z8
	VMAXPS Z6, Z7, Z9
	VANDPS Z9, Z8, Z8
	VCMPPS $3, Z7, Z6, K4
	VADDPS Z7, Z6, K4, Z8
	VMOVUPS Z8, 0(R11)
	ADDQ $128, R10
	ADDQ $64, R11
	SUBQ $16, CX
	JMP  col
tail:
	TESTQ CX, CX
	JZ   next
	// K3: the CX outputs left; K1, K2: their 2·CX inputs in each row,
	// split over two vectors.
	MOVL $1, AX
	SHLL CX, AX
	DECL AX
	KMOVW AX, K3
	LEAQ 0(CX)(CX*1), BX
	CMPQ BX, $16
	JGE  wide
	MOVQ BX, CX
	MOVL $1, AX
	SHLL CX, AX
	DECL AX
	KMOVW AX, K1
	KXORW K2, K2, K2
	JMP  load
wide:
	MOVL $0xffff, AX
	KMOVW AX, K1
	LEAQ -16(BX), CX
	MOVL $1, AX
	SHLL CX, AX
	DECL AX
	KMOVW AX, K2
load:
	VMOVUPS.Z 0(R10), K1, Z0
	VMOVUPS.Z 64(R10), K2, Z1
	VMOVUPS.Z 0(R10)(DX*1), K1, Z2
	VMOVUPS.Z 64(R10)(DX*1), K2, Z3
	VMAXPS Z2, Z0, Z4
	VMAXPS Z0, Z2, Z8
	VANDPS Z8, Z4, Z4
	VCMPPS $3, Z2, Z0, K4
	VADDPS Z2, Z0, K4, Z4
	VMAXPS Z3, Z1, Z5
	VMAXPS Z1, Z3, Z9
	VANDPS Z9, Z5, Z5
	VCMPPS $3, Z3, Z1, K5
	VADDPS Z3, Z1, K5, Z5
	VMOVAPS Z30, Z6
	VPERMI2PS Z5, Z4, Z6
	VMOVAPS Z31, Z7
	VPERMI2PS Z5, Z4, Z7
	VMAXPS Z7, Z6, Z8
	VMAXPS Z6, Z7, Z9
	VANDPS Z9, Z8, Z8
	VCMPPS $3, Z7, Z6, K4
	VADDPS Z7, Z6, K4, Z8
	VMOVUPS Z8, K3, 0(R11)
next:
	LEAQ 0(SI)(DX*2), SI
	LEAQ 0(DI)(R9*4), DI
	DECQ R8
	JMP  row
done:
	VZEROUPPER
	RET

// func avgPool2x2AVX512(dst, src *float32, outH, outW, w int)
TEXT ·avgPool2x2AVX512(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ outH+16(FP), R8
	MOVQ outW+24(FP), R9
	MOVQ w+32(FP), DX
	SHLQ $2, DX
	VMOVUPS poolEven<>(SB), Z30
	VMOVUPS poolOdd<>(SB), Z31
	VBROADCASTSS poolQuarter<>(SB), Z29
row:
	TESTQ R8, R8
	JZ   done
	MOVQ SI, R10
	MOVQ DI, R11
	MOVQ R9, CX
col:
	CMPQ CX, $16
	JL   tail
	VMOVUPS 0(R10), Z0
	VMOVUPS 64(R10), Z1
	VMOVUPS 0(R10)(DX*1), Z2
	VMOVUPS 64(R10)(DX*1), Z3
	VADDPS Z2, Z0, Z4
	VADDPS Z3, Z1, Z5
	VMOVAPS Z30, Z6
	VPERMI2PS Z5, Z4, Z6
	VMOVAPS Z31, Z7
	VPERMI2PS Z5, Z4, Z7
	VADDPS Z7, Z6, Z8
	VMULPS Z29, Z8, Z8
	VMOVUPS Z8, 0(R11)
	ADDQ $128, R10
	ADDQ $64, R11
	SUBQ $16, CX
	JMP  col
tail:
	TESTQ CX, CX
	JZ   next
	// K3: the CX outputs left; K1, K2: their 2·CX inputs in each row,
	// split over two vectors.
	MOVL $1, AX
	SHLL CX, AX
	DECL AX
	KMOVW AX, K3
	LEAQ 0(CX)(CX*1), BX
	CMPQ BX, $16
	JGE  wide
	MOVQ BX, CX
	MOVL $1, AX
	SHLL CX, AX
	DECL AX
	KMOVW AX, K1
	KXORW K2, K2, K2
	JMP  load
wide:
	MOVL $0xffff, AX
	KMOVW AX, K1
	LEAQ -16(BX), CX
	MOVL $1, AX
	SHLL CX, AX
	DECL AX
	KMOVW AX, K2
load:
	VMOVUPS.Z 0(R10), K1, Z0
	VMOVUPS.Z 64(R10), K2, Z1
	VMOVUPS.Z 0(R10)(DX*1), K1, Z2
	VMOVUPS.Z 64(R10)(DX*1), K2, Z3
	VADDPS Z2, Z0, Z4
	VADDPS Z3, Z1, Z5
	VMOVAPS Z30, Z6
	VPERMI2PS Z5, Z4, Z6
	VMOVAPS Z31, Z7
	VPERMI2PS Z5, Z4, Z7
	VADDPS Z7, Z6, Z8
	VMULPS Z29, Z8, Z8
	VMOVUPS Z8, K3, 0(R11)
next:
	LEAQ 0(SI)(DX*2), SI
	LEAQ 0(DI)(R9*4), DI
	DECQ R8
	JMP  row
done:
	VZEROUPPER
	RET

DATA poolEven<>+0(SB)/4, $0
DATA poolEven<>+4(SB)/4, $2
DATA poolEven<>+8(SB)/4, $4
DATA poolEven<>+12(SB)/4, $6
DATA poolEven<>+16(SB)/4, $8
DATA poolEven<>+20(SB)/4, $10
DATA poolEven<>+24(SB)/4, $12
DATA poolEven<>+28(SB)/4, $14
DATA poolEven<>+32(SB)/4, $16
DATA poolEven<>+36(SB)/4, $18
DATA poolEven<>+40(SB)/4, $20
DATA poolEven<>+44(SB)/4, $22
DATA poolEven<>+48(SB)/4, $24
DATA poolEven<>+52(SB)/4, $26
DATA poolEven<>+56(SB)/4, $28
DATA poolEven<>+60(SB)/4, $30
GLOBL poolEven<>(SB), RODATA|NOPTR, $64
DATA poolOdd<>+0(SB)/4, $1
DATA poolOdd<>+4(SB)/4, $3
DATA poolOdd<>+8(SB)/4, $5
DATA poolOdd<>+12(SB)/4, $7
DATA poolOdd<>+16(SB)/4, $9
DATA poolOdd<>+20(SB)/4, $11
DATA poolOdd<>+24(SB)/4, $13
DATA poolOdd<>+28(SB)/4, $15
DATA poolOdd<>+32(SB)/4, $17
DATA poolOdd<>+36(SB)/4, $19
DATA poolOdd<>+40(SB)/4, $21
DATA poolOdd<>+44(SB)/4, $23
DATA poolOdd<>+48(SB)/4, $25
DATA poolOdd<>+52(SB)/4, $27
DATA poolOdd<>+56(SB)/4, $29
DATA poolOdd<>+60(SB)/4, $31
GLOBL poolOdd<>(SB), RODATA|NOPTR, $64
DATA poolQuarter<>+0(SB)/4, $0x3e800000
GLOBL poolQuarter<>(SB), RODATA|NOPTR, $4
