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
	// The step is plain ops: the gradient of the mean squared error
	// mean((w·x - y)²) in w is mean(2·(w·x - y)·x), and the update is an
	// Assign, which the compiled loop performs in place after every step.
	w := spore.NewParameter("w", spore.FromSlice([]float32{0}, 1))
	x := spore.FromSlice([]float32{1, 2, 3, 4, 5, 6, 7}, 7)
	step := func(batch ...*spore.Tensor) *spore.Tensor {
		r := ops.Sub(ops.Mul(batch[0], w), batch[1])
		g := ops.Mean(ops.MulScalar(ops.Mul(r, batch[0]), 2))
		w.Assign(ops.Sub(w, ops.MulScalar(ops.Reshape(g, 1), 0.01)))
		return ops.Mean(ops.Mul(r, r))
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
