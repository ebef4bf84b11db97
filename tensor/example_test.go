package tensor_test

import (
	"fmt"

	"github.com/sporeml/spore/tensor"
)

func Example() {
	x := tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	fmt.Println(x.Shape(), x.DType(), x.Size())
	fmt.Println(x)
	fmt.Println(tensor.Eye(tensor.Int32, 2).Verbose())
	// Output:
	// [2 3] Float32 6
	// [[1. 2. 3.]
	//  [4. 5. 6.]]
	// Tensor(shape=[2, 2], dtype=Int32, value=
	// [[1 0]
	//  [0 1]])
}
