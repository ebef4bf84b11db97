package gemm

import (
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/sporeml/spore/internal/kernels/half"
	"github.com/sporeml/spore/internal/kernels/parallel"
)

// forEachBF16Kernel runs f with each bf16 kernel of this machine selected.
func forEachBF16Kernel(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	defer SetBF16Kernel("")
	for _, name := range BF16Kernels() {
		if err := SetBF16Kernel(name); err != nil {
			t.Fatal(err)
		}
		t.Run(name, f)
	}
}

// bf16Ref computes the defined result of a bf16 product in float64: each
// operand rounded to bf16, exact products, plus beta·C. It also returns,
// per element, Σ|a·b| + |beta·c|, the scale of the rounding error a
// float32 summation may make.
func bf16Ref(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) (ref, mag []float64) {
	r := func(x float32) float64 { return float64(half.BF16ToFloat32(half.BF16(x))) }
	ref, mag = make([]float64, m*n), make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s, g float64
			for p := 0; p < k; p++ {
				ai := i*lda + p
				if transA {
					ai = p*lda + i
				}
				bi := p*ldb + j
				if transB {
					bi = j*ldb + p
				}
				v := r(a[ai]) * r(b[bi])
				s += v
				g += math.Abs(v)
			}
			if beta != 0 {
				bc := float64(beta * c[i*ldc+j])
				s += bc
				g += math.Abs(bc)
			}
			ref[i*n+j], mag[i*n+j] = s, g
		}
	}
	return ref, mag
}

// bf16Tol is the error bound the tests allow a kernel's float32 sums:
// (k+2) units in the last place of float32 times the magnitude scale.
func bf16Tol(k int, mag float64) float64 { return float64(k+2)*math.Ldexp(1, -24)*mag + 1e-30 }

func randBF16Operand(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return x
}

func toBits(x []float32) []uint16 {
	h := make([]uint16, len(x))
	half.BF16FromFloat32s(h, x)
	return h
}

func TestGemmBF16Conformance(t *testing.T) {
	forEachBF16Kernel(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(7, 8))
		shapes := [][3]int{
			{1, 1, 1}, {1, 10, 784}, {3, 5, 7}, {16, 16, 32}, {17, 33, 31}, {15, 31, 33},
			{32, 32, 64}, {33, 65, 97}, {64, 10, 512}, {5, 100, 3}, {100, 7, 45}, {40, 96, 600},
		}
		if raceEnabled {
			shapes = shapes[:7] // the race detector slows the reference loops down
		}
		for _, sh := range shapes {
			m, n, k := sh[0], sh[1], sh[2]
			for _, tr := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
				for _, beta := range []float32{0, 1, -0.5} {
					for _, bits := range []bool{false, true} {
						transA, transB := tr[0], tr[1]
						lda, ldb, ldc := k+1, n+2, n+3
						if transA {
							lda = m + 1
						}
						if transB {
							ldb = k + 2
						}
						a := randBF16Operand(r, (max(m, k))*lda)
						b := randBF16Operand(r, (max(n, k))*ldb)
						c := randBF16Operand(r, m*ldc)
						if beta == 0 {
							for i := range c {
								c[i] = float32(math.NaN()) // must not be read
							}
						}
						ref, mag := bf16Ref(transA, transB, m, n, k, a, lda, b, ldb, beta, c, ldc)
						if bits {
							GemmBF16(transA, transB, m, n, k, toBits(a), lda, toBits(b), ldb, beta, c, ldc)
						} else {
							SgemmAsBF16(transA, transB, m, n, k, a, lda, b, ldb, beta, c, ldc)
						}
						for i := 0; i < m; i++ {
							for j := 0; j < n; j++ {
								got := float64(c[i*ldc+j])
								want := ref[i*n+j]
								if d := math.Abs(got - want); !(d <= bf16Tol(k, mag[i*n+j])) {
									t.Fatalf("%dx%dx%d trans=%v beta=%g bits=%v: C[%d][%d] = %g, want %g (diff %g, tol %g)",
										m, n, k, tr, beta, bits, i, j, got, want, d, bf16Tol(k, mag[i*n+j]))
								}
							}
						}
					}
				}
			}
		}
	})
}

// TestGemmBF16Exact uses small integers, whose bf16 roundings, products
// and float32 sums are all exact: every kernel, whatever its summation
// order, must then give exactly the integer result.
func TestGemmBF16Exact(t *testing.T) {
	forEachBF16Kernel(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(9, 10))
		for _, sh := range [][3]int{{1, 1, 1}, {7, 9, 11}, {16, 32, 32}, {33, 47, 129}, {64, 64, 1000}} {
			m, n, k := sh[0], sh[1], sh[2]
			a := make([]float32, m*k)
			b := make([]float32, k*n)
			for i := range a {
				a[i] = float32(r.IntN(17) - 8)
			}
			for i := range b {
				b[i] = float32(r.IntN(17) - 8)
			}
			c := make([]float32, m*n)
			SgemmAsBF16(false, false, m, n, k, a, k, b, n, 0, c, n)
			want := make([]float32, m*n)
			Dgemm64Ref(m, n, k, a, b, want)
			for i := range c {
				if c[i] != want[i] {
					t.Fatalf("%v: C[%d] = %g, want exactly %g", sh, i, c[i], want[i])
				}
			}
		}
	})
}

