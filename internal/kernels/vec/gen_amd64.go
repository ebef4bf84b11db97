//go:build ignore

// gen_amd64.go writes vec_amd64.s, the AVX-512 kernels. The assembly is
// generated rather than hand-written because every kernel shares the same
// loop skeleton (an unrolled 16-lane main loop, a single-vector loop and one
// masked tail, so no scalar remainder code), and the constants are rounded to
// float32 here by the same Go expressions the pure-Go twins use.
//
//	go run gen_amd64.go
package main

import (
	"fmt"
	"math"
	"os"
	"strings"
)

var out strings.Builder

func emit(format string, args ...any) { fmt.Fprintf(&out, format+"\n", args...) }

type ptr struct{ arg, reg string }

// consts maps each float32 constant used through memory to its value.
var consts = map[string]float32{}
var constOrder []string

func c(name string, v float32) string {
	if _, ok := consts[name]; !ok {
		consts[name] = v
		constOrder = append(constOrder, name)
	}
	return name + "<>(SB)"
}

func cbits(name string, bits uint32) string {
	return c(name, math.Float32frombits(bits))
}

// loop emits the element loop. body(u, off, masked) returns the instructions
// for one 16-lane vector at byte offset off from every pointer, using
// register set u (0 ≤ u < unroll); when masked, K1 holds the tail mask.
func loop(ptrs []ptr, unroll int, body func(u, off int, masked bool) []string) {
	loopNamed("", ptrs, unroll, body)
}

// loopNamed is loop with its labels prefixed, for a kernel that runs more
// than one loop.
func loopNamed(pre string, ptrs []ptr, unroll int, body func(u, off int, masked bool) []string) {
	step := func(k int) {
		for _, p := range ptrs {
			emit("\tADDQ $%d, %s", 64*k, p.reg)
		}
		emit("\tSUBQ $%d, CX", 16*k)
	}
	if unroll > 1 {
		emit("%sloopU:", pre)
		emit("\tCMPQ CX, $%d", 16*unroll)
		emit("\tJL   %sloop1", pre)
		for u := 0; u < unroll; u++ {
			for _, l := range body(u, 64*u, false) {
				emit("\t%s", l)
			}
		}
		step(unroll)
		emit("\tJMP  %sloopU", pre)
	}
	emit("%sloop1:", pre)
	emit("\tCMPQ CX, $16")
	emit("\tJL   %stail", pre)
	for _, l := range body(0, 0, false) {
		emit("\t%s", l)
	}
	step(1)
	emit("\tJMP  %sloop1", pre)
	emit("%stail:", pre)
	emit("\tTESTQ CX, CX")
	emit("\tJZ   %sdone", pre)
	emit("\tMOVL $1, AX")
	emit("\tSHLL CX, AX")
	emit("\tDECL AX")
	emit("\tKMOVW AX, K1")
	for _, l := range body(0, 0, true) {
		emit("\t%s", l)
	}
	emit("%sdone:", pre)
}

func load(off int, reg, dst string, masked bool) string {
	if masked {
		return fmt.Sprintf("VMOVUPS.Z %d(%s), K1, %s", off, reg, dst)
	}
	return fmt.Sprintf("VMOVUPS %d(%s), %s", off, reg, dst)
}

func store(off int, src, reg string, masked bool) string {
	if masked {
		return fmt.Sprintf("VMOVUPS %s, K1, %d(%s)", src, off, reg)
	}
	return fmt.Sprintf("VMOVUPS %s, %d(%s)", src, off, reg)
}

func z(i int) string { return fmt.Sprintf("Z%d", i) }

func header(name, args string, frame int, ptrs []ptr, nArg string) {
	emit("")
	emit("// func %s(%s)", name, args)
	emit("TEXT ·%s(SB), NOSPLIT, $0-%d", name, frame)
	off := 0
	for _, p := range ptrs {
		emit("\tMOVQ %s+%d(FP), %s", p.arg, off, p.reg)
		off += 8
	}
	emit("\tMOVQ %s+%d(FP), CX", nArg, off)
}

func footer() {
	emit("\tVZEROUPPER")
	emit("\tRET")
}

// Exponential constants live in Z16..Z27 for every kernel that calls expSeq.
func expSetup() {
	for i, k := range []struct {
		n string
		v float32
	}{
		{"expLog2e", 1.44269504088896341}, {"expC1", 0.693359375}, {"expC2", -2.12194440e-4},
		{"expP0", 1.9875691500e-4}, {"expP1", 1.3981999507e-3}, {"expP2", 8.3334519073e-3},
		{"expP3", 4.1665795894e-2}, {"expP4", 1.6666665459e-1}, {"expP5", 5.0000001201e-1},
		{"one", 1}, {"expHi", 89}, {"expLo", -104},
	} {
		emit("\tVBROADCASTSS %s, %s", c(k.n, k.v), z(16+i))
	}
}

// expSeq replaces x by e^x; t1..t3 are clobbered. See exp32 in generic.go
// for the algorithm. The clamps put x in the second (Intel) source of
// VMINPS/VMAXPS, which is the operand returned when either is NaN, so NaN
// passes through.
func expSeq(x, t1, t2, t3 string) []string {
	return []string{
		"VMINPS " + x + ", Z26, " + x,
		"VMAXPS " + x + ", Z27, " + x,
		"VMULPS Z16, " + x + ", " + t1,
		"VRNDSCALEPS $0, " + t1 + ", " + t1,
		"VFNMADD231PS Z17, " + t1 + ", " + x,
		"VFNMADD231PS Z18, " + t1 + ", " + x,
		"VMOVAPS Z19, " + t2,
		"VFMADD213PS Z20, " + x + ", " + t2,
		"VFMADD213PS Z21, " + x + ", " + t2,
		"VFMADD213PS Z22, " + x + ", " + t2,
		"VFMADD213PS Z23, " + x + ", " + t2,
		"VFMADD213PS Z24, " + x + ", " + t2,
		"VMULPS " + x + ", " + x + ", " + t3,
		"VFMADD213PS " + x + ", " + t3 + ", " + t2,
		"VADDPS Z25, " + t2 + ", " + t2,
		"VSCALEFPS " + t1 + ", " + t2 + ", " + x,
	}
}

// poly evaluates the polynomial with coefficients cs (highest first) at t
// into dst by Horner's rule with memory-broadcast coefficients.
func poly(dst, t string, names []string, cs []float32) []string {
	l := []string{"VBROADCASTSS " + c(names[0], cs[0]) + ", " + dst}
	for i := 1; i < len(cs); i++ {
		l = append(l, "VFMADD213PS.BCST "+c(names[i], cs[i])+", "+t+", "+dst)
	}
	return l
}

