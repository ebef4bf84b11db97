// Graph mode set through the context: calling the cell compiles the whole
// network, once per input signature, and runs the compiled plan.
//
//	ms.set_context(mode=ms.GRAPH_MODE)
//	net = Network()
//	output = net(ops.ones((64, 1, 28, 28)))
//	print(output)
package main

import (
	"fmt"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/examples/seednet"
)

func main() {
	spore.SetSeed(seednet.Seed)
	spore.SetContext(spore.WithMode(spore.GraphMode))
	net := seednet.New()
	output := net.Call(seednet.Input())
	fmt.Println(output)
}