// Dgemm64Ref is the plain triple loop, in float64, rounded to float32.
func Dgemm64Ref(m, n, k int, a, b, c []float32) {
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s float64
			for p := 0; p < k; p++ {
				s += float64(a[i*k+p]) * float64(b[p*n+j])
			}
			c[i*n+j] = float32(s)
		}
	}
}

func TestGemmPackedBF16(t *testing.T) {
	forEachBF16Kernel(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(11, 12))
		for _, sh := range [][3]int{{1, 512, 784}, {16, 10, 512}, {64, 512, 784}, {17, 33, 31}, {3, 70, 1}} {
			m, n, k := sh[0], sh[1], sh[2]
			for _, transB := range []bool{false, true} {
				for _, act := range []Act{ActNone, ActReLU, ActGELU} {
					for _, withBias := range []bool{false, true} {
						ldb := n
						if transB {
							ldb = k
						}
						a := randBF16Operand(r, m*k)
						b := randBF16Operand(r, k*n)
						var bias []float32
						if withBias {
							bias = randBF16Operand(r, n)
						}
						pb := PackBF16(transB, k, n, b, ldb)
						if gk, gn := pb.Dims(); gk != k || gn != n {
							t.Fatalf("Dims = %d, %d", gk, gn)
						}
						pbits := PackBF16Bits(transB, k, n, toBits(b), ldb)
						if !equalU16(pb.data, pbits.data) {
							t.Fatalf("PackBF16Bits differs from PackBF16")
						}
						ref, mag := bf16Ref(false, transB, m, n, k, a, k, b, ldb, 0, nil, n)
						for round := 0; round < 2; round++ {
							c := make([]float32, m*n)
							if round == 0 {
								GemmPackedBF16(m, n, k, a, k, pb, bias, act, c, n)
							} else {
								GemmPackedBF16Bits(m, n, k, toBits(a), k, pbits, bias, act, c, n)
							}
							for i := range c {
								want, tol := ref[i], bf16Tol(k, mag[i])
								if bias != nil {
									want += float64(bias[i%n])
									tol += math.Ldexp(math.Abs(want), -23)
								}
								switch act {
								case ActReLU:
									want = max(want, 0)
								case ActGELU:
									want = want * 0.5 * (1 + math.Erf(want/math.Sqrt2))
									tol = tol*1.2 + 1e-6*math.Abs(want)
								}
								if d := math.Abs(float64(c[i]) - want); !(d <= tol) {
									t.Fatalf("%v transB=%v act=%v bias=%v round %d: C[%d] = %g, want %g (tol %g)", sh, transB, act, withBias, round, i, c[i], want, tol)
								}
							}
						}
					}
				}
			}
		}
	})
}

func equalU16(a, b []uint16) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestGemmBF16Threads runs products big enough to split over two
// threads, by columns and by rows, against the single-threaded result.
func TestGemmBF16Threads(t *testing.T) {
	defer parallel.SetWorkers(parallel.SetWorkers(2))
	forEachBF16Kernel(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(13, 14))
		for _, sh := range [][3]int{{64, 512, 784}, {1024, 10, 512}, {300, 300, 200}} {
			m, n, k := sh[0], sh[1], sh[2]
			a := randBF16Operand(r, m*k)
			b := randBF16Operand(r, k*n)
			ref, mag := bf16Ref(false, true, m, n, k, a, k, b, k, 0, nil, n)
			c := make([]float32, m*n)
			SgemmAsBF16(false, true, m, n, k, a, k, b, k, 0, c, n)
			cp := make([]float32, m*n)
			GemmPackedBF16(m, n, k, a, k, PackBF16(true, k, n, b, k), nil, ActNone, cp, n)
			for i := range c {
				for _, got := range []float32{c[i], cp[i]} {
					if d := math.Abs(float64(got) - ref[i]); !(d <= bf16Tol(k, mag[i])) {
						t.Fatalf("%v: C[%d] = %g, want %g", sh, i, got, ref[i])
					}
				}
			}
		}
	})
}

