package norm

import (
	"fmt"
	"math"

	"github.com/sporeml/spore/internal/freelist"

	"github.com/sporeml/spore/internal/kernels/parallel"
	"github.com/sporeml/spore/internal/kernels/vec"
)

// Impl is the kernels for one element type, bound to that type's row
// passes; Float32 and Float64 are the two instances.
type Impl[T float32 | float64] struct {
	// stats returns a row's mean and 1/√(var + eps).
	stats func(x []T, eps float64) (mean, rstd T)
	// row sets y = (x − mean)·rstd·g + b.
	row func(y, x, g, b []T, mean, rstd T)
	// gradSums adds dy∘x̂ to pg and dy to pb and returns Σ g and Σ g∘x̂
	// (g = dy∘gamma); gradRow sets dx = rstd·(g − a − c·x̂).
	gradSums func(x, dy, gamma, pg, pb []T, mean, rstd T) (sg, sgx T)
	gradRow  func(dx, x, dy, gamma []T, mean, rstd, a, c T)
	jobs     *freelist.List[job[T]]
	partials *freelist.List[[]T]
}

// The kernels per element type: registration picks one, so no kernel
// switches on its operands' type when it runs. Both run package vec's row
// passes, the one place the layer-norm arithmetic is written: Float32 its
// float32 kernels (AVX-512 where available), Float64 its plain-Go float64
// ones, which share the float32 kernels' Go twins. This package adds only
// the blocking over rows and threads.
var (
	Float32 = &Impl[float32]{stats: stats32, row: vec.LayerNormRow, gradSums: vec.LayerNormGradSums, gradRow: vec.LayerNormGradRow,
		jobs: new(freelist.List[job[float32]]), partials: new(freelist.List[[]float32])}
	Float64 = &Impl[float64]{stats: vec.LayerNormStatsF64, row: vec.LayerNormRowF64, gradSums: vec.LayerNormGradSumsF64, gradRow: vec.LayerNormGradRowF64,
		jobs: new(freelist.List[job[float64]]), partials: new(freelist.List[[]float64])}
)

// stats32 is a float32 row's mean and 1/√(var + eps), the variance taken
// about the mean in a second pass (the row is in cache).
func stats32(x []float32, eps float64) (mean, rstd float32) {
	return vec.LayerNormStats(x, float32(eps))
}

// Row blocks: the rows are cut into at most maxBlocks blocks of at least
// minRows rows, a number that depends only on the sizes, so the backward
// pass's per-block sums of dgamma and dbeta, added in block order, give
// the same bits whichever thread runs which block.
const (
	maxBlocks = 16
	minRows   = 32
)

// blocks returns how many row blocks rows rows are cut into.
func blocks(rows int) int {
	return max(1, min(maxBlocks, rows/minRows))
}

// job is one call's operands, handed to the worker pool as a
// parallel.Body; jobs are pooled, so a call allocates nothing in steady
// state (a compiled plan allocates nothing per call).
type job[T float32 | float64] struct {
	im                    *Impl[T]
	rows, d, nb           int
	eps                   float64
	backward              bool
	x, gamma, beta, y, dy []T
	dx                    []T
	partial               []T
}

func (im *Impl[T]) job() *job[T] {
	j := im.jobs.Get()
	j.im = im
	return j
}

func (j *job[T]) release() {
	im := j.im
	*j = job[T]{im: im}
	im.jobs.Put(j)
}

// Run processes row blocks [lo, hi).
func (j *job[T]) Run(lo, hi int) {
	for b := lo; b < hi; b++ {
		r0, r1 := b*j.rows/j.nb, (b+1)*j.rows/j.nb
		if j.backward {
			j.backwardRows(b, r0, r1)
		} else {
			j.forwardRows(r0, r1)
		}
	}
}

func check(op string, rows, d int, eps float64) {
	if rows < 0 || d < 0 {
		panic(fmt.Sprintf("norm.%s: negative size rows=%d d=%d", op, rows, d))
	}
	if !(eps >= 0) || math.IsInf(eps, 0) {
		panic(fmt.Sprintf("norm.%s: eps %v is not a finite non-negative number", op, eps))
	}
}

