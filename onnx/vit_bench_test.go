package onnx

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/tensor"
)

// vitPath is where the torchvision vit_b_16 export (random weights, opset
// 17, dynamic batch) is looked for; SPORE_VIT overrides it. The model is
// 330 MB, so it is never part of the repository.
func vitPath() string {
	if p := os.Getenv("SPORE_VIT"); p != "" {
		return p
	}
	return "../bench/models/vit_b_16.onnx"
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

// TestViT runs vit_b_16 at batch 1 and 2 in PyNative mode (op by op,
// unfused) and Graph mode (batched GEMMs, the attention
// pass's fused kernel, fused loops with the vector Erf) and checks that the
// logits agree within 1e-4 (absolute plus relative: twelve layers of
// float32 with different summation orders). With SPORE_VIT_TIMING=1 it
// also logs the best and mean of five Graph-mode calls per batch size, for
// a side-by-side with ONNX Runtime under the same machine load. It loads a
// 330 MB model, so it runs only when SPORE_VIT_TEST=1.
func TestViT(t *testing.T) {
	if os.Getenv("SPORE_VIT_TEST") != "1" {
		t.Skip("set SPORE_VIT_TEST=1 to run vit_b_16 (a 330 MB model)")
	}
	path := vitPath()
	if _, err := os.Stat(path); err != nil {
		t.Skipf("no exported vit_b_16 at %s (set SPORE_VIT)", path)
	}
	m, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 2} {
		tensor.SetSeed(int64(n))
		x := tensor.RandNormal(tensor.Float32, 0, 1, n, 3, 224, 224)
		eager, err := m.Run(x)
		if err != nil {
			t.Fatal(err)
		}
		var graph []*tensor.Tensor
		inMode(spore.GraphMode, func() { graph, err = m.Run(x) })
		if err != nil {
			t.Fatal(err)
		}
		testkit.Near(t, fmt.Sprintf("batch %d: Graph mode vs PyNative", n), graph[0].Float64s(), 1e-4, eager[0].Float64s()...)
	}
	if os.Getenv("SPORE_VIT_TIMING") != "1" {
		return
	}
	for _, n := range []int{1, 4} {
		x := tensor.RandNormal(tensor.Float32, 0, 1, n, 3, 224, 224)
		inMode(spore.GraphMode, func() {
			m.Run(x)
			best, sum := time.Duration(1<<62), time.Duration(0)
			for range 5 {
				t0 := time.Now()
				m.Run(x)
				d := time.Since(t0)
				best, sum = min(best, d), sum+d
			}
			t.Logf("spore Graph mode batch=%d: best %v, mean %v", n, best, sum/5)
		})
	}
}