// TestSgemmAsBF16AgainstFloat32 checks the documented distance between a
// bf16 product and the float32 product of the same operands.
func TestSgemmAsBF16AgainstFloat32(t *testing.T) {
	forEachBF16Kernel(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(15, 16))
		for _, sh := range [][3]int{{64, 512, 784}, {7, 13, 300}} {
			m, n, k := sh[0], sh[1], sh[2]
			a := randBF16Operand(r, m*k)
			b := randBF16Operand(r, k*n)
			c16 := make([]float32, m*n)
			c32 := make([]float32, m*n)
			SgemmAsBF16(false, false, m, n, k, a, k, b, n, 0, c16, n)
			Sgemm(false, false, m, n, k, 1, a, k, b, n, 0, c32, n)
			for i := 0; i < m; i++ {
				for j := 0; j < n; j++ {
					var mag float64
					for p := 0; p < k; p++ {
						mag += math.Abs(float64(a[i*k+p]) * float64(b[p*n+j]))
					}
					if d := math.Abs(float64(c16[i*n+j] - c32[i*n+j])); d > BF16Tolerance(k)*mag {
						t.Fatalf("%v: bf16 %g vs float32 %g: diff %g > %g", sh, c16[i*n+j], c32[i*n+j], d, BF16Tolerance(k)*mag)
					}
				}
			}
		}
	})
}

func TestGemmBF16SpecialValues(t *testing.T) {
	forEachBF16Kernel(t, func(t *testing.T) {
		inf, nan := float32(math.Inf(1)), float32(math.NaN())
		tests := []struct {
			name string
			a, b []float32 // 1×2 · 2×1
			want float64
		}{
			{"NaN propagates", []float32{nan, 1}, []float32{1, 1}, math.NaN()},
			{"Inf kept", []float32{inf, 1}, []float32{1, 1}, math.Inf(1)},
			{"zero times Inf is NaN", []float32{0, 1}, []float32{inf, 1}, math.NaN()},
			{"Inf minus Inf is NaN", []float32{inf, inf}, []float32{1, -1}, math.NaN()},
			{"large values stay finite", []float32{1e38, 1}, []float32{1, 1}, float64(half.BF16ToFloat32(half.BF16(1e38))) + 1},
		}
		for _, tt := range tests {
			c := []float32{0}
			SgemmAsBF16(false, false, 1, 1, 2, tt.a, 2, tt.b, 1, 0, c, 1)
			got := float64(c[0])
			if math.IsNaN(tt.want) != math.IsNaN(got) || (!math.IsNaN(got) && math.Abs(got-tt.want) > math.Abs(tt.want)*1e-6) {
				t.Errorf("%s: got %g, want %g", tt.name, got, tt.want)
			}
		}
	})
}

func TestGemmBF16BadArgs(t *testing.T) {
	f := make([]float32, 100)
	h := make([]uint16, 100)
	pb := PackBF16(false, 4, 5, f, 5)
	tests := []struct {
		name string
		call func()
		want string
	}{
		{"negative m", func() { GemmBF16(false, false, -1, 2, 2, h, 2, h, 2, 0, f, 2) }, "GemmBF16: negative size m=-1"},
		{"short lda", func() { GemmBF16(false, false, 2, 2, 3, h, 2, h, 2, 0, f, 2) }, "GemmBF16: lda = 2 < 3 columns of a"},
		{"short a", func() { SgemmAsBF16(false, false, 20, 2, 10, f, 10, f, 2, 0, f, 2) }, "SgemmAsBF16: len(a) = 100 < 200 elements needed"},
		{"short b transposed", func() { SgemmAsBF16(false, true, 1, 20, 10, f, 10, f, 10, 0, f, 20) }, "len(b) = 100 < 200"},
		{"short c", func() { GemmBF16(false, false, 11, 10, 1, h, 1, h, 10, 0, f, 10) }, "len(c) = 100 < 110"},
		{"nil packed", func() { GemmPackedBF16(1, 5, 4, f, 4, nil, nil, ActNone, f, 5) }, "B is not packed"},
		{"packed dims", func() { GemmPackedBF16(1, 5, 3, f, 3, pb, nil, ActNone, f, 5) }, "B is packed as 4×5, the product needs k×n = 3×5"},
		{"short bias", func() { GemmPackedBF16(1, 5, 4, f, 4, pb, f[:4], ActNone, f, 5) }, "len(bias) = 4 < n = 5"},
		{"bad act", func() { GemmPackedBF16Bits(1, 5, 4, h, 4, pb, nil, Act(9), f, 5) }, "unknown activation Act(9)"},
		{"pack short b", func() { PackBF16(true, 30, 10, f, 30) }, "PackBF16: len(b) = 100 < 300"},
		{"pack bits bad ldb", func() { PackBF16Bits(false, 3, 10, h, 5) }, "PackBF16Bits: ldb = 5 < 10 columns of b"},
		{"repack short b", func() { new(PackedBF16).Pack(false, 30, 10, f, 10) }, "PackedBF16.Pack: len(b) = 100 < 300"},
		{"repack bits negative", func() { new(PackedBF16).PackBits(false, -1, 10, h, 10) }, "PackedBF16.PackBits: negative size -1×10"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				e, ok := recover().(Error)
				if !ok || !strings.Contains(string(e), tt.want) {
					t.Errorf("panic %q, want one containing %q", e, tt.want)
				}
			}()
			tt.call()
		})
	}
}

