// Jit as a function transform: an ordinary function, compiled by passing
// it to spore.Jit.
//
//	def run(x):
//	    model = Network()
//	    return model(x)
//
//	run_with_jit = ms.jit(run)
//	output = run_with_jit(ops.ones((64, 1, 28, 28)))
//	print(output)
package main

import (
	"fmt"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/models"
)

func run(x *spore.Tensor) *spore.Tensor {
	model := models.NewNetwork()
	return model.Call(x)
}

// seed is the framework seed all five examples set first, so that they
// build the same weights and print the same output.
const seed = 1

func main() {
	spore.SetSeed(seed)
	runWithJit := spore.Jit(run)
	output := runWithJit(models.Ones(64))
	fmt.Println(output)
}
