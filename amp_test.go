package spore_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// ampRand returns a Float32 tensor of normal values from seed.
func ampRand(seed uint64, shape ...int) *tensor.Tensor {
	r := rand.New(rand.NewPCG(seed, 3))
	d := make([]float32, tensor.Shape(shape).Size())
	for i := range d {
		d[i] = float32(r.NormFloat64())
	}
	return tensor.FromSlice(d, shape...)
}

func ampSameBits(a, b *tensor.Tensor) bool {
	x, y := a.Float32s(), b.Float32s()
	if len(x) != len(y) || a.DType() != b.DType() {
		return false
	}
	for i := range x {
		if math.Float32bits(x[i]) != math.Float32bits(y[i]) {
			return false
		}
	}
	return true
}

// TestJitConfigPrecision runs one function of a parameter at each level,
// compiled and eagerly (Disable): both give the bits of the function run
// under AmpScope in PyNative mode, the result comes back Float32 at every
// level, and O0 is the plain function.
func TestJitConfigPrecision(t *testing.T) {
	w := spore.NewParameter("w", ampRand(1, 24, 16))
	b := spore.NewParameter("b", ampRand(2, 16))
	fn := func(x *spore.Tensor) *spore.Tensor {
		return ops.Tanh(ops.Add(ops.MatMul(ops.ReLU(x), w), b))
	}
	x := ampRand(3, 5, 24)
	plain := fn(x)
	for _, level := range []spore.AmpLevel{"", spore.AmpO0, spore.AmpO2, spore.AmpO3} {
		t.Run(level.String(), func(t *testing.T) {
			end := spore.AmpScope(level)
			want := fn(x)
			end()
			if want.DType() == tensor.BFloat16 {
				want = ops.Cast(want, tensor.Float32)
			}
			for _, disable := range []bool{false, true} {
				got := spore.Jit(fn, spore.JitConfig{Precision: level, Disable: disable})(x)
				if got.DType() != tensor.Float32 || !ampSameBits(got, want) {
					t.Errorf("Disable=%v: %v %v, want %v", disable, got.DType(), got, want)
				}
			}
			same := ampSameBits(want, plain)
			if mixed := level == spore.AmpO2 || level == spore.AmpO3; same == mixed {
				t.Errorf("level %v: result bit for bit the float32 one: %v", level, same)
			}
		})
	}
}

// TestAmpScopeNests checks that an O0 scope inside an O2 one runs in full
// precision, and that the outer level resumes after it.
func TestAmpScopeNests(t *testing.T) {
	a, b := ampRand(4, 3, 8), ampRand(5, 8, 4)
	plain := ops.MatMul(a, b)
	end2 := spore.AmpScope(spore.AmpO2)
	mixed := ops.MatMul(a, b)
	end0 := spore.AmpScope(spore.AmpO0)
	inner := ops.MatMul(a, b)
	end0()
	again := ops.MatMul(a, b)
	end2()
	if !ampSameBits(inner, plain) || ampSameBits(mixed, plain) || !ampSameBits(again, mixed) {
		t.Errorf("O0 inside O2: inner plain %v, O2 mixed %v, O2 again %v",
			ampSameBits(inner, plain), !ampSameBits(mixed, plain), ampSameBits(again, mixed))
	}
}

// TestAmpLevelErrors checks that the levels spore does not build are
// refused with errors that name them.
func TestAmpLevelErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"O1", "amp level O1 is not supported"},
		{"o2", `unknown amp level "o2"`},
		{"fp16", `unknown amp level "fp16"`},
	} {
		if _, err := spore.ParseAmpLevel(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseAmpLevel(%q) = %v, want an error with %q", tc.in, err, tc.want)
		}
		func() {
			defer func() {
				err, _ := recover().(error)
				var e *tensor.Error
				if !errors.As(err, &e) || !strings.Contains(e.Error(), "JitConfig.Precision") || !strings.Contains(e.Error(), tc.want) {
					t.Errorf("Jit with Precision %q panicked with %v", tc.in, err)
				}
			}()
			spore.Jit(func(x *spore.Tensor) *spore.Tensor { return x }, spore.JitConfig{Precision: spore.AmpLevel(tc.in)})
		}()
	}
	for _, in := range []string{"", "O0", "O2", "O3"} {
		if l, err := spore.ParseAmpLevel(in); err != nil || l.String() != map[string]string{"": "O0"}[in]+in {
			t.Errorf("ParseAmpLevel(%q) = %v, %v", in, l, err)
		}
	}
}

