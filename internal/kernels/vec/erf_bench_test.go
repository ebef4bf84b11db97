package vec

import (
	"math"
	"math/rand/v2"
	"testing"
)

// BenchmarkErf sets the vector erf (AVX-512 where present) and its pure-Go
// twin beside the float32 erf they replaced, Go's float64 math.Erf rounded
// once per element, on one 64×512 activation.
func BenchmarkErf(b *testing.B) {
	const n = 64 * 512
	x := randSlice(rand.New(rand.NewPCG(1, n)), n, -3, 3)
	dst := make([]float32, n)
	for _, c := range []struct {
		name string
		f    func(dst, x []float32)
	}{
		{"vec-" + Impl(), Erf},
		{"go-twin", erfGo},
		{"math.Erf", func(dst, x []float32) {
			x = x[:len(dst)]
			for i, v := range x {
				dst[i] = float32(math.Erf(float64(v)))
			}
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				c.f(dst, x)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/elem")
		})
	}
}
