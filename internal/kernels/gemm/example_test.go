package gemm_test

import (
	"fmt"

	"github.com/sporeml/spore/internal/kernels/gemm"
)

// Multiply a 2×3 matrix by the transpose of a 2×3 matrix.
func ExampleSgemm() {
	a := []float32{
		1, 2, 3,
		4, 5, 6,
	}
	b := []float32{ // used as bᵀ, a 3×2 matrix
		1, 0, 1,
		0, 1, 0,
	}
	c := make([]float32, 2*2)
	gemm.Sgemm(false, true, 2, 2, 3, 1, a, 3, b, 3, 0, c, 2)
	fmt.Println(c)
	// Output: [4 2 10 5]
}

// A dense layer: y = relu(x·W + bias) for a batch of 2 inputs of size 3
// and 2 outputs.
func ExampleSgemmBiasAct() {
	x := []float32{
		1, 2, 3,
		-1, -2, -3,
	}
	w := []float32{
		1, -1,
		1, -1,
		1, -1,
	}
	bias := []float32{0.5, 0.5}
	y := make([]float32, 2*2)
	gemm.SgemmBiasAct(false, false, 2, 2, 3, x, 3, w, 2, bias, gemm.ActReLU, y, 2)
	fmt.Println(y)
	// Output: [6.5 0 0 6.5]
}

// A dense layer serving one input at a time: its weight W, stored [out,
// in] and used transposed, is packed once, and every call streams the
// packed copy.
func ExamplePackedB() {
	w := []float32{ // 2 outputs × 3 inputs
		1, 1, 1,
		-1, -1, -1,
	}
	var pw gemm.PackedB
	pw.Pack(true, 3, 2, w, 3) // op(W) = Wᵀ, 3×2
	bias := []float32{0.5, 0.5}
	y := make([]float32, 2)
	for _, x := range [][]float32{{1, 2, 3}, {-1, -2, -3}} {
		gemm.SgemmPackedBiasAct(false, 1, 2, 3, x, 3, &pw, bias, gemm.ActReLU, y, 2)
		fmt.Println(y)
	}
	// Output:
	// [6.5 0]
	// [0 6.5]
}
