package ops

import (
	"sync"

	"github.com/sporeml/spore/internal/core"
)

// Lookup returns the primitive of package ops named name (its Prim.Name,
// as printed in the IR: "Add", "MatMul", "ReduceSum"...), or nil when there
// is none. The graph compiler matches and builds ops through it, so a pass
// that knows a primitive by name keeps compiling (and simply finds nothing
// to rewrite) in a build where that primitive does not exist yet.
func Lookup(name string) *core.Prim {
	registryOnce.Do(buildRegistry)
	return registry[name]
}

var (
	registryOnce sync.Once
	registry     map[string]*core.Prim
)

// buildRegistry runs on the first Lookup rather than in an init function:
// the primitives are created by init functions spread over the package's
// files, and Go orders those by file name, so an init here could see some
// of them still nil.
func buildRegistry() {
	registry = map[string]*core.Prim{}
	for _, p := range registeredPrims() {
		if p != nil {
			registry[p.Name] = p
		}
	}
}

// registeredPrims lists every primitive variable of the package. A new
// primitive gets a line here so that the compiler can find it by name.
func registeredPrims() []*core.Prim {
	return []*core.Prim{
		// elementwise.go
		AddPrim, SubPrim, MulPrim, DivPrim, NegPrim, ExpPrim, LogPrim, TanhPrim, ReluPrim, ReluGradPrim,
		// compare.go
		EqualPrim, NotEqualPrim, LessPrim, LessEqualPrim, GreaterPrim, GreaterEqualPrim,
		LogicalAndPrim, LogicalOrPrim, LogicalNotPrim, SelectPrim, CastPrim,
		// unary.go, binary.go
		AbsPrim, SignPrim, Log1pPrim, SqrtPrim, RsqrtPrim, SquarePrim, ReciprocalPrim,
		SinPrim, CosPrim, SigmoidPrim, ErfPrim, GeluPrim, SoftplusPrim,
		PowPrim, MaximumPrim, MinimumPrim,
		// matmul.go, reduce.go, reductions.go, shape.go
		MatMulPrim, SumPrim, ReshapePrim, BroadcastToPrim,
		MaxPrim, MinPrim, ProdPrim, AnyPrim, AllPrim, ArgMaxPrim, ArgMinPrim,
		// layout.go, index.go
		TransposePrim, ConcatPrim, StridedSlicePrim, StridedSliceGradPrim,
		GatherPrim, GatherGradPrim, TakeAlongAxisPrim, TakeAlongAxisGradPrim, OneHotPrim, CheckLabelsPrim, CheckIndicesPrim,
		// conv.go, pool.go, random.go
		Conv2DPrim, Conv2DBackpropInputPrim, Conv2DBackpropFilterPrim,
		MaxPoolPrim, MaxPoolGradPrim, MaxPoolGatherPrim, AvgPoolPrim, AvgPoolGradPrim,
		RandomMaskPrim, UnstackPrim,
		// rounding.go, scan_ops.go, sort.go
		FloorPrim, CeilPrim, RoundPrim, TruncPrim, FloorDivPrim, FloorModPrim, ClipPrim, ClipTensorPrim,
		CumSumPrim, CumProdPrim, LinearRecurrencePrim, ArgSortPrim, ArgTopKPrim,
	}
}
