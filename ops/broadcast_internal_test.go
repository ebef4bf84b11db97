package ops

import (
	"fmt"
	"testing"

	"github.com/sporeml/spore/tensor"
)

// mapRuns must give map2's result wherever it takes a broadcast, and
// decline the ones it cannot split into runs.
func TestMapRunsMatchesMap2(t *testing.T) {
	cases := []struct {
		x, y  tensor.Shape
		taken bool
	}{
		{tensor.Shape{4, 8, 5, 6}, tensor.Shape{1, 8, 1, 1}, true}, // per channel
		{tensor.Shape{4, 8, 5, 6}, tensor.Shape{8, 1, 1}, true},    // per channel, rank lower
		{tensor.Shape{4, 8, 5, 6}, tensor.Shape{4, 1, 1, 1}, true}, // per image
		{tensor.Shape{4, 8, 5, 6}, tensor.Shape{1, 1, 5, 6}, true}, // one plane for every image and channel
		{tensor.Shape{4, 8, 30}, tensor.Shape{30}, true},           // a bias row
		{tensor.Shape{4, 8, 5, 6}, tensor.Shape{4, 8, 1, 1}, true}, // per image and channel
		{tensor.Shape{4, 1, 8, 20}, tensor.Shape{1, 1, 8, 1}, true},
		{tensor.Shape{3, 20, 2}, tensor.Shape{3, 1, 2}, false}, // runs of 2: too short
		{tensor.Shape{4, 8, 5, 6}, tensor.Shape{1, 8, 1, 6}, false},
		{tensor.Shape{2, 1, 1, 1, 1, 1, 1, 1, 32}, tensor.Shape{32}, false}, // rank 9
	}
	scal := func(d, a []float32, s float32) {
		for i := range d {
			d[i] = a[i] - s
		}
	}
	body := func(d, a, b []float32) {
		for i := range d {
			d[i] = a[i] - b[i]
		}
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.x, c.y), func(t *testing.T) {
			x := tensor.RandNormal(tensor.Float32, 0, 1, c.x...).Float32s()
			y := tensor.RandNormal(tensor.Float32, 0, 1, c.y...).Float32s()
			want := make([]float32, len(x))
			map2(want, x, y, c.x, c.y, c.x, func(a, b float32) float32 { return a - b })
			got := make([]float32, len(x))
			if taken := mapRuns(got, x, y, c.y, c.x, body, scal); taken != c.taken {
				t.Fatalf("mapRuns took the case: %v, want %v", taken, c.taken)
			}
			if !c.taken {
				return
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("element %d: %v, want %v", i, got[i], want[i])
				}
			}
		})
	}
}

// Through the op, a per-channel Sub (not commutative, operand on the
// right) and a per-channel Mul with the broadcast operand on the left.
func TestPerChannelBinaryOps(t *testing.T) {
	x := tensor.RandNormal(tensor.Float32, 0, 1, 2, 3, 4, 5)
	c := tensor.FromSlice([]float32{1, -2, 0.5}, 1, 3, 1, 1)
	sub, mul := Sub(x, c).Float32s(), Mul(c, x).Float32s()
	xs, cs := x.Float32s(), c.Float32s()
	for i := range xs {
		ch := i / 20 % 3
		if sub[i] != xs[i]-cs[ch] || mul[i] != cs[ch]*xs[i] {
			t.Fatalf("element %d (channel %d): Sub %v Mul %v, want %v %v", i, ch, sub[i], mul[i], xs[i]-cs[ch], cs[ch]*xs[i])
		}
	}
}
