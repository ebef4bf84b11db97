package onnx

import (
	"os"
	"runtime"
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

// peakHeap runs f while sampling the live heap, and returns the largest
// sample above the heap before f ran (after a collection). Sampling every
// millisecond sees any structure that grows with f's work long before f
// ends.
func peakHeap(f func()) uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		var s runtime.MemStats
		for {
			select {
			case <-done:
				return
			case <-t.C:
				runtime.ReadMemStats(&s)
				if s.HeapAlloc > base && s.HeapAlloc-base > peak.Load() {
					peak.Store(s.HeapAlloc - base)
				}
			}
		}
	}()
	f()
	close(done)
	wg.Wait()
	return peak.Load()
}

// TestLoopMemoryConstant runs a constant-trip Loop carrying one scalar at
// 10^5 trips and at 10^7 in Graph mode, 10^6 in PyNative mode (which runs
// the ONNX body eagerly, about 10 µs a trip: 10^7 would take minutes;
// SPORE_LOOP_TRIPS sets the long run of both), and checks the answer and
// that the peak heap does not grow with the trip count: a loop that kept
// anything per trip (the iteration numbers, one tensor per step, marks of
// every step's values) holds hundreds of megabytes at 10^6.
func TestLoopMemoryConstant(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 10^7 loop trips")
	}
	longs := map[spore.Mode]int64{spore.PyNativeMode: 1_000_000, spore.GraphMode: 10_000_000}
	if v := os.Getenv("SPORE_LOOP_TRIPS"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		longs[spore.PyNativeMode], longs[spore.GraphMode] = n, n
	}
	// A margin far below what per-trip storage would take at 10^6 trips
	// (the iteration numbers alone are 8 MB at 10^6, 80 MB at 10^7) and
	// well above the collector's slack.
	const margin = 16 << 20
	for _, mode := range []spore.Mode{spore.PyNativeMode, spore.GraphMode} {
		t.Run(mode.String(), func(t *testing.T) {
			long := longs[mode]
			peaks := map[int64]uint64{}
			for _, trips := range []int64{100_000, long} {
				m := mustLoad(t, marshal(t, countLoopModel(trips)))
				x := tensor.Scalar(int64(5))
				var got []*tensor.Tensor
				var err error
				start := time.Now()
				peaks[trips] = peakHeap(func() {
					inMode(mode, func() { got, err = m.Run(x) })
				})
				if err != nil {
					t.Fatal(err)
				}
				if v := got[0].Int64s()[0]; v != 5+trips {
					t.Fatalf("%d trips: y = %d, want %d", trips, v, 5+trips)
				}
				t.Logf("%d trips: peak heap +%d KiB in %v", trips, peaks[trips]>>10, time.Since(start).Round(time.Millisecond))
			}
			if peaks[long] > peaks[100_000]+margin {
				t.Errorf("peak heap %d KiB at %d trips, %d KiB at 10^5: it grows with the trip count", peaks[long]>>10, long, peaks[100_000]>>10)
			}
		})
	}
}