// erfcSeq replaces t, holding a ≥ 0, by erfc(a), given a² as the exact
// pair s + lo: the erfc core that Erf and Gelu share (erfcCore in
// generic.go). q, t1..t3, Z10 and Z11 are clobbered; Z25 must hold 1
// (expSetup).
func erfcSeq(t, s, lo, q, t1, t2, t3 string) []string {
	l := []string{
		"VMULPS.BCST " + c("half", 0.5) + ", " + t + ", " + t,
		"VADDPS Z25, " + t + ", " + t,
		"VDIVPS " + t + ", Z25, " + t, // t = 1/(1+a/2)
	}
	l = append(l, poly(q, t,
		[]string{"geluQ9", "geluQ8", "geluQ7", "geluQ6", "geluQ5", "geluQ4", "geluQ3", "geluQ2", "geluQ1", "geluQ0"},
		[]float32{0.17087277, -0.82215223, 1.48851587, -1.13520398, 0.27886807, -0.18628806, 0.09678418, 0.37409196, 1.00002368, -1.26551223})...)
	l = append(l,
		"VSUBPS "+s+", "+q+", Z10", // d = q - s
		"VADDPS "+s+", Z10, Z11",   // d + s
		"VSUBPS Z11, "+q+", Z11",   // err = q - (d + s): the rounding error of d
		"VSUBPS "+lo+", Z11, Z11",  // err - lo
		"VMOVAPS Z10, "+q)
	l = append(l, expSeq(q, t1, t2, t3)...)
	return append(l,
		"VFMADD231PS Z11, "+q+", "+q, // e·(1+err-lo) ≈ e^(q - a²)
		"VMULPS "+q+", "+t+", "+t,    // erfc(a) = t·e
	)
}

func binary(name, op string) {
	ptrs := []ptr{{"dst", "DI"}, {"a", "SI"}, {"b", "DX"}}
	header(name, "dst, a, b *float32, n int", 32, ptrs, "n")
	loop(ptrs, 4, func(u, off int, m bool) []string {
		x, y := z(2*u), z(2*u+1)
		return []string{load(off, "SI", x, m), load(off, "DX", y, m),
			op + " " + y + ", " + x + ", " + x, store(off, x, "DI", m)}
	})
	footer()
}

func scalar(name, op string) {
	ptrs := []ptr{{"dst", "DI"}, {"a", "SI"}}
	header(name, "dst, a *float32, n int, s float32", 28, ptrs, "n")
	emit("\tVBROADCASTSS s+24(FP), Z31")
	loop(ptrs, 4, func(u, off int, m bool) []string {
		x := z(u)
		return []string{load(off, "SI", x, m), op + " Z31, " + x + ", " + x, store(off, x, "DI", m)}
	})
	footer()
}

// unary emits dst[i] = f(x[i]) where seq(x, u) computes in place on
// register x using scratch registers chosen by u and returns the result
// register.
func unary(name string, unroll, regs int, setup func(), seq func(x string, u int) ([]string, string)) {
	ptrs := []ptr{{"dst", "DI"}, {"x", "SI"}}
	header(name, "dst, x *float32, n int", 24, ptrs, "n")
	if setup != nil {
		setup()
	}
	loop(ptrs, unroll, func(u, off int, m bool) []string {
		x := z(regs * u)
		l := []string{load(off, "SI", x, m)}
		s, r := seq(x, u)
		l = append(l, s...)
		return append(l, store(off, r, "DI", m))
	})
	footer()
}

