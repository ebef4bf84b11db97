package ops_test

import (
	"testing"

	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// TryBroadcastShapes is NumPy's rule, for callers that report bad shapes
// as errors (the ONNX loader's Expand); BroadcastShapes is the same rule
// panicking in the name of an op. The error names both shapes.
func TestBroadcastShapes(t *testing.T) {
	cases := []struct {
		a, b tensor.Shape
		want tensor.Shape // nil: incompatible
	}{
		{tensor.Shape{2, 3}, tensor.Shape{2, 3}, tensor.Shape{2, 3}},
		{tensor.Shape{}, tensor.Shape{4}, tensor.Shape{4}},
		{tensor.Shape{2, 1, 4}, tensor.Shape{3, 1}, tensor.Shape{2, 3, 4}},
		{tensor.Shape{1}, tensor.Shape{5, 1, 7}, tensor.Shape{5, 1, 7}},
		{tensor.Shape{0, 1}, tensor.Shape{1, 3}, tensor.Shape{0, 3}}, // 0 against 1 gives 0
		{tensor.Shape{2, 3}, tensor.Shape{3, 3}, nil},
		{tensor.Shape{2, 0}, tensor.Shape{2}, nil},
	}
	for _, c := range cases {
		got, err := ops.TryBroadcastShapes(c.a, c.b)
		if c.want == nil {
			want := "shapes " + c.a.String() + " and " + c.b.String() + " cannot be broadcast"
			if err == nil || err.Error() != want {
				t.Errorf("TryBroadcastShapes(%v, %v) = %v, %v; want the error %q", c.a, c.b, got, err, want)
			}
			testkit.MustPanic(t, func() { ops.BroadcastShapes("Add", c.a, c.b) }, "Add: "+want)
			continue
		}
		if err != nil || !got.Equal(c.want) {
			t.Errorf("TryBroadcastShapes(%v, %v) = %v, %v; want %v", c.a, c.b, got, err, c.want)
		}
		if got := ops.BroadcastShapes("Add", c.a, c.b); !got.Equal(c.want) {
			t.Errorf("BroadcastShapes(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
