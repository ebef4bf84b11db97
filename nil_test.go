package spore_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// A nil *Tensor handed to an op, a cell, a jitted function or a gradient
// is a typed *spore.Error naming what was called, never a nil-pointer
// dereference.
func TestNilTensorIsATypedError(t *testing.T) {
	x := tensor.Ones(spore.Float32, 2, 3)
	var none *spore.Tensor
	jitted := spore.Jit(func(a, b *spore.Tensor) *spore.Tensor { return ops.Add(a, b) })
	square := func(a *spore.Tensor) *spore.Tensor { return ops.Sum(ops.Mul(a, a)) }
	cases := []struct {
		name string
		call func()
		want []string
	}{
		{"Add second", func() { ops.Add(x, none) }, []string{"Add", "argument 1 is nil"}},
		{"Add first", func() { ops.Add(none, x) }, []string{"Add", "nil"}},
		{"MatMul", func() { ops.MatMul(none, x) }, []string{"MatMul", "nil"}},
		{"Reshape", func() { ops.Reshape(none, 6) }, []string{"Reshape", "nil"}},
		{"Sum", func() { ops.Sum(none) }, []string{"Sum", "nil"}},
		{"Softmax", func() { ops.Softmax(none, -1) }, []string{"Softmax", "nil"}},
		{"Concat", func() { ops.Concat(0, x, none) }, []string{"Concat", "nil"}},
		{"CrossEntropy labels", func() { ops.CrossEntropy(x, none, "mean") }, []string{"CrossEntropy", "nil"}},
		{"ReLU", func() { ops.ReLU(none) }, []string{"ReLU", "nil"}},
		{"Transpose", func() { ops.Transpose(none, 1, 0) }, []string{"Transpose", "nil"}},
		{"Dense", func() { nn.NewDense(3, 2).Call(none) }, []string{"Dense", "nil"}},
		{"Conv2d", func() { nn.NewConv2d(1, 2, 3).Call(none) }, []string{"Conv2d", "nil"}},
		{"SequentialCell", func() { nn.NewSequentialCell(nn.NewFlatten(), nn.NewReLU()).Call(none) }, []string{"nil"}},
		{"Jit", func() { jitted(x, none) }, []string{"Jit", "argument 1", "nil"}},
		{"Grad", func() { spore.Grad(square)(none) }, []string{"Grad", "input 0", "nil"}},
		{"Item", func() { none.Item() }, []string{"nil"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				r := recover()
				var e *spore.Error
				err, _ := r.(error)
				if !errors.As(err, &e) {
					t.Fatalf("want a *spore.Error panic, got %T %v", r, r)
				}
				for _, w := range c.want {
					if !strings.Contains(e.Error(), w) {
						t.Errorf("error %q does not mention %q", e.Error(), w)
					}
				}
			}()
			c.call()
		})
	}
}

// A shape whose element count overflows is refused, never turned into a
// tensor without data.
func TestShapeOverflowRefused(t *testing.T) {
	x := tensor.Ones(spore.Float32, 4)
	cases := []struct {
		name string
		call func()
	}{
		{"New", func() { tensor.New(spore.Float32, 1<<40, 1<<40) }},
		{"Zeros", func() { tensor.Zeros(spore.Float64, 1<<31, 1<<31, 1<<31) }},
		{"bytes overflow", func() { tensor.New(spore.Float64, 1<<61) }},
		{"Reshape wraps to the same size", func() { ops.Reshape(x, 1<<62+1, 4) }},
		{"Reshape", func() { ops.Reshape(x, 1<<40, 1<<40) }},
		{"BroadcastTo", func() { ops.BroadcastTo(x, 1<<40, 1<<40, 4) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				var e *spore.Error
				err, _ := recover().(error)
				if !errors.As(err, &e) {
					t.Fatalf("want a *spore.Error panic, got %v", err)
				}
			}()
			c.call()
		})
	}
	// A zero extent makes any other extent harmless.
	if z := tensor.New(spore.Float32, 0, 1<<62); z.Size() != 0 {
		t.Fatalf("shape [0 1<<62] has size %d", z.Size())
	}
}
