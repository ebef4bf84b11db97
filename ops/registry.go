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
		addPrim, subPrim, mulPrim, divPrim, negPrim, expPrim, logPrim, tanhPrim, reluPrim, reluGradPrim,
		// compare.go
		equalPrim, notEqualPrim, lessPrim, lessEqualPrim, greaterPrim, greaterEqualPrim,
		logicalAndPrim, logicalOrPrim, logicalNotPrim, selectPrim, castPrim,
		// unary.go, binary.go
		absPrim, signPrim, log1pPrim, sqrtPrim, rsqrtPrim, squarePrim, reciprocalPrim,
		sinPrim, cosPrim, sigmoidPrim, erfPrim, geluPrim, softplusPrim,
		powPrim, maximumPrim, minimumPrim,
		// matmul.go, reduce.go, reductions.go, shape.go
		matmulPrim, sumPrim, reshapePrim, broadcastToPrim,
		maxPrim, minPrim, prodPrim, anyPrim, allPrim, argMaxPrim, argMinPrim,
		// layout.go, index.go
		transposePrim, concatPrim, stridedSlicePrim, stridedSliceGradPrim,
		gatherPrim, gatherGradPrim, takeAlongAxisPrim, takeAlongAxisGradPrim, oneHotPrim, checkLabelsPrim, checkIndicesPrim,
		// conv.go, pool.go, random.go
		conv2DPrim, conv2DBackpropInputPrim, conv2DBackpropFilterPrim,
		maxPoolPrim, maxPoolGradPrim, maxPoolGatherPrim, avgPoolPrim, avgPoolGradPrim,
		randomMaskPrim, unstackPrim,
		// rounding.go, scan_ops.go, sort.go
		floorPrim, ceilPrim, roundPrim, truncPrim, floorDivPrim, floorModPrim, clipPrim, clipTensorPrim,
		cumSumPrim, cumProdPrim, linearRecurrencePrim, argSortPrim, argTopKPrim,
	}
}
