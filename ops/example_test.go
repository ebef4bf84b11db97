package ops_test

import (
	"fmt"

	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

func Example() {
	x := tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	bias := tensor.FromSlice([]float32{10, 20, 30}, 3)
	fmt.Println(ops.Add(x, bias))               // broadcasting
	fmt.Println(ops.Sum(x, -1))                 // negative axes
	fmt.Println(ops.MatMulT(x, x, false, true)) // x·xᵀ without a transpose
	// Output:
	// [[11. 22. 33.]
	//  [14. 25. 36.]]
	// [ 6. 15.]
	// [[14. 32.]
	//  [32. 77.]]
}
