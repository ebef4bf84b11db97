package spore_test

import (
	"errors"
	"fmt"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/dataset"
	"github.com/sporeml/spore/ops"
)

// A linear model trained in data sink mode: each Run takes the next four
// batches and runs four SGD steps as one compiled Scan, returning their
// losses; the last call of each 10-step epoch runs the two left over.
func ExampleDataSink() {
	spore.SetContext(spore.WithMode(spore.GraphMode))
	defer spore.SetContext(spore.WithMode(spore.PyNativeMode))

	w := spore.NewParameter("w", spore.FromSlice([]float32{0}, 1, 1))
	x := spore.FromSlice([]float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 10, 1)
	y := ops.MulScalar(x, 3) // y = 3x
	grad := spore.ValueAndGrad(func(x, y *spore.Tensor) *spore.Tensor {
		d := ops.Sub(ops.MatMul(x, w), y)
		return ops.Mean(ops.Mul(d, d))
	}, spore.GradPosition(), spore.Weights(w))
	step := func(batch ...*spore.Tensor) *spore.Tensor {
		loss, g := grad(batch[0], batch[1])
		w.Assign(ops.Sub(w, ops.MulScalar(g[0], 0.01)))
		return loss
	}

	sink := spore.DataSink(step, dataset.FromTensors(x, y).Batch(1, true), 4, spore.SinkConfig{Epochs: 3})
	defer sink.Close()
	for {
		losses, err := sink.Run()
		if errors.Is(err, spore.ErrSinkDone) {
			break
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		p := sink.Position()
		fmt.Printf("epoch %d, steps %d-%d: %d losses\n", p.Epoch, p.Step, p.Step+p.Steps-1, losses.Dim(0))
	}
	fmt.Printf("w = %.3f\n", w.Item())
	// Output:
	// epoch 1, steps 1-4: 4 losses
	// epoch 1, steps 5-8: 4 losses
	// epoch 1, steps 9-10: 2 losses
	// epoch 2, steps 1-4: 4 losses
	// epoch 2, steps 5-8: 4 losses
	// epoch 2, steps 9-10: 2 losses
	// epoch 3, steps 1-4: 4 losses
	// epoch 3, steps 5-8: 4 losses
	// epoch 3, steps 9-10: 2 losses
	// w = 3.000
}
