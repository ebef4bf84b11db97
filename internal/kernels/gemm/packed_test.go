package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sporeml/spore/internal/kernels/parallel"
)

// packedGemm is Sgemm through a PackedB: it packs op(B), then multiplies,
// so the whole conformance table runs on the packed path.
func packedGemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	var pb PackedB
	pb.Pack(transB, k, n, b, ldb)
	SgemmPacked(transA, m, n, k, alpha, a, lda, &pb, beta, c, ldc)
}

// gemvCases are the shapes of small batches: one row tile or a few, k
// beyond kc (summed in one sweep) and beyond what a packed A block holds,
// n with ragged edges on both panel widths; then tall products that are
// split by rows across threads, and wide ones with enough rows to be
// split by rows too, at an odd row count (uneven tile heights).
var gemvCases = [][3]int{
	{1, 512, 784}, {1, 10, 512}, {2, 33, 300}, {3, 47, 1000}, {8, 17, 2000}, {8, 100, 257},
	{13, 40, 600}, {14, 64, 64}, {15, 33, 513}, {16, 520, 784}, {2, 9, 4000}, {5, 1030, 20},
	{300, 100, 100}, {1030, 10, 120}, {400, 70, 300},
	{256, 512, 784}, {171, 257, 129}, {113, 600, 300},
}

func TestSgemmPacked(t *testing.T) {
	forEachKernel(t, func(t *testing.T) {
		for _, th := range []int{1, 2, 3} {
			t.Run(fmt.Sprintf("threads=%d", th), func(t *testing.T) {
				defer parallel.SetWorkers(parallel.SetWorkers(th))
				testGemm(t, packedGemm, eps32)
				rng := rand.New(rand.NewPCG(11, 12))
				for _, s := range gemvCases {
					m, n, k := s[0], s[1], s[2]
					for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
						ta, tb := tr[0], tr[1]
						a := newMatOp(rng, ta, m, k, 1)
						b := newMatOp(rng, tb, k, n, 2)
						c := newMat[float32](rng, m, n, 1)
						what := fmt.Sprintf("gemv m=%d n=%d k=%d transA=%v transB=%v", m, n, k, ta, tb)
						want, scale := reference(what, ta, tb, m, n, k, -0.5, a, b, 2, c)
						packedGemm(ta, tb, m, n, k, -0.5, a.data, a.ld, b.data, b.ld, 2, c.data, c.ld)
						check(t, what, c.data, c.ld, m, n, k, want, scale, eps32)
					}
				}
			})
		}
	})
}

// newMatOp returns a random matrix whose op (transposed when trans) is
// rows×cols.
func newMatOp(rng *rand.Rand, trans bool, rows, cols, pad int) mat[float32] {
	if trans {
		rows, cols = cols, rows
	}
	return newMat[float32](rng, rows, cols, pad)
}

func TestSgemmPackedBiasAct(t *testing.T) {
	forEachKernel(t, func(t *testing.T) {
		defer parallel.SetWorkers(parallel.SetWorkers(2))
		rng := rand.New(rand.NewPCG(13, 14))
		for _, s := range append([][3]int{{0, 3, 4}, {3, 0, 4}, {5, 3, 0}, {64, 512, 300}, {200, 70, 260}}, gemvCases...) {
			m, n, k := s[0], s[1], s[2]
			for _, tr := range [][2]bool{{false, true}, {true, false}} {
				ta, tb := tr[0], tr[1]
				for _, act := range []Act{ActNone, ActReLU, ActGELU} {
					a := newMatOp(rng, ta, m, k, 1)
					b := newMatOp(rng, tb, k, n, 0)
					c := newMat[float32](rng, m, n, 2)
					for i := range c.data {
						c.data[i] = float32(math.NaN()) // C is only written
					}
					bias := make([]float32, n)
					for i := range bias {
						bias[i] = float32(rng.Float64()*2 - 1)
					}
					what := fmt.Sprintf("m=%d n=%d k=%d transA=%v transB=%v act=%v", m, n, k, ta, tb, act)
					want, scale := reference("", ta, tb, m, n, k, 1, a, b, 0, c)
					for i := range want {
						want[i] += float64(bias[i%n])
						scale[i] += math.Abs(float64(bias[i%n]))
						switch act {
						case ActReLU:
							want[i] = max(want[i], 0)
						case ActGELU:
							x := want[i]
							want[i] = 0.5 * x * (1 + math.Erf(x/math.Sqrt2))
							scale[i] = scale[i]*1.2 + 1e-6
						}
					}
					var pb PackedB
					pb.Pack(tb, k, n, b.data, b.ld)
					SgemmPackedBiasAct(ta, m, n, k, a.data, a.ld, &pb, bias, act, c.data, c.ld)
					check(t, what, c.data, c.ld, m, n, k, want, scale, eps32)
				}
			}
		}
	})
}

