package onnx

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/sporeml/spore/onnx/internal/onnxpb"
)

// allocBound is the most FuzzLoad lets Load allocate for a file of n
// bytes: protobuf decodes a one-byte varint into an 8-byte int64 and the
// decoder copies it once more into a tensor, so a few dozen bytes per
// byte of input is in proportion; gigabytes for a kilobyte file (a huge
// declared dimension believed) is not.
func allocBound(n int) uint64 { return 64*uint64(n) + 4<<20 }

// fuzzSeeds are the models the fuzzer starts from: the Go-built ones, the
// committed PyTorch fixtures and hostile files, and truncations of each.
func fuzzSeeds(t testing.TB) [][]byte {
	var seeds [][]byte
	huge := mlpModel()
	huge.Graph.Initializer[0] = floatTensor("fc1.weight", []int64{1 << 20, 1 << 10}, []float32{1, 2})
	hugeInput := mlpModel()
	hugeInput.Graph.Input[0] = valueInfoProto("x", 1, 1<<40, 1<<40)
	for _, mp := range []*onnxpb.ModelProto{mlpModel(), bnModel(), ifModel(), loopModel(), whileModel(), scanModel(true), huge, hugeInput} {
		seeds = append(seeds, marshal(t, mp))
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "torch", "*.onnx"))
	hostile, _ := filepath.Glob(filepath.Join("testdata", "hostile", "*.onnx"))
	files = append(files, hostile...)
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && len(b) < 1<<20 {
			seeds = append(seeds, b)
		}
	}
	n := len(seeds)
	for _, s := range seeds[:n] {
		for _, cut := range []int{1, 7, len(s) / 3, len(s) / 2, len(s) - 1} {
			if cut > 0 && cut < len(s) {
				seeds = append(seeds, s[:cut])
			}
		}
	}
	return seeds
}

// FuzzLoad feeds arbitrary bytes to Load and Check: they must return a
// model or an error, never panic, and allocate in proportion to the input.
// Models that load are not run (a valid Loop may legitimately run long).
func FuzzLoad(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		m, err := Load(bytes.NewReader(data))
		runtime.ReadMemStats(&after)
		if got := after.TotalAlloc - before.TotalAlloc; got > allocBound(len(data)) {
			t.Fatalf("Load allocated %d bytes for a %d-byte input (bound %d)", got, len(data), allocBound(len(data)))
		}
		if err == nil && m == nil {
			t.Fatal("Load returned neither a model nor an error")
		}
		if err != nil && err.Error() == "" {
			t.Fatal("empty error message")
		}
		rep, err := Check(bytes.NewReader(data))
		if err == nil {
			_ = rep.String()
		}
	})
}

// TestLoadSeedsAllocation runs the fuzz seeds as a plain test, so that the
// allocation bound is checked on every test run, not only under -fuzz.
func TestLoadSeedsAllocation(t *testing.T) {
	for _, s := range fuzzSeeds(t) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, _ = Load(bytes.NewReader(s))
		runtime.ReadMemStats(&after)
		if got := after.TotalAlloc - before.TotalAlloc; got > allocBound(len(s)) {
			t.Errorf("Load allocated %d bytes for a %d-byte input", got, len(s))
		}
	}
}
