package compile

import (
	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// isOp reports whether v is a single-result application of primitive p.
// Passes name primitives by their handles (ops.MatMulPrim), never by the
// string the IR prints: a renamed or deleted primitive is then a compile
// error in every pass that matches it, not a rewrite that silently stops
// firing. A nil p (a handle whose init has not run) matches nothing.
func isOp(v *graph.Value, p *core.Prim) bool {
	return p != nil && v.Kind == graph.KindOp && !v.IsMulti() && v.Prim == p
}

// plainOp reports whether v is an ordinary op the rewrites may touch: a
// single-result, pure primitive with a CPU kernel for its operands' dtype
// (looked up in the kernel table as the plan will).
func plainOp(v *graph.Value) bool {
	if v.Kind != graph.KindOp || v.IsMulti() || v.Prim.Traits.Impure {
		return false
	}
	_, err := v.Prim.KernelForKey(kernelKey(v), core.CPU)
	return err == nil
}

// kernelKey is the key that selects v's kernel (core.Prim.KeyOf): its
// operands' dtypes, as the plan will look it up.
func kernelKey(v *graph.Value) core.Key {
	dts := make([]tensor.DType, len(v.Args))
	for i, a := range v.Args {
		dts[i] = a.Meta.DType
	}
	return v.Prim.KeyOf(dts, v.Meta.DType)
}

// sameMeta reports whether two metas have one shape and dtype.
func sameMeta(a, b tensor.Meta) bool { return a.DType == b.DType && a.Shape.Equal(b.Shape) }

// constEquals reports whether v is a constant all of whose elements equal
// x. Only floating-point and integer constants qualify.
func constEquals(v *graph.Value, x float64) bool {
	if v.Kind != graph.KindConst {
		return false
	}
	t := v.Tensor
	switch d := t.Data().(type) {
	case []float32:
		for _, e := range d {
			if float64(e) != x {
				return false
			}
		}
	case []float64:
		for _, e := range d {
			if e != x {
				return false
			}
		}
	case []int32:
		for _, e := range d {
			if float64(e) != x {
				return false
			}
		}
	case []int64:
		for _, e := range d {
			if float64(e) != x {
				return false
			}
		}
	default:
		return false
	}
	return true
}

// rewriter redirects uses of replaced values in one forward walk: passes
// record v → w with set and call fix on each value before looking at it,
// and finish once at the end. It avoids graph.Replace's scan of the whole
// graph per replacement.
type rewriter struct {
	repl []*graph.Value // by ID
	any  bool
}

func newRewriter(g *graph.Graph) *rewriter {
	return &rewriter{repl: make([]*graph.Value, g.NumIDs())}
}

// set records that uses of v now go to w.
func (r *rewriter) set(v, w *graph.Value) {
	for w.ID < len(r.repl) && r.repl[w.ID] != nil {
		w = r.repl[w.ID]
	}
	if v.ID >= len(r.repl) {
		r.repl = append(r.repl, make([]*graph.Value, v.ID+1-len(r.repl))...)
	}
	r.repl[v.ID] = w
	r.any = true
}

// get returns what v has been replaced by (v itself if nothing).
func (r *rewriter) get(v *graph.Value) *graph.Value {
	for v.ID < len(r.repl) && r.repl[v.ID] != nil {
		v = r.repl[v.ID]
	}
	return v
}

// fix redirects v's args.
func (r *rewriter) fix(v *graph.Value) {
	if !r.any {
		return
	}
	for i, a := range v.Args {
		v.Args[i] = r.get(a)
	}
}

// finish redirects the outputs and assigned values.
func (r *rewriter) finish(g *graph.Graph) {
	if !r.any {
		return
	}
	for i, o := range g.Outputs {
		g.Outputs[i] = r.get(o)
	}
	for i := range g.Assigns {
		g.Assigns[i].Val = r.get(g.Assigns[i].Val)
	}
}

// users returns, for each value ID, the values using it as an argument
// (once per argument slot).
func users(g *graph.Graph) [][]*graph.Value {
	u := make([][]*graph.Value, g.NumIDs())
	for _, v := range g.Values {
		for _, a := range v.Args {
			u[a.ID] = append(u[a.ID], v)
		}
	}
	return u
}

// permOf returns the permutation of a Transpose's attributes. The
// attributes are typed (ops.PermAttr), so a change to them is a compile
// error here rather than a transpose the passes stop recognising.
func permOf(attrs any) ([]int, bool) {
	a, ok := attrs.(ops.PermAttr)
	return a.Perm, ok
}

// withPerm returns Transpose attributes with permutation perm: a new
// value, because attributes are never mutated once set.
func withPerm(perm []int) ops.PermAttr {
	return ops.PermAttr{Perm: append([]int(nil), perm...)}
}

// isIdentityPerm reports whether p leaves every axis in place.
func isIdentityPerm(p []int) bool {
	for i, a := range p {
		if a != i {
			return false
		}
	}
	return true
}

// isLastTwoSwap reports whether p swaps the last two axes and keeps the
// others: the transpose MatMul's flags express.
func isLastTwoSwap(p []int) bool {
	r := len(p)
	if r < 2 || p[r-2] != r-1 || p[r-1] != r-2 {
		return false
	}
	return isIdentityPerm(p[:r-2])
}

// gemmDims returns m, k, n of op(a)·op(b) for 2-D operands, panicking with
// an *tensor.Error naming op when the inner dimensions differ.
func gemmDims(op string, transA, transB bool, a, b *tensor.Tensor) (m, k, n int) {
	m, k = a.Dim(0), a.Dim(1)
	if transA {
		m, k = k, m
	}
	k2, n := b.Dim(0), b.Dim(1)
	if transB {
		k2, n = n, k2
	}
	if k != k2 {
		core.Panicf(op, "inner dimensions differ: %v x %v (transpose flags %v, %v)", a.Shape(), b.Shape(), transA, transB)
	}
	return m, k, n
}

// soleUser returns a function that gives v's only user in g, or nil when v
// has several, or is also an output or assigned: a fusion may absorb v into
// that user only then (g's Uses must be current).
func soleUser(g *graph.Graph) func(v *graph.Value) *graph.Value {
	us := users(g)
	return func(v *graph.Value) *graph.Value {
		if v.Uses != 1 || len(us[v.ID]) != 1 {
			return nil
		}
		return us[v.ID][0]
	}
}

// castOf returns the operand of v when v is a Cast to dtype to, else nil.
func castOf(v *graph.Value, to tensor.DType) *graph.Value {
	if !isOp(v, ops.CastPrim) || v.Meta.DType != to || len(v.Args) != 1 {
		return nil
	}
	return v.Args[0]
}

// rowBias returns the bias that add adds to prod, an n-column product, when
// add is an Add of prod's shape and its other operand a float32 row of n
// (shape [n] or [1, n], either operand order): what a GEMM epilogue can
// add. Otherwise it returns nil.
func rowBias(add, prod *graph.Value, n int) *graph.Value {
	if !isOp(add, ops.AddPrim) || !sameMeta(add.Meta, prod.Meta) {
		return nil
	}
	bias := add.Args[1]
	if bias == prod {
		bias = add.Args[0]
	}
	s := bias.Meta.Shape
	if bias == prod || bias.Meta.DType != tensor.Float32 || !((len(s) == 1 && s[0] == n) || (len(s) == 2 && s[0] == 1 && s[1] == n)) {
		return nil
	}
	return bias
}
