package comm_test

import (
	"fmt"

	"github.com/sporeml/spore/comm"
	"github.com/sporeml/spore/tensor"
)

// A gradient averaged over ranks. In one process (Size 1) the mean is the
// value itself; under mpirun every rank prints the average of all ranks'.
func Example() {
	if err := comm.Init(); err != nil {
		fmt.Println(err)
		return
	}
	defer comm.Finalize()
	g := tensor.FromSlice([]float32{1, 2, 3})
	avg := comm.AllReduce(g, comm.Mean)
	fmt.Println(comm.Rank(), comm.Size(), avg)
	// Output: 0 1 [1. 2. 3.]
}
