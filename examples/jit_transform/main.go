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
	"github.com/sporeml/spore/examples/seednet"
)

func run(x *spore.Tensor) *spore.Tensor {
	model := seednet.New()
	return model.Call(x)
}

func main() {
	spore.SetSeed(seednet.Seed)
	runWithJit := spore.Jit(run)
	output := runWithJit(seednet.Input())
	fmt.Println(output)
}
