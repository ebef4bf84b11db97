package ops

import (
	"fmt"
	"github.com/sporeml/spore/internal/testkit"
	"math"
	"testing"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// backCase is a convolution whose gradients the GEMM pieces must get
// right.
type backCase struct {
	n, c, h, w, o, kh, kw int
	opts                  Conv2DOpts
}

var backCases = []backCase{
	{1, 3, 7, 7, 5, 3, 3, Conv2DOpts{}},
	{2, 3, 7, 9, 4, 3, 3, Conv2DOpts{Padding: ExplicitPad(1, 1, 1, 1)}},
	{3, 5, 9, 8, 7, 3, 3, Conv2DOpts{Stride: [2]int{2, 2}, Padding: ExplicitPad(1, 0, 1, 2)}},
	{2, 6, 11, 11, 4, 3, 3, Conv2DOpts{Dilation: [2]int{2, 2}, Padding: ExplicitPad(2, 2, 2, 2), Groups: 2}},
	{3, 7, 6, 5, 9, 1, 1, Conv2DOpts{}},
	{2, 4, 9, 9, 6, 1, 1, Conv2DOpts{Stride: [2]int{2, 2}}},
	{1, 6, 10, 10, 6, 3, 3, Conv2DOpts{Groups: 6, Padding: ExplicitPad(1, 1, 1, 1), Stride: [2]int{2, 1}}},
	{2, 3, 17, 13, 8, 7, 7, Conv2DOpts{Stride: [2]int{2, 2}, Padding: ExplicitPad(3, 3, 3, 3)}},
	{3, 9, 5, 7, 6, 2, 3, Conv2DOpts{Stride: [2]int{1, 3}, Padding: ExplicitPad(0, 1, 2, 0), Groups: 3}},
	{2, 16, 7, 7, 32, 3, 3, Conv2DOpts{Padding: ExplicitPad(1, 1, 1, 1)}},
	// The last row and column are in no window (a ConvTranspose with an
	// output padding): their input gradient is zero.
	{2, 4, 8, 8, 6, 3, 3, Conv2DOpts{Stride: [2]int{2, 2}}},
}

// backGrads returns the input and filter gradients of c for dy, on the
// reference paths or on the GEMM pieces of cols columns (0: the default).
func backGrads(t *testing.T, dt tensor.DType, c backCase, x, w, dy *tensor.Tensor, reference bool, cols int) (dx, dw []float64) {
	t.Helper()
	oldRef, oldMin, oldCols := convBackReference, backGEMMMin, backPieceCols
	defer func() { convBackReference, backGEMMMin, backPieceCols = oldRef, oldMin, oldCols }()
	convBackReference, backGEMMMin, backPieceCols = reference, 0, cols
	a := convAttrs("test", c.opts, x.Shape(), w.Shape())
	gx := Conv2DBackpropInput(dy, w, ConvGradAttrs{a, x.Shape().Clone()})
	gw := Conv2DBackpropFilter(x, dy, ConvGradAttrs{a, w.Shape().Clone()})
	return Cast(gx, tensor.Float64).Float64s(), Cast(gw, tensor.Float64).Float64s()
}

// The GEMM-piece gradients agree with the per-image reference paths over
// odd shapes, strides, pads, dilations and groups, with pieces of a few
// rows, of whole images and of several images, in float32 (relative
// error 1e-5 of the largest magnitude: the sums run in another order)
// and float64 (1e-12).
func TestConvBackGEMMAgainstReference(t *testing.T) {
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		tol := 1e-5
		if dt == tensor.Float64 {
			tol = 1e-12
		}
		for i, c := range backCases {
			tensor.SetSeed(int64(i + 1))
			x := tensor.RandNormal(dt, 0, 1, c.n, c.c, c.h, c.w)
			groups := max(1, c.opts.Groups)
			w := tensor.RandNormal(dt, 0, 1, c.o, c.c/groups, c.kh, c.kw)
			y := Conv2D(x, w, c.opts)
			dy := tensor.RandNormal(dt, 0, 1, y.Shape()...)
			rdx, rdw := backGrads(t, dt, c, x, w, dy, true, 0)
			for _, cols := range []int{0, 1, 5, 40, 1000} {
				t.Run(fmt.Sprintf("%v/%d/cols=%d", dt, i, cols), func(t *testing.T) {
					dx, dw := backGrads(t, dt, c, x, w, dy, false, cols)
					if e := relErr(dx, rdx); e > tol {
						t.Errorf("input gradient of %+v differs by %.3g relative", c, e)
					}
					if e := relErr(dw, rdw); e > tol {
						t.Errorf("filter gradient of %+v differs by %.3g relative", c, e)
					}
				})
			}
		}
	}
}

// relErr is the largest difference of a and b over the largest magnitude
// of b (1 if b is all zero); +Inf if their lengths differ.
func relErr(a, b []float64) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	worst, scale := 0.0, 0.0
	for i := range a {
		worst = max(worst, math.Abs(a[i]-b[i]))
		scale = max(scale, math.Abs(b[i]))
	}
	if scale == 0 {
		scale = 1
	}
	return worst / scale
}

