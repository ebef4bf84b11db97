package ops

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"sync"
	"testing"

	"github.com/sporeml/spore/internal/kernels/parallel"
	"github.com/sporeml/spore/tensor"
)

// engineCase is one convolution of the engine's tests.
type engineCase struct {
	n, c, h, w, o, kh, kw int
	s, d, groups          int
	pads                  [4]int
}

func (c engineCase) String() string {
	return fmt.Sprintf("n%d_c%d_%dx%d_o%d_k%dx%d_s%d_d%d_g%d_p%v", c.n, c.c, c.h, c.w, c.o, c.kh, c.kw, c.s, c.d, c.groups, c.pads)
}

func (c engineCase) attrs() ConvAttrs {
	return ConvAttrs{Stride: [2]int{c.s, c.s}, Dilation: [2]int{c.d, c.d}, Pads: c.pads, Groups: c.groups}
}

// valid reports whether the window fits the padded input.
func (c engineCase) valid() bool {
	ekh, ekw := (c.kh-1)*c.d+1, (c.kw-1)*c.d+1
	return c.h+c.pads[0]+c.pads[1] >= ekh && c.w+c.pads[2]+c.pads[3] >= ekw &&
		c.c%c.groups == 0 && c.o%c.groups == 0
}

// engineCases is the table: every algorithm's shapes, with odd channel
// counts and extents (not multiples of the vector width), batches of 1 to
// 3, strides, paddings, dilations and groups.
func engineCases() []engineCase {
	var cs []engineCase
	add := func(c engineCase) {
		if c.valid() {
			cs = append(cs, c)
		}
	}
	batches := []int{1, 2, 3}
	chans := []int{1, 3, 8, 17, 32, 96}
	extents := []int{1, 5, 7, 14, 17, 56}
	i := 0
	// Dense and grouped convolutions, kernels 1/3/5/7.
	for _, k := range []int{1, 3, 5, 7} {
		for _, hw := range extents {
			for ci, c := range chans {
				o := chans[(ci+i)%len(chans)]
				n := batches[i%3]
				s := 1 + i%2
				d := 1 + (i/3)%2
				pad := (k / 2) * (i % 3) / 2
				if hw == 56 && c*o > 32*32 {
					continue // keep the table quick
				}
				add(engineCase{n: n, c: c, h: hw, w: hw, o: o, kh: k, kw: k, s: s, d: d, groups: 1, pads: [4]int{pad, pad, pad, pad}})
				add(engineCase{n: n, c: c, h: hw, w: hw + 2, o: o, kh: k, kw: k, s: 1, d: 1, groups: 1, pads: [4]int{k / 2, k / 2, k / 2, k / 2}})
				if c%2 == 0 && o%2 == 0 {
					add(engineCase{n: n, c: c, h: hw, w: hw, o: o, kh: k, kw: k, s: s, d: 1, groups: 2, pads: [4]int{pad, pad + 1, pad, pad}})
				}
				// Depthwise, and depthwise with two outputs per channel.
				add(engineCase{n: n, c: c, h: hw, w: hw, o: c, kh: k, kw: k, s: s, d: d, groups: c, pads: [4]int{pad, pad, pad, pad}})
				add(engineCase{n: n, c: c, h: hw + 1, w: hw, o: 2 * c, kh: k, kw: k, s: 2, d: 1, groups: c, pads: [4]int{k / 2, 0, 1, k / 2}})
				i++
			}
		}
	}
	// Pointwise, asymmetric padding, and 3×3 stride 1 for Winograd.
	for _, hw := range extents {
		for ci, c := range chans {
			o := chans[(ci+3)%len(chans)]
			add(engineCase{n: 1 + ci%3, c: c, h: hw, w: hw, o: o, kh: 1, kw: 1, s: 1, d: 1, groups: 1})
			add(engineCase{n: 1 + ci%3, c: c, h: hw, w: hw, o: o, kh: 1, kw: 1, s: 2, d: 1, groups: 1})
			add(engineCase{n: 1 + ci%3, c: c, h: hw, w: hw + 3, o: o, kh: 3, kw: 3, s: 1, d: 1, groups: 1, pads: [4]int{1, 1, 1, 1}})
			add(engineCase{n: 1 + ci%3, c: c, h: hw, w: hw, o: o, kh: 3, kw: 3, s: 1, d: 1, groups: 1, pads: [4]int{1, 0, 0, 1}})
		}
	}
	return cs
}

// engineAlgos are the algorithms that apply to g.
func engineAlgos(g *convGeom) []convAlgo {
	as := []convAlgo{algoGEMM}
	if g.cg == 1 {
		as = append(as, algoDepthwise)
	}
	if g.isPointwise() {
		as = append(as, algoPointwise)
	}
	if g.canWinograd() {
		as = append(as, algoWinograd)
	}
	if g.pitched() {
		as = append(as, algoPitched)
	}
	return as
}

