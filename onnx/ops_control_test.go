package onnx

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	spore "github.com/sporeml/spore"
	"github.com/sporeml/spore/onnx/internal/onnxpb"
	"github.com/sporeml/spore/tensor"
)

// countLoopModel adds 1 to an int64 scalar x, trips times: a constant-trip
// Loop that carries one one-element tensor and has no scan outputs.
func countLoopModel(trips int64) *onnxpb.ModelProto {
	body := graphProto("body", []*onnxpb.NodeProto{
		constNode("one", int64Tensor("", nil, []int64{1})),
		node("Add", "body/add", []string{"v", "one"}, []string{"v2"}),
		node("Identity", "body/cond", []string{"c"}, []string{"c2"}),
	}, nil, []*onnxpb.ValueInfoProto{
		valueInfoProto("i", onnxpb.TensorProto_INT64), valueInfoProto("c", onnxpb.TensorProto_BOOL), valueInfoProto("v", onnxpb.TensorProto_INT64),
	}, []*onnxpb.ValueInfoProto{valueInfoProto("c2", onnxpb.TensorProto_BOOL), valueInfoProto("v2", onnxpb.TensorProto_INT64)})
	g := graphProto("countloop", []*onnxpb.NodeProto{
		constNode("trips", int64Tensor("", nil, []int64{trips})),
		node("Loop", "loop", []string{"trips", "", "x"}, []string{"y"}, attrGraph("body", body)),
	}, nil,
		[]*onnxpb.ValueInfoProto{valueInfoProto("x", onnxpb.TensorProto_INT64)},
		[]*onnxpb.ValueInfoProto{valueInfoProto("y", onnxpb.TensorProto_INT64)})
	return modelProto(17, g)
}

// nestedCountLoopModel is countLoopModel's loop inside the body of a Loop
// of one trip: the inner loop's steps run within one step of the outer.
func nestedCountLoopModel(trips int64) *onnxpb.ModelProto {
	inner := countLoopModel(trips).GetGraph()
	outer := graphProto("outer", []*onnxpb.NodeProto{
		constNode("trips_in", int64Tensor("", nil, []int64{trips})),
		node("Loop", "inner", []string{"trips_in", "", "w"}, []string{"w2"}, attrGraph("body", inner.GetNode()[1].GetAttribute()[0].GetG())),
		node("Identity", "outer/cond", []string{"oc"}, []string{"oc2"}),
	}, nil, []*onnxpb.ValueInfoProto{
		valueInfoProto("oi", onnxpb.TensorProto_INT64), valueInfoProto("oc", onnxpb.TensorProto_BOOL), valueInfoProto("w", onnxpb.TensorProto_INT64),
	}, []*onnxpb.ValueInfoProto{valueInfoProto("oc2", onnxpb.TensorProto_BOOL), valueInfoProto("w2", onnxpb.TensorProto_INT64)})
	g := graphProto("nestedloop", []*onnxpb.NodeProto{
		constNode("one_trip", int64Tensor("", nil, []int64{1})),
		node("Loop", "outer", []string{"one_trip", "", "x"}, []string{"y"}, attrGraph("body", outer)),
	}, nil,
		[]*onnxpb.ValueInfoProto{valueInfoProto("x", onnxpb.TensorProto_INT64)},
		[]*onnxpb.ValueInfoProto{valueInfoProto("y", onnxpb.TensorProto_INT64)})
	return modelProto(17, g)
}

// peakHeap runs f and returns the largest live heap (what a collection
// found reachable) seen while it ran, above the live heap before it. The
// collector runs often meanwhile (GOGC 10), and the live heap, not the
// heap in use, is what is sampled: garbage waiting for a collection, which
// grows with the heap the rest of the process holds, is not counted.
func peakHeap(f func()) uint64 {
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	live := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	runtime.GC()
	base := live()
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if l := live(); l > base && l-base > peak.Load() {
					peak.Store(l - base)
				}
			}
		}
	}()
	f()
	close(done)
	wg.Wait()
	runtime.GC()
	if l := live(); l > base && l-base > peak.Load() {
		peak.Store(l - base)
	}
	return peak.Load()
}

