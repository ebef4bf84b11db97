package nn_test

import (
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/ops"
)

// BenchmarkSeedNetwork runs the seed network's inference, batch 64, in
// both modes.
func BenchmarkSeedNetwork(b *testing.B) {
	for _, m := range []struct {
		name string
		mode spore.Mode
	}{{"PyNative", spore.PyNativeMode}, {"Graph", spore.GraphMode}} {
		b.Run(m.name, func(b *testing.B) {
			spore.SetSeed(1)
			net := newNetwork()
			x := ops.Ones(64, 1, 28, 28)
			withMode(m.mode, spore.O1, func() {
				net.Call(x)
				b.ResetTimer()
				for b.Loop() {
					net.Call(x)
				}
			})
		})
	}
}

// BenchmarkCallOverhead compares Call with a direct Construct on a tiny
// input, where the dispatch cost shows.
func BenchmarkCallOverhead(b *testing.B) {
	r := nn.NewReLU()
	x := ops.Ones(4)
	b.Run("Construct", func(b *testing.B) {
		for b.Loop() {
			r.Construct(x)
		}
	})
	b.Run("Call", func(b *testing.B) {
		for b.Loop() {
			r.Call(x)
		}
	})
}
