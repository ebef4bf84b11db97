package main

// The bfloat16 kernels: an AMX tile kernel (TDPBF16PS) and an AVX-512
// micro-kernel (VDPBF16PS), written to kernels_bf16_amd64.s.
//
// The Go assembler has no mnemonics for AMX or for the AVX512_BF16
// instructions, so they are emitted as BYTE directives from the small
// encoders below (vex3, evexRR), which are tested against encodings from
// the Intel SDM as printed by an assembler (see bf16_test.go).
//
// Packed layouts (see bf16.go in package gemm): B in 32-column panels with
// k in interleaved pairs, 128 bytes per pair row; A row-major with a row
// stride of lda bytes for AMX, and for VDPBF16PS in 14-row panels of
// 14 dwords (a pair of k for each row) per pair step.

import (
	"bytes"
	"fmt"
	"log"
	"os"
	"strings"
)

// x86 register numbers, as the instruction encodings use them.
const (
	rAX = iota
	rCX
	rDX
	rBX
	rSP
	rBP
	rSI
	rDI
	r8
	r9
	r10
	r11
	r12
	r13
	r14
	r15
)

// mem is a memory operand base + index·1 + disp (index < 0: none).
type mem struct {
	base, index int
	disp        int32
}

// modrmMem encodes ModRM (with the given reg field), SIB and displacement
// for m; the REX-style extension bits X and B are returned separately.
func modrmMem(reg int, m mem) (b []byte, x, bb int) {
	mod := 0
	switch {
	case m.disp == 0 && m.base&7 != rBP:
		mod = 0
	case m.disp >= -128 && m.disp <= 127:
		mod = 1
	default:
		mod = 2
	}
	bb = m.base >> 3
	if m.index >= 0 || m.base&7 == rSP {
		idx := rSP // no index
		if m.index >= 0 {
			if m.index == rSP {
				log.Fatal("asmgen: SP cannot be an index")
			}
			idx = m.index
			x = m.index >> 3
		}
		b = append(b, byte(mod<<6|(reg&7)<<3|4), byte((idx&7)<<3|m.base&7))
	} else {
		b = append(b, byte(mod<<6|(reg&7)<<3|m.base&7))
	}
	switch mod {
	case 1:
		b = append(b, byte(int8(m.disp)))
	case 2:
		d := uint32(m.disp)
		b = append(b, byte(d), byte(d>>8), byte(d>>16), byte(d>>24))
	}
	return b, x, bb
}

// VEX pp field: the implied legacy prefix.
const (
	ppNone = 0
	pp66   = 1
	ppF3   = 2
	ppF2   = 3
)

// vex3 encodes a VEX.128.W0 instruction of map 0F38 (all AMX ones are):
// opcode op, prefix pp, ModRM reg field reg, VEX.vvvv vvvv, and either a
// register operand rm (m == nil) or the memory operand m.
func vex3(pp, op, reg, vvvv, rm int, m *mem) []byte {
	var tail []byte
	var x, b int
	if m != nil {
		tail, x, b = modrmMem(reg, *m)
	} else {
		tail = []byte{byte(0xc0 | (reg&7)<<3 | rm&7)}
		b = rm >> 3
	}
	r := reg >> 3
	b1 := byte((^r&1)<<7 | (^x&1)<<6 | (^b&1)<<5 | 0x02) // map 0F38
	b2 := byte((^vvvv&0xf)<<3 | pp)                      // W0, L0
	return append([]byte{0xc4, b1, b2, byte(op)}, tail...)
}

// evexRR encodes a 512-bit EVEX.W0 register-register instruction of map
// 0F38: dst in ModRM.reg, src1 in EVEX.vvvv, src2 in ModRM.rm, no masking.
func evexRR(pp, op, dst, src1, src2 int) []byte {
	p0 := byte((^dst>>3&1)<<7 | (^src2>>4&1)<<6 | (^src2>>3&1)<<5 | (^dst>>4&1)<<4 | 0x02)
	p1 := byte((^src1&0xf)<<3 | 0x04 | pp)
	p2 := byte(2<<5 | (^src1>>4&1)<<3) // L'L = 512 bits, V'
	return []byte{0x62, p0, p1, p2, byte(op), byte(0xc0 | (dst&7)<<3 | src2&7)}
}

// The instructions the kernels need.

