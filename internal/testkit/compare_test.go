package testkit_test

import (
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/tensor"
)

// fakeTB records a helper's failure instead of failing the test; Fatalf
// ends the goroutine as testing.T's does.
type fakeTB struct {
	testing.TB
	failed string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// failure runs check against a fakeTB and returns its failure message, ""
// when it passed.
func failure(check func(t testing.TB)) string {
	f := &fakeTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		check(f)
	}()
	<-done
	return f.failed
}

func TestClose(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	cases := []struct {
		got, want, tol float64
		close          bool
	}{
		{1, 1, 0, true},
		{1.0005, 1, 1e-3, true},
		{1.003, 1, 1e-3, false},        // beyond 1e-3·(1+1)
		{1e-9, 0, 1e-6, true},          // absolute near zero
		{1000.5, 1000, 1e-3, true},     // relative for large values
		{1002, 1000, 1e-3, false},      // 2 > 1e-3·1001
		{nan, nan, 0, true},            // NaN matches NaN
		{nan, 1, 1, false},             // and nothing else
		{1, nan, 1, false},             //
		{inf, inf, 0, true},            // an infinity matches itself
		{-inf, inf, 1, false},          //
		{1e300, inf, 1, false},         // not a large finite value
		{math.MaxFloat64, 1, 1, false}, //
	}
	for _, c := range cases {
		if got := testkit.Close(c.got, c.want, c.tol); got != c.close {
			t.Errorf("Close(%v, %v, %v) = %v, want %v", c.got, c.want, c.tol, got, c.close)
		}
	}
}

func TestWithin(t *testing.T) {
	cases := []struct {
		got, want, scale, tol float64
		within                bool
	}{
		{1.005, 1, 10, 1e-3, true}, // 0.005 ≤ 1e-3·10
		{1.02, 1, 10, 1e-3, false}, //
		{0, 0, 0, 1e-5, true},      // a zero scale admits equality
		{1e-40, 0, 0, 1e-5, true},  // and denormal noise
		{1e-6, 0, 0, 1e-5, false},  // but no more
		{math.NaN(), 1, 1, 1, false},
	}
	for _, c := range cases {
		if got := testkit.Within(c.got, c.want, c.scale, c.tol); got != c.within {
			t.Errorf("Within(%v, %v, %v, %v) = %v, want %v", c.got, c.want, c.scale, c.tol, got, c.within)
		}
	}
}

func TestAssertClose(t *testing.T) {
	f64 := func(v ...float64) *tensor.Tensor { return tensor.FromSlice(v, len(v)) }
	cases := []struct {
		name      string
		got, want *tensor.Tensor
		fails     string // a part of the failure; "" when it must pass
	}{
		{"equal", f64(1, 2), f64(1, 2), ""},
		{"within tol", f64(1, 2.0001), f64(1, 2), ""},
		{"NaN matches NaN", f64(math.NaN()), f64(math.NaN()), ""},
		{"element off", f64(1, 2.1), f64(1, 2), "values: element 1 is 2.1, want 2"},
		{"shape", f64(1, 2), tensor.FromSlice([]float64{1, 2}, 2, 1), "got Float64 [2], want Float64 [2 1]"},
		{"dtype", tensor.FromSlice([]float32{1}, 1), f64(1), "got Float32 [1], want Float64 [1]"},
		{"nil", nil, f64(1), "a tensor is nil"},
		{"ints equal", tensor.FromSlice([]int64{3, -4}, 2), tensor.FromSlice([]int64{3, -4}, 2), ""},
		{"ints exact", tensor.FromSlice([]int64{1 << 60}, 1), tensor.FromSlice([]int64{1<<60 + 1}, 1), "element 0 is 1152921504606846976, want 1152921504606846977"},
		{"bools", tensor.FromSlice([]bool{true, false}, 2), tensor.FromSlice([]bool{true, true}, 2), "element 1 is false, want true"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			msg := failure(func(tb testing.TB) { testkit.AssertClose(tb, "values", c.got, c.want, 1e-3) })
			if c.fails == "" && msg != "" || !strings.Contains(msg, c.fails) {
				t.Errorf("failure %q, want one containing %q", msg, c.fails)
			}
			if err := testkit.CheckClose(c.got, c.want, 1e-3); (err == nil) != (c.fails == "") {
				t.Errorf("CheckClose: %v, want an error: %v", err, c.fails != "")
			}
		})
	}
}

func TestNear(t *testing.T) {
	cases := []struct {
		name  string
		got   []float64
		want  []float64
		fails string
	}{
		{"equal", []float64{1, 2}, []float64{1, 2}, ""},
		{"within tol", []float64{1e-10, 2}, []float64{0, 2}, ""},
		{"off", []float64{1, 3}, []float64{1, 2}, "sum: element 1 is 3, want 2"},
		{"length", []float64{1}, []float64{1, 2}, "sum: 1 values, want 2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			msg := failure(func(tb testing.TB) { testkit.Near(tb, "sum", c.got, 1e-9, c.want...) })
			if c.fails == "" && msg != "" || !strings.Contains(msg, c.fails) {
				t.Errorf("failure %q, want one containing %q", msg, c.fails)
			}
		})
	}
}

func TestMustPanic(t *testing.T) {
	bad := func() { core.Panicf("MatMul", "shapes [2 3] and [4 5] do not chain") }
	cases := []struct {
		name  string
		f     func()
		wants []string
		fails string
	}{
		{"panics as wanted", bad, []string{"MatMul", "[2 3]"}, ""},
		{"message lacks a want", bad, []string{"Conv"}, `does not mention "Conv"`},
		{"returns", func() {}, nil, "the call returned"},
		{"panics with another value", func() { panic("boom") }, nil, "got boom (string)"},
		{"panics with another error", func() { panic(fmt.Errorf("plain")) }, nil, "got plain"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var e *tensor.Error
			msg := failure(func(tb testing.TB) { e = testkit.MustPanic(tb, c.f, c.wants...) })
			if c.fails == "" && msg != "" || !strings.Contains(msg, c.fails) {
				t.Errorf("failure %q, want one containing %q", msg, c.fails)
			}
			if c.fails == "" && (e == nil || e.Op != "MatMul") {
				t.Errorf("returned %v, want the MatMul error", e)
			}
		})
	}
}