func main() {
	emit("// Code generated by gen_amd64.go; DO NOT EDIT.")
	emit("")
	emit("//go:build amd64 && !noasm")
	emit("")
	emit("#include \"textflag.h\"")

	binary("addAVX512", "VADDPS")
	binary("subAVX512", "VSUBPS")
	binary("mulAVX512", "VMULPS")
	binary("divAVX512", "VDIVPS")
	scalar("addScalarAVX512", "VADDPS")
	scalar("mulScalarAVX512", "VMULPS")

	{
		// Axpy: dst += a·x.
		ptrs := []ptr{{"dst", "DI"}, {"x", "SI"}}
		header("axpyAVX512", "dst, x *float32, n int, a float32", 28, ptrs, "n")
		emit("\tVBROADCASTSS a+24(FP), Z31")
		loop(ptrs, 4, func(u, off int, m bool) []string {
			d := z(u)
			return []string{load(off, "DI", d, m), load(off, "SI", z(4+u), m),
				"VFMADD231PS Z31, " + z(4+u) + ", " + d, store(off, d, "DI", m)}
		})
		footer()
	}

	unary("reluAVX512", 4, 1, func() { emit("\tVXORPS Z31, Z31, Z31") }, func(x string, u int) ([]string, string) {
		// Zero in the first Intel source: NaN in x is returned.
		return []string{"VMAXPS " + x + ", Z31, " + x}, x
	})

	// ReluGrad: compare x > 0 (ordered, so NaN fails), then a zero-masked
	// load of g under that mask.
	{
		ptrs := []ptr{{"dst", "DI"}, {"x", "SI"}, {"dy", "DX"}}
		header("reluGradAVX512", "dst, x, dy *float32, n int", 32, ptrs, "n")
		emit("\tVXORPS Z31, Z31, Z31")
		loop(ptrs, 4, func(u, off int, m bool) []string {
			x, k := z(2*u), fmt.Sprintf("K%d", 2+u)
			l := []string{load(off, "SI", x, m), "VCMPPS $0x1e, Z31, " + x + ", " + k}
			if m {
				l = append(l, "KANDW K1, "+k+", "+k)
			}
			return append(l, fmt.Sprintf("VMOVUPS.Z %d(DX), %s, %s", off, k, x), store(off, x, "DI", m))
		})
		footer()
	}

	unary("expAVX512", 4, 4, expSetup, func(x string, u int) ([]string, string) {
		return expSeq(x, z(4*u+1), z(4*u+2), z(4*u+3)), x
	})

	tanhSetup := func() {
		expSetup()
		emit("\tVBROADCASTSS %s, Z28", cbits("absMask", 0x7fffffff))
		emit("\tVBROADCASTSS %s, Z29", c("tanhSmall", 0.625))
		emit("\tVBROADCASTSS %s, Z30", c("two", 2))
	}
	unary("tanhAVX512", 2, 8, tanhSetup, func(x string, u int) ([]string, string) {
		r := func(i int) string { return z(8*u + i) }
		a, s, e, t1, t2, t3 := r(1), r(2), r(3), r(4), r(5), r(6)
		k := fmt.Sprintf("K%d", 2+u)
		l := []string{
			"VANDPS Z28, " + x + ", " + a,       // |x|
			"VXORPS " + a + ", " + x + ", " + s, // sign bit of x
			"VCMPPS $1, Z29, " + a + ", " + k,   // |x| < 0.625
			"VADDPS " + a + ", " + a + ", " + e,
		}
		l = append(l, expSeq(e, t1, t2, t3)...)
		l = append(l,
			"VADDPS Z25, "+e+", "+e,
			"VDIVPS "+e+", Z30, "+e, // 2/(e+1)
			"VSUBPS "+e+", Z25, "+e, // 1 - 2/(e+1)
			"VMULPS "+a+", "+a+", "+t1,
		)
		l = append(l, poly(t2, t1, []string{"tanhP0", "tanhP1", "tanhP2", "tanhP3", "tanhP4"},
			[]float32{-5.70498872745e-3, 2.06390887954e-2, -5.37397155531e-2, 1.33314422036e-1, -3.33332819422e-1})...)
		l = append(l,
			"VMULPS "+t1+", "+t2+", "+t2,
			"VFMADD213PS "+a+", "+a+", "+t2, // (p·z)·a + a
			"VMOVAPS "+t2+", "+k+", "+e,
			"VORPS "+s+", "+e+", "+x,
		)
		return l, x
	})

	sigSetup := func() {
		expSetup()
		emit("\tVBROADCASTSS %s, Z28", cbits("absMask", 0x7fffffff))
		emit("\tVBROADCASTSS %s, Z29", cbits("signMask", 0x80000000))
		emit("\tVXORPS Z31, Z31, Z31")
	}
	unary("sigmoidAVX512", 2, 8, sigSetup, func(x string, u int) ([]string, string) {
		r := func(i int) string { return z(8*u + i) }
		e, q, t1, t2, t3 := r(1), r(2), r(3), r(4), r(5)
		k := fmt.Sprintf("K%d", 2+u)
		l := []string{
			"VANDPS Z28, " + x + ", " + e,
			"VORPS Z29, " + e + ", " + e, // -|x|
		}
		l = append(l, expSeq(e, t1, t2, t3)...)
		l = append(l,
			"VADDPS Z25, "+e+", "+q,
			"VCMPPS $1, Z31, "+x+", "+k, // x < 0
			"VMOVAPS Z25, "+t1,
			"VMOVAPS "+e+", "+k+", "+t1,
			"VDIVPS "+q+", "+t1+", "+q, // (x < 0 ? e : 1)/(1+e)
		)
		return l, q
	})

	geluSetup := func() {
		expSetup()
		emit("\tVBROADCASTSS %s, Z28", cbits("absMask", 0x7fffffff))
		emit("\tVBROADCASTSS %s, Z29", c("geluHi", 10))
		emit("\tVBROADCASTSS %s, Z30", c("geluLo", -20))
		emit("\tVXORPS Z31, Z31, Z31")
	}
	unary("geluAVX512", 1, 16, geluSetup, func(x string, u int) ([]string, string) {
		r := func(i int) string { return z(i) }
		xc, h, s, lo, t, q, t1, t2, t3 := r(1), r(2), r(3), r(4), r(5), r(6), r(7), r(8), r(9)
		l := []string{
			"VMINPS " + x + ", Z29, " + xc,
			"VMAXPS " + xc + ", Z30, " + xc,
			"VMULPS.BCST " + c("half", 0.5) + ", " + xc + ", " + h,
			"VMULPS " + xc + ", " + h + ", " + s,
			"VMOVAPS " + s + ", " + lo,
			"VFMSUB231PS " + xc + ", " + h + ", " + lo, // lo = h·xc - s exactly
			"VANDPS Z28, " + xc + ", " + t,
			"VMULPS.BCST " + c("sqrtHalf", 0.70710678118654752) + ", " + t + ", " + t,
		}
		l = append(l, erfcSeq(t, s, lo, q, t1, t2, t3)...)
		l = append(l,
			"VMULPS "+h+", "+t+", "+q,      // g = h·erfc
			"VCMPPS $0x1e, Z31, "+x+", K2", // x > 0
			"VSUBPS "+q+", "+x+", K2, "+q,  // x - g
			"VANDPS Z28, "+x+", "+t1,
			"VCMPPS.BCST $1, "+c("geluSmall", 0.5)+", "+t1+", K3", // |x| < 0.5
			"VMULPS "+x+", "+x+", "+t1,
		)
		l = append(l, poly(t2, t1, []string{"geluS0", "geluS1", "geluS2", "geluS3", "geluS4", "geluS5"},
			[]float32{-9.444656259503615e-06, 0.00011543468761615529, -0.0011873282154804543, 0.009973557010035819, -0.06649038006690544, 0.3989422804014327})...)
		l = append(l,
			"VFMADD213PS "+h+", "+t1+", "+t2, // x²·S(x²) + x/2
			"VMOVAPS "+t2+", K3, "+q,
		)
		return l, q
	})

	// Erf: x + x·E(x²) for |x| < 0.75, else ±(1 − erfc(|x|)) on the erfc
	// core Gelu uses (see erf32 and erfcCore in generic.go), with |x|
	// clamped to 4, past which erf rounds to ±1.
	erfSetup := func() {
		expSetup()
		emit("\tVBROADCASTSS %s, Z28", cbits("absMask", 0x7fffffff))
		emit("\tVBROADCASTSS %s, Z29", c("erfHi", 4))
		emit("\tVBROADCASTSS %s, Z30", cbits("signMask", 0x80000000))
	}
	unary("erfAVX512", 1, 16, erfSetup, func(x string, u int) ([]string, string) {
		a, s, lo, t, q, t1, t2, t3, r := z(1), z(2), z(3), z(4), z(5), z(6), z(7), z(8), z(9)
		l := []string{
			"VANDPS Z28, " + x + ", " + a,
			"VMINPS " + a + ", Z29, " + a, // NaN passes (second Intel source)
			"VMULPS " + a + ", " + a + ", " + s,
			"VMOVAPS " + s + ", " + lo,
			"VFMSUB231PS " + a + ", " + a + ", " + lo, // lo = a·a - s exactly
			"VMOVAPS " + a + ", " + t,
		}
		l = append(l, erfcSeq(t, s, lo, q, t1, t2, t3)...)
		l = append(l,
			"VSUBPS "+t+", Z25, "+r, // 1 - erfc(a)
			"VANDPS Z30, "+x+", Z12",
			"VORPS Z12, "+r+", "+r,                               // the sign of x
			"VCMPPS.BCST $1, "+c("erfSmall", 0.75)+", "+a+", K3", // |x| < 0.75
			"VMULPS "+x+", "+x+", Z13",
		)
		l = append(l, poly("Z14", "Z13", []string{"erfE9", "erfE8", "erfE7", "erfE6", "erfE5", "erfE4", "erfE3", "erfE2", "erfE1", "erfE0"},
			[]float32{-1.6365844691234924e-07, 1.6462114365889246e-06, -1.492565035840625e-05, 0.00012055332981789664, -0.0008548327023450852, 0.005223977625442188, -0.026866170645131252, 0.11283791670955126, -0.37612638903183754, 0.12837916709551256})...)
		l = append(l,
			"VFMADD213PS "+x+", "+x+", Z14", // x·E(x²) + x
			"VMOVAPS Z14, K3, "+r,
		)
		return l, r
	})

	// Reductions write 16 lane partials to acc; Go adds them pairwise.
	{
		ptrs := []ptr{{"x", "SI"}}
		header("sumAVX512", "x *float32, n int, acc *[16]float32", 24, ptrs, "n")
		for u := 0; u < 4; u++ {
			emit("\tVXORPS %s, %s, %s", z(u), z(u), z(u))
		}
		loop(ptrs, 4, func(u, off int, m bool) []string {
			if m {
				return []string{load(off, "SI", "Z4", true), "VADDPS Z4, Z0, Z0"}
			}
			return []string{fmt.Sprintf("VADDPS %d(SI), %s, %s", off, z(u), z(u))}
		})
		emit("\tVADDPS Z1, Z0, Z0")
		emit("\tVADDPS Z3, Z2, Z2")
		emit("\tVADDPS Z2, Z0, Z0")
		emit("\tMOVQ acc+16(FP), DI")
		emit("\tVMOVUPS Z0, (DI)")
		footer()
	}
	{
		ptrs := []ptr{{"a", "SI"}, {"b", "DX"}}
		header("dotAVX512", "a, b *float32, n int, acc *[16]float32", 32, ptrs, "n")
		for u := 0; u < 4; u++ {
			emit("\tVXORPS %s, %s, %s", z(u), z(u), z(u))
		}
		loop(ptrs, 4, func(u, off int, m bool) []string {
			if m {
				// The tail loads b under the mask too: the lanes past n
				// would multiply whatever follows b (NaN, Inf, or an
				// unmapped page) by zero.
				return []string{load(off, "SI", z(4+u), true), load(off, "DX", z(8+u), true), fmt.Sprintf("VFMADD231PS %s, %s, %s", z(8+u), z(4+u), z(u))}
			}
			return []string{load(off, "SI", z(4+u), false), fmt.Sprintf("VFMADD231PS %d(DX), %s, %s", off, z(4+u), z(u))}
		})
		emit("\tVADDPS Z1, Z0, Z0")
		emit("\tVADDPS Z3, Z2, Z2")
		emit("\tVADDPS Z2, Z0, Z0")
		emit("\tMOVQ acc+24(FP), DI")
		emit("\tVMOVUPS Z0, (DI)")
		footer()
	}
	{
		// NaN tracking: VMAXPS drops NaN in one operand or the other, so
		// unordered lanes are collected in K3 instead.
		ptrs := []ptr{{"x", "SI"}}
		header("maxAVX512", "x *float32, n int, acc *[16]float32) (nan bool", 25, ptrs, "n")
		emit("\tVBROADCASTSS %s, Z8", cbits("negInf", 0xff800000))
		for u := 0; u < 4; u++ {
			emit("\tVMOVAPS Z8, %s", z(u))
		}
		emit("\tKXORW K3, K3, K3")
		loop(ptrs, 4, func(u, off int, m bool) []string {
			x := z(4 + u)
			var l []string
			if m {
				l = []string{"VMOVAPS Z8, " + x, fmt.Sprintf("VMOVUPS %d(SI), K1, %s", off, x)}
			} else {
				l = []string{load(off, "SI", x, false)}
			}
			return append(l, "VMAXPS "+x+", "+z(u)+", "+z(u),
				"VCMPPS $3, "+x+", "+x+", K2", "KORW K2, K3, K3")
		})
		emit("\tVMAXPS Z1, Z0, Z0")
		emit("\tVMAXPS Z3, Z2, Z2")
		emit("\tVMAXPS Z2, Z0, Z0")
		emit("\tMOVQ acc+16(FP), DI")
		emit("\tVMOVUPS Z0, (DI)")
		emit("\tKMOVW K3, AX")
		emit("\tTESTL AX, AX")
		emit("\tSETNE nan+24(FP)")
		footer()
	}
	{
		ptrs := []ptr{{"dst", "DI"}, {"x", "SI"}}
		header("expShiftSumAVX512", "dst, x *float32, n int, shift float32, acc *[16]float32", 40, ptrs, "n")
		expSetup()
		emit("\tVBROADCASTSS shift+24(FP), Z30")
		emit("\tVXORPS Z14, Z14, Z14")
		emit("\tVXORPS Z15, Z15, Z15")
		loop(ptrs, 2, func(u, off int, m bool) []string {
			x, acc := z(4*u), z(14+u)
			l := []string{load(off, "SI", x, m), "VADDPS Z30, " + x + ", " + x}
			l = append(l, expSeq(x, z(4*u+1), z(4*u+2), z(4*u+3))...)
			l = append(l, store(off, x, "DI", m))
			if m {
				return append(l, "VADDPS "+x+", "+acc+", K1, "+acc)
			}
			return append(l, "VADDPS "+x+", "+acc+", "+acc)
		})
		emit("\tVADDPS Z15, Z14, Z14")
		emit("\tMOVQ acc+32(FP), DI")
		emit("\tVMOVUPS Z14, (DI)")
		footer()
	}

	layerNormKernels()
	linCombKernels()
	expSubMaxKernel()
	transposeKernel()
	softmaxBackRowsKernel()

	emit("")
	for _, n := range constOrder {
		emit("DATA %s<>+0(SB)/4, $0x%08x", n, math.Float32bits(consts[n]))
		emit("GLOBL %s<>(SB), RODATA|NOPTR, $4", n)
	}
	if err := os.WriteFile("vec_amd64.s", []byte(out.String()), 0o644); err != nil {
		panic(err)
	}
}