func ldtilecfg(m mem) []byte         { return vex3(ppNone, 0x49, 0, 0, 0, &m) }
func tilerelease() []byte            { return vex3(ppNone, 0x49, 0, 0, 0, nil) }
func tilezero(t int) []byte          { return vex3(ppF2, 0x49, t, 0, 0, nil) }
func tileloadd(t int, m mem) []byte  { return vex3(ppF2, 0x4b, t, 0, 0, &m) }
func tilestored(m mem, t int) []byte { return vex3(ppF3, 0x4b, t, 0, 0, &m) }

// tdpbf16ps: tile dst += src1 · src2 (bf16 pairs, float32 sums).
func tdpbf16ps(dst, src1, src2 int) []byte { return vex3(ppF3, 0x5c, dst, src2, src1, nil) }

// vdpbf16ps: zmm dst += pairwise dot products of src1 and src2 (bf16).
func vdpbf16ps(dst, src1, src2 int) []byte { return evexRR(ppF3, 0x52, dst, src1, src2) }

// emitBytes writes an encoded instruction as BYTE directives, with its
// Intel-syntax text as a comment.
func emitBytes(w *bytes.Buffer, text string, enc []byte) {
	parts := make([]string, len(enc))
	for i, b := range enc {
		parts[i] = fmt.Sprintf("BYTE $0x%02x", b)
	}
	fmt.Fprintf(w, "\t%s // %s\n", strings.Join(parts, "; "), text)
}

func regName(r int) string {
	return [...]string{"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15"}[r]
}

func memText(m mem) string {
	s := "[" + regName(m.base)
	if m.index >= 0 {
		s += "+" + regName(m.index)
	}
	if m.disp != 0 {
		s += fmt.Sprintf("+%d", m.disp)
	}
	return s + "]"
}

// bf16Phases is how many independent sums over k (phases: pair steps q
// with q mod phases = p) the VDPBF16PS kernel keeps per C element: short
// tiles have too few accumulators to hide the instruction's latency, so
// they split k, using the registers taller tiles need for rows. The pure
// Go twin (stripPairsGo in package gemm) has the same table.
func bf16Phases(rows int) int {
	switch {
	case rows <= 3:
		return 4
	case rows <= 7:
		return 2
	}
	return 1
}

// bf16MR is the AVX-512 micro-tile height: 14 rows × 2 zmm accumulators,
// 2 B vectors and a broadcast register.
const bf16MR = 14

