package profile_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/onnx"
	"github.com/sporeml/spore/profile"
)

// resnet18Path is torchvision's resnet18 exported to ONNX (random
// weights, dynamic batch, input "input"); the tests that need it skip
// when it is absent.
const resnet18Path = "/tmp/models/resnet18.onnx"

// resnet18 loads the model, compiles it for one 224×224 image and warms
// it up.
func resnet18(t testing.TB) (func(*spore.Tensor) *spore.Tensor, *spore.Tensor) {
	t.Helper()
	if testing.Short() {
		t.Skip("resnet18 runs take seconds")
	}
	if _, err := os.Stat(resnet18Path); err != nil {
		t.Skipf("no %s: %v", resnet18Path, err)
	}
	m, err := onnx.LoadFile(resnet18Path)
	if err != nil {
		t.Fatal(err)
	}
	f := spore.Jit(func(x *spore.Tensor) *spore.Tensor { return m.Construct(x) })
	spore.SetSeed(0)
	x := spore.RandUniform(spore.Float32, -1, 1, 1, 3, 224, 224)
	for range 2 {
		f(x)
	}
	return f, x
}

// TestResNet18AddsUp: the table's step times add up to within 10% of
// the calls' time measured outside.
func TestResNet18AddsUp(t *testing.T) {
	f, x := resnet18(t)
	r, measured := profileCalls(t, 10, func() { f(x) })
	checkAddsUp(t, r, measured)
	var b strings.Builder
	if err := r.Table(&b, 12); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + b.String())
	if fn := r.Functions[0]; fn.Runs != 10 || len(fn.Steps) < 20 {
		t.Errorf("resnet18: %d runs of %d steps", fn.Runs, len(fn.Steps))
	}
}

// TestResNet18Overhead: a profiled call is at most 5% slower than an
// unprofiled one. Rounds alternate off and on, so that load from other
// processes falls on both; the best call of each is compared.
func TestResNet18Overhead(t *testing.T) {
	f, x := resnet18(t)
	const rounds, calls = 8, 3
	best := [2]time.Duration{time.Hour, time.Hour}
	for range rounds {
		for on := range 2 {
			var s *profile.Session
			if on == 1 {
				var err error
				if s, err = profile.Start(0); err != nil {
					t.Fatal(err)
				}
			}
			for range calls {
				start := time.Now()
				f(x)
				best[on] = min(best[on], time.Since(start))
			}
			if s != nil {
				s.Stop()
			}
		}
	}
	ratio := float64(best[1]) / float64(best[0])
	t.Logf("best call: %v off, %v on: ×%.4f", best[0], best[1], ratio)
	if ratio > 1.05 {
		t.Errorf("profiling makes a call ×%.3f slower, want at most ×1.05", ratio)
	}
}

// BenchmarkProfileOverhead runs LeNet-5 with profiling off and on, side
// by side.
func BenchmarkProfileOverhead(b *testing.B) {
	f, x := lenet(b)
	b.Run("off", func(b *testing.B) {
		for b.Loop() {
			f(x)
		}
	})
	b.Run("on", func(b *testing.B) {
		s, err := profile.Start(0)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Stop()
		for b.Loop() {
			f(x)
		}
	})
}
