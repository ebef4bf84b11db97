package vec

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// Benchmarks run each kernel at the two size classes of the brief — a 64×512
// activation (fits in L2) and 1M elements (streams from memory) — once
// through the dispatching entry point ("asm" where AVX-512 is present) and
// once through its pure-Go twin, side by side so that their ratio is
// meaningful on a noisy machine. Bytes are the bytes each call reads and
// writes, so -bench reports GB/s.
var benchSizes = []struct {
	name string
	n    int
}{{"64x512", 64 * 512}, {"1M", 1 << 20}}

func benchKernel(b *testing.B, name string, arrays int, fast, twin func(dst, x, y []float32)) {
	for _, sz := range benchSizes {
		r := rand.New(rand.NewPCG(1, uint64(sz.n)))
		x, y := randSlice(r, sz.n, -3, 3), randSlice(r, sz.n, 0.5, 3)
		dst := make([]float32, sz.n)
		for _, impl := range []struct {
			name string
			f    func(dst, x, y []float32)
		}{{Impl(), fast}, {"go", twin}} {
			b.Run(fmt.Sprintf("%s/%s/%s", name, sz.name, impl.name), func(b *testing.B) {
				b.SetBytes(int64(4 * arrays * sz.n))
				for b.Loop() {
					impl.f(dst, x, y)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(sz.n), "ns/elem")
			})
		}
	}
}

func BenchmarkKernels(b *testing.B) {
	var sink float32
	un := func(f func(dst, x []float32)) func(dst, x, y []float32) {
		return func(dst, x, y []float32) { f(dst, x) }
	}
	benchKernel(b, "Add", 3, Add, addGo[float32])
	benchKernel(b, "Mul", 3, Mul, mulGo[float32])
	benchKernel(b, "Div", 3, Div, divGo[float32])
	benchKernel(b, "MulScalar", 2, func(d, x, y []float32) { MulScalar(d, x, 3) }, func(d, x, y []float32) { mulScalarGo(d, x, 3) })
	benchKernel(b, "Relu", 2, un(Relu), un(reluGo[float32]))
	benchKernel(b, "ReluGrad", 3, ReluGrad, reluGradGo[float32])
	benchKernel(b, "Exp", 2, un(Exp), un(expGo))
	benchKernel(b, "Tanh", 2, un(Tanh), un(tanhGo))
	benchKernel(b, "Sigmoid", 2, un(Sigmoid), un(sigmoidGo))
	benchKernel(b, "Gelu", 2, un(Gelu), un(geluGo))
	benchKernel(b, "Sum", 1, func(d, x, y []float32) { sink += Sum(x) },
		func(d, x, y []float32) { sink += pairwise(x, sumLeafGo[float32]) })
	benchKernel(b, "Dot", 2, func(d, x, y []float32) { sink += Dot(x, y) },
		func(d, x, y []float32) { sink += dotPairwise(x, y, dotLeafGo[float32]) })
	benchKernel(b, "Max", 1, func(d, x, y []float32) { sink += Max(x) }, func(d, x, y []float32) { sink += maxGo(x) })
	benchKernel(b, "SoftmaxRows", 2, func(d, x, y []float32) { SoftmaxRows(d, x, len(x)/512, 512) },
		func(d, x, y []float32) {
			for i := 0; i < len(x); i += 512 {
				dr, xr := d[i:i+512], x[i:i+512]
				s := expShiftSumGo(dr, xr, -maxGo(xr))
				mulScalarGo(dr, dr, 1/s)
			}
		})
	_ = sink
}
