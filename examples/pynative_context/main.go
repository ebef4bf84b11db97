// PyNative mode set through the context (the default mode):
//
//	ms.set_context(mode=ms.PYNATIVE_MODE)
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
	spore.SetContext(spore.WithMode(spore.PyNativeMode))
	net := seednet.New()
	output := net.Call(seednet.Input())
	fmt.Println(output)
}
