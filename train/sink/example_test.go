package sink_test

import (
	"errors"
	"fmt"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/dataset"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/train/sink"
)

// Fitting y = 2x by SGD, three steps per compiled call: each Run returns
// the losses of the steps it ran, and the epoch's last call runs the one
// step left over.
func ExampleNew() {
	w := spore.NewParameter("w", spore.FromSlice([]float32{0}, 1, 1))
	x := spore.FromSlice([]float32{1, 2, 3, 4, 5, 6, 7}, 7, 1)
	grad := spore.ValueAndGrad(func(x, y *spore.Tensor) *spore.Tensor {
		d := ops.Sub(ops.MatMul(x, w), y)
		return ops.Mean(ops.Mul(d, d))
	}, spore.GradPosition(), spore.Weights(w))
	step := func(batch ...*spore.Tensor) *spore.Tensor {
		loss, g := grad(batch[0], batch[1])
		w.Assign(ops.Sub(w, ops.MulScalar(g[0], 0.01)))
		return loss
	}
	data := dataset.FromTensors(x, ops.MulScalar(x, 2)).Batch(1, true)
	s := sink.New(step, data, 3, sink.Config{Compiled: true, Epochs: 4})
	defer s.Close()
	calls := 0
	for {
		losses, err := s.Run()
		if errors.Is(err, sink.ErrDone) {
			break
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		if calls++; calls <= 3 {
			p := s.Position()
			fmt.Printf("epoch %d, steps %d-%d: %d losses\n", p.Epoch, p.Step, p.Step+p.Steps-1, losses.Dim(0))
		}
	}
	fmt.Printf("%d calls, w = %.2f\n", calls, w.Item())
	// Output:
	// epoch 1, steps 1-3: 3 losses
	// epoch 1, steps 4-6: 3 losses
	// epoch 1, steps 7-7: 1 losses
	// 12 calls, w = 2.00
}
