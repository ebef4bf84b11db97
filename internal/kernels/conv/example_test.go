package conv_test

import (
	"fmt"

	"github.com/sporeml/spore/internal/kernels/conv"
)

// A 2×2 max pool with stride 2 over a 4×4 image, and its backward pass.
func Example() {
	img := []float32{
		1, 2, 0, 1,
		3, 4, 1, 0,
		0, 0, 5, 6,
		1, 0, 8, 7,
	}
	oh, ow := conv.OutSize(4, 2, 0, 0, 2, 1), conv.OutSize(4, 2, 0, 0, 2, 1)
	out, arg := make([]float32, oh*ow), make([]int32, oh*ow)
	conv.MaxPool2D(out, arg, img, 1, 4, 4, 2, 2, 0, 0, 2, 2, oh, ow)
	fmt.Println(out, arg)

	dx := make([]float32, len(img))
	conv.MaxPool2DBackward(dx, []float32{1, 1, 1, 1}, arg, 1, 4, 4, oh, ow)
	fmt.Println(dx)

	// The im2col matrix of a 3×3 kernel with padding 1 on a 2×2 image: 9
	// rows (one per kernel tap) of 4 columns (one per output pixel).
	cols := make([]float32, 9*4)
	conv.Im2Col(cols, []float32{1, 2, 3, 4}, 1, 2, 2, 3, 3, 1, 1, 1, 1, 1, 1, 2, 2)
	fmt.Println(cols[4*4 : 5*4]) // the centre tap sees the image itself
	// Output:
	// [4 1 1 8] [5 3 12 14]
	// [0 0 0 1 0 1 0 0 0 0 0 0 1 0 1 0]
	// [1 2 3 4]
}
