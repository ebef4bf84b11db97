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
	"github.com/sporeml/spore/examples/seednet"
	"github.com/sporeml/spore/nn"
)

func main() {
	spore.SetSeed(seednet.Seed)
	net := nn.Jit(seednet.New())
	output := net.Call(seednet.Input())
	fmt.Println(output)
}
