package onnx

import (
	"os"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/tensor"
)

// BenchmarkTorchvisionModel times a torchvision model exported to ONNX
// (SPORE_BENCH_MODEL names the file, e.g. ../bench/models/mobilenet_v3_large.onnx)
// in Graph mode at batch 1. It skips without one: the exported models are
// not part of the module.
func BenchmarkTorchvisionModel(b *testing.B) {
	path := os.Getenv("SPORE_BENCH_MODEL")
	if path == "" {
		b.Skip("set SPORE_BENCH_MODEL to an exported model with a [N,3,224,224] input")
	}
	m, err := LoadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	tensor.SetSeed(0)
	x := tensor.RandNormal(tensor.Float32, 0, 1, 1, 3, 224, 224)
	inMode(spore.GraphMode, func() {
		if _, err := m.Run(x); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for b.Loop() {
			m.Run(x)
		}
	})
}
