package gemm_test

import (
	"fmt"

	"github.com/sporeml/spore/internal/kernels/gemm"
)

func ExampleGemmPackedBF16() {
	// A dense layer y = relu(x·W + b) with W packed once in bfloat16.
	x := []float32{1, 2, 3} // 1×3
	w := []float32{         // 3×2
		0.5, -1,
		0.25, 1,
		1, -2,
	}
	pw := gemm.PackBF16(false, 3, 2, w, 2)
	y := make([]float32, 2)
	gemm.GemmPackedBF16(1, 2, 3, x, 3, pw, []float32{0.5, 0}, gemm.ActReLU, y, 2)
	fmt.Println(y)
	// Output: [4.5 0]
}