// reduce4 adds the accumulators Z0..Z3 and then Z0's lanes into X0.
func reduce4() {
	emit("\tVADDPS Z1, Z0, Z0")
	emit("\tVADDPS Z3, Z2, Z2")
	emit("\tVADDPS Z2, Z0, Z0")
	hsum(0, 1)
}

// hsum adds the 16 lanes of Z(r) into lane 0 of X(r), in the order of
// lanes in dispatch_amd64.go (halves, then quarters, ...), using Z(t) as
// scratch: no store to memory and reload, which stalls on store
// forwarding.
func hsum(r, t int) {
	emit("\tVEXTRACTF64X4 $1, Z%d, Y%d", r, t)
	emit("\tVADDPS Y%d, Y%d, Y%d", t, r, r)
	emit("\tVEXTRACTF128 $1, Y%d, X%d", r, t)
	emit("\tVADDPS X%d, X%d, X%d", t, r, r)
	emit("\tVPSHUFD $0x4e, X%d, X%d", r, t)
	emit("\tVADDPS X%d, X%d, X%d", t, r, r)
	emit("\tVPSHUFD $0xb1, X%d, X%d", r, t)
	emit("\tVADDPS X%d, X%d, X%d", t, r, r)
}

// layerNormKernels emits the row kernels of layer normalisation: a row's
// mean and 1/√(var + eps) (two passes in one call), the normalised,
// scaled and shifted row, and the two passes of its gradient. The scalar
// steps use VEX-encoded instructions only: a legacy SSE instruction with
// the upper halves of the vector registers dirty costs a state
// transition, which made a row ten times slower. Z28 holds the mean, Z29
// 1/√(var + eps), Z30 and Z31 the gradient's row constants. A masked
// tail loads zeros, so its lanes add nothing to the sums (the deviation
// is masked to zero too) and its stores are masked.
func layerNormKernels() {
	{
		// The row's mean, then Σ (x − mean)² in a second pass, then
		// 1/√(var + eps): one call per row. n is kept in R11 and x in
		// R12 for the second pass.
		ptrs := []ptr{{"x", "SI"}}
		header("lnStatsAVX512", "x *float32, n int, eps float32) (mean, rstd float32", 32, ptrs, "n")
		emit("\tMOVQ CX, R11")
		emit("\tMOVQ SI, R12")
		for u := 0; u < 4; u++ {
			emit("\tVXORPS %s, %s, %s", z(u), z(u), z(u))
		}
		loopNamed("s", ptrs, 4, func(u, off int, m bool) []string {
			if m {
				return []string{load(off, "SI", "Z4", true), "VADDPS Z4, Z0, Z0"}
			}
			return []string{fmt.Sprintf("VADDPS %d(SI), %s, %s", off, z(u), z(u))}
		})
		reduce4()
		emit("\tVCVTSI2SSQ R11, X10, X10")
		emit("\tVDIVSS X10, X0, X0")
		emit("\tVMOVSS X0, mean+24(FP)")
		emit("\tVBROADCASTSS X0, Z28")
		emit("\tMOVQ R11, CX")
		emit("\tMOVQ R12, SI")
		for u := 0; u < 4; u++ {
			emit("\tVXORPS %s, %s, %s", z(u), z(u), z(u))
		}
		loopNamed("v", ptrs, 4, func(u, off int, m bool) []string {
			x := z(4 + u)
			if m {
				return []string{load(off, "SI", x, true), "VSUBPS.Z Z28, " + x + ", K1, " + x, "VFMADD231PS " + x + ", " + x + ", Z0"}
			}
			return []string{load(off, "SI", x, false), "VSUBPS Z28, " + x + ", " + x, "VFMADD231PS " + x + ", " + x + ", " + z(u)}
		})
		reduce4()
		emit("\tVDIVSS X10, X0, X0")
		emit("\tVADDSS eps+16(FP), X0, X0")
		emit("\tVSQRTSS X0, X0, X0")
		emit("\tVMOVSS %s, X1", c("one", 1))
		emit("\tVDIVSS X0, X1, X1")
		emit("\tVMOVSS X1, rstd+28(FP)")
		footer()
	}
	{
		// y = (x − mean)·rstd·g + b.
		ptrs := []ptr{{"y", "DI"}, {"x", "SI"}, {"gamma", "DX"}, {"beta", "R8"}}
		header("lnRowAVX512", "y, x, gamma, beta *float32, n int, mean, rstd float32", 48, ptrs, "n")
		emit("\tVBROADCASTSS mean+40(FP), Z28")
		emit("\tVBROADCASTSS rstd+44(FP), Z29")
		loop(ptrs, 4, func(u, off int, m bool) []string {
			x, g, b := z(3*u), z(3*u+1), z(3*u+2)
			return []string{load(off, "SI", x, m), "VSUBPS Z28, " + x + ", " + x, "VMULPS Z29, " + x + ", " + x,
				load(off, "DX", g, m), load(off, "R8", b, m), "VFMADD213PS " + b + ", " + g + ", " + x, store(off, x, "DI", m)}
		})
		footer()
	}
	{
		// With x̂ = (x − mean)·rstd and g = dy∘gamma: pg += dy∘x̂,
		// pb += dy, and the lanes of Σ g and Σ g∘x̂ into acc[0:16] and
		// acc[16:32].
		ptrs := []ptr{{"x", "SI"}, {"dy", "DX"}, {"gamma", "R8"}, {"pg", "R9"}, {"pb", "R10"}}
		header("lnGradSumsAVX512", "x, dy, gamma, pg, pb *float32, n int, mean, rstd float32) (sg, sgx float32", 64, ptrs, "n")
		emit("\tVBROADCASTSS mean+48(FP), Z28")
		emit("\tVBROADCASTSS rstd+52(FP), Z29")
		for i := 16; i < 20; i++ {
			emit("\tVXORPS %s, %s, %s", z(i), z(i), z(i))
		}
		loop(ptrs, 2, func(u, off int, m bool) []string {
			x, dy, g, p, q := z(8*u), z(8*u+1), z(8*u+2), z(8*u+3), z(8*u+4)
			sa, sc := z(16+u), z(18+u)
			return []string{
				load(off, "SI", x, m), "VSUBPS Z28, " + x + ", " + x, "VMULPS Z29, " + x + ", " + x,
				load(off, "DX", dy, m), load(off, "R8", g, m), "VMULPS " + g + ", " + dy + ", " + g,
				"VADDPS " + g + ", " + sa + ", " + sa, "VFMADD231PS " + x + ", " + g + ", " + sc,
				load(off, "R9", p, m), "VFMADD231PS " + x + ", " + dy + ", " + p, store(off, p, "R9", m),
				load(off, "R10", q, m), "VADDPS " + dy + ", " + q + ", " + q, store(off, q, "R10", m),
			}
		})
		emit("\tVADDPS Z17, Z16, Z0")
		hsum(0, 1)
		emit("\tVMOVSS X0, sg+56(FP)")
		emit("\tVADDPS Z19, Z18, Z0")
		hsum(0, 1)
		emit("\tVMOVSS X0, sgx+60(FP)")
		footer()
	}
	{
		// dx = rstd·(dy∘gamma − a − c·x̂).
		ptrs := []ptr{{"dx", "DI"}, {"x", "SI"}, {"dy", "DX"}, {"gamma", "R8"}}
		header("lnGradRowAVX512", "dx, x, dy, gamma *float32, n int, mean, rstd, a, c float32", 56, ptrs, "n")
		emit("\tVBROADCASTSS mean+40(FP), Z28")
		emit("\tVBROADCASTSS rstd+44(FP), Z29")
		emit("\tVBROADCASTSS a+48(FP), Z30")
		emit("\tVBROADCASTSS c+52(FP), Z31")
		loop(ptrs, 4, func(u, off int, m bool) []string {
			x, dy, g := z(3*u), z(3*u+1), z(3*u+2)
			return []string{
				load(off, "SI", x, m), "VSUBPS Z28, " + x + ", " + x, "VMULPS Z29, " + x + ", " + x,
				load(off, "DX", dy, m), load(off, "R8", g, m), "VMULPS " + g + ", " + dy + ", " + dy,
				"VSUBPS Z30, " + dy + ", " + dy, "VFNMADD231PS Z31, " + x + ", " + dy, "VMULPS Z29, " + dy + ", " + dy,
				store(off, dy, "DI", m),
			}
		})
		footer()
	}
}

