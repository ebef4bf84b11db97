package onnx

import (
	"fmt"
	"github.com/sporeml/spore/internal/testkit"
	"os"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/tensor"
)

// BenchmarkVisionModels times the exported torchvision models (random
// weights, opset 17, dynamic batch) at batch 1 and 16 in Graph and
// PyNative mode. The models are not part of the repository: it reads
// $SPORE_VISION_MODELS (default ../bench/models, where bench/vision.sh exports them)/NAME.onnx and skips the
// models it does not find. cpu-ms/op is the process's CPU time per call:
// at GOMAXPROCS=1 (no spinning workers) the steadier measure of the work
// on a shared machine. SPORE_CONV_ENGINE=0 times the convolutions'
// per-image im2col path, for a before/after comparison:
//
//	go test ./onnx -run '^$' -bench VisionModels -benchtime=5x
func BenchmarkVisionModels(b *testing.B) {
	dir := os.Getenv("SPORE_VISION_MODELS")
	if dir == "" {
		dir = "../bench/models"
	}
	for _, name := range []string{"resnet18", "mobilenet_v3_large", "efficientnet_b0"} {
		path := dir + "/" + name + ".onnx"
		if _, err := os.Stat(path); err != nil {
			b.Logf("skipping %s: %v", name, err)
			continue
		}
		m, err := LoadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		for _, n := range []int{1, 16} {
			for _, mode := range []spore.Mode{spore.GraphMode, spore.PyNativeMode} {
				b.Run(fmt.Sprintf("%s/batch=%d/%v", name, n, mode), func(b *testing.B) {
					tensor.SetSeed(0)
					x := tensor.RandNormal(tensor.Float32, 0, 1, n, 3, 224, 224)
					inMode(mode, func() {
						if _, err := m.Run(x); err != nil {
							b.Fatal(err)
						}
						b.ResetTimer()
						cpu0 := testkit.ProcessCPU()
						for b.Loop() {
							m.Run(x)
						}
						b.ReportMetric(float64(testkit.ProcessCPU()-cpu0)/1e6/float64(b.N), "cpu-ms/op")
					})
				})
			}
		}
	}
}