// BenchmarkConvBackResNet18 times both gradients of resnet18's
// convolution shapes at batch 16 on the reference paths and on the GEMM
// pieces, side by side, and reports GFLOP/s (2 flops a multiply-add, both
// gradients together).
func BenchmarkConvBackResNet18(b *testing.B) {
	shapes := []struct {
		name                  string
		n, c, h, o, k, stride int
	}{
		{"conv1_7x7s2", 16, 3, 224, 64, 7, 2},
		{"l1_3x3", 16, 64, 56, 64, 3, 1},
		{"l2_3x3s2", 16, 64, 56, 128, 3, 2},
		{"l2_1x1s2", 16, 64, 56, 128, 1, 2},
		{"l2_3x3", 16, 128, 28, 128, 3, 1},
		{"l3_3x3", 16, 256, 14, 256, 3, 1},
		{"l4_3x3", 16, 512, 7, 512, 3, 1},
	}
	for _, s := range shapes {
		pad := s.k / 2
		opts := Conv2DOpts{Stride: [2]int{s.stride, s.stride}, Padding: ExplicitPad(pad, pad, pad, pad)}
		x := tensor.RandNormal(tensor.Float32, 0, 1, s.n, s.c, s.h, s.h)
		w := tensor.RandNormal(tensor.Float32, 0, 1, s.o, s.c, s.k, s.k)
		y := Conv2D(x, w, opts)
		dy := tensor.RandNormal(tensor.Float32, 0, 1, y.Shape()...)
		a := convAttrs("bench", opts, x.Shape(), w.Shape())
		flops := 4.0 * float64(y.Shape().Size()) * float64(s.c*s.k*s.k)
		for _, ref := range []bool{true, false} {
			name := "gemm"
			if ref {
				name = "reference"
			}
			b.Run(s.name+"/"+name, func(b *testing.B) {
				old := convBackReference
				defer func() { convBackReference = old }()
				convBackReference = ref
				cpu0 := testkit.ProcessCPU().Seconds()
				for range b.N {
					Conv2DBackpropInput(dy, w, ConvGradAttrs{a, x.Shape().Clone()})
					Conv2DBackpropFilter(x, dy, ConvGradAttrs{a, w.Shape().Clone()})
				}
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				if cpu := testkit.ProcessCPU().Seconds() - cpu0; cpu > 0 {
					b.ReportMetric(flops*float64(b.N)/cpu/1e9, "cpuGFLOP/s")
				}
			})
		}
	}
}

// BenchmarkMaxPoolGradResNet18 times the gradient of resnet18's max
// pooling (3×3 windows at stride 2, padded by 1, over 64 planes of 112×112
// at batch 16) on the window-by-window reference loop and on
// conv.MaxPoolBackward, side by side.
func BenchmarkMaxPoolGradResNet18(b *testing.B) {
	x := tensor.RandNormal(tensor.Float32, 0, 1, 16, 64, 112, 112)
	a := poolAttrs("MaxPool2D", x, [2]int{3, 3}, [2]int{2, 2}, []Padding{ExplicitPad(1, 1, 1, 1)})
	y := MaxPool2D(x, [2]int{3, 3}, [2]int{2, 2}, ExplicitPad(1, 1, 1, 1))
	dy := tensor.RandNormal(tensor.Float32, 0, 1, y.Shape()...)
	for _, ref := range []bool{true, false} {
		name := "clipped"
		if ref {
			name = "reference"
		}
		b.Run(name, func(b *testing.B) {
			old := convBackReference
			defer func() { convBackReference = old }()
			convBackReference = ref
			cpu0 := testkit.ProcessCPU().Seconds()
			for range b.N {
				core.Apply(MaxPoolGradPrim, a, x, dy)
			}
			b.ReportMetric((testkit.ProcessCPU().Seconds()-cpu0)*1e3/float64(b.N), "cpu-ms/op")
		})
	}
}

// The padded max-pool gradient agrees with the reference loop bit for bit.
func TestMaxPoolGradAgainstReference(t *testing.T) {
	for i, c := range []struct{ n, c, h, w, k, s, p int }{
		{1, 3, 9, 9, 3, 2, 1}, {2, 5, 8, 7, 3, 1, 1}, {3, 2, 7, 11, 2, 2, 1}, {2, 3, 10, 10, 4, 3, 2},
	} {
		tensor.SetSeed(int64(i + 7))
		x := tensor.RandNormal(tensor.Float32, 0, 1, c.n, c.c, c.h, c.w)
		pad := ExplicitPad(c.p, c.p, c.p, c.p)
		a := poolAttrs("MaxPool2D", x, [2]int{c.k, c.k}, [2]int{c.s, c.s}, []Padding{pad})
		dy := tensor.RandNormal(tensor.Float32, 0, 1, MaxPool2D(x, [2]int{c.k, c.k}, [2]int{c.s, c.s}, pad).Shape()...)
		grad := func(ref bool) []float32 {
			old := convBackReference
			defer func() { convBackReference = old }()
			convBackReference = ref
			return core.Apply(MaxPoolGradPrim, a, x, dy).Float32s()
		}
		want, got := grad(true), grad(false)
		for j := range want {
			if got[j] != want[j] {
				t.Fatalf("case %d %+v: dx[%d] = %v, want %v", i, c, j, got[j], want[j])
			}
		}
	}
}
