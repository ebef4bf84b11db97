package spore_test

import (
	"fmt"
	"math"
	"runtime"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/models"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/tensor"
)

// seedDyn returns the seed network's forward pass compiled with a dynamic
// batch up to bound, its signature compiled already (as a server does at
// load time).
func seedDyn(tb testing.TB, net *models.Network, bound int) *spore.JitFunc[func(...*spore.Tensor) *spore.Tensor] {
	f := spore.NewJit(func(xs ...*spore.Tensor) *spore.Tensor { return net.Base().Call(xs...) },
		spore.JitConfig{Inputs: []spore.InputSpec{{DType: spore.Float32, Shape: []int{-1, 1, 28, 28}, Max: []int{bound}}}})
	if err := f.CompileSpec(); err != nil {
		tb.Fatal(err)
	}
	return f
}

// TestDynamicBatchAllocs: a dynamic plan's call allocates what a per-shape
// plan's does (the result), warm at one size and when the size changes
// between calls (each size's headers and attributes are built once).
func TestDynamicBatchAllocs(t *testing.T) {
	net := models.NewNetwork()
	dyn := seedDyn(t, net, 16)
	per := spore.NewJit(func(xs ...*spore.Tensor) *spore.Tensor { return net.Base().Call(xs...) })
	xs := []*spore.Tensor{dynInput(3, 1, 28, 28), dynInput(5, 1, 28, 28)}
	for _, x := range xs {
		dyn.Call(x)
		per.Call(x)
	}
	cases := []struct {
		name string
		f    *spore.JitFunc[func(...*spore.Tensor) *spore.Tensor]
		alt  bool // alternate the two sizes
	}{
		{"per-shape warm", per, false},
		{"dynamic warm", dyn, false},
		{"dynamic alternating sizes", dyn, true},
	}
	allocs := map[string]float64{}
	for _, c := range cases {
		i := 0
		allocs[c.name] = testing.AllocsPerRun(50, func() {
			x := xs[0]
			if c.alt {
				x = xs[i%2]
				i++
			}
			c.f.Call(x)
		})
	}
	if allocs["dynamic warm"] > allocs["per-shape warm"] || allocs["dynamic alternating sizes"] > allocs["per-shape warm"] {
		t.Errorf("allocations per call: %v", allocs)
	}
	// After CompileSpec, the first call at a size not seen before
	// allocates no more than a warm call either: every size's state was
	// built at compile time (PrepareSizes).
	// (The least over three new sizes: another goroutine may allocate
	// during one.)
	var ms0, ms1 runtime.MemStats
	least := math.Inf(1)
	for n := 11; n <= 13; n++ {
		x := dynInput(n, 1, 28, 28)
		runtime.ReadMemStats(&ms0)
		dyn.Call(x)
		runtime.ReadMemStats(&ms1)
		least = min(least, float64(ms1.Mallocs-ms0.Mallocs))
	}
	if least > allocs["per-shape warm"] {
		t.Errorf("first calls at batches 11 to 13: at least %g allocations, a warm call %g", least, allocs["per-shape warm"])
	}
	// RunInto allocates nothing, at alternating sizes too.
	outs := []*spore.Tensor{tensor.New(spore.Float32, 3, 10), tensor.New(spore.Float32, 5, 10)}
	i := 0
	if a := testing.AllocsPerRun(50, func() {
		dyn.RunInto(xs[i%2:i%2+1], outs[i%2:i%2+1])
		i++
	}); a != 0 {
		t.Errorf("RunInto: %g allocations per call", a)
	}
	if d, err := maxDiff(outs[1], per.Call(xs[1])); err != nil || d != 0 {
		t.Errorf("RunInto: max diff %g %v", d, err)
	}
	if st := dyn.Stats(); st.Compiles != 1 {
		t.Errorf("%d compiles, want 1", st.Compiles)
	}
}

