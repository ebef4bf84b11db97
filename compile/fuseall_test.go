package compile_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/internal/kernels/fuse"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// elemAttrs lists attributes to try for the elementwise primitives that
// take any (nil for the rest).
var elemAttrs = map[*core.Prim][]any{
	ops.ClipPrim:        {ops.ClipAttrs{Lo: -0.5, Hi: 0.75}, ops.ClipAttrs{Lo: 2, Hi: -1}},
	ops.CastPrim:        {tensor.Float32, tensor.Float64, tensor.Int32, tensor.Int64, tensor.Uint8, tensor.Bool},
	ops.BroadcastToPrim: {ops.ShapeAttr{Shape: tensor.Shape{3, 5, 7}}},
}

var allDTypes = []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int32, tensor.Int64, tensor.Uint8, tensor.Bool}

// elemInput draws a [5, 7] input of dtype d (a [7] row for BroadcastTo).
// Integers avoid 0, so that integer FloorDiv and FloorMod have a divisor.
func elemInput(r *rand.Rand, d tensor.DType, shape ...int) *tensor.Tensor {
	n := 1
	for _, s := range shape {
		n *= s
	}
	f := make([]float64, n)
	for i := range f {
		switch d {
		case tensor.Float32, tensor.Float64:
			f[i] = r.NormFloat64() * 2
		case tensor.Uint8:
			f[i] = float64(1 + r.IntN(200))
		case tensor.Bool:
			f[i] = float64(r.IntN(2))
		default:
			f[i] = float64((1 + r.IntN(9)) * (1 - 2*r.IntN(2)))
		}
	}
	x := ops.Cast(tensor.FromSlice(f, shape...), d)
	return x
}

// sameBits reports whether a and b hold the same bits (NaNs of any payload
// match each other).
func sameBits(a, b *tensor.Tensor) bool {
	if a.DType() != b.DType() || !a.Shape().Equal(b.Shape()) {
		return false
	}
	switch x := a.Data().(type) {
	case []float32:
		y := b.Data().([]float32)
		for i := range x {
			if math.Float32bits(x[i]) != math.Float32bits(y[i]) && !(x[i] != x[i] && y[i] != y[i]) {
				return false
			}
		}
		return true
	case []float64:
		y := b.Data().([]float64)
		for i := range x {
			if math.Float64bits(x[i]) != math.Float64bits(y[i]) && !(x[i] != x[i] && y[i] != y[i]) {
				return false
			}
		}
		return true
	}
	return fmt.Sprint(a.Data()) == fmt.Sprint(b.Data())
}

// TestEveryElementwiseOpFuses enumerates the primitives (core.Prims) that
// declare themselves elementwise, and for each dtype they accept checks
// that a jitted chain Cast(op(x...)) comes out of the passes as one fused
// node containing the op, and that it computes what PyNative computes, bit
// for bit, at O0 (op by op) and at O1 (fused). A new elementwise op is
// covered without an edit here; one with attributes needs its attributes
// in elemAttrs, and the test fails until it has them.
func TestEveryElementwiseOpFuses(t *testing.T) {
	r := rand.New(rand.NewPCG(10, 10))
	seen := 0
	for _, p := range core.Prims() {
		if !p.Traits.Elementwise {
			continue
		}
		seen++
		e := p.Elementwise
		if e == nil {
			t.Errorf("%s is elementwise but defines no body (core.Elementwise)", p.Name)
			continue
		}
		attrsList, ok := elemAttrs[p]
		if !ok {
			attrsList = []any{nil}
		}
		tried := 0
		for _, attrs := range attrsList {
			for _, d := range allDTypes {
				if p == ops.CastPrim && attrs == d {
					continue // a no-op, which simplify removes: nothing to fuse
				}
				// The operand dtypes: d for every input, or a Bool first
				// input (a selection's condition).
				var in []tensor.DType
				if e.Copy {
					in = []tensor.DType{d}
				} else {
					for _, pat := range [][]tensor.DType{{d, d, d}, {tensor.Bool, d, d}} {
						body := e.Body(attrs, pat)
						if body == nil {
							continue
						}
						fn, err := fuse.Bind(body)
						if err != nil {
							t.Errorf("%s %v: its body %T does not bind: %v", p.Name, pat, body, err)
							continue
						}
						if !bodyReads(fn, pat[:fn.Arity]) {
							continue // a body for other operand dtypes
						}
						in = pat[:fn.Arity]
						break
					}
				}
				if in == nil {
					continue
				}
				tried++
				name := fmt.Sprintf("%s/%v/%v", p.Name, attrs, in)
				t.Run(name, func(t *testing.T) { checkFuses(t, r, p, attrs, in) })
			}
		}
		if tried == 0 {
			t.Errorf("%s: no dtype has a body", p.Name)
		}
	}
	if seen < 40 {
		t.Errorf("only %d elementwise primitives enumerated: are they defined with core.Define?", seen)
	}
}

// bodyReads reports whether fn reads operands of dtypes in.
func bodyReads(fn fuse.Fn, in []tensor.DType) bool {
	names := map[tensor.DType]fuse.Type{
		tensor.Float32: fuse.F32, tensor.Float64: fuse.F64, tensor.Int32: fuse.I32,
		tensor.Int64: fuse.I64, tensor.Uint8: fuse.U8, tensor.Bool: fuse.Bool,
	}
	for i, d := range in {
		if fn.Args[i] != names[d] {
			return false
		}
	}
	return true
}

func checkFuses(t *testing.T, r *rand.Rand, p *core.Prim, attrs any, in []tensor.DType) {
	args := make([]*tensor.Tensor, 3)
	for i := range args {
		d := tensor.Float32
		if i < len(in) {
			d = in[i]
		}
		shape := []int{5, 7}
		if p == ops.BroadcastToPrim {
			shape = []int{7}
		}
		args[i] = elemInput(r, d, shape...)
	}
	// The op's result is cast to another dtype, a second elementwise op for
	// the group (and one that every dtype has).
	f := func(a, b, c *tensor.Tensor) *tensor.Tensor {
		y := core.Apply(p, attrs, []*tensor.Tensor{a, b, c}[:len(in)]...)
		to := tensor.Float64
		if y.DType() == tensor.Float64 {
			to = tensor.Float32
		}
		return ops.Cast(y, to)
	}
	want := f(args[0], args[1], args[2])
	ir, err := spore.IR(f, []any{args[0], args[1], args[2]}, spore.JitConfig{Level: spore.O1})
	if err != nil {
		t.Fatal(err)
	}
	var fused []string
	for _, line := range strings.Split(ir, "\n") {
		if strings.Contains(line, " = ") && !strings.Contains(line, "return") {
			fused = append(fused, strings.TrimSpace(line))
		}
	}
	if len(fused) != 1 || !strings.Contains(fused[0], "Fused[") || !strings.Contains(fused[0], p.Name) {
		t.Fatalf("want one fused node with %s, got:\n%s", p.Name, ir)
	}
	for _, level := range []spore.Level{spore.O0, spore.O1} {
		got := spore.Jit(f, spore.JitConfig{Level: level})(args[0], args[1], args[2])
		if !sameBits(got, want) {
			t.Errorf("%v: Graph mode\n%v\nPyNative\n%v", level, got, want)
		}
	}
}