// TestLoopMemoryConstant runs a constant-trip Loop carrying one scalar at
// 10^5 trips and at 10^7 in Graph mode, 10^6 in PyNative mode (which runs
// the ONNX body eagerly, about 10 µs a trip: 10^7 would take minutes;
// SPORE_LOOP_TRIPS sets the flat loop's long runs: CI runs it at 10^7 in
// both modes), and the same loop nested in
// another's body at 10^4 and 3·10^5 trips in PyNative mode. It checks the
// answer and that the peak heap does not grow with the trip count: a loop
// that kept anything per trip (the iteration numbers, one tensor per step,
// marks of every step's values) holds hundreds of megabytes at 10^6.
func TestLoopMemoryConstant(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 10^7 loop trips")
	}
	var override int64
	if v := os.Getenv("SPORE_LOOP_TRIPS"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		override = n
	}
	// A margin far below what per-trip storage would take at the long
	// runs (the iteration numbers alone are 8 MB at 10^6, a tensor a
	// step over 100 MB at 3·10^5) and well above the collector's slack.
	const margin = 16 << 20
	cases := []struct {
		name        string
		model       func(int64) *onnxpb.ModelProto
		mode        spore.Mode
		short, long int64
	}{
		{"flat", countLoopModel, spore.PyNativeMode, 100_000, 1_000_000},
		{"flat", countLoopModel, spore.GraphMode, 100_000, 10_000_000},
		{"nested", nestedCountLoopModel, spore.PyNativeMode, 10_000, 300_000},
	}
	for _, c := range cases {
		t.Run(c.name+"/"+c.mode.String(), func(t *testing.T) {
			long := c.long
			if override > 0 && c.name == "flat" {
				long = override
			}
			peaks := map[int64]uint64{}
			for _, trips := range []int64{c.short, long} {
				m := mustLoad(t, marshal(t, c.model(trips)))
				x := tensor.Scalar(int64(5))
				var got []*tensor.Tensor
				var err error
				start := time.Now()
				peaks[trips] = peakHeap(func() {
					inMode(c.mode, func() { got, err = m.Run(x) })
				})
				if err != nil {
					t.Fatal(err)
				}
				if v := got[0].Int64s()[0]; v != 5+trips {
					t.Fatalf("%d trips: y = %d, want %d", trips, v, 5+trips)
				}
				t.Logf("%d trips: peak heap +%d KiB in %v", trips, peaks[trips]>>10, time.Since(start).Round(time.Millisecond))
			}
			if peaks[long] > peaks[c.short]+margin {
				t.Errorf("peak heap %d KiB at %d trips, %d KiB at %d: it grows with the trip count", peaks[long]>>10, long, peaks[c.short]>>10, c.short)
			}
		})
	}
}

// mulLoopModel multiplies x by the parameter w three times: a constant-trip
// Loop with no scan outputs whose body reads a parameter.
func mulLoopModel() *onnxpb.ModelProto {
	body := graphProto("body", []*onnxpb.NodeProto{
		node("Mul", "body/mul", []string{"v", "w"}, []string{"v2"}),
		node("Identity", "body/cond", []string{"c"}, []string{"c2"}),
	}, nil, []*onnxpb.ValueInfoProto{
		valueInfoProto("i", onnxpb.TensorProto_INT64), valueInfoProto("c", onnxpb.TensorProto_BOOL), valueInfoProto("v", onnxpb.TensorProto_FLOAT),
	}, []*onnxpb.ValueInfoProto{valueInfoProto("c2", onnxpb.TensorProto_BOOL), valueInfoProto("v2", onnxpb.TensorProto_FLOAT)})
	g := graphProto("mulloop", []*onnxpb.NodeProto{
		constNode("trips", int64Tensor("", nil, []int64{3})),
		node("Loop", "loop", []string{"trips", "", "x"}, []string{"y"}, attrGraph("body", body)),
	}, []*onnxpb.TensorProto{floatTensor("w", []int64{3}, []float32{2, -1, 0.5})},
		[]*onnxpb.ValueInfoProto{valueInfoProto("x", onnxpb.TensorProto_FLOAT, -1, 3)},
		[]*onnxpb.ValueInfoProto{valueInfoProto("y", onnxpb.TensorProto_FLOAT, -1, 3)})
	return modelProto(17, g)
}

// TestLoopGradientThroughParameter differentiates a Loop without scan
// outputs whose body reads a parameter, in an eval-mode model: Graph mode
// must keep the differentiable Scan there, not the While that a loop
// nothing differentiates runs as.
func TestLoopGradientThroughParameter(t *testing.T) {
	checkGradients(t, mulLoopModel(), tensor.FromSlice([]float32{1, 2, 3, 0.5, 0.25, 1}, 2, 3))
}
