// Jit as a decorator. Go has no decorators; a package variable initialised
// with spore.Jit is the same thing: the function is compiled whatever the
// global mode.
//
//	@ms.jit
//	def run(x):
//	    model = Network()
//	    return model(x)
//
//	output = run(ops.ones((64, 1, 28, 28)))
//	print(output)
package main

import (
	"fmt"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/models"
)

// run builds the network inside the compiled function: its parameters are
// created while tracing and captured by reference.
var run = spore.Jit(func(x *spore.Tensor) *spore.Tensor {
	model := models.NewNetwork()
	return model.Call(x)
})

// seed is the framework seed all five examples set first, so that they
// build the same weights and print the same output.
const seed = 1

func main() {
	spore.SetSeed(seed)
	output := run(models.Ones(64))
	fmt.Println(output)
}
