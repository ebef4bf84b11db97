//go:build amd64 && !noasm

//go:generate go run gen_amd64.go

package vec

import "golang.org/x/sys/cpu"

// useAsm selects the AVX-512 kernels. They need F (the 512-bit ops, masks,
// VSCALEFPS), DQ (VANDPS/VORPS/VXORPS on ZMM) and VL/BW only by convention
// of every AVX-512 CPU that has the other two; without them every kernel
// runs its pure-Go twin. AVX2-only CPUs run the Go twins too: see doc.go.
var useAsm = cpu.X86.HasAVX512F && cpu.X86.HasAVX512DQ && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VL

//go:noescape
func addAVX512(dst, a, b *float32, n int)

//go:noescape
func subAVX512(dst, a, b *float32, n int)

//go:noescape
func mulAVX512(dst, a, b *float32, n int)

//go:noescape
func divAVX512(dst, a, b *float32, n int)

//go:noescape
func addScalarAVX512(dst, a *float32, n int, s float32)

//go:noescape
func mulScalarAVX512(dst, a *float32, n int, s float32)

//go:noescape
func axpyAVX512(dst, x *float32, n int, a float32)

//go:noescape
func reluAVX512(dst, x *float32, n int)

//go:noescape
func reluGradAVX512(dst, x, dy *float32, n int)

//go:noescape
func expAVX512(dst, x *float32, n int)

//go:noescape
func tanhAVX512(dst, x *float32, n int)

//go:noescape
func sigmoidAVX512(dst, x *float32, n int)

//go:noescape
func geluAVX512(dst, x *float32, n int)

//go:noescape
func erfAVX512(dst, x *float32, n int)

//go:noescape
func sumAVX512(x *float32, n int, acc *[16]float32)

//go:noescape
func dotAVX512(a, b *float32, n int, acc *[16]float32)

//go:noescape
func maxAVX512(x *float32, n int, acc *[16]float32) (nan bool)

//go:noescape
func expShiftSumAVX512(dst, x *float32, n int, shift float32, acc *[16]float32)

// The wrappers below have been length-checked by the exported functions;
// they only guard against taking &s[0] of an empty slice.

func add(dst, a, b []float32) {
	if useAsm && len(dst) > 0 {
		addAVX512(&dst[0], &a[0], &b[0], len(dst))
		return
	}
	addGo(dst, a, b)
}

func sub(dst, a, b []float32) {
	if useAsm && len(dst) > 0 {
		subAVX512(&dst[0], &a[0], &b[0], len(dst))
		return
	}
	subGo(dst, a, b)
}

func mul(dst, a, b []float32) {
	if useAsm && len(dst) > 0 {
		mulAVX512(&dst[0], &a[0], &b[0], len(dst))
		return
	}
	mulGo(dst, a, b)
}

func div(dst, a, b []float32) {
	if useAsm && len(dst) > 0 {
		divAVX512(&dst[0], &a[0], &b[0], len(dst))
		return
	}
	divGo(dst, a, b)
}

func addScalar(dst, a []float32, s float32) {
	if useAsm && len(dst) > 0 {
		addScalarAVX512(&dst[0], &a[0], len(dst), s)
		return
	}
	addScalarGo(dst, a, s)
}

func mulScalar(dst, a []float32, s float32) {
	if useAsm && len(dst) > 0 {
		mulScalarAVX512(&dst[0], &a[0], len(dst), s)
		return
	}
	mulScalarGo(dst, a, s)
}

func axpy(dst, x []float32, a float32) {
	if useAsm && len(dst) > 0 {
		axpyAVX512(&dst[0], &x[0], len(dst), a)
		return
	}
	axpyGo(dst, x, a)
}

func relu(dst, x []float32) {
	if useAsm && len(dst) > 0 {
		reluAVX512(&dst[0], &x[0], len(dst))
		return
	}
	reluGo(dst, x)
}

func reluGrad(dst, x, g []float32) {
	if useAsm && len(dst) > 0 {
		reluGradAVX512(&dst[0], &x[0], &g[0], len(dst))
		return
	}
	reluGradGo(dst, x, g)
}

func exp(dst, x []float32) {
	if useAsm && len(dst) > 0 {
		expAVX512(&dst[0], &x[0], len(dst))
		return
	}
	expGo(dst, x)
}

func tanh(dst, x []float32) {
	if useAsm && len(dst) > 0 {
		tanhAVX512(&dst[0], &x[0], len(dst))
		return
	}
	tanhGo(dst, x)
}

func sigmoid(dst, x []float32) {
	if useAsm && len(dst) > 0 {
		sigmoidAVX512(&dst[0], &x[0], len(dst))
		return
	}
	sigmoidGo(dst, x)
}

func gelu(dst, x []float32) {
	if useAsm && len(dst) > 0 {
		geluAVX512(&dst[0], &x[0], len(dst))
		return
	}
	geluGo(dst, x)
}

func erf(dst, x []float32) {
	if useAsm && len(dst) > 0 {
		erfAVX512(&dst[0], &x[0], len(dst))
		return
	}
	erfGo(dst, x)
}

// lanes adds 16 lane partials pairwise.
func lanes(acc *[16]float32) float32 {
	for w := 8; w > 0; w /= 2 {
		for i := 0; i < w; i++ {
			acc[i] += acc[i+w]
		}
	}
	return acc[0]
}

func sumLeaf(x []float32) float32 {
	if useAsm && len(x) > 0 {
		var acc [16]float32
		sumAVX512(&x[0], len(x), &acc)
		return lanes(&acc)
	}
	return sumLeafGo(x)
}

func dotLeaf(a, b []float32) float32 {
	if useAsm && len(a) > 0 {
		var acc [16]float32
		dotAVX512(&a[0], &b[0], len(a), &acc)
		return lanes(&acc)
	}
	return dotLeafGo(a, b)
}

func max32(x []float32) float32 {
	if useAsm && len(x) > 0 {
		var acc [16]float32
		if maxAVX512(&x[0], len(x), &acc) {
			return float32(nan())
		}
		m := acc[0]
		for _, v := range acc[1:] {
			m = max(m, v)
		}
		return m
	}
	return maxGo(x)
}

func expShiftSum(dst, x []float32, shift float32) float32 {
	if useAsm && len(dst) > 0 {
		var acc [16]float32
		expShiftSumAVX512(&dst[0], &x[0], len(dst), shift, &acc)
		return lanes(&acc)
	}
	return expShiftSumGo(dst, x, shift)
}