func TestSetBF16Kernel(t *testing.T) {
	defer SetBF16Kernel("")
	names := BF16Kernels()
	if names[len(names)-1] != "generic" {
		t.Fatalf("BF16Kernels() = %v, want generic last", names)
	}
	if BF16Kernel() != names[0] {
		t.Fatalf("default kernel %q, want the best, %q", BF16Kernel(), names[0])
	}
	if err := SetBF16Kernel("generic"); err != nil || BF16Kernel() != "generic" {
		t.Fatalf("SetBF16Kernel(generic): %v, now %q", err, BF16Kernel())
	}
	err := SetBF16Kernel("tpu")
	if err == nil || !strings.Contains(err.Error(), "unknown bf16 kernel tpu (have ") {
		t.Fatalf("SetBF16Kernel(tpu) = %v", err)
	}
	if BF16Kernel() != "generic" {
		t.Fatalf("a failed SetBF16Kernel changed the kernel to %q", BF16Kernel())
	}
}

func TestGemmBF16KZero(t *testing.T) {
	c := []float32{1, 2, 3, 4}
	GemmBF16(false, false, 2, 2, 0, nil, 1, nil, 2, 2, c, 2)
	if c[0] != 2 || c[3] != 8 {
		t.Fatalf("k=0, beta=2: C = %v, want [2 4 6 8]", c)
	}
	pb := PackBF16(false, 0, 2, nil, 2)
	GemmPackedBF16(2, 2, 0, nil, 1, pb, []float32{-1, 5}, ActReLU, c, 2)
	if c[0] != 0 || c[1] != 5 || c[2] != 0 || c[3] != 5 {
		t.Fatalf("k=0 with bias and ReLU: C = %v, want [0 5 0 5]", c)
	}
}

// TestGemmBF16Allocs checks that steady-state bf16 products allocate
// nothing, on one thread and split over two.
func TestGemmBF16Allocs(t *testing.T) {
	// Scratch lives in free lists, which a collection leaves alone: one
	// between calls (as on a loaded machine) must not cost an allocation.
	const m, n, k = 64, 512, 784
	a, b, c := randSlice(m*k), randSlice(k*n), make([]float32, m*n)
	pb := PackBF16(true, k, n, b, k)
	bias := randSlice(n)
	forEachBF16Kernel(t, func(t *testing.T) {
		for _, th := range []int{1, 2} {
			func() {
				defer parallel.SetWorkers(parallel.SetWorkers(th))
				for name, f := range map[string]func(){
					"GemmPackedBF16": func() { GemmPackedBF16(m, n, k, a, k, pb, bias, ActReLU, c, n) },
					"SgemmAsBF16":    func() { SgemmAsBF16(false, true, m, n, k, a, k, b, k, 0, c, n) },
				} {
					f() // fill the pools
					if got := testing.AllocsPerRun(5, func() { runtime.GC(); f() }); got != 0 {
						t.Errorf("%s on %d threads: %v allocations per call", name, th, got)
					}
				}
			}()
		}
	})
}

// TestPackedBF16Repack packs operands of several sizes into one
// PackedBF16 and compares each with a fresh packing: reused memory keeps
// nothing of the previous operand (pads included), and a repack that fits
// allocates nothing.
func TestPackedBF16Repack(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	var p PackedBF16
	for _, sh := range [][3]int{{784, 512, 1}, {97, 33, 0}, {512, 512, 1}, {31, 10, 0}, {64, 64, 1}} {
		k, n, tr := sh[0], sh[1], sh[2] == 1
		ldb := n
		if tr {
			ldb = k
		}
		b := randBF16Operand(r, k*n)
		p.Pack(tr, k, n, b, ldb)
		fresh := PackBF16(tr, k, n, b, ldb)
		if gk, gn := p.Dims(); gk != k || gn != n || !equalU16(p.data, fresh.data) {
			t.Fatalf("%v: repacked PackedBF16 differs from a fresh one", sh)
		}
		p.PackBits(tr, k, n, toBits(b), ldb)
		if !equalU16(p.data, fresh.data) {
			t.Fatalf("%v: PackBits differs from PackBF16", sh)
		}
	}
	b := randBF16Operand(r, 512*512)
	if got := testing.AllocsPerRun(3, func() { p.Pack(true, 512, 512, b, 512) }); got != 0 {
		t.Errorf("repacking into a large enough PackedBF16: %v allocations", got)
	}
}
