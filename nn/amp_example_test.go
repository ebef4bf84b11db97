package nn_test

import (
	"fmt"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/nn"
)

// A network at mixed precision O2: its matmuls run in bfloat16 with float32
// accumulation, while its parameters and its result stay Float32.
func ExampleAutoMixedPrecision() {
	spore.SetSeed(1)
	net := nn.AutoMixedPrecision(nn.NewSequentialCell(nn.NewDense(4, 8), nn.NewReLU(), nn.NewDense(8, 2)), nn.O2)
	y := net.Call(spore.Ones(spore.Float32, 3, 4))
	fmt.Println(nn.AmpLevelOf(net), y.DType(), y.Shape())
	w := net.Parameters()[0]
	fmt.Println(w.Name(), w.DType())
	// Output:
	// O2 Float32 [3 2]
	// 0.weight Float32
}