// TestJitUnderAmpScope checks that a compiled function called inside and
// outside a caller's mixed-precision scope keeps one plan for each: each
// call computes what the function computes eagerly in the same scope.
func TestJitUnderAmpScope(t *testing.T) {
	w := spore.NewParameter("w", ampRand(6, 12, 7))
	fn := func(x *spore.Tensor) *spore.Tensor { return ops.MatMul(x, w) }
	jf := spore.NewJit(fn)
	x := ampRand(7, 3, 12)
	plain := fn(x)
	end := spore.AmpScope(spore.AmpO2)
	mixed := fn(x)
	end()
	for i, tc := range []struct {
		level spore.AmpLevel
		want  *tensor.Tensor
	}{{"", plain}, {spore.AmpO2, mixed}, {"", plain}, {spore.AmpO2, mixed}} {
		var got *tensor.Tensor
		if tc.level != "" {
			end := spore.AmpScope(tc.level)
			got = jf.Fn(x)
			end()
		} else {
			got = jf.Fn(x)
		}
		if !ampSameBits(got, tc.want) {
			t.Errorf("call %d at %v: got %v, want %v", i, tc.level.String(), got, tc.want)
		}
	}
	if s := jf.Stats(); s.Compiles != 2 {
		t.Errorf("%d compilations, want one per level: %v", s.Compiles, s.Retraces)
	}
}

// TestAmpScopePerGoroutine runs products at O2 on one goroutine while
// another runs the same products outside any scope: each sees only its
// own scope.
func TestAmpScopePerGoroutine(t *testing.T) {
	a, b := ampRand(8, 4, 16), ampRand(9, 16, 5)
	plain := ops.MatMul(a, b)
	end := spore.AmpScope(spore.AmpO2)
	mixed := ops.MatMul(a, b)
	end()
	var wg sync.WaitGroup
	errs := make(chan string, 2)
	for _, level := range []spore.AmpLevel{spore.AmpO2, ""} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer spore.AmpScope(level)()
			want := plain
			if level == spore.AmpO2 {
				want = mixed
			}
			for range 200 {
				if !ampSameBits(ops.MatMul(a, b), want) {
					errs <- "a product at " + level.String() + " computed another level's bits"
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestJitConfigPrecisionGrad differentiates a compiled O2 function (its
// plan holds the fused bfloat16 GEMM, whose VJP is the unfused chain's)
// and the same function run eagerly under AmpScope: value and gradients
// agree within bfloat16's rounding, and the gradients are Float32.
func TestJitConfigPrecisionGrad(t *testing.T) {
	w := spore.NewParameter("w", ampRand(10, 6, 9))
	b := spore.NewParameter("b", ampRand(11, 6))
	fn := func(x *spore.Tensor) *spore.Tensor {
		return ops.Sum(ops.Mul(ops.ReLU(ops.Add(ops.MatMulT(x, w, false, true), b)), ampRand(12, 4, 6)))
	}
	x := ampRand(13, 4, 9)
	opts := []spore.GradOption{spore.GradPosition(0), spore.Weights(w, b)}
	end := spore.AmpScope(spore.AmpO2)
	wantV, wantG := spore.ValueAndGrad(fn, opts...)(x)
	end()
	jf := spore.Jit(fn, spore.JitConfig{Precision: spore.AmpO2})
	if ir, err := spore.IR(jf, []any{x}); err != nil || !strings.Contains(ir, "precision=BFloat16") {
		t.Fatalf("the compiled function has no fused bfloat16 GEMM (%v):\n%s", err, ir)
	}
	gotV, gotG := spore.ValueAndGrad(jf, opts...)(x)
	if math.Abs(gotV.Item()-wantV.Item()) > 1e-5*math.Abs(wantV.Item()) {
		t.Errorf("value %v, eager %v", gotV.Item(), wantV.Item())
	}
	for i := range wantG {
		g, e := gotG[i].Float32s(), wantG[i].Float32s()
		if gotG[i].DType() != tensor.Float32 || len(g) != len(e) {
			t.Fatalf("gradient %d: %v %v, want Float32 %v", i, gotG[i].DType(), gotG[i].Shape(), wantG[i].Shape())
		}
		scale := 0.0
		for _, v := range e {
			scale = max(scale, math.Abs(float64(v)))
		}
		for j := range e {
			if math.Abs(float64(g[j]-e[j])) > scale/128 {
				t.Fatalf("gradient %d element %d: compiled %v, eager %v", i, j, g[j], e[j])
			}
		}
	}
}
