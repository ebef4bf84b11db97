package dataset_test

import (
	"bytes"
	"fmt"

	"github.com/sporeml/spore/dataset"
	"github.com/sporeml/spore/tensor"
)

func Example() {
	// Six samples of two features each, with integer labels.
	x := tensor.FromSlice([]float32{0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5}, 6, 2)
	y := tensor.FromSlice([]int32{0, 1, 0, 1, 0, 1})

	tensor.SetSeed(42) // makes the shuffle reproducible
	ds := dataset.FromTensors(x, y).
		Shuffle(6).
		Batch(4, false). // the last batch holds the 2 samples left over
		Prefetch(2)
	fmt.Println("batches per epoch:", ds.Len())
	for batch, err := range ds.All() {
		if err != nil {
			panic(err)
		}
		fmt.Println(batch[0].Shape(), batch[1].Shape())
	}
	// Output:
	// batches per epoch: 2
	// [4 2] [4]
	// [2 2] [2]
}

func ExampleDataset_Map() {
	x := tensor.FromSlice([]float32{1, 2, 3})
	// Map runs per sample: here each scalar becomes a (value, square) row.
	ds := dataset.FromTensors(x).Map(func(row []*tensor.Tensor) ([]*tensor.Tensor, error) {
		v := row[0].Float32s()[0]
		return []*tensor.Tensor{row[0], tensor.Scalar(v * v)}, nil
	}).Batch(3, false)
	for batch, err := range ds.All() {
		if err != nil {
			panic(err)
		}
		fmt.Println(batch[0].Float32s(), batch[1].Float32s())
	}
	// Output:
	// [1 2 3] [1 4 9]
}

func ExampleFromGenerator() {
	// A generator is called afresh for each epoch and yields one row per call.
	ds := dataset.FromGenerator(func(yield func(...*tensor.Tensor) bool) error {
		for i := range int32(5) {
			if !yield(tensor.Scalar(i), tensor.Scalar(i%2 == 0)) {
				return nil // the consumer stopped early
			}
		}
		return nil
	}).Batch(2, true)
	it := ds.Iter()
	defer it.Close()
	for row, ok := it.Next(); ok; row, ok = it.Next() {
		fmt.Println(row[0].Int32s(), row[1].Bools())
	}
	if err := it.Err(); err != nil {
		panic(err)
	}
	// Output:
	// [0 1] [true false]
	// [2 3] [true false]
}

func ExampleReadIDX() {
	// A ubyte array of shape [2 3], as in MNIST's files.
	b := []byte{0, 0, 0x08, 2, 0, 0, 0, 2, 0, 0, 0, 3, 1, 2, 3, 4, 5, 6}
	x, err := dataset.ReadIDX(bytes.NewReader(b))
	if err != nil {
		panic(err)
	}
	fmt.Println(x.DType(), x.Shape(), x.Int32s())

	_, err = dataset.ReadIDX(bytes.NewReader(b[:15]))
	fmt.Println(err)
	// Output:
	// UInt8 [2 3] [1 2 3 4 5 6]
	// dataset: IDX: truncated data: 3 of 6 bytes for shape [2 3] of ubyte
}

// trainEpochs is the training loop of the package documentation; step
// stands for a training step.
func trainEpochs(images, labels *tensor.Tensor, epochs int, step func(x, y *tensor.Tensor) error) error {
	ds := dataset.FromTensors(images, labels).
		Shuffle(images.Shape()[0]).
		Batch(4, true).
		Prefetch(2)
	for range epochs {
		for batch, err := range ds.All() {
			if err != nil {
				return err
			}
			x, y := batch[0], batch[1]
			if err := step(x, y); err != nil {
				return err
			}
		}
	}
	return nil
}

// A typical training pipeline: shuffled full batches, computed ahead of
// the loop that consumes them, epoch after epoch.
func Example_trainingLoop() {
	tensor.SetSeed(1)
	images := tensor.Zeros(tensor.Float32, 10, 1, 28, 28)
	labels := tensor.Zeros(tensor.Int32, 10)
	steps := 0
	err := trainEpochs(images, labels, 2, func(x, y *tensor.Tensor) error {
		steps++
		fmt.Println("step", steps, x.Shape(), y.Shape())
		return nil
	})
	if err != nil {
		panic(err)
	}
	// Output:
	// step 1 [4 1 28 28] [4]
	// step 2 [4 1 28 28] [4]
	// step 3 [4 1 28 28] [4]
	// step 4 [4 1 28 28] [4]
}
