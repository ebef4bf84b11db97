package models_test

import (
	"fmt"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/models"
)

func Example() {
	spore.SetSeed(1)
	net := models.NewNetwork()
	fmt.Println(net.Call(models.Ones(64)).Shape())
	for _, p := range net.NamedParameters()[:2] {
		fmt.Println(p.Name, p.Tensor.Shape())
	}
	// Output:
	// [64 10]
	// dense_relu_sequential.0.weight [512 784]
	// dense_relu_sequential.0.bias [512]
}

func TestLeNet5Shapes(t *testing.T) {
	net := models.NewLeNet5(10)
	if got := net.Call(models.Ones(3)).Shape(); !got.Equal(spore.Shape{3, 10}) {
		t.Fatalf("LeNet-5 output %v, want [3 10]", got)
	}
	n := 0
	for _, p := range net.Parameters() {
		n += p.Size()
	}
	// conv1 6·25+6, conv2 16·6·25+16 (MindSpore's Conv2d has no bias by
	// default), fc 256·120+120, 120·84+84, 84·10+10.
	if want := 6*25 + 16*6*25 + 256*120 + 120 + 120*84 + 84 + 84*10 + 10; n != want {
		t.Fatalf("%d parameters, want %d", n, want)
	}
}