// engineTolerance is the bound on |engine − reference| per output, in
// units of the output's Σ|x·w| over its window: 1e-5 for the algorithms
// that sum the same products in another order, and 1e-4 for Winograd,
// whose transforms add and subtract inputs (and filter taps) before
// multiplying, so that its rounding errors scale with the tile's inputs
// rather than with each product.
func engineTolerance(a convAlgo) float64 {
	if a == algoWinograd {
		return 1e-4
	}
	return 1e-5
}

func randSlice(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(r.NormFloat64())
	}
	return s
}

func absSlice(s []float32) []float32 {
	a := make([]float32, len(s))
	for i, v := range s {
		a[i] = float32(math.Abs(float64(v)))
	}
	return a
}

// TestConvEngineAlgorithms checks every algorithm on every shape it
// applies to against the per-image im2col path, and that the tiles it
// hands to the ConvTile cover the output once, each already final.
func TestConvEngineAlgorithms(t *testing.T) {
	defer func() { forceAlgo = nil }()
	r := rand.New(rand.NewSource(1))
	counts := map[convAlgo]int{}
	for _, tc := range engineCases() {
		xs := tensor.Shape{tc.n, tc.c, tc.h, tc.w}
		ws := tensor.Shape{tc.o, tc.c / tc.groups, tc.kh, tc.kw}
		g := convGeometry("Conv2D", tc.attrs(), xs, ws)
		x, w := randSlice(r, xs.Size()), randSlice(r, ws.Size())
		size := g.n * g.o * g.p()
		want, mag := make([]float32, size), make([]float32, size)
		conv2DForward(impl32, &g, x, w, want)
		conv2DForward(impl32, &g, absSlice(x), absSlice(w), mag)
		for _, algo := range engineAlgos(&g) {
			counts[algo]++
			forceAlgo = &algo
			got := make([]float32, size)
			for i := range got {
				got[i] = float32(math.NaN()) // every output must be written
			}
			cover := make([]int32, size)
			var mu sync.Mutex
			bad := ""
			tile := func(n, c0, c1, p0, p1 int) {
				mu.Lock()
				defer mu.Unlock()
				if n < 0 || n >= g.n || c0 < 0 || c1 > g.o || c0 >= c1 || p0 < 0 || p1 > g.p() || p0 >= p1 {
					bad = fmt.Sprintf("tile (%d, %d:%d, %d:%d) outside the output", n, c0, c1, p0, p1)
					return
				}
				for c := c0; c < c1; c++ {
					for p := p0; p < p1; p++ {
						i := (n*g.o+c)*g.p() + p
						cover[i]++
						if got[i] != got[i] && bad == "" {
							bad = fmt.Sprintf("tile (%d, %d:%d, %d:%d) delivered before output %d was written", n, c0, c1, p0, p1, i)
						}
					}
				}
			}
			Conv2DFloat32(tc.attrs(), xs, ws, x, w, got, tile)
			if bad != "" {
				t.Fatalf("%v %v: %s", tc, algo, bad)
			}
			tol := engineTolerance(algo)
			for i := range got {
				if cover[i] != 1 {
					t.Fatalf("%v %v: output %d covered by %d tiles", tc, algo, i, cover[i])
				}
				if d := math.Abs(float64(got[i] - want[i])); !(d <= tol*float64(mag[i])+1e-30) {
					t.Fatalf("%v %v: output %d = %g, want %g (bound %g)", tc, algo, i, got[i], want[i], tol*float64(mag[i]))
				}
			}
		}
	}
	for _, a := range []convAlgo{algoGEMM, algoPointwise, algoDepthwise, algoWinograd, algoPitched} {
		if counts[a] < 20 {
			t.Errorf("only %d shapes for %v", counts[a], a)
		}
	}
}

