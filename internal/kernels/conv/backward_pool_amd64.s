//go:build amd64 && !noasm

#include "textflag.h"

// maxPoolReLUGrad2x2AVX512 is the float32 kernel of
// MaxPoolReLUGradPitched for 2×2 windows at stride 2 (see
// maxPoolReLUGradPitched2x2F32, its Go twin), over the row pairs of one
// plane. A step takes 8 windows: 16 elements of each row of a row pair,
// so that each window's a, b (top) and c, e (bottom) sit in two adjacent
// lanes. The maximum of each window reaches both its lanes by a
// column-wise VMAXPS and a swap of adjacent lanes; the winners (the first
// element equal to the maximum, in row-major order) are found by mask
// arithmetic on the equality masks; the gradient, each window's value
// duplicated into its two lanes and added to +0, is stored under them, and
// zeros everywhere else in the pitched rows. A row pair of up to 32
// columns of pitch takes one or two steps (two=1), under the masks of
// masks ([2][4]uint16: the lanes of x inside windows, the lanes of the
// pitched row, the windows' gradients, unused). VMAXPS does not propagate
// NaN as MaxPool2D does, so a row pair holding a NaN stops the kernel,
// which returns the row pair it stopped at (outH when none did) for the Go
// twin to finish.

// func maxPoolReLUGrad2x2AVX512(dst, x, gp *float32, masks *uint16, outH, xstep, wb, dstep, wpb, gstep, two int) int
TEXT ·maxPoolReLUGrad2x2AVX512(SB), NOSPLIT, $0-96
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ gp+16(FP), DX
	MOVQ masks+24(FP), R10
	MOVQ wb+48(FP), R8
	MOVQ wpb+64(FP), R9
	MOVQ two+80(FP), R13
	XORQ R12, R12
	VPXORD Z31, Z31, Z31
	VMOVUPS dupPairs<>(SB), Z30
