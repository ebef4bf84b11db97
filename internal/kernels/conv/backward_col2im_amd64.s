//go:build amd64 && !noasm

#include "textflag.h"

// col2ImPitchedAVX512 is the float32 kernel of Col2ImPitchedF32 (its Go
// twin is col2ImPitchedGo): for each tap (ci, ki, kj) in order, the row of
// src at that tap's index (row stride ld bytes) is added into the run of
// dst at ci·plane + ki·rowStep + kj·colStep bytes, 16 elements a step and
// the last n mod 16 under the mask tail. Each sum is col + dst, the
// operands of vec.Add swapped, which float addition does not tell apart.

// func col2ImPitchedAVX512(dst, src *float32, ld, n16 int, tail uint64, c, kh, kw, plane, rowStep, colStep int)
TEXT ·col2ImPitchedAVX512(SB), NOSPLIT, $0-88
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ tail+32(FP), AX
	KMOVW AX, K1
	MOVQ c+40(FP), CX
	TESTQ CX, CX
	JEQ done
channel:
	MOVQ DI, R8
	MOVQ kh+48(FP), DX
	TESTQ DX, DX
	JEQ nextc
row:
	MOVQ R8, R9
	MOVQ kw+56(FP), BX
	TESTQ BX, BX
	JEQ nextr
tap:
	MOVQ R9, R11
	MOVQ SI, R12
	MOVQ n16+24(FP), R10
	TESTQ R10, R10
	JEQ tail
step:
	VMOVUPS (R12), Z0
	VADDPS (R11), Z0, Z0
	VMOVUPS Z0, (R11)
	ADDQ $64, R11
	ADDQ $64, R12
	DECQ R10
	JNE step
tail:
	KORTESTW K1, K1
	JEQ nexttap
	VMOVUPS.Z (R12), K1, Z0
	VMOVUPS.Z (R11), K1, Z1
	VADDPS Z1, Z0, Z0
	VMOVUPS Z0, K1, (R11)
nexttap:
	ADDQ ld+16(FP), SI
	ADDQ colStep+80(FP), R9
	DECQ BX
	JNE tap
nextr:
	ADDQ rowStep+72(FP), R8
	DECQ DX
	JNE row
nextc:
	ADDQ plane+64(FP), DI
	DECQ CX
	JNE channel
done:
	VZEROUPPER
	RET