// linCombKernels emits LinComb's kernels, one per number nv (1 to 4) of
// 16-lane registers a row of c takes; the last register's lanes are
// masked by K1 (tail). Rows of c are done eight at a time (one register
// a row) or four at a time (16 accumulators at most), then one at a time: each row's arithmetic is the same chain
// of FMAs either way. Register use: DI c, SI a, R8 ldc, R9 rows left, R10
// ar, R11 at, BX ldb (strides in bytes), R13 b; in the loop over t, AX,
// CX, DX and R14 point at the four rows' current weights, R15 at b's row
// and R12 counts down n. Z16.. hold b's row, Z20.. broadcast weights, Z31
// alpha.
func linCombKernels() {
	for nv := 1; nv <= 4; nv++ {
		name := fmt.Sprintf("linComb%dAVX512", nv)
		emit("")
		emit("// func %s(c *float32, ldc, m int, a *float32, ar, at, n int, b *float32, ldb int, alpha float32, tail uint32)", name)
		emit("TEXT ·%s(SB), NOSPLIT, $0-80", name)
		for _, a := range []struct{ arg, reg string }{{"c+0", "DI"}, {"ldc+8", "R8"}, {"m+16", "R9"}, {"a+24", "SI"},
			{"ar+32", "R10"}, {"at+40", "R11"}, {"b+56", "R13"}, {"ldb+64", "BX"}} {
			emit("\tMOVQ %s(FP), %s", a.arg, a.reg)
		}
		for _, r := range []string{"R8", "R10", "R11", "BX"} {
			emit("\tSHLQ $2, %s", r)
		}
		emit("\tVBROADCASTSS alpha+72(FP), Z31")
		emit("\tMOVL tail+76(FP), AX")
		emit("\tKMOVW AX, K1")
		// body emits the loop over t for rows rows whose weight pointers
		// are ptrs, then scales the accumulators by alpha.
		body := func(pre string, ptrs []string) {
			rows := len(ptrs)
			for i := 0; i < rows*nv; i++ {
				emit("\tVXORPS %s, %s, %s", z(i), z(i), z(i))
			}
			emit("\tMOVQ n+48(FP), R12")
			emit("\tMOVQ R13, R15")
			emit("%st:", pre)
			emit("\tTESTQ R12, R12")
			emit("\tJZ   %sst", pre)
			for v := 0; v < nv; v++ {
				emit("\t%s", load(64*v, "R15", z(16+v), v == nv-1))
			}
			for rr, p := range ptrs {
				if nv == 1 {
					emit("\tVFMADD231PS.BCST (%s), Z16, %s", p, z(rr))
					continue
				}
				emit("\tVBROADCASTSS (%s), %s", p, z(20+rr))
				for v := 0; v < nv; v++ {
					emit("\tVFMADD231PS %s, %s, %s", z(20+rr), z(16+v), z(rr*nv+v))
				}
			}
			for _, p := range ptrs {
				emit("\tADDQ R11, %s", p)
			}
			emit("\tADDQ BX, R15")
			emit("\tDECQ R12")
			emit("\tJMP  %st", pre)
			emit("%sst:", pre)
			for i := 0; i < rows*nv; i++ {
				emit("\tVMULPS Z31, %s, %s", z(i), z(i))
			}
		}
		if nv == 1 {
			// Eight rows at a time: eight independent FMA chains hide
			// the FMA's latency, where four leave it half idle. Rows
			// k·ar from R14 (advancing over t), AX = R14 + 3·ar and DX
			// = R14 + 6·ar.
			emit("block8:")
			emit("\tCMPQ R9, $8")
			emit("\tJL   block")
			emit("\tMOVQ SI, R14")
			emit("\tLEAQ (SI)(R10*2), AX")
			emit("\tADDQ R10, AX")
			emit("\tLEAQ (AX)(R10*2), DX")
			emit("\tADDQ R10, DX")
			for i := 0; i < 8; i++ {
				emit("\tVXORPS %s, %s, %s", z(i), z(i), z(i))
			}
			emit("\tMOVQ n+48(FP), R12")
			emit("\tMOVQ R13, R15")
			addrs := func(b0, b3, b6, s string) []string {
				return []string{"(" + b0 + ")", "(" + b0 + ")(" + s + "*1)", "(" + b0 + ")(" + s + "*2)", "(" + b3 + ")",
					"(" + b3 + ")(" + s + "*1)", "(" + b3 + ")(" + s + "*2)", "(" + b6 + ")", "(" + b3 + ")(" + s + "*4)"}
			}
			emit("et:")
			emit("\tTESTQ R12, R12")
			emit("\tJZ   est")
			emit("\t%s", load(0, "R15", "Z16", true))
			for k, a := range addrs("R14", "AX", "DX", "R10") {
				emit("\tVFMADD231PS.BCST %s, Z16, %s", a, z(k))
			}
			emit("\tADDQ R11, R14")
			emit("\tADDQ R11, AX")
			emit("\tADDQ R11, DX")
			emit("\tADDQ BX, R15")
			emit("\tDECQ R12")
			emit("\tJMP  et")
			emit("est:")
			for i := 0; i < 8; i++ {
				emit("\tVMULPS Z31, %s, %s", z(i), z(i))
			}
			emit("\tLEAQ (DI)(R8*2), AX")
			emit("\tADDQ R8, AX")
			emit("\tLEAQ (AX)(R8*2), DX")
			emit("\tADDQ R8, DX")
			for k, a := range addrs("DI", "AX", "DX", "R8") {
				emit("\tVMOVUPS %s, K1, %s", z(k), a)
			}
			emit("\tLEAQ (SI)(R10*8), SI")
			emit("\tLEAQ (DI)(R8*8), DI")
			emit("\tSUBQ $8, R9")
			emit("\tJMP  block8")
		}
		emit("block:")
		emit("\tCMPQ R9, $4")
		emit("\tJL   single")
		emit("\tMOVQ SI, AX")
		emit("\tLEAQ (SI)(R10*1), CX")
		emit("\tLEAQ (SI)(R10*2), DX")
		emit("\tLEAQ (CX)(R10*2), R14")
		body("b", []string{"AX", "CX", "DX", "R14"})
		emit("\tLEAQ (DI)(R8*1), AX")
		emit("\tLEAQ (DI)(R8*2), CX")
		emit("\tLEAQ (AX)(R8*2), DX")
		for rr, p := range []string{"DI", "AX", "CX", "DX"} {
			for v := 0; v < nv; v++ {
				emit("\t%s", store(64*v, z(rr*nv+v), p, v == nv-1))
			}
		}
		emit("\tLEAQ (SI)(R10*4), SI")
		emit("\tLEAQ (DI)(R8*4), DI")
		emit("\tSUBQ $4, R9")
		emit("\tJMP  block")
		emit("single:")
		emit("\tTESTQ R9, R9")
		emit("\tJZ   done")
		emit("\tMOVQ SI, AX")
		body("s", []string{"AX"})
		for v := 0; v < nv; v++ {
			emit("\t%s", store(64*v, z(v), "DI", v == nv-1))
		}
		emit("\tADDQ R10, SI")
		emit("\tADDQ R8, DI")
		emit("\tDECQ R9")
		emit("\tJMP  single")
		emit("done:")
		footer()
	}
}

