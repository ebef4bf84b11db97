package profile_test

import (
	"github.com/sporeml/spore/internal/testkit"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/onnx"
	"github.com/sporeml/spore/profile"
)

// resnet18Env names the variable that gives the path of torchvision's
// resnet18 exported to ONNX (random weights, dynamic batch, input
// "input"; bench/vision.sh exports it into bench/models); the tests that
// need it skip when it is unset.
const resnet18Env = "SPORE_RESNET18"

// resnet18 loads the model, compiles it for one 224×224 image and warms
// it up.
func resnet18(t testing.TB) (func(*spore.Tensor) *spore.Tensor, *spore.Tensor) {
	t.Helper()
	if testing.Short() {
		t.Skip("resnet18 runs take seconds")
	}
	resnet18Path := os.Getenv(resnet18Env)
	if resnet18Path == "" {
		t.Skipf("%s is not set", resnet18Env)
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
// unprofiled one. Calls alternate off and on, one each, which goes first
// alternating too, so that load from other processes falls on both alike.
// On a shared machine wall times swing by more than the overhead; the
// process's CPU time per call does not count what other processes take,
// so its median is what is compared (wall time's best and median are
// logged, and compared where CPU time is unavailable).
func TestResNet18Overhead(t *testing.T) {
	f, x := resnet18(t)
	const pairs = 16
	var wall, cpu [2][]float64
	for i := range pairs {
		for k := range 2 {
			on := k ^ i&1 // off first in even pairs, on first in odd ones
			var s *profile.Session
			if on == 1 {
				var err error
				if s, err = profile.Start(0); err != nil {
					t.Fatal(err)
				}
			}
			c0, start := testkit.ProcessCPU().Seconds(), time.Now()
			f(x)
			wall[on] = append(wall[on], time.Since(start).Seconds())
			cpu[on] = append(cpu[on], testkit.ProcessCPU().Seconds()-c0)
			if s != nil {
				s.Stop()
			}
		}
	}
	for i := range 2 {
		slices.Sort(wall[i])
		slices.Sort(cpu[i])
	}
	mid := pairs / 2
	t.Logf("wall: best %.2fms off, %.2fms on (×%.3f); median %.2fms off, %.2fms on (×%.3f)",
		1e3*wall[0][0], 1e3*wall[1][0], wall[1][0]/wall[0][0], 1e3*wall[0][mid], 1e3*wall[1][mid], wall[1][mid]/wall[0][mid])
	ratio, what := wall[1][0]/wall[0][0], "best wall time"
	if cpu[0][mid] > 0 {
		ratio, what = cpu[1][mid]/cpu[0][mid], "median CPU time"
		t.Logf("CPU: median %.2fms off, %.2fms on (×%.4f)", 1e3*cpu[0][mid], 1e3*cpu[1][mid], ratio)
	}
	if ratio > 1.05 {
		t.Errorf("profiling makes a call ×%.3f slower (%s), want at most ×1.05", ratio, what)
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
