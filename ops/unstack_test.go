package ops_test

import (
	"testing"

	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

func TestUnstack(t *testing.T) {
	x := f64([]float64{1, 2, 3, 4, 5, 6}, 2, 3)
	cols := ops.Unstack(x, -1)
	if len(cols) != 3 {
		t.Fatalf("%d pieces", len(cols))
	}
	assertClose(t, "column 1", cols[1], []int{2}, []float64{2, 5}, 0)
	rows := ops.Unstack(x, 0)
	assertClose(t, "row 1", rows[1], []int{3}, []float64{4, 5, 6}, 0)
	if ops.Unstack(tensor.Zeros(tensor.Float64, 0, 3), 0) != nil {
		t.Fatal("unstacking an empty axis gives no pieces")
	}
	testkit.MustPanic(t, func() { ops.Unstack(x, 2) }, "Unstack", "axis 2")
	checkGrad(t, "unstack", func(v ...*tensor.Tensor) *tensor.Tensor {
		p := ops.Unstack(v[0], 1)
		return ops.Add(ops.Mul(p[0], p[2]), ops.Exp(p[1]))
	}, randT(3, -1, 1, 4, 3, 2))
	checkGrad2(t, "unstack", func(v ...*tensor.Tensor) *tensor.Tensor {
		p := ops.Unstack(v[0], 0)
		return ops.Mul(p[0], p[1])
	}, randT(4, -1, 1, 2, 3))
}