row:
	CMPQ R12, outH+32(FP)
	JGE done
	KMOVW 0(R10), K1
	VMOVUPS.Z 0(SI), K1, Z0
	VMOVUPS.Z 0(SI)(R8*1), K1, Z1
	VCMPPS $3, Z0, Z0, K2
	VCMPPS $3, Z1, Z1, K3
	KORW K2, K3, K2
	KORTESTW K2, K2
	JNE nan
	VMAXPS Z1, Z0, Z2
	VPERMILPS $0xb1, Z2, Z3
	VMAXPS Z3, Z2, Z2
	VCMPPS $0, Z2, Z0, K2
	VCMPPS $0, Z2, Z1, K3
	VCMPPS $0x1e, Z31, Z2, K4
	KMOVW K2, AX
	KMOVW K3, BX
	KMOVW K4, CX
	KMOVW K1, R14
	ANDL R14, CX
	// The top row's winners: a (even lanes of r0 equal to the maximum),
	// or b (odd lanes) where a is not.
	MOVL AX, R11
	SHLL $1, R11
	NOTL R11
	ANDL AX, R11
	ANDL $0xaaaa, R11
	MOVL AX, R14
	ANDL $0x5555, R14
	ORL R14, R11
	// R14: the pairs (at their even lane) whose top row holds a maximum.
	MOVL AX, R14
	SHRL $1, R14
	ORL AX, R14
	ANDL $0x5555, R14
	// The bottom row's: c where neither a nor b is, else e.
	MOVL R14, AX
	NOTL AX
	ANDL BX, AX
	ANDL $0x5555, AX
	ORL AX, R14
	SHLL $1, R14
	NOTL R14
	ANDL $0xaaaa, R14
	ORL R14, AX
	// Only where the maximum is positive (the ReLU's gradient).
	ANDL CX, R11
	ANDL CX, AX
	KMOVW 4(R10), K5
	VMOVUPS.Z 0(DX), K5, Y6
	VPERMPS Z6, Z30, Z6
	VADDPS Z31, Z6, Z6
	KMOVW R11, K2
	KMOVW AX, K3
	KMOVW 2(R10), K4
	VMOVAPS.Z Z6, K2, Z7
	VMOVUPS Z7, K4, 0(DI)
	VMOVAPS.Z Z6, K3, Z8
	VMOVUPS Z8, K4, 0(DI)(R9*1)
	TESTQ R13, R13
	JEQ next
	KMOVW 8(R10), K1
	VMOVUPS.Z 64(SI), K1, Z0
	VMOVUPS.Z 64(SI)(R8*1), K1, Z1
	VCMPPS $3, Z0, Z0, K2
	VCMPPS $3, Z1, Z1, K3
	KORW K2, K3, K2
	KORTESTW K2, K2
	JNE nan
	VMAXPS Z1, Z0, Z2
	VPERMILPS $0xb1, Z2, Z3
	VMAXPS Z3, Z2, Z2
	VCMPPS $0, Z2, Z0, K2
	VCMPPS $0, Z2, Z1, K3
	VCMPPS $0x1e, Z31, Z2, K4
	KMOVW K2, AX
	KMOVW K3, BX
	KMOVW K4, CX
	KMOVW K1, R14
	ANDL R14, CX
	// The top row's winners: a (even lanes of r0 equal to the maximum),
	// or b (odd lanes) where a is not.
	MOVL AX, R11
	SHLL $1, R11
	NOTL R11
	ANDL AX, R11
	ANDL $0xaaaa, R11
	MOVL AX, R14
	ANDL $0x5555, R14
	ORL R14, R11
	// R14: the pairs (at their even lane) whose top row holds a maximum.
	MOVL AX, R14
	SHRL $1, R14
	ORL AX, R14
	ANDL $0x5555, R14
	// The bottom row's: c where neither a nor b is, else e.
	MOVL R14, AX
	NOTL AX
	ANDL BX, AX
	ANDL $0x5555, AX
	ORL AX, R14
	SHLL $1, R14
	NOTL R14
	ANDL $0xaaaa, R14
	ORL R14, AX
	// Only where the maximum is positive (the ReLU's gradient).
	ANDL CX, R11
	ANDL CX, AX
	KMOVW 12(R10), K5
	VMOVUPS.Z 32(DX), K5, Y6
	VPERMPS Z6, Z30, Z6
	VADDPS Z31, Z6, Z6
	KMOVW R11, K2
	KMOVW AX, K3
	KMOVW 10(R10), K4
	VMOVAPS.Z Z6, K2, Z7
	VMOVUPS Z7, K4, 64(DI)
	VMOVAPS.Z Z6, K3, Z8
	VMOVUPS Z8, K4, 64(DI)(R9*1)
next:
	ADDQ xstep+40(FP), SI
	ADDQ dstep+56(FP), DI
	ADDQ gstep+72(FP), DX
	INCQ R12
	JMP row
nan:
done:
	MOVQ R12, ret+88(FP)
	VZEROUPPER
	RET

// dupPairs indexes element i/2 into lane i: each window's gradient into
// both lanes of its pair.
DATA dupPairs<>+0(SB)/4, $0
DATA dupPairs<>+4(SB)/4, $0
DATA dupPairs<>+8(SB)/4, $1
DATA dupPairs<>+12(SB)/4, $1
DATA dupPairs<>+16(SB)/4, $2
DATA dupPairs<>+20(SB)/4, $2
DATA dupPairs<>+24(SB)/4, $3
DATA dupPairs<>+28(SB)/4, $3
DATA dupPairs<>+32(SB)/4, $4
DATA dupPairs<>+36(SB)/4, $4
DATA dupPairs<>+40(SB)/4, $5
DATA dupPairs<>+44(SB)/4, $5
DATA dupPairs<>+48(SB)/4, $6
DATA dupPairs<>+52(SB)/4, $6
DATA dupPairs<>+56(SB)/4, $7
DATA dupPairs<>+60(SB)/4, $7
GLOBL dupPairs<>(SB), RODATA|NOPTR, $64
