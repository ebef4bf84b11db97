package spore_test

import (
	"fmt"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

func Example() {
	// f(x) = Σ x², eagerly, differentiated, and compiled.
	f := func(x *spore.Tensor) *spore.Tensor { return ops.Sum(ops.Mul(x, x)) }
	x := tensor.FromSlice([]float32{1, 2, 3}, 3)

	fmt.Println(f(x))
	fmt.Println(spore.Grad(f)(x)[0])

	compiled := spore.Jit(f)
	fmt.Println(compiled(x))
	// Output:
	// 14.0
	// [2. 4. 6.]
	// 14.0
}

func ExampleCond() {
	relu := spore.Jit(func(x *spore.Tensor) *spore.Tensor {
		positive := ops.Greater(x, ops.ScalarLike(x, 0))
		return spore.Cond(positive,
			func(a ...*spore.Tensor) []*spore.Tensor { return a },
			func(a ...*spore.Tensor) []*spore.Tensor { return []*spore.Tensor{ops.ZerosLike(a[0])} },
			x)[0]
	})
	fmt.Println(relu(tensor.Scalar(float32(2))), relu(tensor.Scalar(float32(-2))))
	// Output: 2.0 0.0
}
