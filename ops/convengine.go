package ops

import "github.com/sporeml/spore/tensor"

// ConvTile is called on each finished tile of a convolution's output, so
// that a fused epilogue (bias, folded BatchNorm, activation, residual add)
// runs on the tile while it is still in cache. The tile is image n,
// channels [c0, c1) and output positions [p0, p1) of the flattened OH·OW
// plane: element (c, p) of image n is out[(n·O + c)·OH·OW + p]. Tiles are
// disjoint and together cover the output exactly once; they may be
// delivered concurrently from the worker pool, so a ConvTile must only
// touch its own tile.
type ConvTile func(n, c0, c1, p0, p1 int)

// Conv2DFloat32 computes the float32 Conv2D of x (shape xs) by w (shape
// ws) with resolved attributes a into out, and calls tile (when non-nil)
// on every finished tile. It is the entry the compiler's fused
// convolution anchor calls; Conv2D's own kernel is the same computation
// with no tile function.
func Conv2DFloat32(a ConvAttrs, xs, ws tensor.Shape, x, w, out []float32, tile ConvTile) {
	g := convGeometry("Conv2D", a, xs, ws)
	conv2DForward(impl32, &g, x, w, out)
	if tile != nil {
		for n := range g.n {
			tile(n, 0, g.o, 0, g.p())
		}
	}
}
