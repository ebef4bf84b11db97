package gemm

// The conformance suite, in the spirit of gonum's blas/testblas: every
// implementation (each asm kernel and the generic Go twin, forced with
// SetKernel) runs the same table of cases against a naive float64
// reference, with an error bound scaled by k.

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/sporeml/spore/internal/kernels/parallel"
	"github.com/sporeml/spore/internal/kernels/vec"
)

type float interface{ float32 | float64 }

// forEachKernel runs f once per float32 kernel, forced with SetKernel.
func forEachKernel(t *testing.T, f func(t *testing.T)) {
	for _, name := range Kernels() {
		t.Run(name, func(t *testing.T) {
			if err := SetKernel(name); err != nil {
				t.Fatal(err)
			}
			defer SetKernel("")
			f(t)
		})
	}
}

// mat is a test matrix stored rows×cols with row stride ld ≥ cols; the
// padding holds junk that must never be read into the result.
type mat[T float] struct {
	rows, cols, ld int
	data           []T
}

func newMat[T float](rng *rand.Rand, rows, cols, pad int) mat[T] {
	ld := max(1, cols+pad)
	m := mat[T]{rows, cols, ld, make([]T, max(0, (rows-1)*ld+cols))}
	if rows == 0 || cols == 0 {
		m.data = nil
	}
	for i := range m.data {
		if i%ld < cols {
			m.data[i] = T(rng.Float64()*2 - 1)
		} else {
			m.data[i] = T(math.NaN()) // padding: reading it would poison C
		}
	}
	return m
}

// at returns op(X)[i][j].
func (m mat[T]) at(trans bool, i, j int) float64 {
	if trans {
		i, j = j, i
	}
	return float64(m.data[i*m.ld+j])
}

// reference computes alpha·op(A)·op(B) + beta·C in float64, and for each
// element a bound on its magnitude, |alpha|·Σ|a||b| + |beta·c|, that scales
// the tolerance.
//
// Results are memoized by key (when not empty): the test data come from
// fixed seeds, so every kernel sees the same matrices and the float64
// reference is computed once per case.
func reference[T float](key string, transA, transB bool, m, n, k int, alpha float64, a, b mat[T], beta float64, c mat[T]) (want, scale []float64) {
	if key != "" {
		refMu.Lock()
		r, ok := refCache[key]
		refMu.Unlock()
		if ok {
			return r[0], r[1]
		}
		defer func() {
			refMu.Lock()
			refCache[key] = [2][]float64{want, scale}
			refMu.Unlock()
		}()
	}
	want = make([]float64, m*n)
	scale = make([]float64, m*n)
	// Gather op(A) rows and op(B) columns so the inner loop is unit-stride.
	opA := make([]float64, m*k)
	opB := make([]float64, n*k)
	for i := 0; i < m; i++ {
		for p := 0; p < k; p++ {
			opA[i*k+p] = a.at(transA, i, p)
		}
	}
	for j := 0; j < n; j++ {
		for p := 0; p < k; p++ {
			opB[j*k+p] = b.at(transB, p, j)
		}
	}
	for i := 0; i < m; i++ {
		ar := opA[i*k : i*k+k]
		for j := 0; j < n; j++ {
			br := opB[j*k : j*k+k]
			var s, abs float64
			for p, av := range ar {
				x := av * br[p]
				s += x
				abs += math.Abs(x)
			}
			v, sc := alpha*s, math.Abs(alpha)*abs
			if beta != 0 {
				v += beta * c.at(false, i, j)
				sc += math.Abs(beta * c.at(false, i, j))
			}
			want[i*n+j], scale[i*n+j] = v, sc
		}
	}
	return want, scale
}

var (
	refMu    sync.Mutex
	refCache = map[string][2][]float64{}
)

// check compares got (an m×n matrix with row stride ldc) with want: each
// element within eps·(k+4)·scale, the classic dot-product error bound with
// some slack, plus a tiny absolute floor.
func check[T float](t *testing.T, what string, got []T, ldc, m, n, k int, want, scale []float64, eps float64) {
	t.Helper()
	bad := 0
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			g, w := float64(got[i*ldc+j]), want[i*n+j]
			tol := eps*float64(k+4)*scale[i*n+j] + 1e-30
			if !(math.Abs(g-w) <= tol) {
				if bad < 3 {
					t.Errorf("%s: C[%d][%d] = %v, want %v (tol %.3g)", what, i, j, g, w, tol)
				}
				bad++
			}
		}
	}
	if bad > 3 {
		t.Errorf("%s: %d elements wrong", what, bad)
	}
}