// TestPackedKeepsKernel checks that a PackedB is multiplied by the kernel
// it was packed for, whatever kernel is current by then: its panel layout
// is that kernel's.
func TestPackedKeepsKernel(t *testing.T) {
	names := Kernels()
	if len(names) < 2 {
		t.Skip("one kernel only")
	}
	rng := rand.New(rand.NewPCG(15, 16))
	m, n, k := 3, 70, 50
	a, b, c := newMat[float32](rng, m, k, 0), newMat[float32](rng, n, k, 0), newMat[float32](rng, m, n, 0)
	want, scale := reference("", false, true, m, n, k, 1, a, b, 0, c)
	defer SetKernel("")
	var pb PackedB
	if err := SetKernel(names[0]); err != nil {
		t.Fatal(err)
	}
	pb.Pack(true, k, n, b.data, b.ld)
	if err := SetKernel(names[len(names)-1]); err != nil {
		t.Fatal(err)
	}
	SgemmPacked(false, m, n, k, 1, a.data, a.ld, &pb, 0, c.data, c.ld)
	check(t, "packed with "+names[0]+", run under "+names[len(names)-1], c.data, c.ld, m, n, k, want, scale, eps32)
}

func TestPackedBadArgs(t *testing.T) {
	var pb PackedB
	b := make([]float32, 12)
	cases := []struct {
		name string
		f    func()
		want string
	}{
		{"unpacked", func() { SgemmPacked(false, 1, 3, 4, 1, make([]float32, 4), 4, &PackedB{}, 0, make([]float32, 3), 3) }, "B is not packed"},
		{"nil", func() { SgemmPacked(false, 1, 3, 4, 1, make([]float32, 4), 4, nil, 0, make([]float32, 3), 3) }, "B is not packed"},
		{"short b", func() { pb.Pack(false, 4, 4, b, 4) }, "len(b) = 12 < 16"},
		{"wrong dims", func() {
			pb.Pack(false, 4, 3, b, 3)
			SgemmPacked(false, 1, 3, 5, 1, make([]float32, 5), 5, &pb, 0, make([]float32, 3), 3)
		}, "packed as 4×3, the product needs k×n = 5×3"},
		{"short a", func() {
			pb.Pack(false, 4, 3, b, 3)
			SgemmPackedBiasAct(false, 2, 3, 4, make([]float32, 5), 4, &pb, nil, ActNone, make([]float32, 6), 3)
		}, "len(a) = 5 < 8"},
		{"short bias", func() {
			pb.Pack(false, 4, 3, b, 3)
			SgemmPackedBiasAct(false, 1, 3, 4, make([]float32, 4), 4, &pb, make([]float32, 2), ActNone, make([]float32, 3), 3)
		}, "len(bias) = 2 < n = 3"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				e, ok := recover().(Error)
				if !ok || !strings.Contains(string(e), c.want) {
					t.Errorf("panic %v, want an Error mentioning %q", e, c.want)
				}
			}()
			c.f()
		})
	}
}

// TestPackedNoAllocs checks that products with a packed B, serial and
// split over threads, allocate nothing once warm.
func TestPackedNoAllocs(t *testing.T) {
	defer parallel.SetWorkers(parallel.SetWorkers(2))
	for _, s := range [][3]int{{1, 512, 784}, {1, 10, 512}, {64, 512, 512}} {
		m, n, k := s[0], s[1], s[2]
		a, b, c := randSlice(m*k), randSlice(k*n), make([]float32, m*n)
		var pb PackedB
		pb.Pack(true, k, n, b, k)
		f := func() { SgemmPackedBiasAct(false, m, n, k, a, k, &pb, c[:n], ActReLU, c, n) }
		f()
		if got := testing.AllocsPerRun(20, f); got > 0 {
			t.Errorf("%v: %v allocations per call", s, got)
		}
	}
}
