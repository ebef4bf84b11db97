package vec_test

import (
	"fmt"

	"github.com/sporeml/spore/internal/kernels/vec"
)

// LinComb as a matrix product, C = A·B with A 2×3 and B 3×2 (row strides
// 3 and 2), then as Aᵀ times B's first two rows (the identity), reading
// the same A down its columns (ar = 1, at = 3).
func ExampleLinComb() {
	a := []float32{1, 2, 3, 4, 5, 6}
	b := []float32{1, 0, 0, 1, 1, 1}
	c := make([]float32, 4)
	vec.LinComb(c, 2, 2, 2, 3, 1, a, 3, 1, b, 2)
	fmt.Println(c)
	at := make([]float32, 6)
	vec.LinComb(at, 2, 3, 2, 2, 1, a, 1, 3, b, 2)
	fmt.Println(at)
	// Output:
	// [4 5 10 11]
	// [1 4 2 5 3 6]
}
