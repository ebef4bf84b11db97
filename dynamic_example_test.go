package spore_test

import (
	"fmt"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// A function compiled with a dynamic batch (an InputSpec with -1 and its
// bound) runs one plan at every batch size up to the bound: compiled once,
// before the first call here, as a server does when it loads a model.
func ExampleInputSpec() {
	w := tensor.Ones(spore.Float32, 3, 2)
	f := spore.NewJit(func(x *spore.Tensor) *spore.Tensor { return ops.ReLU(ops.MatMul(x, w)) },
		spore.JitConfig{Inputs: []spore.InputSpec{{DType: spore.Float32, Shape: []int{-1, 3}, Max: []int{32}}}})
	if err := f.CompileSpec(); err != nil {
		fmt.Println(err)
		return
	}
	for _, n := range []int{1, 5, 32} {
		y := f.Fn(tensor.Ones(spore.Float32, n, 3))
		fmt.Println(y.Shape(), y.Float32s()[0])
	}
	st := f.Stats()
	fmt.Println("compiles:", st.Compiles, "fallback:", st.DynamicFallback == "")
	// Output:
	// [1 2] 3
	// [5 2] 3
	// [32 2] 3
	// compiles: 1 fallback: true
}