// expSubMaxKernel emits expSubMaxRowsAVX512(x *float32, n, rows, ld
// int, m, sum *float32): for each of rows rows of n elements (ld apart),
// a pass for the row's maximum (NaN lanes collected in K3 as in
// maxAVX512), reduced in registers, then — unless the maximum is -Inf — a
// pass replacing the row by e^(x − m) and summing it, as
// expShiftSumAVX512 does. The exponential's constants are loaded once for
// all rows. R11 holds n, R12 the row, R13 the rows left, R14 ld in bytes,
// DI and DX the next m and sum.
func expSubMaxKernel() {
	emit("")
	emit("// func expSubMaxRowsAVX512(x *float32, n, rows, ld int, m, sum *float32)")
	emit("TEXT ·expSubMaxRowsAVX512(SB), NOSPLIT, $0-48")
	emit("\tMOVQ x+0(FP), R12")
	emit("\tMOVQ n+8(FP), R11")
	emit("\tMOVQ rows+16(FP), R13")
	emit("\tMOVQ ld+24(FP), R14")
	emit("\tSHLQ $2, R14")
	emit("\tMOVQ m+32(FP), DI")
	emit("\tMOVQ sum+40(FP), DX")
	emit("\tVBROADCASTSS %s, Z8", cbits("negInf", 0xff800000))
	expSetup()
	emit("row:")
	emit("\tTESTQ R13, R13")
	emit("\tJZ   rowsdone")
	emit("\tMOVQ R11, CX")
	emit("\tMOVQ R12, SI")
	for u := 0; u < 4; u++ {
		emit("\tVMOVAPS Z8, %s", z(u))
	}
	emit("\tKXORW K3, K3, K3")
	ptrs := []ptr{{"x", "SI"}}
	loopNamed("m", ptrs, 4, func(u, off int, m bool) []string {
		x := z(4 + u)
		var l []string
		if m {
			l = []string{"VMOVAPS Z8, " + x, fmt.Sprintf("VMOVUPS %d(SI), K1, %s", off, x)}
		} else {
			l = []string{load(off, "SI", x, false)}
		}
		return append(l, "VMAXPS "+x+", "+z(u)+", "+z(u),
			"VCMPPS $3, "+x+", "+x+", K2", "KORW K2, K3, K3")
	})
	emit("\tVMAXPS Z1, Z0, Z0")
	emit("\tVMAXPS Z3, Z2, Z2")
	emit("\tVMAXPS Z2, Z0, Z0")
	emit("\tVEXTRACTF64X4 $1, Z0, Y1")
	emit("\tVMAXPS Y1, Y0, Y0")
	emit("\tVEXTRACTF128 $1, Y0, X1")
	emit("\tVMAXPS X1, X0, X0")
	emit("\tVPSHUFD $0x4e, X0, X1")
	emit("\tVMAXPS X1, X0, X0")
	emit("\tVPSHUFD $0xb1, X0, X1")
	emit("\tVMAXPS X1, X0, X0")
	emit("\tKMOVW K3, AX")
	emit("\tTESTL AX, AX")
	emit("\tJNZ  isnan")
	emit("\tVUCOMISS X8, X0")
	emit("\tJNE  pass2")
	// Every element is -Inf (or there is none): the row is left alone.
	emit("\tVMOVSS X0, (DI)")
	emit("\tMOVL $0, (DX)")
	emit("\tJMP  next")
	emit("isnan:")
	emit("\tVMOVSS %s, X0", cbits("qNaN", 0x7fc00000))
	emit("pass2:")
	emit("\tVMOVSS X0, (DI)")
	emit("\tVBROADCASTSS X0, Z30")
	emit("\tMOVQ R11, CX")
	emit("\tMOVQ R12, SI")
	emit("\tVXORPS Z14, Z14, Z14")
	emit("\tVXORPS Z15, Z15, Z15")
	loopNamed("e", ptrs, 2, func(u, off int, m bool) []string {
		x, acc := z(4*u), z(14+u)
		l := []string{load(off, "SI", x, m), "VSUBPS Z30, " + x + ", " + x}
		l = append(l, expSeq(x, z(4*u+1), z(4*u+2), z(4*u+3))...)
		l = append(l, store(off, x, "SI", m))
		if m {
			return append(l, "VADDPS "+x+", "+acc+", K1, "+acc)
		}
		return append(l, "VADDPS "+x+", "+acc+", "+acc)
	})
	emit("\tVADDPS Z15, Z14, Z14")
	hsum(14, 13)
	emit("\tVMOVSS X14, (DX)")
	emit("next:")
	emit("\tADDQ $4, DI")
	emit("\tADDQ $4, DX")
	emit("\tADDQ R14, R12")
	emit("\tDECQ R13")
	emit("\tJMP  row")
	emit("rowsdone:")
	footer()
}

