package compile

import (
	"fmt"
	"reflect"

	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// AnchorUpdate says whether an Anchor's product updates a parameter in
// place, the GEMM accumulating into it, instead of being written out for
// a separate update pass to read back.
type AnchorUpdate uint8

const (
	// UpdateNone: the anchor op's result is the Anchor's.
	UpdateNone AnchorUpdate = iota
	// UpdateAccumulate: p ← p − s·op(a)·op(b) (gradient descent), one GEMM
	// with alpha = −s and beta = 1.
	UpdateAccumulate
	// UpdateMomentum: buf ← FlushSubnormal(buf·mu + op(a)·op(b)) (SGD's
	// momentum buffer), by row blocks kept in cache.
	UpdateMomentum
)

func (u AnchorUpdate) String() string {
	switch u {
	case UpdateNone:
		return "none"
	case UpdateAccumulate:
		return "accumulate"
	case UpdateMomentum:
		return "momentum"
	}
	return fmt.Sprintf("AnchorUpdate(%d)", uint8(u))
}

// AnchorSpec selects the fused step of an Anchor that finishes its anchor
// op with a fixed kernel instead of an epilogue program: the anchor op,
// the arithmetic's precision (float32: the operands' own, float32 or
// float64 for the convolution steps; bfloat16: operands rounded to
// bfloat16 as they are packed), the in-place update, and for the
// convolution and pooling gradients whether the op reads the pooled
// gradient and the pooling's inputs (PooledGrad) instead of the full
// gradient. Pooling after a forward convolution is the fused attributes'
// (ops.ConvEpilogueAttrs.Pool), shown in AnchorAttrs.Pool.
type AnchorSpec struct {
	Op         *core.Prim
	Precision  tensor.DType
	Update     AnchorUpdate
	PooledGrad bool
}

// fixedKind is one fused step an Anchor's attributes select: its spec,
// the type of the attributes its kernel takes (AnchorAttrs.Fused), and the
// shape rule, kernels (by the first operand's dtype) and VJP that
// implement it. The kernels are the bespoke ones (ops/convfuse.go,
// ampgemm.go, ampmatmul.go, gemmupdate.go, gemmmomentum.go); the Anchor
// is the one primitive that runs them.
type fixedKind struct {
	spec AnchorSpec
	// name is the fused step's name in error messages (the kernels'
	// checks name it too).
	name    string
	fused   reflect.Type
	infer   func(attrs any, in []*tensor.Tensor) tensor.Meta
	vjp     func(attrs any, in []*tensor.Tensor, out, g *tensor.Tensor) []*tensor.Tensor
	kernels map[tensor.DType]core.KernelFunc
	// members lists what the step absorbed (Absorbed), given the fused
	// value (nil outside a graph).
	members func(fused any, v *graph.Value) []string
}

// fixedKinds are the registered fused steps, in registration order.
var fixedKinds []*fixedKind

// newFixedKind registers a fused step whose kernel attributes have
// fused's type.
func newFixedKind(k *fixedKind, fused any) *fixedKind {
	k.fused = reflect.TypeOf(fused)
	k.kernels = map[tensor.DType]core.KernelFunc{}
	for _, o := range fixedKinds {
		if o.spec == k.spec && o.fused == k.fused {
			panic(fmt.Sprintf("compile: fused steps %s and %s have the same attributes", o.name, k.name))
		}
	}
	fixedKinds = append(fixedKinds, k)
	return k
}

// register sets the kernel for operands of dtype dt.
func (k *fixedKind) register(dt tensor.DType, fn core.KernelFunc) { k.kernels[dt] = fn }

// hasKernel reports whether the step runs on operands of dtype dt: a
// fused step replaces a chain only where it can run in the chain's dtype.
func (k *fixedKind) hasKernel(dt tensor.DType) bool { return k.kernels[dt] != nil }

// FixedAnchor returns the attributes of an Anchor running the fused step
// that spec selects, with its kernel's attributes fused (their type is
// part of the selection: the bfloat16 product of AmpGemm, whose casts of
// the operands are absorbed, takes BF16EpilogueAttrs, AmpMatMul's takes
// BF16MatMulAttrs). It fails for a combination with no kernel.
func FixedAnchor(spec AnchorSpec, fused any) (*AnchorAttrs, error) {
	t := reflect.TypeOf(fused)
	for _, k := range fixedKinds {
		if k.spec == spec && k.fused == t {
			return fixedAnchor(k, fused), nil
		}
	}
	return nil, fmt.Errorf("compile: no fused anchor for op %v, precision %v, update %v, pooled gradient %v with attributes %T",
		spec.Op.Name, spec.Precision, spec.Update, spec.PooledGrad, fused)
}

// fixedAnchor returns the attributes of an Anchor running step k.
func fixedAnchor(k *fixedKind, fused any) *AnchorAttrs {
	a := &AnchorAttrs{
		Op: k.spec.Op, Precision: k.spec.Precision, Update: k.spec.Update, PooledGrad: k.spec.PooledGrad,
		Fused: fused, fixed: k,
	}
	if ea, ok := fused.(ops.ConvEpilogueAttrs); ok && ea.Pool != nil {
		p := *ea.Pool
		a.Pool, a.AvgPool = &p, ea.AvgPool
	}
	return a
}

// fixedOf returns v's fused attributes if v is an Anchor running step k.
func fixedOf(v *graph.Value, k *fixedKind) (any, bool) {
	if v.Kind != graph.KindOp || v.Prim != Anchor {
		return nil, false
	}
	a, ok := v.Attrs.(*AnchorAttrs)
	if !ok || a.fixed != k {
		return nil, false
	}
	return a.Fused, true
}

// toFixed rewrites v into an Anchor running step k on args, unless that
// Anchor's third operand is the parameter v is assigned to and k does no
// update: the executor computes an Anchor straight into its third
// operand's buffer when that is the assigned parameter (the updates'
// Traits.Accumulates), which only an update's kernel allows. It reports
// whether it rewrote v.
func toFixed(g *graph.Graph, v *graph.Value, k *fixedKind, fused any, args []*graph.Value) bool {
	if accumulateClash(g, v, args, k.spec.Update) {
		return false
	}
	v.Prim, v.Attrs, v.Args = Anchor, fixedAnchor(k, fused), args
	return true
}

// accumulateClash reports whether an Anchor with operands args that does
// not update in place would compute v, assigned to its third operand (see
// toFixed).
func accumulateClash(g *graph.Graph, v *graph.Value, args []*graph.Value, u AnchorUpdate) bool {
	if u != UpdateNone || len(args) < Anchor.Traits.Accumulates {
		return false
	}
	for _, a := range g.Assigns {
		if a.Val == v && a.Param == args[Anchor.Traits.Accumulates-1] {
			return true
		}
	}
	return false
}