func checkLen(op, name string, got, want int) {
	if got < want {
		panic(fmt.Sprintf("norm.%s: %s has %d elements, want %d", op, name, got, want))
	}
}

// LayerNorm sets y to x normalised over each of its rows of d elements —
// (x − mean)/√(var + eps), with the biased variance — scaled by gamma and
// shifted by beta (each d long): x and y are [rows, d]. y may be x.
func (im *Impl[T]) LayerNorm(rows, d int, eps float64, x, gamma, beta, y []T) {
	const op = "LayerNorm"
	check(op, rows, d, eps)
	n := rows * d
	checkLen(op, "x", len(x), n)
	checkLen(op, "y", len(y), n)
	checkLen(op, "gamma", len(gamma), d)
	checkLen(op, "beta", len(beta), d)
	if n == 0 {
		return
	}
	j := im.job()
	j.rows, j.d, j.nb, j.eps = rows, d, blocks(rows), eps
	j.x, j.gamma, j.beta, j.y = x, gamma, beta, y
	parallel.ForBody(j.nb, 1, j)
	j.release()
}

func (j *job[T]) forwardRows(r0, r1 int) {
	im, d := j.im, j.d
	g, b := j.gamma[:d], j.beta[:d]
	for r := r0; r < r1; r++ {
		x, y := j.x[r*d:(r+1)*d], j.y[r*d:(r+1)*d]
		mean, rstd := im.stats(x, j.eps)
		im.row(y, x, g, b, mean, rstd)
	}
}

// LayerNormGrad is LayerNorm's gradient: given x [rows, d], gamma [d] and
// the output's gradient dy [rows, d], it sets dx [rows, d] and the
// parameters' gradients dgamma = Σ_rows dy∘x̂ and dbeta = Σ_rows dy (each
// d long), with x̂ the normalised x, recomputed from x rather than stored.
// Per row, with g = dy∘gamma,
//
//	dx = (g − mean(g) − x̂·mean(g∘x̂)) / √(var + eps).
func (im *Impl[T]) LayerNormGrad(rows, d int, eps float64, x, gamma, dy, dx, dgamma, dbeta []T) {
	const op = "LayerNormGrad"
	check(op, rows, d, eps)
	n := rows * d
	checkLen(op, "x", len(x), n)
	checkLen(op, "dy", len(dy), n)
	checkLen(op, "dx", len(dx), n)
	checkLen(op, "gamma", len(gamma), d)
	checkLen(op, "dgamma", len(dgamma), d)
	checkLen(op, "dbeta", len(dbeta), d)
	clear(dgamma[:d])
	clear(dbeta[:d])
	if n == 0 {
		return
	}
	j := im.job()
	j.rows, j.d, j.nb, j.eps, j.backward = rows, d, blocks(rows), eps, true
	j.x, j.gamma, j.dy, j.dx = x, gamma, dy, dx
	// Per block: its sums of dy∘x̂ and dy.
	need := j.nb * 2 * d
	pp := im.partials.Get()
	if cap(*pp) < need {
		*pp = make([]T, need)
	}
	j.partial = (*pp)[:need]
	parallel.ForBody(j.nb, 1, j)
	dg, db := dgamma[:d], dbeta[:d]
	for b := range j.nb {
		p := j.partial[b*2*d : (b+1)*2*d]
		for i, v := range p[:d] {
			dg[i] += v
		}
		for i, v := range p[d:] {
			db[i] += v
		}
	}
	j.release()
	im.partials.Put(pp)
}

func (j *job[T]) backwardRows(b, r0, r1 int) {
	im, d := j.im, j.d
	gamma := j.gamma[:d]
	pg := j.partial[b*2*d : b*2*d+d]
	pb := j.partial[b*2*d+d : (b+1)*2*d]
	clear(pg)
	clear(pb)
	inv := 1 / T(d)
	for r := r0; r < r1; r++ {
		x, dy, dx := j.x[r*d:(r+1)*d], j.dy[r*d:(r+1)*d], j.dx[r*d:(r+1)*d]
		mean, rstd := im.stats(x, j.eps)
		sg, sgx := im.gradSums(x, dy, gamma, pg, pb, mean, rstd)
		im.gradRow(dx, x, dy, gamma, mean, rstd, sg*inv, sgx*inv)
	}
}
