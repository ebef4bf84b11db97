package norm

import (
	"fmt"
	"math"
	"sync"

	"github.com/sporeml/spore/internal/kernels/parallel"
	"github.com/sporeml/spore/internal/kernels/vec"
)

// Impl is the kernels for one element type, bound to that type's row
// operations; Float32 and Float64 are the two instances.
type Impl[T float32 | float64] struct {
	sum       func(x []T) T
	dot       func(a, b []T) T
	addScalar func(dst, a []T, s T)
	mulScalar func(dst, a []T, s T)
	add       func(dst, a, b []T)
	mul       func(dst, a, b []T)
	axpy      func(dst, x []T, a T)
	jobs      *sync.Pool // of *job[T]
	partials  *sync.Pool // of *[]T
}

// The kernels per element type: registration picks one, so no kernel
// switches on its operands' type when it runs.
var (
	Float32 = &Impl[float32]{sum: vec.Sum, dot: vec.Dot, addScalar: vec.AddScalar, mulScalar: vec.MulScalar,
		add: vec.Add, mul: vec.Mul, axpy: vec.Axpy, jobs: new(sync.Pool), partials: new(sync.Pool)}
	Float64 = &Impl[float64]{sum: vec.SumF64, dot: vec.DotF64, addScalar: vec.AddScalarF64, mulScalar: vec.MulScalarF64,
		add: vec.AddF64, mul: vec.MulF64, axpy: axpy64, jobs: new(sync.Pool), partials: new(sync.Pool)}
)

// axpy64 sets dst[i] += a·x[i].
func axpy64(dst, x []float64, a float64) {
	x = x[:len(dst)]
	for i, v := range x {
		dst[i] += a * v
	}
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
	j, _ := im.jobs.Get().(*job[T])
	if j == nil {
		j = &job[T]{im: im}
	}
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

// stats returns the mean of row x and 1/√(var + eps) with the biased
// variance, leaving x − mean in xc.
func (im *Impl[T]) stats(x, xc []T, eps float64) (mean, rstd T) {
	d := T(len(x))
	mean = im.sum(x) / d
	im.addScalar(xc, x, -mean)
	v := im.dot(xc, xc) / d
	rstd = T(1 / math.Sqrt(float64(v)+eps))
	return mean, rstd
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
		_, rstd := im.stats(x, y, j.eps)
		im.mulScalar(y, y, rstd)
		im.mul(y, y, g)
		im.add(y, y, b)
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
	// Per block: its sums of dy∘x̂ and dy, then a row of scratch.
	need := j.nb*2*d + j.nb*d
	pp, _ := im.partials.Get().(*[]T)
	if pp == nil {
		pp = new([]T)
	}
	if cap(*pp) < need {
		*pp = make([]T, need)
	}
	j.partial = (*pp)[:need]
	parallel.ForBody(j.nb, 1, j)
	for b := range j.nb {
		p := j.partial[b*2*d : (b+1)*2*d]
		im.add(dgamma[:d], dgamma[:d], p[:d])
		im.add(dbeta[:d], dbeta[:d], p[d:])
	}
	j.release()
	im.partials.Put(pp)
}

func (j *job[T]) backwardRows(b, r0, r1 int) {
	im, d := j.im, j.d
	gamma := j.gamma[:d]
	pg := j.partial[b*2*d : b*2*d+d]
	pb := j.partial[b*2*d+d : (b+1)*2*d]
	tmp := j.partial[j.nb*2*d+b*d : j.nb*2*d+(b+1)*d]
	clear(pg)
	clear(pb)
	inv := 1 / T(d)
	for r := r0; r < r1; r++ {
		x, dy, dx := j.x[r*d:(r+1)*d], j.dy[r*d:(r+1)*d], j.dx[r*d:(r+1)*d]
		// x̂ in dx, which is written last.
		_, rstd := im.stats(x, dx, j.eps)
		xhat := dx
		im.mulScalar(xhat, xhat, rstd)
		im.add(pb, pb, dy)
		im.mul(tmp, dy, xhat)
		im.add(pg, pg, tmp)
		im.mul(tmp, dy, gamma) // g
		a := im.sum(tmp) * inv
		c := im.dot(tmp, xhat) * inv
		// dx = rstd·(g − a − c·x̂), built in place of x̂.
		im.mulScalar(xhat, xhat, -c)
		im.add(xhat, xhat, tmp)
		im.addScalar(xhat, xhat, -a)
		im.mulScalar(dx, xhat, rstd)
	}
}
