package ops_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// matmulRef is the plain product op(a)·op(b) with NumPy batch
// broadcasting, one dot product at a time in float64: the reference the
// batched GEMM paths are compared with.
func matmulRef(a, b []float64, as, bs []int, ta, tb bool) ([]float64, []int) {
	ra, rb := len(as)-2, len(bs)-2
	m, k := as[ra], as[ra+1]
	if ta {
		m, k = k, m
	}
	n := bs[rb+1]
	if tb {
		n = bs[rb]
	}
	r := max(ra, rb)
	batch := make([]int, r)
	for i := range batch {
		da, db := 1, 1
		if j := i - (r - ra); j >= 0 {
			da = as[j]
		}
		if j := i - (r - rb); j >= 0 {
			db = bs[j]
		}
		batch[i] = da
		if da == 1 {
			batch[i] = db
		}
	}
	nb := 1
	for _, d := range batch {
		nb *= d
	}
	out := make([]float64, nb*m*n)
	idx := make([]int, r)
	for p := 0; p < nb; p++ {
		rem := p
		for i := r - 1; i >= 0; i-- {
			idx[i] = rem % batch[i]
			rem /= batch[i]
		}
		offA, offB, sa, sb := 0, 0, as[ra]*as[ra+1], bs[rb]*bs[rb+1]
		for i := r - 1; i >= 0; i-- {
			if j := i - (r - ra); j >= 0 {
				if as[j] != 1 {
					offA += idx[i] * sa
				}
				sa *= as[j]
			}
			if j := i - (r - rb); j >= 0 {
				if bs[j] != 1 {
					offB += idx[i] * sb
				}
				sb *= bs[j]
			}
		}
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				var s float64
				for l := 0; l < k; l++ {
					ai := offA + i*k + l
					if ta {
						ai = offA + l*m + i
					}
					bi := offB + l*n + j
					if tb {
						bi = offB + j*k + l
					}
					s += a[ai] * b[bi]
				}
				out[p*m*n+i*n+j] = s
			}
		}
	}
	return out, append(batch, m, n)
}

// matmulBatchCases cover the batched MatMul's paths: a weight without
// batch axes (one flattened GEMM, including M = 1 per product as in
// sequence-first attention projections), equal batches, batches that
// broadcast (1 against B, missing axes), transposes, and odd sizes.
var matmulBatchCases = []struct {
	a, b   []int
	ta, tb bool
}{
	{a: []int{3, 5}, b: []int{5, 7}},
	{a: []int{2, 3, 5}, b: []int{5, 7}},
	{a: []int{17, 1, 9}, b: []int{9, 33}},
	{a: []int{2, 3, 1, 7}, b: []int{7, 17}},
	{a: []int{2, 3, 5}, b: []int{1, 5, 7}},
	{a: []int{2, 3, 5}, b: []int{7, 5}, tb: true},
	{a: []int{2, 5, 3}, b: []int{5, 7}, ta: true},
	{a: []int{4, 3, 5}, b: []int{4, 5, 7}},
	{a: []int{3, 7, 4}, b: []int{3, 7, 4}, tb: true},
	{a: []int{3, 4, 7}, b: []int{3, 4, 7}, ta: true},
	{a: []int{3, 5}, b: []int{4, 5, 7}},
	{a: []int{1, 3, 5}, b: []int{4, 5, 7}},
	{a: []int{2, 1, 3, 5}, b: []int{1, 4, 5, 7}},
	{a: []int{2, 4, 3, 5}, b: []int{1, 4, 5, 7}},
	{a: []int{2, 4, 3, 5}, b: []int{2, 1, 5, 7}},
	{a: []int{1, 4, 1, 3, 5}, b: []int{2, 1, 3, 5, 7}, tb: false},
	{a: []int{2, 3, 65, 17}, b: []int{2, 3, 65, 17}, tb: true},
	{a: []int{12, 33, 64}, b: []int{12, 64, 33}},
	{a: []int{2, 0, 3, 5}, b: []int{5, 7}},
	{a: []int{2, 3, 5}, b: []int{2, 5, 0}},
}

// The batched MatMul agrees with the float64 reference within float32
// rounding of a k-term dot product, in PyNative and Graph mode, for
// float32; float64 is held to 1e-12.
func TestMatMulBatched(t *testing.T) {
	for _, c := range matmulBatchCases {
		for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
			name := fmt.Sprintf("%v%v_%v%v_%v", c.a, map[bool]string{true: "T"}[c.ta], c.b, map[bool]string{true: "T"}[c.tb], dt)
			t.Run(name, func(t *testing.T) {
				tensor.SetSeed(1)
				a := tensor.RandNormal(dt, 0, 1, c.a...)
				b := tensor.RandNormal(dt, 0, 1, c.b...)
				want, shape := matmulRef(f64s(a), f64s(b), c.a, c.b, c.ta, c.tb)
				k := c.a[len(c.a)-1]
				if c.ta {
					k = c.a[len(c.a)-2]
				}
				tol := 1e-12
				if dt == tensor.Float32 {
					tol = 4e-7 * math.Sqrt(float64(k+1)) * 4
				}
				f := func(a, b *tensor.Tensor) *tensor.Tensor { return ops.MatMulT(a, b, c.ta, c.tb) }
				for mode, run := range map[string]func(a, b *tensor.Tensor) *tensor.Tensor{
					"pynative": f,
					"graph":    spore.Jit(f, spore.JitConfig{Name: "matmul.batched"}),
				} {
					got := run(a, b)
					if !got.Shape().Equal(tensor.Shape(shape)) {
						t.Fatalf("%s: shape %v, want %v", mode, got.Shape(), shape)
					}
					g := f64s(got)
					for i := range want {
						if d := math.Abs(g[i] - want[i]); d > tol*(1+math.Abs(want[i])) {
							t.Fatalf("%s: element %d = %v, want %v (tolerance %g)", mode, i, g[i], want[i], tol)
						}
					}
				}
			})
		}
	}
}

// f64s returns a float tensor's elements as float64.
func f64s(x *tensor.Tensor) []float64 {
	switch d := x.Data().(type) {
	case []float32:
		out := make([]float64, len(d))
		for i, v := range d {
			out[i] = float64(v)
		}
		return out
	case []float64:
		return append([]float64(nil), d...)
	}
	panic(fmt.Sprintf("f64s: %v", x.DType()))
}