// gemmCase is one row of the conformance table.
type gemmCase struct {
	m, n, k     int
	alpha, beta float64
	pad         int // extra leading-dimension elements
}

// gemmCases crosses small odd sizes (every dimension in {0,1,7,17,33},
// rotating through alpha/beta and padding), then adds sizes that cross the
// blocking boundaries (kc, mc, nc, parallel splits) and 1000-long sides.
func gemmCases() []gemmCase {
	alphas := []float64{1, -0.7, 0}
	betas := []float64{0, 1, 1.3}
	dims := []int{0, 1, 7, 17, 33}
	var cs []gemmCase
	idx := 0
	for _, m := range dims {
		for _, n := range dims {
			for _, k := range dims {
				cs = append(cs, gemmCase{m, n, k, alphas[idx%3], betas[idx/3%3], idx % 3})
				idx++
			}
		}
	}
	for _, s := range [][3]int{
		{127, 127, 127}, {1000, 7, 33}, {7, 1000, 33}, {33, 7, 1000},
		{64, 512, 300}, {20, 1030, 20}, {170, 40, 20}, {20, 40, 260}, {1000, 5, 230}, {15, 33, 513},
		// Long k, as in weight gradients dW = dYᵀ·X over many tokens:
		// several k blocks, partial last A panels, and (190 > mc) two A
		// blocks.
		{100, 40, 2100}, {190, 20, 1030},
	} {
		cs = append(cs, gemmCase{s[0], s[1], s[2], 1, 0, 0}, gemmCase{s[0], s[1], s[2], 0.5, -1.5, 3})
	}
	return cs
}

type gemmFunc[T float] func(transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int)

// testGemm runs the whole table, all four transpose combinations, on fn.
func testGemm[T float](t *testing.T, fn gemmFunc[T], eps float64) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range gemmCases() {
		for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
			ta, tb := tr[0], tr[1]
			ar, ac := tc.m, tc.k
			if ta {
				ar, ac = ac, ar
			}
			br, bc := tc.k, tc.n
			if tb {
				br, bc = bc, br
			}
			a := newMat[T](rng, ar, ac, tc.pad)
			b := newMat[T](rng, br, bc, tc.pad)
			c := newMat[T](rng, tc.m, tc.n, tc.pad)
			if tc.beta == 0 {
				for i := range c.data {
					c.data[i] = T(math.NaN()) // beta = 0 must not read C
				}
			}
			what := fmt.Sprintf("m=%d n=%d k=%d transA=%v transB=%v alpha=%v beta=%v pad=%d", tc.m, tc.n, tc.k, ta, tb, tc.alpha, tc.beta, tc.pad)
			want, scale := reference(fmt.Sprintf("%T gemm %s", T(0), what), ta, tb, tc.m, tc.n, tc.k, tc.alpha, a, b, tc.beta, c)
			fn(ta, tb, tc.m, tc.n, tc.k, T(tc.alpha), a.data, a.ld, b.data, b.ld, T(tc.beta), c.data, c.ld)
			check(t, what, c.data, c.ld, tc.m, tc.n, tc.k, want, scale, eps)
			// The padding of C must be untouched.
			for i, v := range c.data {
				if i%c.ld >= tc.n && (tc.beta != 0 && !math.IsNaN(float64(v))) {
					t.Fatalf("%s: wrote C padding at %d", what, i)
				}
			}
		}
	}
}

const (
	eps32 = 0x1p-24
	eps64 = 0x1p-53
)

func TestSgemm(t *testing.T) {
	forEachKernel(t, func(t *testing.T) {
		threads := []int{1, 2}
		if Kernel() == Kernels()[0] {
			threads = append(threads, 3) // uneven splits
		}
		for _, th := range threads {
			t.Run(fmt.Sprintf("threads=%d", th), func(t *testing.T) {
				defer parallel.SetWorkers(parallel.SetWorkers(th))
				testGemm(t, Sgemm, eps32)
			})
		}
	})
}

func TestDgemm(t *testing.T) { testGemm(t, Dgemm, eps64) }

