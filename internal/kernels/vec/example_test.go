package vec_test

import (
	"fmt"

	"github.com/sporeml/spore/internal/kernels/vec"
)

// A dense layer's bias add and activation, then a softmax over each row.
func Example() {
	x := []float32{1, -2, 3, 0.5, 0, -1} // a 2×3 batch
	bias := []float32{0.5, 0.5, -1}
	vec.AddRow(x, x, bias)
	vec.Relu(x, x)
	fmt.Println(x)

	p := make([]float32, len(x))
	vec.SoftmaxRows(p, x, 2, 3)
	fmt.Printf("%.4f\n", p)
	fmt.Println(vec.Sum(p))
	// Output:
	// [1.5 0 2 1 0.5 0]
	// [0.3482 0.0777 0.5741 0.5065 0.3072 0.1863]
	// 2
}
