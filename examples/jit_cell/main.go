// Jit on the cell's construct (MindSpore's @jit on construct): nn.Jit
// compiles one cell whatever the global mode.
//
//	class Network(nn.Cell):
//	    ...
//	    @jit
//	    def construct(self, x): ...
//
//	net = Network()
//	output = net(ops.ones((64, 1, 28, 28)))
//	print(output)
package main

import (
	"fmt"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/models"
	"github.com/sporeml/spore/nn"
)

// seed is the framework seed all five examples set first, so that they
// build the same weights and print the same output.
const seed = 1

func main() {
	spore.SetSeed(seed)
	net := nn.Jit(models.NewNetwork())
	output := net.Call(models.Ones(64))
	fmt.Println(output)
}