// TestConvEngineChoice checks the algorithm the cost model picks for the
// layer shapes of the vision models.
func TestConvEngineChoice(t *testing.T) {
	tests := []struct {
		name string
		tc   engineCase
		want convAlgo
	}{
		{"resnet 3x3 256 b16", engineCase{n: 16, c: 256, h: 14, w: 14, o: 256, kh: 3, kw: 3, s: 1, d: 1, groups: 1, pads: [4]int{1, 1, 1, 1}}, algoWinograd},
		{"resnet 3x3 128 b16", engineCase{n: 16, c: 128, h: 28, w: 28, o: 128, kh: 3, kw: 3, s: 1, d: 1, groups: 1, pads: [4]int{1, 1, 1, 1}}, algoWinograd},
		{"resnet 3x3 256 b1", engineCase{n: 1, c: 256, h: 14, w: 14, o: 256, kh: 3, kw: 3, s: 1, d: 1, groups: 1, pads: [4]int{1, 1, 1, 1}}, algoPitched},
		{"resnet 3x3 512 b16", engineCase{n: 16, c: 512, h: 7, w: 7, o: 512, kh: 3, kw: 3, s: 1, d: 1, groups: 1, pads: [4]int{1, 1, 1, 1}}, algoPitched},
		{"resnet 3x3 128 b1", engineCase{n: 1, c: 128, h: 28, w: 28, o: 128, kh: 3, kw: 3, s: 1, d: 1, groups: 1, pads: [4]int{1, 1, 1, 1}}, algoGEMM},
		{"resnet stem", engineCase{n: 1, c: 3, h: 224, w: 224, o: 64, kh: 7, kw: 7, s: 2, d: 1, groups: 1, pads: [4]int{3, 3, 3, 3}}, algoGEMM},
		{"resnet 3x3 s2", engineCase{n: 1, c: 64, h: 56, w: 56, o: 128, kh: 3, kw: 3, s: 2, d: 1, groups: 1, pads: [4]int{1, 1, 1, 1}}, algoGEMM},
		{"resnet downsample", engineCase{n: 1, c: 64, h: 56, w: 56, o: 128, kh: 1, kw: 1, s: 2, d: 1, groups: 1}, algoGEMM},
		{"mobilenet dw 3x3", engineCase{n: 1, c: 64, h: 112, w: 112, o: 64, kh: 3, kw: 3, s: 2, d: 1, groups: 64, pads: [4]int{1, 1, 1, 1}}, algoDepthwise},
		{"mobilenet expand", engineCase{n: 1, c: 40, h: 28, w: 28, o: 120, kh: 1, kw: 1, s: 1, d: 1, groups: 1}, algoPointwise},
		{"tiny 3x3", engineCase{n: 1, c: 3, h: 5, w: 5, o: 3, kh: 3, kw: 3, s: 1, d: 1, groups: 1, pads: [4]int{1, 1, 1, 1}}, algoPitched},
	}
	for _, tt := range tests {
		g := convGeometry("Conv2D", tt.tc.attrs(), tensor.Shape{tt.tc.n, tt.tc.c, tt.tc.h, tt.tc.w},
			tensor.Shape{tt.tc.o, tt.tc.c / tt.tc.groups, tt.tc.kh, tt.tc.kw})
		if got := newConvPlan(&g).algo; got != tt.want {
			t.Errorf("%s: chose %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestConvEngineAllocs checks that a planned convolution allocates
// nothing per call, on one thread and on the pool.
func TestConvEngineAllocs(t *testing.T) {
	for _, workers := range []int{1, 2} {
		old := parallel.SetWorkers(workers)
		for _, tc := range []engineCase{
			{n: 2, c: 32, h: 14, w: 14, o: 32, kh: 3, kw: 3, s: 1, d: 1, groups: 1, pads: [4]int{1, 1, 1, 1}},
			{n: 2, c: 32, h: 14, w: 14, o: 32, kh: 3, kw: 3, s: 2, d: 1, groups: 1, pads: [4]int{1, 1, 1, 1}},
			{n: 2, c: 32, h: 14, w: 14, o: 32, kh: 5, kw: 5, s: 1, d: 1, groups: 32, pads: [4]int{2, 2, 2, 2}},
			{n: 2, c: 32, h: 14, w: 14, o: 64, kh: 1, kw: 1, s: 1, d: 1, groups: 1},
		} {
			xs := tensor.Shape{tc.n, tc.c, tc.h, tc.w}
			ws := tensor.Shape{tc.o, tc.c / tc.groups, tc.kh, tc.kw}
			g := convGeometry("Conv2D", tc.attrs(), xs, ws)
			x, w := make([]float32, xs.Size()), make([]float32, ws.Size())
			out := make([]float32, g.n*g.o*g.p())
			var tiles int
			tile := ConvTile(func(n, c0, c1, p0, p1 int) { tiles++ })
			Conv2DFloat32(tc.attrs(), xs, ws, x, w, out, nil) // plan and fill the pools
			if a := testing.AllocsPerRun(20, func() { convEngine(&g, x, w, out, tile) }); a != 0 {
				t.Errorf("%v on %d threads: %v allocations per call", tc, workers, a)
			}
		}
		parallel.SetWorkers(old)
	}
}

// TestConv2DFloat32ShortBuffers checks that buffers too short for the
// shapes are a clear error, not an index panic deep in a kernel.
func TestConv2DFloat32ShortBuffers(t *testing.T) {
	a := ConvAttrs{Stride: [2]int{1, 1}, Dilation: [2]int{1, 1}, Groups: 1}
	xs, ws := tensor.Shape{1, 2, 5, 5}, tensor.Shape{3, 2, 3, 3}
	for _, tc := range []struct {
		name      string
		x, w, out int
	}{
		{"input", 49, 54, 27},
		{"filter", 50, 53, 27},
		{"output", 50, 54, 26},
	} {
		func() {
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(fmt.Sprint(r), "too short") {
					t.Errorf("%s: got %v, want a too-short error", tc.name, r)
				}
			}()
			Conv2DFloat32(a, xs, ws, make([]float32, tc.x), make([]float32, tc.w), make([]float32, tc.out), nil)
		}()
	}
}
