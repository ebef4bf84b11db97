package compile

import (
	"reflect"

	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// isPrim reports whether p is the primitive called name. Primitive names
// are unique across the framework (they are what the IR prints), so a name
// match suffices; it also lets passes recognise a primitive the ops
// registry does not list yet (one still being written, or one a test
// defines).
func isPrim(p *core.Prim, name string) bool {
	return p != nil && p.Name == name
}

// isOp reports whether v is a single-result application of the primitive
// called name.
func isOp(v *graph.Value, name string) bool {
	return v.Kind == graph.KindOp && !v.IsMulti() && isPrim(v.Prim, name)
}

// plainOp reports whether v is an ordinary op the rewrites may touch: a
// single-result, pure primitive with a kernel.
func plainOp(v *graph.Value) bool {
	return v.Kind == graph.KindOp && !v.IsMulti() && v.Prim.Kernel != nil && !v.Prim.Traits.Impure
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

// permOf returns the permutation of a Transpose's attributes. It reads a
// field named Perm by reflection so that the pass does not depend on the
// attribute type's package-level name.
func permOf(attrs any) ([]int, bool) {
	rv := reflect.ValueOf(attrs)
	if rv.Kind() == reflect.Pointer {
		rv = rv.Elem()
	}
	if rv.Kind() != reflect.Struct {
		return nil, false
	}
	f := rv.FieldByName("Perm")
	if !f.IsValid() || f.Type() != reflect.TypeOf([]int(nil)) {
		return nil, false
	}
	return f.Interface().([]int), true
}

// withPerm returns a copy of Transpose attributes like with perm replaced:
// a new value, because attributes are never mutated once set.
func withPerm(like any, perm []int) any {
	rv := reflect.ValueOf(like)
	ptr := rv.Kind() == reflect.Pointer
	if ptr {
		rv = rv.Elem()
	}
	nv := reflect.New(rv.Type()).Elem()
	nv.Set(rv)
	nv.FieldByName("Perm").Set(reflect.ValueOf(append([]int(nil), perm...)))
	if ptr {
		return nv.Addr().Interface()
	}
	return nv.Interface()
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
