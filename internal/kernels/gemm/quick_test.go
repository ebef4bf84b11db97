package gemm

import (
	"math/rand/v2"
	"testing"
)

func TestQuick(t *testing.T) {
	for _, name := range Kernels() {
		SetKernel(name)
		for _, sz := range [][3]int{{64, 512, 784}, {33, 17, 7}, {1, 1, 1}, {15, 33, 300}} {
			m, n, k := sz[0], sz[1], sz[2]
			a := make([]float32, m*k)
			b := make([]float32, k*n)
			c := make([]float32, m*n)
			for i := range a {
				a[i] = rand.Float32() - 0.5
			}
			for i := range b {
				b[i] = rand.Float32() - 0.5
			}
			Sgemm(false, false, m, n, k, 1, a, k, b, n, 0, c, n)
			var maxe float64
			for i := 0; i < m; i++ {
				for j := 0; j < n; j++ {
					var s float64
					for p := 0; p < k; p++ {
						s += float64(a[i*k+p]) * float64(b[p*n+j])
					}
					e := s - float64(c[i*n+j])
					if e < 0 {
						e = -e
					}
					maxe = max(maxe, e)
				}
			}
			t.Logf("%s %v maxerr %g", name, sz, maxe)
		}
	}
	SetKernel("")
}