// transposeKernel emits transpose16AVX512(dst *float32, ldd int, src
// *float32, lds, rows, cols int): the block of rows ≤ 16 rows and cols ≤
// 16 columns at src (rows lds elements apart) transposed into cols rows at
// dst (ldd apart). It loads the rows with the columns masked, runs the
// standard shuffle network (unpack pairs, 4×4 shuffles within 128-bit
// lanes, two rounds of 128-bit lane shuffles) and stores the first cols
// registers with the rows masked; the registers of rows not loaded hold
// junk that only masked-off lanes receive.
func transposeKernel() {
	emit("")
	emit("// func transpose16AVX512(dst *float32, ldd int, src *float32, lds, rows, cols int)")
	emit("TEXT ·transpose16AVX512(SB), NOSPLIT, $0-48")
	emit("\tMOVQ dst+0(FP), DI")
	emit("\tMOVQ ldd+8(FP), R9")
	emit("\tMOVQ src+16(FP), SI")
	emit("\tMOVQ lds+24(FP), R8")
	emit("\tSHLQ $2, R8")
	emit("\tSHLQ $2, R9")
	for _, m := range []struct{ arg, k string }{{"cols+40", "K1"}, {"rows+32", "K2"}} {
		emit("\tMOVQ %s(FP), CX", m.arg)
		emit("\tMOVL $1, AX")
		emit("\tSHLL CX, AX")
		emit("\tDECL AX")
		emit("\tKMOVW AX, %s", m.k)
	}
	emit("\tMOVQ rows+32(FP), CX")
	for i := 0; i < 16; i++ {
		emit("\tVMOVUPS.Z (SI), K1, %s", z(i))
		if i < 15 {
			emit("\tDECQ CX")
			emit("\tJZ   loaded")
			emit("\tADDQ R8, SI")
		}
	}
	emit("loaded:")
	for i := 0; i < 8; i++ {
		emit("\tVUNPCKLPS %s, %s, %s", z(2*i+1), z(2*i), z(16+2*i))
		emit("\tVUNPCKHPS %s, %s, %s", z(2*i+1), z(2*i), z(17+2*i))
	}
	for q := 0; q < 4; q++ {
		t := 16 + 4*q
		emit("\tVSHUFPS $0x44, %s, %s, %s", z(t+2), z(t), z(4*q))
		emit("\tVSHUFPS $0xEE, %s, %s, %s", z(t+2), z(t), z(4*q+1))
		emit("\tVSHUFPS $0x44, %s, %s, %s", z(t+3), z(t+1), z(4*q+2))
		emit("\tVSHUFPS $0xEE, %s, %s, %s", z(t+3), z(t+1), z(4*q+3))
	}
	for h := 0; h < 2; h++ {
		for i := 0; i < 4; i++ {
			emit("\tVSHUFF32X4 $0x88, %s, %s, %s", z(8*h+4+i), z(8*h+i), z(16+8*h+i))
			emit("\tVSHUFF32X4 $0xDD, %s, %s, %s", z(8*h+4+i), z(8*h+i), z(16+8*h+4+i))
		}
	}
	for i := 0; i < 8; i++ {
		emit("\tVSHUFF32X4 $0x88, %s, %s, %s", z(24+i), z(16+i), z(i))
		emit("\tVSHUFF32X4 $0xDD, %s, %s, %s", z(24+i), z(16+i), z(8+i))
	}
	emit("\tMOVQ cols+40(FP), CX")
	for i := 0; i < 16; i++ {
		emit("\tVMOVUPS %s, K2, (DI)", z(i))
		if i < 15 {
			emit("\tDECQ CX")
			emit("\tJZ   done")
			emit("\tADDQ R9, DI")
		}
	}
	emit("done:")
	footer()
}