// testStrided checks strided batches against per-item reference products,
// including stride-0 broadcast of A or B, and C accumulation with stride 0.
func testStrided[T float](t *testing.T, fn func(transA, transB bool, m, n, k int, alpha T, a []T, lda, strideA int, b []T, ldb, strideB int, beta T, c []T, ldc, strideC int, batch int), eps float64) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		m, n, k, batch int
		bcastA, bcastB bool
		accumulate     bool // strideC = 0: C sums the batch in order
		beta           float64
	}{
		{7, 9, 5, 4, false, false, false, 0},
		{7, 9, 5, 4, true, false, false, 1},
		{33, 17, 40, 3, false, true, false, 0.5},
		{130, 140, 150, 2, false, false, false, 0}, // large: parallel inside each item
		{64, 64, 64, 5, true, false, false, 0},     // parallel over items
		{5, 6, 7, 3, false, false, true, 1},
		{4, 3, 2, 0, false, false, false, 0},
	} {
		for _, tr := range [][2]bool{{false, false}, {true, true}, {true, false}, {false, true}} {
			ta, tb := tr[0], tr[1]
			ar, ac := tc.m, tc.k
			if ta {
				ar, ac = ac, ar
			}
			br, bc := tc.k, tc.n
			if tb {
				br, bc = bc, br
			}
			nb := max(tc.batch, 1)
			as := make([]mat[T], nb)
			bs := make([]mat[T], nb)
			for i := range nb {
				as[i] = newMat[T](rng, ar, ac, 1)
				bs[i] = newMat[T](rng, br, bc, 2)
				if tc.bcastA {
					as[i] = as[0]
				}
				if tc.bcastB {
					bs[i] = bs[0]
				}
			}
			c := newMat[T](rng, tc.m, tc.n, 1)
			cs := make([]mat[T], nb)
			// Build the strided buffers.
			sa, sb, sc := len(as[0].data)+3, len(bs[0].data)+1, len(c.data)+2
			if tc.bcastA {
				sa = 0
			}
			if tc.bcastB {
				sb = 0
			}
			if tc.accumulate {
				sc = 0
			}
			abuf := make([]T, sa*(nb-1)+len(as[0].data))
			bbuf := make([]T, sb*(nb-1)+len(bs[0].data))
			cbuf := make([]T, sc*(nb-1)+len(c.data))
			for i := range nb {
				copy(abuf[i*sa:], as[i].data)
				copy(bbuf[i*sb:], bs[i].data)
				cs[i] = newMat[T](rng, tc.m, tc.n, 1)
				if tc.accumulate {
					cs[i] = c
				}
				copy(cbuf[i*sc:], cs[i].data)
			}
			fn(ta, tb, tc.m, tc.n, tc.k, 1.5, abuf, as[0].ld, sa, bbuf, bs[0].ld, sb, T(tc.beta), cbuf, c.ld, sc, tc.batch)
			what := fmt.Sprintf("%+v transA=%v transB=%v", tc, ta, tb)
			if tc.accumulate {
				acc := c
				acc.data = append([]T(nil), c.data...)
				var want, scale []float64
				for i := range tc.batch {
					want, scale = reference("", ta, tb, tc.m, tc.n, tc.k, 1.5, as[i], bs[i], tc.beta, acc)
					for r := 0; r < tc.m; r++ {
						for j := 0; j < tc.n; j++ {
							acc.data[r*acc.ld+j] = T(want[r*tc.n+j])
						}
					}
				}
				for i := range scale {
					scale[i] *= float64(tc.batch)
				}
				check(t, what, cbuf, c.ld, tc.m, tc.n, tc.k*tc.batch, want, scale, eps)
				continue
			}
			for i := range tc.batch {
				want, scale := reference("", ta, tb, tc.m, tc.n, tc.k, 1.5, as[i], bs[i], tc.beta, cs[i])
				check(t, fmt.Sprintf("%s item %d", what, i), cbuf[i*sc:], c.ld, tc.m, tc.n, tc.k, want, scale, eps)
			}
		}
	}
}

func TestSgemmStrided(t *testing.T) {
	forEachKernel(t, func(t *testing.T) {
		defer parallel.SetWorkers(parallel.SetWorkers(2))
		testStrided(t, SgemmStrided, eps32)
	})
}

func TestDgemmStrided(t *testing.T) { testStrided(t, DgemmStrided, eps64) }

