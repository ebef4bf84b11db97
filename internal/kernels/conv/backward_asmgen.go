//go:build ignore

// backward_asmgen.go writes backward_amd64.s, the AVX-512 kernels of
// TapRows (below) and of DotRows: one function per block of ma rows of a (1 to 4) by nb rows of b
// (1 to 5), each keeping its ma·nb 16-lane partial sums in registers for
// the whole length, so that every loaded vector of a is used nb times and
// every vector of b ma times; a masked step takes the last n mod 16
// elements, so there is no scalar remainder loop. The blocks are generated
// rather than hand-written because all twenty share one skeleton.
//
//	go run backward_asmgen.go
package main

import (
	"fmt"
	"os"
	"strings"
)

var out strings.Builder

func emit(format string, args ...any) { fmt.Fprintf(&out, format+"\n", args...) }

// Operands: row i of a, of b and of the partial sums, given the base
// registers (a: SI, with lda in R9 and SI+3·lda in R8; b: BX, with ldb in
// R14 and BX+3·ldb in R11; part: DI, with ldp in CX and DI+3·ldp in AX).
// Only SI, R8, BX and R11 move; R12 counts the 16-element steps, DX the
// items of a batch.
func aRow(i int) string { return [...]string{"(SI)", "(SI)(R9*1)", "(SI)(R9*2)", "(R8)"}[i] }
func bRow(j int) string {
	return [...]string{"(BX)", "(BX)(R14*1)", "(BX)(R14*2)", "(R11)", "(BX)(R14*4)"}[j]
}
func pRow(i, off int) string {
	return fmt.Sprintf("%d%s", off, [...]string{"(DI)", "(DI)(CX*1)", "(DI)(CX*2)", "(AX)"}[i])
}

func acc(i, j, nb int) string { return fmt.Sprintf("Z%d", i*nb+j) }
func av(i int) string         { return fmt.Sprintf("Z%d", 20+i) }
func bv(j int) string         { return fmt.Sprintf("Z%d", 25+j) }

func block(ma, nb int) {
	name := fmt.Sprintf("dotRows%dx%dAVX512", ma, nb)
	emit("// func %s(part *float32, ldp int, a *float32, lda int, b *float32, ldb, n int, tail uint64, batch, stepA, stepB int)", name)
	emit("TEXT ·%s(SB), NOSPLIT, $0-88", name)
	emit("\tMOVQ part+0(FP), DI")
	emit("\tMOVQ ldp+8(FP), CX")
	emit("\tSHLQ $2, CX")
	emit("\tLEAQ (DI)(CX*2), AX")
	emit("\tADDQ CX, AX")
	emit("\tMOVQ a+16(FP), SI")
	emit("\tMOVQ lda+24(FP), R9")
	emit("\tSHLQ $2, R9")
	emit("\tLEAQ (SI)(R9*2), R8")
	emit("\tADDQ R9, R8")
	emit("\tMOVQ b+32(FP), BX")
	emit("\tMOVQ ldb+40(FP), R14")
	emit("\tSHLQ $2, R14")
	emit("\tLEAQ (BX)(R14*2), R11")
	emit("\tADDQ R14, R11")
	for i := 0; i < ma; i++ {
		for j := 0; j < nb; j++ {
			emit("\tVMOVUPS %s, %s", pRow(i, 64*j), acc(i, j, nb))
		}
	}
	fmas := func(masked bool) {
		z, k := "", ""
		if masked {
			z, k = ".Z", ", K1"
		}
		for i := 0; i < ma; i++ {
			emit("\tVMOVUPS%s %s%s, %s", z, aRow(i), k, av(i))
		}
		for j := 0; j < nb; j++ {
			emit("\tVMOVUPS%s %s%s, %s", z, bRow(j), k, bv(j))
		}
		for i := 0; i < ma; i++ {
			for j := 0; j < nb; j++ {
				emit("\tVFMADD231PS %s, %s, %s", bv(j), av(i), acc(i, j, nb))
			}
		}
	}
	// DX counts the items of the batch; after each, a and b move on by
	// stepA and stepB bytes (their strides less what the steps advanced).
	emit("\tMOVQ tail+56(FP), R13")
	emit("\tKMOVW R13, K1")
	emit("\tMOVQ batch+64(FP), DX")
	emit("item:")
	emit("\tMOVQ n+48(FP), R12")
	emit("\tTESTQ R12, R12")
	emit("\tJEQ tail")
	emit("loop:")
	fmas(false)
	emit("\tADDQ $64, SI")
	emit("\tADDQ $64, R8")
	emit("\tADDQ $64, BX")
	emit("\tADDQ $64, R11")
	emit("\tDECQ R12")
	emit("\tJNE loop")
	emit("tail:")
	emit("\tTESTQ R13, R13")
	emit("\tJEQ next")
	fmas(true)
	emit("next:")
	emit("\tMOVQ stepA+72(FP), R12")
	emit("\tADDQ R12, SI")
	emit("\tADDQ R12, R8")
	emit("\tMOVQ stepB+80(FP), R12")
	emit("\tADDQ R12, BX")
	emit("\tADDQ R12, R11")
	emit("\tDECQ DX")
	emit("\tJNE item")
	emit("store:")
	for i := 0; i < ma; i++ {
		for j := 0; j < nb; j++ {
			emit("\tVMOVUPS %s, %s", acc(i, j, nb), pRow(i, 64*j))
		}
	}
	emit("\tVZEROUPPER")
	emit("\tRET")
	emit("")
}