// softmaxBackRowsKernel emits softmaxBackRowsAVX512(p, dp *float32, n,
// rows, ld int, lse, d *float32): for each of rows rows (ld apart), p =
// e^(p − lse[i]) and dp = p∘(dp − d[i]), in one pass. R12 and R13 hold
// the rows of p and dp, R11 n, R10 the rows left, R14 ld in bytes, R8 and
// R9 the next lse and d; Z28 and Z29 the row's lse and d.
func softmaxBackRowsKernel() {
	emit("")
	emit("// func softmaxBackRowsAVX512(p, dp *float32, n, rows, ld int, lse, d *float32)")
	emit("TEXT ·softmaxBackRowsAVX512(SB), NOSPLIT, $0-56")
	emit("\tMOVQ p+0(FP), R12")
	emit("\tMOVQ dp+8(FP), R13")
	emit("\tMOVQ n+16(FP), R11")
	emit("\tMOVQ rows+24(FP), R10")
	emit("\tMOVQ ld+32(FP), R14")
	emit("\tSHLQ $2, R14")
	emit("\tMOVQ lse+40(FP), R8")
	emit("\tMOVQ d+48(FP), R9")
	expSetup()
	emit("brow:")
	emit("\tTESTQ R10, R10")
	emit("\tJZ   browsdone")
	emit("\tMOVQ R11, CX")
	emit("\tMOVQ R12, SI")
	emit("\tMOVQ R13, DI")
	emit("\tVBROADCASTSS (R8), Z28")
	emit("\tVBROADCASTSS (R9), Z29")
	ptrs := []ptr{{"p", "SI"}, {"dp", "DI"}}
	loopNamed("g", ptrs, 2, func(u, off int, m bool) []string {
		x, y := z(4*u), z(8+u)
		l := []string{load(off, "SI", x, m), "VSUBPS Z28, " + x + ", " + x}
		l = append(l, expSeq(x, z(4*u+1), z(4*u+2), z(4*u+3))...)
		return append(l, store(off, x, "SI", m), load(off, "DI", y, m), "VSUBPS Z29, "+y+", "+y,
			"VMULPS "+x+", "+y+", "+y, store(off, y, "DI", m))
	})
	emit("\tADDQ $4, R8")
	emit("\tADDQ $4, R9")
	emit("\tADDQ R14, R12")
	emit("\tADDQ R14, R13")
	emit("\tDECQ R10")
	emit("\tJMP  brow")
	emit("browsdone:")
	footer()
}