func TestSgemmBiasAct(t *testing.T) {
	forEachKernel(t, func(t *testing.T) {
		defer parallel.SetWorkers(parallel.SetWorkers(2))
		rng := rand.New(rand.NewPCG(5, 6))
		for _, s := range [][3]int{{0, 3, 4}, {3, 0, 4}, {1, 1, 1}, {5, 3, 0}, {7, 33, 17}, {64, 10, 512}, {64, 512, 300}, {15, 47, 9}, {200, 70, 260}} {
			m, n, k := s[0], s[1], s[2]
			for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
				ta, tb := tr[0], tr[1]
				for _, act := range []Act{ActNone, ActReLU, ActGELU} {
					for _, withBias := range []bool{false, true} {
						ar, ac := m, k
						if ta {
							ar, ac = ac, ar
						}
						br, bc := k, n
						if tb {
							br, bc = bc, br
						}
						a := newMat[float32](rng, ar, ac, 1)
						b := newMat[float32](rng, br, bc, 0)
						c := newMat[float32](rng, m, n, 2)
						for i := range c.data {
							c.data[i] = float32(math.NaN())
						}
						var bias []float32
						if withBias {
							bias = make([]float32, n)
							for i := range bias {
								bias[i] = float32(rng.Float64()*2 - 1)
							}
						}
						want, scale := reference(fmt.Sprintf("biasact %d %d %d %v %v %v %v", m, n, k, ta, tb, act, withBias), ta, tb, m, n, k, 1, a, b, 0, c)
						want, scale = append([]float64(nil), want...), append([]float64(nil), scale...)
						for i := range want {
							if bias != nil {
								want[i] += float64(bias[i%n])
								scale[i] += math.Abs(float64(bias[i%n]))
							}
							switch act {
							case ActReLU:
								want[i] = max(want[i], 0)
							case ActGELU:
								x := want[i]
								want[i] = 0.5 * x * (1 + math.Erf(x/math.Sqrt2))
								scale[i] = scale[i]*1.2 + 1e-6 // GELU' ≤ 1.13, plus vec.Gelu's error
							}
						}
						SgemmBiasAct(ta, tb, m, n, k, a.data, a.ld, b.data, b.ld, bias, act, c.data, c.ld)
						check(t, fmt.Sprintf("m=%d n=%d k=%d transA=%v transB=%v act=%v bias=%v", m, n, k, ta, tb, act, withBias), c.data, c.ld, m, n, k, want, scale, eps32)
					}
				}
			}
		}
	})
}

// TestTileTwin compares each kernel's micro-kernel with the pure-Go twin
// tileGo on identical inputs, for every tile height and width, every
// epilogue, packed and (for direct kernels) in-place A and B, A stored
// either way.
func TestTileTwin(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, k := range kernels {
		t.Run(k.name, func(t *testing.T) {
			for rows := 1; rows <= k.mr; rows++ {
				for cols := 1; cols <= k.nr; cols++ {
					for _, kc := range []int{1, 3, 4, 9} {
						// mode 0: packed A and B; 1: both in place; 2: B
						// in place and A stored transposed (lda < 0).
						for mode := range 3 {
							direct := mode > 0
							if direct && !k.direct {
								continue
							}
							lda, ldb := 0, k.panel(cols)
							na, nb := kc*k.mr, kc*ldb
							switch mode {
							case 1:
								lda, ldb = kc+3, cols+5
								na, nb = (rows-1)*lda+kc, (kc-1)*ldb+cols
							case 2:
								lda, ldb = -(rows + 3), cols+5
								na, nb = (kc-1)*(rows+3)+rows, (kc-1)*ldb+cols
							}
							a := make([]float32, na)
							b := make([]float32, nb)
							for i := range a {
								a[i] = float32(rng.Float64()*2 - 1)
							}
							for i := range b {
								b[i] = float32(rng.Float64()*2 - 1)
							}
							ldc := cols + 3
							bias := make([]float32, cols)
							for i := range bias {
								bias[i] = float32(rng.Float64() - 0.5)
							}
							for e := 0; e < 4; e++ {
								alpha, beta := float32(1), float32(0)
								var bs []float32
								relu := e&1 != 0
								if e&2 != 0 {
									alpha, beta, bs = -0.5, 2, bias
								}
								got := make([]float32, (rows-1)*ldc+cols)
								want := make([]float32, len(got))
								for i := range got {
									got[i] = float32(i%7) - 3
									if beta == 0 && i%ldc < cols {
										got[i] = float32(math.NaN())
									}
									want[i] = got[i]
								}
								k.tile(rows, cols, kc, a, lda, b, ldb, got, ldc, alpha, beta, bs, relu)
								tileGo(k.mr, rows, cols, kc, a, lda, b, ldb, want, ldc, alpha, beta, bs, relu)
								for i := range got {
									if d := math.Abs(float64(got[i] - want[i])); d > 1e-5 || (got[i] != got[i]) != (want[i] != want[i]) {
										t.Fatalf("rows=%d cols=%d kc=%d mode=%d epilogue=%d: C[%d] = %v, twin %v", rows, cols, kc, mode, e, i, got[i], want[i])
									}
								}
							}
						}
					}
				}
			}
		})
	}
}

