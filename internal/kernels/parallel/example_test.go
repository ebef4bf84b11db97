package parallel_test

import (
	"fmt"

	"github.com/sporeml/spore/internal/kernels/parallel"
)

// Sum the squares of 0..9999 in parallel chunks of at least 1000 items.
func ExampleFor() {
	const n = 10000
	partial := make([]int, n) // one slot per index: chunks never share a slot
	parallel.For(n, 1000, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			partial[i] = i * i
		}
	})
	sum := 0
	for _, v := range partial {
		sum += v
	}
	fmt.Println(sum)
	// Output: 333283335000
}
