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

// BFloat16 and Float16 tensors hold 16-bit floats: creating one rounds to
// the type, reading it converts back exactly, and it prints its values.
func Example_halfPrecision() {
	x := tensor.FromSlice([]tensor.BF16{tensor.BF16From(0.1), tensor.BF16From(1), tensor.BF16From(2.7)})
	fmt.Println(x.DType(), x.DType().Size(), x)
	fmt.Println(x.Float32s())
	h := tensor.Full(tensor.Float16, 70000, 2)
	fmt.Println(h.Verbose())
	// Output:
	// BFloat16 2 [0.1 1.  2.7]
	// [0.100097656 1 2.703125]
	// Tensor(shape=[2], dtype=Float16, value=
	// [inf inf])
}
