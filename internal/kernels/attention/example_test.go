package attention_test

import (
	"fmt"

	"github.com/sporeml/spore/internal/kernels/attention"
)

// Two queries attend three keys; the causal mask lets the first query see
// only the first key, so its output is that key's value.
func Example() {
	p := &attention.Params[float32]{B: 1, L: 2, S: 3, E: 1, Ev: 1, Scale: 1, Causal: true}
	q := []float32{1, 1}
	k := []float32{0, 0, 0}
	v := []float32{2, 4, 9}
	out, lse := make([]float32, 2), make([]float32, 2)
	attention.Float32.Forward(p, q, k, v, out, lse)
	fmt.Println(out)
	// Output: [2 3]
}
