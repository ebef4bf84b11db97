package dataset_test

import (
	"fmt"

	"github.com/sporeml/spore/dataset"
	"github.com/sporeml/spore/tensor"
)

// Two processes split a global batch of 4: process r gets the samples at
// positions r and r+2 of each global batch, so their batches together are
// the single-process batches.
func ExampleDataset_ShardedBatch() {
	ids := tensor.FromSlice([]int32{0, 1, 2, 3, 4, 5, 6, 7, 8})
	for rank := range 2 {
		ds, err := dataset.FromTensors(ids).ShardedBatch(4, true, 2, rank)
		if err != nil {
			fmt.Println(err)
			return
		}
		for batch, err := range ds.All() {
			if err != nil {
				fmt.Println(err)
				return
			}
			fmt.Printf("rank %d: %v\n", rank, batch[0].Int64s())
		}
	}
	_, err := dataset.FromTensors(ids).ShardedBatch(4, true, 3, 0)
	fmt.Println(err)
	// Output:
	// rank 0: [0 2]
	// rank 0: [4 6]
	// rank 1: [1 3]
	// rank 1: [5 7]
	// dataset: ShardedBatch: the global batch size 4 is not a multiple of the 3 shards (processes); use a multiple of 3
}