// taps emits tapRows{og}AVX512: see tapRows in backward_amd64.go. Per
// 16-element step of the pitched output gradient it loads the og rows' vectors
// once, then for every tap (kj outermost, then ki, then the input channel
// c, so that consecutive read-modify-writes of the gradient fall in
// different planes) sums them weighted by the tap's og coefficients
// (embedded broadcasts) and adds the sum into the padded input gradient.
// Every step runs under a mask, all lanes but in the last.
func taps(og int) {
	name := fmt.Sprintf("tapRows%dAVX512", og)
	emit("// func %s(dx, dy *float32, ldy int, wt *float32, nsteps int, tail uint64, c, kh, kw, plane, rowStep, colStep int)", name)
	emit("TEXT ·%s(SB), NOSPLIT, $0-96", name)
	emit("\tMOVQ dx+0(FP), DI")
	emit("\tMOVQ dy+8(FP), SI")
	emit("\tMOVQ ldy+16(FP), R8")
	emit("\tSHLQ $2, R8")
	emit("\tMOVQ nsteps+32(FP), R11")
	emit("\tTESTQ R11, R11")
	emit("\tJEQ done")
	emit("step:")
	// All lanes, or the tail's in the last step (when there is one).
	emit("\tMOVQ $0xffff, AX")
	emit("\tCMPQ R11, $1")
	emit("\tJNE full")
	emit("\tMOVQ tail+40(FP), BX")
	emit("\tTESTQ BX, BX")
	emit("\tCMOVQNE BX, AX")
	emit("full:")
	emit("\tKMOVW AX, K1")
	emit("\tMOVQ SI, R9")
	for i := 0; i < og; i++ {
		emit("\tVMOVUPS.Z (R9), K1, Z%d", i)
		if i < og-1 {
			emit("\tADDQ R8, R9")
		}
	}
	emit("\tMOVQ wt+24(FP), R10")
	emit("\tMOVQ DI, R13")
	emit("\tMOVQ kw+64(FP), BX")
	emit("kj:")
	emit("\tMOVQ R13, R14")
	emit("\tMOVQ kh+56(FP), DX")
	emit("ki:")
	emit("\tMOVQ R14, AX")
	emit("\tMOVQ c+48(FP), CX")
	emit("ch:")
	// Row oc goes to partial sum oc mod 4 (Z16 to Z19), four short
	// chains instead of one of og multiply-adds, then (p0 + p1) + (p2 +
	// p3), as many as there are.
	for i := 0; i < og; i++ {
		if i < 4 {
			emit("\tVMULPS.BCST %d(R10), Z%d, Z%d", 4*i, i, 16+i)
		} else {
			emit("\tVFMADD231PS.BCST %d(R10), Z%d, Z%d", 4*i, i, 16+i%4)
		}
	}
	switch min(og, 4) {
	case 2:
		emit("\tVADDPS Z17, Z16, Z16")
	case 3:
		emit("\tVADDPS Z17, Z16, Z16")
		emit("\tVADDPS Z18, Z16, Z16")
	case 4:
		emit("\tVADDPS Z17, Z16, Z16")
		emit("\tVADDPS Z19, Z18, Z18")
		emit("\tVADDPS Z18, Z16, Z16")
	}
	emit("\tADDQ $%d, R10", 4*og)
	emit("\tVMOVUPS.Z (AX), K1, Z20")
	emit("\tVADDPS Z20, Z16, Z16")
	emit("\tVMOVUPS Z16, K1, (AX)")
	emit("\tADDQ plane+72(FP), AX")
	emit("\tDECQ CX")
	emit("\tJNE ch")
	emit("\tADDQ rowStep+80(FP), R14")
	emit("\tDECQ DX")
	emit("\tJNE ki")
	emit("\tADDQ colStep+88(FP), R13")
	emit("\tDECQ BX")
	emit("\tJNE kj")
	emit("\tADDQ $64, SI")
	emit("\tADDQ $64, DI")
	emit("\tDECQ R11")
	emit("\tJNE step")
	emit("done:")
	emit("\tVZEROUPPER")
	emit("\tRET")
	emit("")
}

func main() {
	emit("// Code generated by backward_asmgen.go; DO NOT EDIT.")
	emit("")
	emit("//go:build amd64 && !noasm")
	emit("")
	emit("#include \"textflag.h\"")
	emit("")
	for ma := 1; ma <= 4; ma++ {
		for nb := 1; nb <= 5; nb++ {
			block(ma, nb)
		}
	}
	for og := 1; og <= 16; og++ {
		taps(og)
	}
	if err := os.WriteFile("backward_amd64.s", []byte(out.String()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
