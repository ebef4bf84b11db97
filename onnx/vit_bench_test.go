package onnx

import (
	"fmt"
	"os"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/tensor"
)

// vitPath is where the torchvision vit_b_16 export (random weights, opset
// 17, dynamic batch) is looked for; SPORE_VIT overrides it. The model is
// 330 MB, so it is never part of the repository.
func vitPath() string {
	if p := os.Getenv("SPORE_VIT"); p != "" {
		return p
	}
	return "/tmp/models/vit_b_16.onnx"
}

// BenchmarkViT times torchvision's vit_b_16 in Graph mode at batch 1 and
// 4, the transformer that bench comparisons with ONNX Runtime use. It
// skips when the exported model is absent. To profile:
//
//	go test ./onnx -run '^$' -bench ViT -benchtime=5x -cpuprofile cpu.out
func BenchmarkViT(b *testing.B) {
	path := vitPath()
	if _, err := os.Stat(path); err != nil {
		b.Skipf("no exported vit_b_16 at %s (set SPORE_VIT)", path)
	}
	m, err := LoadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{1, 4} {
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
			tensor.SetSeed(0)
			x := tensor.RandNormal(tensor.Float32, 0, 1, n, 3, 224, 224)
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