// BenchmarkDynamicFirstCall measures a call at a batch size seen for the
// first time: with an input signature (the plan compiled at load time by
// CompileSpec) it costs what a warm call costs, where a per-shape plan
// compiles first. Each iteration builds a fresh function outside the
// timer and, for the dynamic plan, serves a call at another size, as a
// server that has been running does; only the first call at the size is
// timed. (bench/ has no script for this: go test -bench
// DynamicFirstCall -benchtime 20x runs it.)
func BenchmarkDynamicFirstCall(b *testing.B) {
	nets := []struct {
		name  string
		net   nn.Module
		shape []int
	}{
		{"seed", models.NewNetwork(), []int{1, 28, 28}},
		{"lenet", models.NewLeNet5(10), []int{1, 28, 28}},
		{"vit", models.NewViT(10), vitShape()},
	}
	for _, m := range nets {
		for _, n := range []int{1, 7, 32} {
			x := dynInput(n, m.shape...)
			other := dynInput(n+1, m.shape...)
			spec := []spore.InputSpec{{DType: spore.Float32, Shape: append([]int{-1}, m.shape...), Max: []int{64}}}
			fn := func(xs ...*spore.Tensor) *spore.Tensor { return m.net.Base().Call(xs...) }
			b.Run(fmt.Sprintf("%s/batch%d/warm", m.name, n), func(b *testing.B) {
				f := spore.NewJit(fn, spore.JitConfig{Inputs: spec})
				f.Call(x)
				for b.Loop() {
					f.Call(x)
				}
			})
			b.Run(fmt.Sprintf("%s/batch%d/dynamic-first", m.name, n), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					f := spore.NewJit(fn, spore.JitConfig{Inputs: spec})
					if err := f.CompileSpec(); err != nil {
						b.Fatal(err)
					}
					f.Call(other) // serving already, at another size
					b.StartTimer()
					f.Call(x)
				}
			})
			b.Run(fmt.Sprintf("%s/batch%d/pershape-first", m.name, n), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					f := spore.NewJit(fn)
					f.Call(x)
				}
			})
		}
	}
}

// BenchmarkDynamicSweep calls a dynamic plan at every batch size from 1
// to the bound: "first" times the first sweep of a function whose
// signature was compiled at load time (every size new to it), "warm" a
// later sweep (every size seen). Their ratio is the cost of a new size;
// summing over the sizes evens out the noise of a shared machine.
func BenchmarkDynamicSweep(b *testing.B) {
	const bound = 32
	net := models.NewLeNet5(10)
	xs := make([]*spore.Tensor, bound+1)
	for n := 1; n <= bound; n++ {
		xs[n] = dynInput(n, 1, 28, 28)
	}
	spec := []spore.InputSpec{{DType: spore.Float32, Shape: []int{-1, 1, 28, 28}, Max: []int{bound}}}
	fn := func(xs ...*spore.Tensor) *spore.Tensor { return net.Base().Call(xs...) }
	sweep := func(f *spore.JitFunc[func(...*spore.Tensor) *spore.Tensor]) {
		for n := 1; n <= bound; n++ {
			f.Call(xs[n])
		}
	}
	b.Run("first", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			f := spore.NewJit(fn, spore.JitConfig{Inputs: spec})
			if err := f.CompileSpec(); err != nil {
				b.Fatal(err)
			}
			f.Call(xs[bound])
			b.StartTimer()
			sweep(f)
		}
	})
	b.Run("warm", func(b *testing.B) {
		f := spore.NewJit(fn, spore.JitConfig{Inputs: spec})
		sweep(f)
		for b.Loop() {
			sweep(f)
		}
	})
}

// BenchmarkDynamicWarm compares a warm call of the dynamic plan with one
// of a per-shape plan on the seed network: the dynamic plan's per-call
// overhead (checking the sizes, and re-pointing headers when they change)
// should not show. "alternating" switches between two batch sizes on
// every call.
func BenchmarkDynamicWarm(b *testing.B) {
	net := models.NewNetwork()
	fn := func(xs ...*spore.Tensor) *spore.Tensor { return net.Base().Call(xs...) }
	for _, n := range []int{1, 16} {
		x, y := dynInput(n, 1, 28, 28), dynInput(n+1, 1, 28, 28)
		b.Run(fmt.Sprintf("batch%d/pershape", n), func(b *testing.B) {
			f := spore.NewJit(fn)
			f.Call(x)
			for b.Loop() {
				f.Call(x)
			}
		})
		b.Run(fmt.Sprintf("batch%d/dynamic", n), func(b *testing.B) {
			f := seedDyn(b, net, 32)
			f.Call(x)
			for b.Loop() {
				f.Call(x)
			}
		})
		b.Run(fmt.Sprintf("batch%d/dynamic-alternating", n), func(b *testing.B) {
			f := seedDyn(b, net, 32)
			xs := []*spore.Tensor{x, y}
			i := 0
			for b.Loop() {
				f.Call(xs[i&1])
				i++
			}
		})
	}
}
