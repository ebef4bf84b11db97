package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestPackAT checks the packing of a transposed A, op(A)[i][p] =
// a[p·lda + i], against its definition: the pure-Go packATGo at the heights
// of every kernel, and each kernel's own packAT routine at its height. The
// destination starts as NaN, so a lane left unwritten (padding included)
// shows; the source's row padding is NaN, so a lane read from it shows too.
func TestPackAT(t *testing.T) {
	type packer struct {
		name string
		mr   int
		fn   func(dst, a []float32, lda, mc, kc int)
	}
	var ps []packer
	for _, k := range kernels {
		mr := k.mr
		ps = append(ps, packer{"go/mr=" + fmt.Sprint(mr), mr, func(dst, a []float32, lda, mc, kc int) { packATGo(dst, a, lda, mc, kc, mr) }})
		if k.packAT != nil {
			ps = append(ps, packer{k.name, mr, k.packAT})
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, pk := range ps {
		t.Run(pk.name, func(t *testing.T) {
			for _, mc := range []int{1, 2, pk.mr - 1, pk.mr, pk.mr + 1, 3*pk.mr - 2, 12 * pk.mr, 12*pk.mr + 5} {
				if mc < 1 {
					continue
				}
				for _, kc := range []int{1, 2, 7, 256} {
					for _, pad := range []int{0, 3} {
						lda := mc + pad
						// A exactly as long as the block needs: a read past
						// its last element would panic or fault.
						a := make([]float32, (kc-1)*lda+mc)
						for i := range a {
							if i%lda < mc {
								a[i] = float32(rng.Float64()*2 - 1)
							} else {
								a[i] = float32(math.NaN())
							}
						}
						panels := (mc + pk.mr - 1) / pk.mr
						dst := make([]float32, panels*pk.mr*kc+5)
						for i := range dst {
							dst[i] = float32(math.NaN())
						}
						pk.fn(dst, a, lda, mc, kc)
						for q := 0; q < panels; q++ {
							for p := 0; p < kc; p++ {
								for i := 0; i < pk.mr; i++ {
									got := dst[q*pk.mr*kc+p*pk.mr+i]
									var want float32
									if r := q*pk.mr + i; r < mc {
										want = a[p*lda+r]
									}
									if got != want {
										t.Fatalf("mc=%d kc=%d lda=%d: panel %d step %d row %d = %v, want %v", mc, kc, lda, q, p, i, got, want)
									}
								}
							}
						}
						for i := panels * pk.mr * kc; i < len(dst); i++ {
							if !math.IsNaN(float64(dst[i])) {
								t.Fatalf("mc=%d kc=%d lda=%d: wrote past the panels at %d", mc, kc, lda, i)
							}
						}
					}
				}
			}
		})
	}
}