func TestBadArgs(t *testing.T) {
	buf := make([]float32, 100)
	for _, tc := range []struct {
		name string
		call func()
	}{
		{"negative m", func() { Sgemm(false, false, -1, 2, 2, 1, buf, 2, buf, 2, 0, buf, 2) }},
		{"small lda", func() { Sgemm(false, false, 2, 2, 3, 1, buf, 2, buf, 2, 0, buf, 2) }},
		{"small lda transA", func() { Sgemm(true, false, 5, 2, 3, 1, buf, 4, buf, 2, 0, buf, 2) }},
		{"short a", func() { Sgemm(false, false, 20, 2, 10, 1, buf, 10, buf, 2, 0, buf, 2) }},
		{"short c", func() { Sgemm(false, false, 2, 60, 2, 1, buf, 2, buf[:80], 40, 0, buf, 60) }},
		{"short bias", func() { SgemmBiasAct(false, false, 2, 4, 2, buf, 2, buf, 4, buf[:3], ActNone, buf, 4) }},
		{"bad act", func() { SgemmBiasAct(false, false, 2, 4, 2, buf, 2, buf, 4, nil, Act(9), buf, 4) }},
		{"short batch", func() { SgemmStrided(false, false, 2, 2, 2, 1, buf, 2, 50, buf, 2, 0, 0, buf, 2, 4, 3) }},
		{"dgemm small ldc", func() {
			Dgemm(false, false, 2, 3, 2, 1, make([]float64, 9), 2, make([]float64, 9), 3, 0, make([]float64, 9), 2)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				var e Error
				if r := recover(); r == nil {
					t.Fatal("no panic")
				} else if err, ok := r.(error); !ok || !errors.As(err, &e) {
					t.Fatalf("panic %v, want a gemm.Error", r)
				} else {
					t.Log(e)
				}
			}()
			tc.call()
		})
	}
}

func TestSetKernel(t *testing.T) {
	defer SetKernel("")
	if err := SetKernel("nope"); err == nil {
		t.Fatal("SetKernel(nope) succeeded")
	}
	if err := SetKernel("generic"); err != nil || Kernel() != "generic" {
		t.Fatalf("SetKernel(generic) = %v, Kernel() = %s", err, Kernel())
	}
	if err := SetKernel(""); err != nil || Kernel() != Kernels()[0] {
		t.Fatalf("SetKernel(\"\") = %v, Kernel() = %s", err, Kernel())
	}
}

// TestNoAllocs checks that steady-state calls, serial and parallel, reuse
// pooled workspaces and tasks.
func TestNoAllocs(t *testing.T) {
	defer parallel.SetWorkers(parallel.SetWorkers(2))
	for _, s := range [][3]int{{64, 10, 512}, {64, 512, 512}} {
		m, n, k := s[0], s[1], s[2]
		a, b, c := randSlice(m*k), randSlice(k*n), make([]float32, m*n)
		f := func() { Sgemm(false, true, m, n, k, 1, a, k, b, k, 0, c, n) }
		f()
		if got := testing.AllocsPerRun(20, f); got > 0 {
			t.Errorf("%v: %v allocations per call", s, got)
		}
		g := func() { SgemmBiasAct(false, false, m, n, k, a, k, b, n, c[:n], ActGELU, c, n) }
		g()
		if got := testing.AllocsPerRun(20, g); got > 0 {
			t.Errorf("%v bias-act: %v allocations per call", s, got)
		}
	}
}

// TestGeluTile checks each kernel's GELU epilogue against vec.Gelu, the
// GELU op's own body, bit for bit: it must apply it to the rows×cols tile
// and leave the padding between rows (ldc > cols) alone.
func TestGeluTile(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, k := range kernels {
		for rows := 0; rows <= k.mr; rows++ {
			for cols := 1; cols <= k.nr; cols++ {
				ldc := cols + 2
				got := make([]float32, max(0, (rows-1)*ldc+cols))
				for i := range got {
					got[i] = float32(rng.NormFloat64() * 3)
				}
				if len(got) > 3 {
					got[0], got[1], got[2] = float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))
				}
				want := append([]float32(nil), got...)
				for r := 0; r < rows; r++ {
					row := want[r*ldc : r*ldc+cols]
					vec.Gelu(row, row)
				}
				if rows > 0 {
					k.gelu(got, ldc, rows, cols)
				}
				for i := range got {
					if g, w := got[i], want[i]; math.Float32bits(g) != math.Float32bits(w) && !(g != g && w != w) {
						t.Fatalf("%s rows=%d cols=%d: gelu[%d] = %v, vec.Gelu %v", k.name, rows, cols, i, g, w)
					}
				}
			}
		}
	}
}
