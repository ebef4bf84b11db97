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
	"github.com/sporeml/spore/models"
)

// seed is the framework seed all five examples set first, so that they
// build the same weights and print the same output.
const seed = 1

func main() {
	spore.SetSeed(seed)
	spore.SetContext(spore.WithMode(spore.GraphMode))
	net := models.NewNetwork()
	output := net.Call(models.Ones(64))
	fmt.Println(output)
}