// bf16Asm writes kernels_bf16_amd64.s.
func bf16Asm() {
	var w bytes.Buffer
	l := func(format string, args ...any) { fmt.Fprintf(&w, format+"\n", args...) }
	l("// Code generated by asmgen; DO NOT EDIT.")
	l("")
	l("//go:build !noasm")
	l("")
	l("#include \"textflag.h\"")
	l("")
	amxBlock(&w, l, false)
	amxBlock(&w, l, true)
	for rows := 1; rows <= bf16MR; rows++ {
		dpbf16Kernel(&w, l, rows)
	}
	interleave(l)
	transposeDW(l)
	dpbf16Peak(&w, l)
	if err := os.WriteFile("kernels_bf16_amd64.s", w.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
}

// amxBlock emits
//
//	func amxBlockBF16(panels, blocks, k32 int, a *uint16, lda int, b *uint16, ps int, c *float32, ldc int, cfg *byte, acc int)
//
// which multiplies blocks·32 rows of A (row-major, lda bytes apart, k32·32
// bf16 per row) by panels B panels (ps bytes apart, k32·16 pair rows of
// 128 bytes each) into C (ldc bytes between rows; panel p at column 32p),
// each 32×32 C block in four accumulator tiles: C = A·B, or C += A·B when
// acc != 0. cfg is the 64-byte tile configuration (eight 16×64-byte
// tiles). The whole tile sequence (configure, compute, release) is within
// this one assembly function: Go does not preempt assembly asynchronously,
// and the kernel saves tile state across signals and context switches, so
// no goroutine switch can come between tile instructions.
//
// With half set it emits amxBlock16BF16, the same for blocks of 16 rows
// (two accumulator tiles, one A tile): short products and the last rows of
// taller ones then compute no rows of padding.
func amxBlock(w *bytes.Buffer, l func(string, ...any), half bool) {
	e := func(text string, enc []byte) { emitBytes(w, text, enc) }
	name, lb := "amxBlockBF16", "amx"
	if half {
		name, lb = "amxBlock16BF16", "amxh"
	}
	ct := 4 // accumulator tiles
	if half {
		ct = 2
	}
	l("// func %s(panels, blocks, k32 int, a *uint16, lda int, b *uint16, ps int, c *float32, ldc int, cfg *byte, acc int)", name)
	l("TEXT ·%s(SB), NOSPLIT, $0-88", name)
	l("\tMOVQ cfg+72(FP), AX")
	e("ldtilecfg [rax]", ldtilecfg(mem{rAX, -1, 0}))
	l("\tMOVQ lda+32(FP), R8")
	l("\tMOVQ $128, R9")
	l("\tMOVQ ldc+64(FP), R10")
	l("\tMOVQ b+40(FP), DI")
	l("\tMOVQ c+56(FP), DX")
	l("\tMOVQ panels+0(FP), BX")
	l("%spanel:", lb)
	l("\tMOVQ a+24(FP), SI")
	l("\tMOVQ DX, R14")
	l("\tMOVQ blocks+8(FP), R11")
	l("%sblock:", lb)
	l("\tLEAQ (R14)(R10*8), R13")
	l("\tLEAQ (R13)(R10*8), R13 // C rows 16-31")
	l("\tCMPQ acc+80(FP), $0")
	l("\tJEQ %szero", lb)
	e("tileloadd tmm0, [r14+r10]", tileloadd(0, mem{r14, r10, 0}))
	e("tileloadd tmm1, [r14+r10+64]", tileloadd(1, mem{r14, r10, 64}))
	if !half {
		e("tileloadd tmm2, [r13+r10]", tileloadd(2, mem{r13, r10, 0}))
		e("tileloadd tmm3, [r13+r10+64]", tileloadd(3, mem{r13, r10, 64}))
	}
	l("\tJMP %sk", lb)
	l("%szero:", lb)
	for t := 0; t < ct; t++ {
		e(fmt.Sprintf("tilezero tmm%d", t), tilezero(t))
	}
	l("%sk:", lb)
	l("\tMOVQ SI, AX")
	l("\tLEAQ (SI)(R8*8), CX")
	l("\tLEAQ (CX)(R8*8), CX // A rows 16-31")
	l("\tMOVQ DI, R12")
	l("\tMOVQ k32+16(FP), R13")
	l("%skloop:", lb)
	e("tileloadd tmm4, [rax+r8]", tileloadd(4, mem{rAX, r8, 0}))
	if !half {
		e("tileloadd tmm5, [rcx+r8]", tileloadd(5, mem{rCX, r8, 0}))
	}
	e("tileloadd tmm6, [r12+r9]", tileloadd(6, mem{r12, r9, 0}))
	e("tileloadd tmm7, [r12+r9+64]", tileloadd(7, mem{r12, r9, 64}))
	e("tdpbf16ps tmm0, tmm4, tmm6", tdpbf16ps(0, 4, 6))
	e("tdpbf16ps tmm1, tmm4, tmm7", tdpbf16ps(1, 4, 7))
	if !half {
		e("tdpbf16ps tmm2, tmm5, tmm6", tdpbf16ps(2, 5, 6))
		e("tdpbf16ps tmm3, tmm5, tmm7", tdpbf16ps(3, 5, 7))
	}
	l("\tADDQ $64, AX")
	l("\tADDQ $64, CX")
	l("\tADDQ $2048, R12")
	l("\tDECQ R13")
	l("\tJNZ %skloop", lb)
	l("\tLEAQ (R14)(R10*8), R13")
	l("\tLEAQ (R13)(R10*8), R13")
	e("tilestored [r14+r10], tmm0", tilestored(mem{r14, r10, 0}, 0))
	e("tilestored [r14+r10+64], tmm1", tilestored(mem{r14, r10, 64}, 1))
	if !half {
		e("tilestored [r13+r10], tmm2", tilestored(mem{r13, r10, 0}, 2))
		e("tilestored [r13+r10+64], tmm3", tilestored(mem{r13, r10, 64}, 3))
	}
	steps := 4 // 32 rows: 4 steps of 8 rows
	if half {
		steps = 2
	}
	for i := 0; i < steps; i++ {
		l("\tLEAQ (SI)(R8*8), SI")
		l("\tLEAQ (R14)(R10*8), R14")
	}
	l("\tDECQ R11")
	l("\tJNZ %sblock", lb)
	l("\tADDQ ps+48(FP), DI")
	l("\tADDQ $128, DX")
	l("\tDECQ BX")
	l("\tJNZ %spanel", lb)
	e("tilerelease", tilerelease())
	l("\tRET")
	l("")
}

// dpbf16Kernel emits the VDPBF16PS micro-kernel for the first rows rows of
// a 14-row A panel:
//
//	func dpbf16R(kq int, a *uint16, b *uint16, c *float32, ldc int, acc int, mask uint32)
//
// a is the packed A panel (kq steps of 14 dwords: the pair (A[i][2q],
// A[i][2q+1]) of each row i), b a packed B panel (kq pair rows of 128
// bytes; kq a multiple of 4), c the tile's top-left element (rows ldc
// bytes apart). It stores
// C = A·B (acc == 0) or C += A·B for the columns set in mask (bit j for
// column j < 32); masked-off C elements are neither read nor written.
func dpbf16Kernel(w *bytes.Buffer, l func(string, ...any), rows int) {
	e := func(text string, enc []byte) { emitBytes(w, text, enc) }
	name := fmt.Sprintf("dpbf16R%d", rows)
	l("// func %s(kq int, a *uint16, b *uint16, c *float32, ldc int, acc int, mask uint32)", name)
	l("TEXT ·%s(SB), NOSPLIT, $0-52", name)
	l("\tMOVQ kq+0(FP), CX")
	l("\tMOVQ a+8(FP), SI")
	l("\tMOVQ b+16(FP), DI")
	ph := bf16Phases(rows)
	acc := func(p, i, h int) int { return p*2*rows + 2*i + h }
	for i := 0; i < 2*rows*ph; i++ {
		l("\tVPXORD Z%d, Z%d, Z%d", i, i, i)
	}
	if ph > 1 {
		l("\tSHRQ $%d, CX", map[int]int{2: 1, 4: 2}[ph])
	}
	l("%sloop:", name)
	for p := 0; p < ph; p++ {
		l("\tVMOVDQU32 %d(DI), Z28", 128*p)
		l("\tVMOVDQU32 %d(DI), Z29", 128*p+64)
		for i := 0; i < rows; i++ {
			l("\tVPBROADCASTD %d(SI), Z30", 4*bf16MR*p+4*i)
			for h := 0; h < 2; h++ {
				d := acc(p, i, h)
				e(fmt.Sprintf("vdpbf16ps zmm%d, zmm%d, zmm30", d, 28+h), vdpbf16ps(d, 28+h, 30))
			}
		}
	}
	l("\tADDQ $%d, SI", 4*bf16MR*ph)
	l("\tADDQ $%d, DI", 128*ph)
	l("\tDECQ CX")
	l("\tJNZ %sloop", name)
	// Combine the phases' sums: s0+s1, or (s0+s1)+(s2+s3).
	for i := 0; i < rows; i++ {
		for h := 0; h < 2; h++ {
			switch ph {
			case 2:
				l("\tVADDPS Z%d, Z%d, Z%d", acc(1, i, h), acc(0, i, h), acc(0, i, h))
			case 4:
				l("\tVADDPS Z%d, Z%d, Z%d", acc(1, i, h), acc(0, i, h), acc(0, i, h))
				l("\tVADDPS Z%d, Z%d, Z%d", acc(3, i, h), acc(2, i, h), acc(2, i, h))
				l("\tVADDPS Z%d, Z%d, Z%d", acc(2, i, h), acc(0, i, h), acc(0, i, h))
			}
		}
	}
	l("\tMOVQ c+24(FP), DX")
	l("\tMOVQ ldc+32(FP), R8")
	l("\tMOVL mask+48(FP), AX")
	l("\tKMOVW AX, K1")
	l("\tSHRL $16, AX")
	l("\tKMOVW AX, K2")
	l("\tCMPQ acc+40(FP), $0")
	l("\tJEQ %sstore", name)
	for i := 0; i < rows; i++ {
		if i > 0 {
			l("\tADDQ R8, DX")
		}
		l("\tVMOVUPS.Z (DX), K1, Z30")
		l("\tVADDPS Z30, Z%d, Z%d", 2*i, 2*i)
		l("\tVMOVUPS.Z 64(DX), K2, Z31")
		l("\tVADDPS Z31, Z%d, Z%d", 2*i+1, 2*i+1)
	}
	l("\tMOVQ c+24(FP), DX")
	l("%sstore:", name)
	for i := 0; i < rows; i++ {
		if i > 0 {
			l("\tADDQ R8, DX")
		}
		l("\tVMOVUPS Z%d, K1, (DX)", 2*i)
		l("\tVMOVUPS Z%d, K2, 64(DX)", 2*i+1)
	}
	l("\tVZEROUPPER")
	l("\tRET")
	l("")
}

// interleave emits
//
//	func interleaveBF16(src *uint16, ld int, dst *uint16, kq int, idx *uint16)
//
// which packs kq pair rows of a B panel from 2·kq rows of 32 bf16 (ld
// bytes apart): pair row q (128 bytes at dst + 128q) holds rows 2q and
// 2q+1 interleaved element by element. idx holds the two VPERMI2W index
// vectors (64 words) that do the interleave.
func interleave(l func(string, ...any)) {
	l("// func interleaveBF16(src *uint16, ld int, dst *uint16, kq int, idx *uint16)")
	l("TEXT ·interleaveBF16(SB), NOSPLIT, $0-40")
	l("\tMOVQ src+0(FP), SI")
	l("\tMOVQ ld+8(FP), R8")
	l("\tMOVQ dst+16(FP), DI")
	l("\tMOVQ kq+24(FP), CX")
	l("\tMOVQ idx+32(FP), AX")
	l("\tVMOVDQU16 (AX), Z30")
	l("\tVMOVDQU16 64(AX), Z31")
	l("\tTESTQ CX, CX")
	l("\tJZ ildone")
	l("illoop:")
	l("\tVMOVDQU16 (SI), Z0")
	l("\tVMOVDQU16 (SI)(R8*1), Z1")
	l("\tVMOVDQA64 Z30, Z2")
	l("\tVPERMI2W Z1, Z0, Z2")
	l("\tVMOVDQA64 Z31, Z3")
	l("\tVPERMI2W Z1, Z0, Z3")
	l("\tVMOVDQU16 Z2, (DI)")
	l("\tVMOVDQU16 Z3, 64(DI)")
	l("\tLEAQ (SI)(R8*2), SI")
	l("\tADDQ $128, DI")
	l("\tDECQ CX")
	l("\tJNZ illoop")
	l("ildone:")
	l("\tVZEROUPPER")
	l("\tRET")
	l("")
}

// transposeDW emits
//
//	func transposeDW16(src *uint16, lds int, dst *uint16, ldd int, groups int)
//
// which transposes groups 16×16 blocks of dwords (pairs of bf16): src rows
// lds bytes apart, block g at dwords 16g…16g+15, into dst rows 16g…16g+15,
// ldd bytes apart. It packs a transposed B, whose k pairs are adjacent
// dwords of a stored row, into pair rows. The shuffle network is the one
// of the float32 packing transpose: unpack pairs, then 2×2 and 4×4 blocks
// with lane shuffles.
func transposeDW(l func(string, ...any)) {
	l("// func transposeDW16(src *uint16, lds int, dst *uint16, ldd int, groups int)")
	l("TEXT ·transposeDW16(SB), NOSPLIT, $0-40")
	l("\tMOVQ src+0(FP), SI")
	l("\tMOVQ lds+8(FP), R8")
	l("\tMOVQ dst+16(FP), DX")
	l("\tMOVQ ldd+24(FP), R12")
	l("\tMOVQ groups+32(FP), CX")
	l("\tTESTQ CX, CX")
	l("\tJZ tdwdone")
	l("\tLEAQ (R8)(R8*2), R9")
	l("\tLEAQ (R8)(R8*4), R10")
	l("\tLEAQ (R9)(R8*4), R11")
	l("\tLEAQ (SI)(R8*8), DI")
	l("\tLEAQ (R12)(R12*2), R13")
	l("\tLEAQ (R12)(R12*4), R14")
	l("\tLEAQ (DX)(R12*8), BX")
	l("\tMOVQ R12, AX")
	l("\tSHLQ $4, AX")
	// Rows 0-7 from base0, 8-15 from base8; row offsets 0, 1, 2, 3, 4, 5,
	// 6, 7 strides via the index registers (7 = 3 + 4: its own register
	// for the source, a second address step for the destination).
	src := func(i int) string {
		base := "SI"
		if i >= 8 {
			base, i = "DI", i-8
		}
		return "(" + base + ")" + []string{"", "(R8*1)", "(R8*2)", "(R9*1)", "(R8*4)", "(R10*1)", "(R9*2)", "(R11*1)"}[i]
	}
	dst := func(i int) string {
		base := "DX"
		if i >= 8 {
			base, i = "BX", i-8
		}
		return "(" + base + ")" + []string{"", "(R12*1)", "(R12*2)", "(R13*1)", "(R12*4)", "(R14*1)", "(R13*2)", ""}[i]
	}
	z := func(i int) string { return fmt.Sprintf("Z%d", i) }
	l("tdwloop:")
	for i := 0; i < 16; i++ {
		l("\tVMOVDQU32 %s, %s", src(i), z(i))
	}
	for i := 0; i < 8; i++ {
		l("\tVPUNPCKLDQ %s, %s, %s", z(2*i+1), z(2*i), z(16+2*i))
		l("\tVPUNPCKHDQ %s, %s, %s", z(2*i+1), z(2*i), z(17+2*i))
	}
	for q := 0; q < 4; q++ {
		t := 16 + 4*q
		l("\tVSHUFPS $0x44, %s, %s, %s", z(t+2), z(t), z(4*q))
		l("\tVSHUFPS $0xEE, %s, %s, %s", z(t+2), z(t), z(4*q+1))
		l("\tVSHUFPS $0x44, %s, %s, %s", z(t+3), z(t+1), z(4*q+2))
		l("\tVSHUFPS $0xEE, %s, %s, %s", z(t+3), z(t+1), z(4*q+3))
	}
	for h := 0; h < 2; h++ {
		for i := 0; i < 4; i++ {
			l("\tVSHUFI32X4 $0x88, %s, %s, %s", z(8*h+4+i), z(8*h+i), z(16+8*h+i))
			l("\tVSHUFI32X4 $0xDD, %s, %s, %s", z(8*h+4+i), z(8*h+i), z(16+8*h+4+i))
		}
	}
	for i := 0; i < 8; i++ {
		l("\tVSHUFI32X4 $0x88, %s, %s, %s", z(24+i), z(16+i), z(i))
		l("\tVSHUFI32X4 $0xDD, %s, %s, %s", z(24+i), z(16+i), z(8+i))
	}
	for i := 0; i < 16; i++ {
		if i%8 == 7 {
			base := "DX"
			if i >= 8 {
				base = "BX"
			}
			l("\tLEAQ (%s)(R13*2), R15", base)
			l("\tVMOVDQU32 %s, (R15)(R12*1)", z(i))
			continue
		}
		l("\tVMOVDQU32 %s, %s", z(i), dst(i))
	}
	l("\tADDQ $64, SI")
	l("\tADDQ $64, DI")
	l("\tADDQ AX, DX")
	l("\tADDQ AX, BX")
	l("\tDECQ CX")
	l("\tJNZ tdwloop")
	l("tdwdone:")
	l("\tVZEROUPPER")
	l("\tRET")
	l("")
}

// dpbf16Peak emits
//
//	func dpbf16Peak(n int)
//
// n iterations of 24 independent VDPBF16PS (768 multiply-adds each): the
// instruction's throughput, the ceiling of the VDPBF16PS kernel, to set
// beside the float32 FMA peak.
func dpbf16Peak(w *bytes.Buffer, l func(string, ...any)) {
	l("// func dpbf16Peak(n int)")
	l("TEXT ·dpbf16Peak(SB), NOSPLIT, $0-8")
	l("\tMOVQ n+0(FP), CX")
	l("\tTESTQ CX, CX")
	l("\tJZ dppdone")
	for i := 0; i < 24; i++ {
		l("\tVPXORD Z%d, Z%d, Z%d", i, i, i)
	}
	l("dpploop:")
	for i := 0; i < 24; i++ {
		emitBytes(w, fmt.Sprintf("vdpbf16ps zmm%d, zmm28, zmm29", i), vdpbf16ps(i, 28, 29))
	}
	l("\tDECQ CX")
	l("\tJNZ dpploop")
	l("dppdone:")
	l("\tVZEROUPPER")
	l("\tRET")
	l("")
}
