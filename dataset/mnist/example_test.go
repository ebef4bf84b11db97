package mnist_test

import (
	"fmt"

	"github.com/sporeml/spore/dataset/mnist"
	"github.com/sporeml/spore/tensor"
)

func Example() {
	tensor.SetSeed(1)
	train, err := mnist.Train(mnist.Normalize())
	if err != nil {
		panic(err)
	}
	batches := train.Shuffle(60000).Batch(64, true).Prefetch(2)
	fmt.Println("samples:", train.Len(), "batches:", batches.Len())
	for batch, err := range batches.All() {
		if err != nil {
			panic(err)
		}
		fmt.Println("images:", batch[0].DType(), batch[0].Shape())
		fmt.Println("labels:", batch[1].DType(), batch[1].Shape())
		break
	}
	// Output:
	// samples: 60000 batches: 937
	// images: Float32 [64 1 28 28]
	// labels: Int32 [64]
}
