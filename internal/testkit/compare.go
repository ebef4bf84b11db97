package testkit

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/sporeml/spore/tensor"
)

// Comparing results and expecting panics: the checks that most of the
// project's tests make, written once so that every package compares
// values by one rule and reports a mismatch the same way.

// Close reports whether got equals want to within tol relative to
// 1+|want|: relative for large values, absolute for small ones, where a
// purely relative test would fail on the rounding of the terms that
// cancelled to make them. A NaN matches only a NaN, and an infinity only
// the same infinity, so that a test can say where a result must be
// undefined or overflow.
func Close(got, want, tol float64) bool {
	switch {
	case math.IsNaN(got) || math.IsNaN(want):
		return math.IsNaN(got) && math.IsNaN(want)
	case math.IsInf(got, 0) || math.IsInf(want, 0):
		return got == want
	}
	return Within(got, want, 1+math.Abs(want), tol)
}

// Within reports whether |got−want| ≤ tol·scale, for a kernel test whose
// error is bounded relative to something other than want: a sum of
// squares, a row's largest element. A NaN on either side is never within.
// A scale under 1e-30 counts as 1e-30, so that a zero scale still admits
// the rounding of a result that is zero up to denormals rather than
// demanding bit equality.
func Within(got, want, scale, tol float64) bool {
	return math.Abs(got-want) <= tol*math.Max(scale, 1e-30)
}

// CheckClose returns nil when got matches want: the same dtype and shape,
// floating-point elements Close to tol, integer and boolean ones equal.
// Otherwise its error says what differs, for tests that collect or wrap
// the failure rather than stop at it.
func CheckClose(got, want *tensor.Tensor, tol float64) error {
	if got == nil || want == nil {
		return fmt.Errorf("got %v, want %v: a tensor is nil", got, want)
	}
	if got.DType() != want.DType() || !got.Shape().Equal(want.Shape()) {
		return fmt.Errorf("got %v %v, want %v %v", got.DType(), got.Shape(), want.DType(), want.Shape())
	}
	switch dt := want.DType(); {
	case dt.IsFloat():
		return closeValues(got.Float64s(), want.Float64s(), tol)
	case dt == tensor.Bool:
		g, w := got.Bools(), want.Bools()
		for i := range w {
			if g[i] != w[i] {
				return fmt.Errorf("element %d is %v, want %v", i, g[i], w[i])
			}
		}
	default:
		g, w := got.Int64s(), want.Int64s()
		for i := range w {
			if g[i] != w[i] {
				return fmt.Errorf("element %d is %d, want %d", i, g[i], w[i])
			}
		}
	}
	return nil
}

// closeValues is CheckClose for float64 slices.
func closeValues(got, want []float64, tol float64) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d values, want %d", len(got), len(want))
	}
	for i := range want {
		if !Close(got[i], want[i], tol) {
			msg := fmt.Sprintf("element %d is %.9g, want %.9g (tolerance %g)", i, got[i], want[i], tol)
			// Short results are worth seeing whole: the pattern of
			// which elements are off often says why.
			if len(want) <= 16 {
				msg += fmt.Sprintf("\ngot  %v\nwant %v", got, want)
			}
			return errors.New(msg)
		}
	}
	return nil
}

// AssertClose fails t unless got matches want as CheckClose says: the
// same dtype and shape, floats Close to tol, integers and booleans equal.
// what names the comparison in the failure.
func AssertClose(t testing.TB, what string, got, want *tensor.Tensor, tol float64) {
	t.Helper()
	if err := CheckClose(got, want, tol); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// Near fails t unless got has len(want) values, each Close to want's to
// tol: AssertClose for values already read out of a tensor, or computed
// by hand, with the expected values written in line.
func Near(t testing.TB, what string, got []float64, tol float64, want ...float64) {
	t.Helper()
	if err := closeValues(got, want, tol); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// MustPanic runs f and returns the *tensor.Error it panics with, failing
// t if f returns, panics with anything else, or panics with a message
// that lacks one of wants: spore reports bad input by panicking with a
// *tensor.Error, and a test should pin both that and what it says.
func MustPanic(t testing.TB, f func(), wants ...string) *tensor.Error {
	t.Helper()
	var got any
	returned := false
	func() {
		defer func() { got = recover() }()
		f()
		returned = true
	}()
	if returned {
		t.Fatalf("want a panic with *tensor.Error, but the call returned")
	}
	err, ok := got.(error)
	var e *tensor.Error
	if !ok || !errors.As(err, &e) {
		t.Fatalf("want a panic with *tensor.Error, got %v (%T)", got, got)
	}
	for _, w := range wants {
		if !strings.Contains(e.Error(), w) {
			t.Fatalf("error %q does not mention %q", e.Error(), w)
		}
	}
	return e
}
