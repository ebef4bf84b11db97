package norm_test

import (
	"fmt"

	"github.com/sporeml/spore/internal/kernels/norm"
)

// Two rows of four values, normalised to zero mean and unit variance,
// scaled by 2 and shifted by 1.
func Example() {
	x := []float64{1, 2, 3, 4, 10, 10, 10, 10}
	gamma := []float64{2, 2, 2, 2}
	beta := []float64{1, 1, 1, 1}
	y := make([]float64, len(x))
	norm.Float64.LayerNorm(2, 4, 1e-5, x, gamma, beta, y)
	for i := range y {
		fmt.Printf("%.3f ", y[i])
	}
	fmt.Println()
	// Output: -1.683 0.106 1.894 3.683 1.000 1.000 1.000 1.000
}
