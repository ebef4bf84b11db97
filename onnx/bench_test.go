package onnx

import (
	"fmt"
	"os"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/tensor"
)

// BenchmarkCNN times the CNN fixture (Conv, BatchNorm, ReLU, MaxPool,
// Conv, ReLU, AvgPool, GlobalAveragePool, Gemm) in Graph mode at batch 1
// and 64, the shapes bench/onnx.sh compares with ONNX Runtime. It is the
// benchmark to profile that comparison with:
//
//	GOMAXPROCS=1 go test ./onnx -run '^$' -bench CNN -cpuprofile cpu.out
func BenchmarkCNN(b *testing.B) {
	m, err := LoadFile("testdata/torch/cnn.onnx")
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{1, 64} {
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
			tensor.SetSeed(0)
			x := tensor.RandNormal(tensor.Float32, 0, 1, n, 1, 28, 28)
			inMode(spore.GraphMode, func() {
				if _, err := m.Run(x); err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				for b.Loop() {
					m.Run(x)
				}
			})
		})
	}
}

// The CNN fixture's Graph-mode plan, whose convolutions take the BatchNorm,
// the ReLUs and both poolings into their epilogues, computes what PyNative
// mode's op-by-op kernels compute, exactly, at batch 1 and 64 (the
// benchmark's shapes) and at an odd batch.
func TestCNNFusedModesAgree(t *testing.T) {
	data, err := os.ReadFile("testdata/torch/cnn.onnx")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 3, 64} {
		tensor.SetSeed(int64(n))
		x := tensor.RandNormal(tensor.Float32, 0, 1, n, 1, 28, 28)
		bothModes(t, data, 0, x)
	}
}
