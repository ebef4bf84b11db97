package onnx_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/sporeml/spore/onnx"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// Export writes a traced function as an ONNX model; any ONNX runtime,
// spore's own loader included, runs it again.
func ExampleExport() {
	dir, err := os.MkdirTemp("", "export")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "scale.onnx")

	w := tensor.NewParameter("w", tensor.FromSlice([]float32{1, 2, 3}))
	scale := func(x *tensor.Tensor) *tensor.Tensor { return ops.ReLU(ops.Mul(x, w)) }
	x := tensor.FromSlice([]float32{1, -1, 1, 2, 2, -2}, 2, 3)
	if err := onnx.Export(scale, []*tensor.Tensor{x}, path, onnx.DynamicBatch()); err != nil {
		fmt.Println(err)
		return
	}

	m, err := onnx.LoadFile(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	in := m.Inputs()[0]
	fmt.Println(in.Name, in.Shape, in.DimNames[0])
	fmt.Println(m.NamedParameters()[0].Name)
	fmt.Println(m.Call(tensor.FromSlice([]float32{1, 1, 1}, 1, 3)))
	// Output:
	// input [-1 3] batch
	// w
	// [[1. 2. 3.]]
}
