package onnx

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sporeml/spore/internal/jit"
	"github.com/sporeml/spore/npy"
	"github.com/sporeml/spore/tensor"
)

// TestDynamicBatchONNX compiles torch-exported models as a server does —
// jit.New over Model.Outputs with the batch dynamic up to a bound — and
// checks that the one plan serves every batch size, compiled once, with
// the results of a per-shape plan (bit for bit) and of PyNative mode, and
// PyTorch's own at the fixture's batch. The models carry torch's
// Shape/Gather/Concat/Reshape chains for the batch (dynbatch).
func TestDynamicBatchONNX(t *testing.T) {
	const bound = 16
	for _, name := range []string{"cnn", "dynbatch"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("testdata", "torch")
			m, err := LoadFile(filepath.Join(dir, name+".onnx"))
			if err != nil {
				t.Fatal(err)
			}
			in, err := npy.ReadFile(filepath.Join(dir, name+"_in.npy"))
			if err != nil {
				t.Fatal(err)
			}
			ref, err := npy.ReadFile(filepath.Join(dir, name+"_out.npy"))
			if err != nil {
				t.Fatal(err)
			}
			rest := in.Shape()[1:]
			spec := jit.InputSpec{DType: in.DType(), Shape: append([]int{-1}, rest...), Max: []int{bound}}
			outputs := func(xs ...*tensor.Tensor) []*tensor.Tensor { return m.Outputs(xs...) }
			dyn := jit.New(outputs, jit.Config{Inputs: []jit.InputSpec{spec}, Name: name + ".dyn"})
			if err := dyn.CompileSpec(); err != nil {
				t.Fatal(err)
			}
			per := jit.New(outputs, jit.Config{Name: name + ".per"})
			// The fixture's own input, against PyTorch.
			got := dyn.Fn(in)[0]
			if e := maxRelErr(float64s(got), float64s(ref)); e > 1e-4 {
				t.Errorf("fixture batch %d: relative error %g against PyTorch", in.Shape()[0], e)
			}
			for _, n := range []int{1, 5, bound} {
				x := tensor.New(in.DType(), append([]int{n}, rest...)...)
				xd := x.Data().([]float32)
				for i := range xd {
					xd[i] = float32(math.Cos(float64(i) * 0.13))
				}
				got := dyn.Fn(x)[0]
				want := per.Fn(x)[0]
				eager := m.Outputs(x)[0] // outside Graph mode: PyNative
				if !got.Shape().Equal(want.Shape()) || got.Shape()[0] != n {
					t.Fatalf("batch %d: result shape %v, per-shape %v", n, got.Shape(), want.Shape())
				}
				for i, v := range got.Float32s() {
					if math.Float32bits(v) != math.Float32bits(want.Float32s()[i]) {
						t.Fatalf("batch %d: element %d is %g, per-shape plan %g", n, i, v, want.Float32s()[i])
					}
				}
				if e := maxRelErr(float64s(got), float64s(eager)); e > 1e-5 {
					t.Errorf("batch %d: relative error %g against PyNative", n, e)
				}
			}
			if st := dyn.Stats(); st.Compiles != 1 || st.DynamicFallback != "" {
				t.Errorf("%d compiles (want 1), fallback %q, retraces %q", st.Compiles, st.DynamicFallback, st.Retraces)
			}
		})
	}
}

// TestDynamicBatchONNXStatic: a model whose batch is fixed in the file
// refuses a dynamic signature with the model's own error, naming the input
// and the shape it wants.
func TestDynamicBatchONNXStatic(t *testing.T) {
	m, err := LoadFile(filepath.Join("testdata", "torch", "mlp.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	if d := m.Inputs()[0].Shape[0]; d < 0 {
		t.Fatalf("mlp.onnx has a dynamic batch (%d); the test needs a fixed one", d)
	}
	spec := jit.InputSpec{DType: tensor.Float32, Shape: []int{-1, int(m.Inputs()[0].Shape[1])}, Max: []int{8}}
	f := jit.New(func(xs ...*tensor.Tensor) []*tensor.Tensor { return m.Outputs(xs...) }, jit.Config{Inputs: []jit.InputSpec{spec}})
	err = f.CompileSpec()
	if err == nil || !strings.Contains(err.Error(), `input "x" has shape [8 20], the model wants x [4 20]`) {
		t.Fatalf("CompileSpec: %v", err)
	}
	// The function is still usable (nothing is left locked) at the shape
	// the model takes.
	x := tensor.New(tensor.Float32, int(m.Inputs()[0].Shape[0]), int(m.Inputs()[0].Shape[1]))
	if y := f.Fn(x)[0]; y.Shape()[0] != x.Shape()[0] {
		t.Fatalf("result shape %v", y.Shape())
	}
}

func float64s(t *tensor.Tensor) []float64 {
	d := t.Float32s()
	out := make([]float64, len(d))
	for i, v := range d {
		out[i] = float64(v)
	}
	return out
}
