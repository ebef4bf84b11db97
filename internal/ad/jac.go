package ad

import (
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// Jacfwd is spore.Jacfwd, whose documentation is the reference.
func Jacfwd[F any](fn F, opts ...GradOption) func(...*Tensor) []*Tensor {
	f := asVariadicFor("Jacfwd", fn)
	cfg := jacConfig("Jacfwd", opts)
	return func(xs ...*Tensor) []*Tensor {
		primals := jacPrimals("Jacfwd", cfg.positions, xs)
		lin, end := Linearize(func(a []*Tensor) []*Tensor {
			return []*Tensor{f(substitute(xs, cfg.positions, a)...)}
		}, primals, nil, false)
		defer end()
		y := lin.outs[0]
		jacs := make([]*Tensor, len(primals))
		for k, x := range primals {
			n := x.Size()
			if n == 0 {
				jacs[k] = tensor.Zeros(y.DType(), joinShapes(y.Shape(), x.Shape())...)
				continue
			}
			cols := make([]*Tensor, n)
			for i := range cols {
				ts := make([]*Tensor, len(primals))
				ts[k] = basis(x.DType(), x.Shape(), i)
				cols[i] = lin.Push(ts)[0]
			}
			// Column i is ∂y/∂xᵢ: stacked on a new last axis they give
			// y.Shape() ++ [n].
			jacs[k] = ops.Reshape(ops.Stack(y.Rank(), cols...), joinShapes(y.Shape(), x.Shape())...)
		}
		return jacs
	}
}

// Jacrev is spore.Jacrev, whose documentation is the reference.
func Jacrev[F any](fn F, opts ...GradOption) func(...*Tensor) []*Tensor {
	f := asVariadicFor("Jacrev", fn)
	cfg := jacConfig("Jacrev", opts)
	return func(xs ...*Tensor) []*Tensor {
		primals := jacPrimals("Jacrev", cfg.positions, xs)
		nested := false
		leaves := make([]*Tensor, len(primals))
		for i, x := range primals {
			nested = nested || core.IsTracked(x)
			leaves[i] = core.TrackLeaf(x)
		}
		y := f(substitute(xs, cfg.positions, leaves)...)
		if !y.DType().IsFloat() {
			core.Panicf("Jacrev", "output is %v %v: derivatives are defined only for floating-point outputs", y.Shape(), y.DType())
		}
		record := nested || core.CurrentTracer() != nil || y.IsSymbolic()
		m := y.Size()
		rows := make([][]*Tensor, len(leaves))
		for j := range m {
			gs := vjp(y, basis(y.DType(), y.Shape(), j), leaves, record)
			for k, g := range gs {
				rows[k] = append(rows[k], g)
			}
		}
		jacs := make([]*Tensor, len(leaves))
		for k, x := range primals {
			s := joinShapes(y.Shape(), x.Shape())
			if m == 0 {
				jacs[k] = tensor.Zeros(x.DType(), s...)
				continue
			}
			// Row j is ∂yⱼ/∂x: stacked on a new first axis they give
			// [m] ++ x.Shape().
			jacs[k] = ops.Reshape(ops.Stack(0, rows[k]...), s...)
		}
		return jacs
	}
}

// Hessian is spore.Hessian, whose documentation is the reference.
func Hessian[F any](fn F, opts ...GradOption) func(...*Tensor) [][]*Tensor {
	cfg := jacConfig("Hessian", opts)
	jr := Jacrev(fn, opts...)
	return func(xs ...*Tensor) [][]*Tensor {
		h := make([][]*Tensor, len(cfg.positions))
		for i := range cfg.positions {
			h[i] = Jacfwd(func(a ...*Tensor) *Tensor { return jr(a...)[i] }, opts...)(xs...)
		}
		return h
	}
}

// jacConfig reads Grad options for the Jacobian transforms, refusing those
// that have no meaning for them.
func jacConfig(op string, opts []GradOption) gradConfig {
	cfg := gradConfig{positions: []int{0}, arity: -1}
	for _, o := range opts {
		o(&cfg)
	}
	if len(cfg.weights) > 0 {
		core.Panicf(op, "Weights is not supported: differentiate with respect to positional inputs (GradPosition)")
	}
	if cfg.sens {
		core.Panicf(op, "WithSens does not apply: the Jacobian covers every output element")
	}
	if len(cfg.positions) == 0 {
		core.Panicf(op, "no input to differentiate: GradPosition() chose none")
	}
	return cfg
}

// jacPrimals returns the inputs at the chosen positions, checking them.
func jacPrimals(op string, positions []int, xs []*Tensor) []*Tensor {
	ps := make([]*Tensor, len(positions))
	for k, p := range positions {
		if p < 0 || p >= len(xs) {
			core.Panicf(op, "grad position %d out of range for %d inputs", p, len(xs))
		}
		x := xs[p]
		if x == nil {
			core.Panicf(op, "input %d is nil", p)
		}
		if !x.DType().IsFloat() {
			core.Panicf(op, "input %d is %v %v: derivatives are defined only for floating-point inputs", p, x.Shape(), x.DType())
		}
		ps[k] = x
	}
	return ps
}

// substitute returns xs with the values at positions replaced by vs.
func substitute(xs []*Tensor, positions []int, vs []*Tensor) []*Tensor {
	full := append([]*Tensor(nil), xs...)
	for k, p := range positions {
		full[p] = vs[k]
	}
	return full
}

func joinShapes(a, b tensor.Shape) []int {
	return append(append([]int{}, a...), b...)
}

// basis returns the tensor of the given dtype and shape that is 1 at flat
// index i and 0 elsewhere.
func basis(dt tensor.DType, shape tensor.Shape, i int) *Tensor {
	// FromBuffer, not FromSlice: FromSlice reads an empty shape as "one
	// dimension of the data's length", which would give a 0-d input a
	// tangent of shape [1].
	shape = shape.Clone()
	switch dt {
	case tensor.Float32:
		v := make([]float32, shape.Size())
		v[i] = 1
		return core.FromBuffer(v, shape)
	case tensor.Float64:
		v := make([]float64, shape.Size())
		v[i] = 1
		return core.FromBuffer(v, shape)
	}
	core.Panicf("Jacobian", "no basis vectors of dtype %v", dt)
	return nil
}
