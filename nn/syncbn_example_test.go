package nn_test

import (
	"fmt"

	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/tensor"
)

// SyncBatchNorm normalises by the statistics of the global batch, across
// the ranks of package comm; in one process that is the local batch, as
// BatchNorm.
func ExampleSyncBatchNorm() {
	bn := nn.NewSyncBatchNorm(2)
	bn.SetTrain(true)
	x := tensor.FromSlice([]float32{1, 10, 3, 30}, 2, 2)
	fmt.Println(bn.Base().Call(x))
	fmt.Println(bn.MovingMean)
	// Output:
	// [[-0.999995   -0.99999994]
	//  [ 0.999995    0.99999994]]
	// [0.2 2. ]
}
