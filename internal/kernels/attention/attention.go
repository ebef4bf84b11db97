package attention

import (
	"fmt"
	"math"

	"github.com/sporeml/spore/internal/freelist"

	"github.com/sporeml/spore/internal/kernels/gemm"
	"github.com/sporeml/spore/internal/kernels/parallel"
	"github.com/sporeml/spore/internal/kernels/vec"
)

// Tile sizes: a block of BlockQ queries meets a block of BlockK keys at a
// time. Two BlockQ×BlockK score tiles (scores and, in the backward pass,
// their gradient) of float64 take 64 KiB, so they stay in L2 with the
// q, k and v blocks they are computed from.
const (
	BlockQ = 64
	BlockK = 64
)

// Params describe one batched attention call. Every slice is row-major:
// q is [B, L, E], k is [B, S, E], v is [B, S, Ev], out is [B, L, Ev] and
// lse is [B, L], where B is the product of the leading (batch and head)
// axes.
type Params[T float32 | float64] struct {
	B, L, S, E, Ev int
	// Scale multiplies q·kᵀ before the mask is added.
	Scale T
	// Causal masks key j for query i when j > i (top-left aligned, as
	// torch's is_causal).
	Causal bool
	// P is the dropout probability applied to the attention weights;
	// Seed selects the mask (Keep), so the backward pass regenerates it.
	P    float64
	Seed uint64
	// At most one mask: BoolMask (true attends) or AddMask (added to the
	// scaled scores). The mask is broadcast to [Batch..., L, S]: Batch are
	// the leading axes whose product is B (at most MaxRank−2 of them), and
	// MaskStrides[:len(Batch)+2] holds the mask's element stride along
	// each axis of that shape, 0 along the axes it is broadcast over. (An
	// array, not a slice: a caller's strides then never escape to the
	// heap.)
	BoolMask    []bool
	AddMask     []T
	Batch       []int
	MaskStrides [MaxRank]int
	// Q, K, V and O place the rows of q (and dq), k (and dk), v (and dv)
	// and out (and dout) in their slices; the zero Layout is the
	// contiguous [B, rows, width] above. Other layouts let the kernels
	// read the heads straight from a projection's output and write them
	// back interleaved, with no transposes around them.
	Q, K, V, O Layout
}

// Layout places the rows of each batch slice in a slice: batch slice
// b = n·Heads + h has its row i at element offset
//
//	Base + n·N + h·Head + i·Row
//
// and the row's elements follow contiguously. The zero Layout means
// contiguous slices ([B, rows, width]: Heads 1, N = rows·width, Row =
// width). For multi-head self-attention on a packed projection
// [batch, L, 3, H, D], q, k and v are one slice with Heads H, N = 3·L·H·D,
// Head D, Row 3·H·D and Base 0, H·D and 2·H·D; the output [batch, L, H, D]
// has Heads H, N = L·H·D, Head D, Row H·D.
type Layout struct {
	Heads, Base, N, Head, Row int
}

// at returns the offset of row i of batch slice b.
func (l *Layout) at(b, i int) int {
	n, h := b/l.Heads, b%l.Heads
	return l.Base + n*l.N + h*l.Head + i*l.Row
}

// orContiguous returns l, or for the zero Layout the contiguous one for
// rows rows of width elements.
func (l Layout) orContiguous(rows, width int) Layout {
	if l == (Layout{}) {
		return Layout{Heads: 1, N: rows * width, Row: max(width, 1)}
	}
	return l
}

// need returns the number of elements a slice must hold for b batch
// slices of rows rows of width elements in layout l: one past the last
// element of the last row of every slice (0 when there is none).
func (l *Layout) need(b, rows, width int) int {
	if b == 0 || rows == 0 || width == 0 {
		return 0
	}
	// Offsets grow with n, h and i, so the farthest row is the last one
	// of batch slice b − 1 or, when that is not the last head of its n,
	// of the last head of the n before.
	last := l.at(b-1, rows-1)
	if n := (b - 1) / l.Heads; n > 0 {
		last = max(last, l.at(n*l.Heads-1, rows-1))
	}
	return last + width
}

// checkLayout panics when layout l of slice name is invalid.
func checkLayout(op, name string, l Layout) {
	if l.Heads < 1 || l.Base < 0 || l.N < 0 || l.Head < 0 || l.Row < 1 {
		panic(fmt.Sprintf("attention.%s: invalid layout of %s: %+v", op, name, l))
	}
}

// layouts resolves the zero layouts to contiguous ones and checks them.
func (p *Params[T]) layouts(op string) {
	p.Q = p.Q.orContiguous(p.L, p.E)
	p.K = p.K.orContiguous(p.S, p.E)
	p.V = p.V.orContiguous(p.S, p.Ev)
	p.O = p.O.orContiguous(p.L, p.Ev)
	for _, c := range []struct {
		name string
		l    Layout
	}{{"q", p.Q}, {"k", p.K}, {"v", p.V}, {"out", p.O}} {
		checkLayout(op, c.name, c.l)
	}
}

// check panics when the sizes are negative or the mask or dropout
// settings are invalid.
func (p *Params[T]) check(op string) {
	if p.B < 0 || p.L < 0 || p.S < 0 || p.E < 0 || p.Ev < 0 {
		panic(fmt.Sprintf("attention.%s: negative size in B=%d L=%d S=%d E=%d Ev=%d", op, p.B, p.L, p.S, p.E, p.Ev))
	}
	if len(p.Batch) > MaxRank-2 {
		panic(fmt.Sprintf("attention.%s: scores of rank %d; at most %d supported", op, len(p.Batch)+2, MaxRank))
	}
	if !(p.P >= 0 && p.P < 1) {
		panic(fmt.Sprintf("attention.%s: dropout probability %v not in [0, 1)", op, p.P))
	}
}

// checkLen panics when slice name of op holds fewer than want elements.
func checkLen(op, name string, got, want int) {
	if got < want {
		panic(fmt.Sprintf("attention.%s: %s has %d elements, want %d", op, name, got, want))
	}
}

// maskOffset returns the element offset of batch slice b's mask.
func (p *Params[T]) maskOffset(b int) int {
	off := 0
	for d := len(p.Batch) - 1; d >= 0; d-- {
		n := p.Batch[d]
		off += (b % n) * p.MaskStrides[d]
		b /= n
	}
	return off
}

// Impl is the kernels for one element type, bound to that type's GEMM and
// exponential; Float32 and Float64 are the two instances.
type Impl[T float32 | float64] struct {
	gemm func(transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int)
	// lincomb is the one-tile path's product (vec.LinComb): no packing,
	// which on a tile of a few dozen rows costs more than the arithmetic.
	lincomb func(c []T, ldc, m, w, n int, alpha T, a []T, ar, at int, b []T, ldb int)
	// transpose is vec.Transpose: the one-tile path's keys and values
	// transposed for the products against them.
	transpose func(dst []T, ldd int, src []T, lds, rows, cols int)
	// softmaxBackRows is vec.SoftmaxBackRows: weights recomputed from
	// scores and lse, and the scores' gradient, in one pass over a tile.
	softmaxBackRows func(p, dp []T, rows, cols, ld int, lse, d []T)
	exp             func(dst, x []T)
	// Row operations, vectorised by package vec.
	max       func(x []T) T
	sum       func(x []T) T
	addScalar func(dst, a []T, s T)
	mulScalar func(dst, a []T, s T)
	mul       func(dst, a, b []T)
	// expSubMaxRows replaces each row by e^(x − max x) and stores the
	// maximum (NaN if the row holds one; -Inf, the row untouched, if all
	// are -Inf) and the sum (vec.ExpSubMaxRows).
	expSubMaxRows func(x []T, rows, cols, ld int, m, sum []T)
	axpy          func(dst, x []T, a T)
	pool          *freelist.List[scratch[T]]
	jobs          *freelist.List[job[T]]
}

// The kernels per element type: registration picks one, so no kernel
// switches on its operands' type when it runs.
var (
	Float32 = &Impl[float32]{gemm: gemm.Sgemm, lincomb: vec.LinComb, transpose: vec.Transpose, softmaxBackRows: vec.SoftmaxBackRows, exp: vec.Exp, max: vec.Max, sum: vec.Sum,
		addScalar: vec.AddScalar, mulScalar: vec.MulScalar, mul: vec.Mul, axpy: vec.Axpy, expSubMaxRows: vec.ExpSubMaxRows, pool: new(freelist.List[scratch[float32]]), jobs: new(freelist.List[job[float32]])}
	Float64 = &Impl[float64]{gemm: gemm.Dgemm, lincomb: vec.LinCombF64, transpose: transpose64, softmaxBackRows: softmaxBackRows64, exp: exp64, max: vec.MaxF64, sum: vec.SumF64,
		addScalar: vec.AddScalarF64, mulScalar: vec.MulScalarF64, mul: vec.MulF64, axpy: axpy64, expSubMaxRows: expSubMaxRows64, pool: new(freelist.List[scratch[float64]]), jobs: new(freelist.List[job[float64]])}
)

// axpy64 sets dst[i] += a·x[i].
func axpy64(dst, x []float64, a float64) {
	x = x[:len(dst)]
	for i, v := range x {
		dst[i] += a * v
	}
}

// expSubMaxRows64 is vec.ExpSubMaxRows for float64.
func expSubMaxRows64(x []float64, rows, cols, ld int, m, sum []float64) {
	for i := range rows {
		row := x[i*ld : i*ld+cols]
		m[i], sum[i] = vec.MaxF64(row), 0
		if math.IsInf(m[i], -1) {
			continue
		}
		for j, v := range row {
			row[j] = math.Exp(v - m[i])
			sum[i] += row[j]
		}
	}
}

func exp64(dst, x []float64) {
	x = x[:len(dst)]
	for i, v := range x {
		dst[i] = math.Exp(v)
	}
}

// job is one call's operands, handed to the worker pool as a
// parallel.Body. Jobs are pooled and hold their own copy of the batch
// shape, so that a call allocates nothing in steady state (a compiled
// plan allocates nothing per call).
type job[T float32 | float64] struct {
	im                                             *Impl[T]
	p                                              Params[T]
	batch                                          [MaxRank]int
	backward                                       bool
	nq                                             int
	q, k, v, out, lse, dout, dlse, dq, dk, dv, dms []T
}

// MaxRank bounds the rank of the scores' shape [Batch..., L, S].
const MaxRank = 16

func (im *Impl[T]) job(p *Params[T]) *job[T] {
	j := im.jobs.Get()
	j.im, j.p = im, *p
	j.p.Batch = j.batch[:copy(j.batch[:], p.Batch)]
	return j
}

// release drops the job's references to the caller's slices and pools it.
func (j *job[T]) release() {
	j.p = Params[T]{}
	j.q, j.k, j.v, j.out, j.lse, j.dout, j.dlse, j.dq, j.dk, j.dv, j.dms = nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil
	j.im.jobs.Put(j)
}

// Run processes units [lo, hi): query blocks (forward) or batch slices
// (backward).
func (j *job[T]) Run(lo, hi int) {
	im, p := j.im, &j.p
	if j.small() {
		sc := im.get(p.Ev, p.L)
		for b := lo; b < hi; b++ {
			if j.backward {
				im.smallBackward(p, sc, b, j.q, j.k, j.v, j.out, j.lse, j.dout, j.dlse, j.dq, j.dk, j.dv, j.dms)
			} else {
				im.smallForward(p, sc, b, j.q, j.k, j.v, j.out, j.lse)
			}
		}
		im.pool.Put(sc)
		return
	}
	if j.backward {
		sc := im.get(p.Ev, p.L)
		for b := lo; b < hi; b++ {
			im.backward(p, sc, b, j.q, j.k, j.v, j.out, j.lse, j.dout, j.dlse, j.dq, j.dk, j.dv, j.dms)
		}
		im.pool.Put(sc)
		return
	}
	sc := im.get(p.Ev, 0)
	for u := lo; u < hi; u++ {
		im.forward(p, sc, u/j.nq, (u%j.nq)*BlockQ, j.q, j.k, j.v, j.out, j.lse)
	}
	im.pool.Put(sc)
}

// small reports whether every batch slice fits one tile, so that the
// kernels take the small-shape path (smallForward, smallBackward).
func (j *job[T]) small() bool {
	return j.p.L <= BlockQ && j.p.S <= BlockK
}

// scratch is one worker's tiles, pooled.
type scratch[T float32 | float64] struct {
	s, dp, acc, m, l, d []T
	// kt and vt hold a one-tile slice's keys and values transposed.
	kt, vt []T
}

func (im *Impl[T]) get(ev, l int) *scratch[T] {
	sc := im.pool.Get()
	sc.s = grow(sc.s, BlockQ*BlockK)
	sc.dp = grow(sc.dp, BlockQ*BlockK)
	sc.acc = grow(sc.acc, BlockQ*max(ev, 1))
	sc.m = grow(sc.m, BlockQ)
	sc.l = grow(sc.l, BlockQ)
	sc.d = grow(sc.d, max(l, 1))
	return sc
}

// Keep reports whether dropout with probability p and seed keeps the
// attention weight of query i and key j in batch slice b of an L×S
// problem. It hashes the position (SplitMix64's finaliser), so any tile
// can regenerate its part of the mask in any order: the backward pass
// recomputes the forward pass's mask instead of storing it.
func Keep(seed uint64, b, i, j, l, s int, p float64) bool {
	if p == 0 {
		return true
	}
	x := seed + uint64((b*l+i)*s+j+1)*0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	x ^= x >> 31
	return float64(x>>11)*0x1p-53 >= p
}

// scores fills sc.s (rows i0..i0+r, columns j0..j0+c, row stride BlockK)
// with the scaled and masked scores of batch slice b: -Inf where a mask
// forbids attending.
func (im *Impl[T]) scores(p *Params[T], b, i0, r, j0, c int, q, k []T, s []T) {
	qb := q[p.Q.at(b, i0):]
	kb := k[p.K.at(b, j0):]
	im.gemm(false, true, r, c, p.E, p.Scale, qb, p.Q.Row, kb, p.K.Row, 0, s, BlockK)
	mask(p, b, i0, r, j0, c, s, BlockK)
}

// mask sets the scores in s (rows i0..i0+r, columns j0..j0+c of batch
// slice b, row stride ld) that the causal flag or a mask forbids to -Inf,
// and adds an additive mask.
func mask[T float32 | float64](p *Params[T], b, i0, r, j0, c int, s []T, ld int) {
	neg := T(math.Inf(-1))
	if p.Causal && j0+c-1 > i0 {
		for ii := range r {
			for jj := max(i0+ii+1-j0, 0); jj < c; jj++ {
				s[ii*ld+jj] = neg
			}
		}
	}
	if p.BoolMask == nil && p.AddMask == nil {
		return
	}
	nb := len(p.Batch)
	rs, cs := p.MaskStrides[nb], p.MaskStrides[nb+1]
	off := p.maskOffset(b)
	for ii := range r {
		row := s[ii*ld : ii*ld+c]
		mo := off + (i0+ii)*rs + j0*cs
		if p.BoolMask != nil {
			for jj := range row {
				if !p.BoolMask[mo+jj*cs] {
					row[jj] = neg
				}
			}
		} else {
			for jj := range row {
				row[jj] += p.AddMask[mo+jj*cs]
			}
		}
	}
}

// keyEnd is the end of the keys that queries before i1 may attend.
func keyEnd[T float32 | float64](p *Params[T], i1 int) int {
	if p.Causal {
		return min(p.S, i1)
	}
	return p.S
}

// forward computes out and lse for the block of queries from i0 in batch
// slice b:
// FlashAttention's online softmax, one BlockK block of keys at a time,
// rescaling the running output whenever the running maximum grows.
func (im *Impl[T]) forward(p *Params[T], sc *scratch[T], b, i0 int, q, k, v, out, lse []T) {
	r := min(BlockQ, p.L-i0)
	ev := p.Ev
	acc, m, l := sc.acc[:r*ev], sc.m[:r], sc.l[:r]
	clear(acc)
	clear(l)
	neg := T(math.Inf(-1))
	for i := range m {
		m[i] = neg
	}
	for j0 := 0; j0 < keyEnd(p, i0+r); j0 += BlockK {
		c := min(BlockK, p.S-j0)
		s := sc.s
		im.scores(p, b, i0, r, j0, c, q, k, s)
		for ii := range r {
			row := s[ii*BlockK : ii*BlockK+c]
			mx := max(m[ii], im.max(row))
			if mx == neg {
				// Nothing attended in this row yet: the weights are all 0.
				clear(row)
				continue
			}
			if mx > m[ii] {
				alpha := T(math.Exp(float64(m[ii] - mx)))
				l[ii] *= alpha
				a := acc[ii*ev : (ii+1)*ev]
				im.mulScalar(a, a, alpha)
				m[ii] = mx
			}
			im.addScalar(row, row, -mx)
			im.exp(row, row)
			l[ii] += im.sum(row)
			if p.P > 0 {
				for jj := range row {
					if !Keep(p.Seed, b, i0+ii, j0+jj, p.L, p.S, p.P) {
						row[jj] = 0
					}
				}
			}
		}
		im.gemm(false, false, r, ev, c, 1, s, BlockK, v[p.V.at(b, j0):], p.V.Row, 1, acc, max(ev, 1))
	}
	keep := T(1 / (1 - p.P))
	for ii := range r {
		o := out[p.O.at(b, i0+ii):][:ev]
		li := &lse[b*p.L+i0+ii]
		if l[ii] == 0 {
			// A query that may attend no key gets a zero output (as
			// FlashAttention and torch's safe softmax give) rather than
			// 0/0; its lse of +Inf makes every recomputed weight 0.
			clear(o)
			*li = T(math.Inf(1))
			continue
		}
		inv := keep / l[ii]
		for e := range o {
			o[e] = acc[ii*ev+e] * inv
		}
		*li = m[ii] + T(math.Log(float64(l[ii])))
	}
}

// Forward computes softmax(scale·q·kᵀ + mask)·v into out and the
// log-sum-exp of each query's scores into lse, tile by tile, never holding
// more than a BlockQ×BlockK tile of scores. A query whose keys are all
// masked gets a zero output and an lse of +Inf. Query blocks of every
// batch slice are spread over the worker pool.
func (im *Impl[T]) Forward(p *Params[T], q, k, v, out, lse []T) {
	const op = "Forward"
	p.check(op)
	j := im.job(p)
	p = &j.p
	p.layouts(op)
	checkLen(op, "q", len(q), p.Q.need(p.B, p.L, p.E))
	checkLen(op, "k", len(k), p.K.need(p.B, p.S, p.E))
	checkLen(op, "v", len(v), p.V.need(p.B, p.S, p.Ev))
	checkLen(op, "out", len(out), p.O.need(p.B, p.L, p.Ev))
	checkLen(op, "lse", len(lse), p.B*p.L)
	j.backward = false
	j.nq = (p.L + BlockQ - 1) / BlockQ
	j.q, j.k, j.v, j.out, j.lse = q, k, v, out, lse
	if j.small() {
		// A unit is one whole batch slice.
		parallel.ForBody(p.B, smallGrain(p), j)
		j.release()
		return
	}
	// A unit is one query block of one batch slice; one is worth
	// handing to another thread from a few blocks of keys up.
	parallel.ForBody(p.B*j.nq, max(1, 4*BlockK/max(p.S, 1)), j)
	j.release()
}

// Backward computes the gradients dq, dk and dv (overwritten) of
// Forward's out given its cotangent dout and, when dlse is not nil, lse's
// cotangent dlse. It recomputes each tile of weights from q, k and lse
// (FlashAttention-2's backward pass) and regenerates the dropout mask
// from the seed, so it stores no L×S matrix. If dmask is not nil it
// receives the gradient of the scores after scaling, [B, L, S] — the
// gradient of an additive mask before summing over its broadcast axes.
// Batch slices are spread over the worker pool.
func (im *Impl[T]) Backward(p *Params[T], q, k, v, out, lse, dout, dlse, dq, dk, dv, dmask []T) {
	const op = "Backward"
	p.check(op)
	j := im.job(p)
	p = &j.p
	p.layouts(op)
	checkLen(op, "q", len(q), p.Q.need(p.B, p.L, p.E))
	checkLen(op, "k", len(k), p.K.need(p.B, p.S, p.E))
	checkLen(op, "v", len(v), p.V.need(p.B, p.S, p.Ev))
	checkLen(op, "out", len(out), p.O.need(p.B, p.L, p.Ev))
	checkLen(op, "lse", len(lse), p.B*p.L)
	checkLen(op, "dout", len(dout), p.O.need(p.B, p.L, p.Ev))
	checkLen(op, "dq", len(dq), p.Q.need(p.B, p.L, p.E))
	checkLen(op, "dk", len(dk), p.K.need(p.B, p.S, p.E))
	checkLen(op, "dv", len(dv), p.V.need(p.B, p.S, p.Ev))
	if dlse != nil {
		checkLen(op, "dlse", len(dlse), p.B*p.L)
	}
	if dmask != nil {
		checkLen(op, "dmask", len(dmask), p.B*p.L*p.S)
	}
	j.backward = true
	j.q, j.k, j.v, j.out, j.lse, j.dout, j.dlse, j.dq, j.dk, j.dv, j.dms = q, k, v, out, lse, dout, dlse, dq, dk, dv, dmask
	grain := 1
	if j.small() {
		grain = smallGrain(p)
	}
	parallel.ForBody(p.B, grain, j)
	j.release()
}

// backward is FlashAttention-2's backward pass for batch slice b: for
// each block of keys, it walks the blocks of queries that may attend it,
// recomputing the weights P = exp(S − lse) and accumulating
//
//	dV += (P∘Z)ᵀ·dO        dP = (dO·Vᵀ)∘Z
//	dS = P∘(dP − D)        D = rowsum(dO∘O) − dlse
//	dQ += scale·dS·K       dK += scale·dSᵀ·Q
//
// where Z is the dropout mask scaled by 1/(1−p).
func (im *Impl[T]) backward(p *Params[T], sc *scratch[T], b int, q, k, v, out, lse, dout, dlse, dq, dk, dv, dmask []T) {
	L, S, E, Ev := p.L, p.S, p.E, p.Ev
	for i := range L {
		clear(dq[p.Q.at(b, i):][:E])
	}
	for j := range S {
		clear(dk[p.K.at(b, j):][:E])
		clear(dv[p.V.at(b, j):][:Ev])
	}
	if dmask != nil {
		clear(dmask[b*L*S : (b+1)*L*S])
	}
	d := sc.d[:L]
	for i := range L {
		o := out[p.O.at(b, i):][:Ev]
		g := dout[p.O.at(b, i):][:Ev]
		sum := T(0)
		for e := range o {
			sum += o[e] * g[e]
		}
		if dlse != nil {
			sum -= dlse[b*L+i]
		}
		d[i] = sum
	}
	keep := T(1 / (1 - p.P))
	for j0 := 0; j0 < S; j0 += BlockK {
		c := min(BlockK, S-j0)
		i0 := 0
		if p.Causal {
			i0 = j0 / BlockQ * BlockQ
		}
		for ; i0 < L; i0 += BlockQ {
			r := min(BlockQ, L-i0)
			s, dp := sc.s, sc.dp
			im.scores(p, b, i0, r, j0, c, q, k, s)
			for ii := range r {
				row := s[ii*BlockK : ii*BlockK+c]
				im.addScalar(row, row, -lse[b*L+i0+ii])
				im.exp(row, row)
			}
			// dP = dO·Vᵀ, before s becomes P∘Z for dV.
			im.gemm(false, true, r, c, Ev, 1, dout[p.O.at(b, i0):], p.O.Row, v[p.V.at(b, j0):], p.V.Row, 0, dp, BlockK)
			for ii := range r {
				row := s[ii*BlockK : ii*BlockK+c]
				drow := dp[ii*BlockK : ii*BlockK+c]
				di := d[i0+ii]
				if p.P == 0 {
					// drow becomes dS = P∘(dP − D).
					im.addScalar(drow, drow, -di)
					im.mul(drow, drow, row)
				} else {
					for jj := range row {
						pij := row[jj]
						z := keep
						if !Keep(p.Seed, b, i0+ii, j0+jj, L, S, p.P) {
							z = 0
						}
						// drow becomes dS; row becomes P∘Z for dV.
						drow[jj] = pij * (drow[jj]*z - di)
						row[jj] = pij * z
					}
				}
				if dmask != nil {
					copy(dmask[(b*L+i0+ii)*S+j0:(b*L+i0+ii)*S+j0+c], drow)
				}
			}
			im.gemm(true, false, c, Ev, r, 1, s, BlockK, dout[p.O.at(b, i0):], p.O.Row, 1, dv[p.V.at(b, j0):], p.V.Row)
			im.gemm(false, false, r, E, c, p.Scale, dp, BlockK, k[p.K.at(b, j0):], p.K.Row, 1, dq[p.Q.at(b, i0):], p.Q.Row)
			im.gemm(true, false, c, E, r, p.Scale, dp, BlockK, q[p.Q.at(b, i0):], p.Q.Row, 1, dk[p.K.at(b, j0):], p.K.Row)
		}
	}
}

// smallGrain is the number of batch slices worth handing to another
// thread on the small-shape path: enough for ~32K multiply-adds.
func smallGrain[T float32 | float64](p *Params[T]) int {
	return max(1, 1<<15/max(p.L*p.S*(p.E+p.Ev), 1))
}

// grow returns b resliced to n elements, reallocated when too short.
func grow[T float32 | float64](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, n)
	}
	return b[:n]
}

// smallScores fills s (L×S, row stride ls = tileStride(S)) with batch slice b's scaled and
// masked scores when the whole slice is one tile.
//
// Each query's row of scores is a combination of the rows of kᵀ weighted
// by the query, so the keys are transposed first (once for all queries).
func (im *Impl[T]) smallScores(p *Params[T], sc *scratch[T], b int, q, k, s []T) {
	L, S, E, ls := p.L, p.S, p.E, tileStride(p.S)
	sc.kt = im.transposed(sc.kt, ls, k, p.K, b, S, E)
	im.lincomb(s, ls, L, S, E, p.Scale, q[p.Q.at(b, 0):], p.Q.Row, 1, sc.kt, ls)
	mask(p, b, 0, L, 0, S, s, ls)
}

// tileStride is the row stride of a one-tile slice's L×S tiles (and of
// its keys and values transposed): S rounded up to whole 16-lane vectors.
// With rows packed at stride S, a row's masked tail store would share a
// 64-byte span with the next row's first load, which then waits for the
// store to commit instead of taking its data forwarded.
func tileStride(s int) int {
	return (s + 15) &^ 15
}

// transposed returns dst, grown to cols·ld elements, holding the rows
// rows of cols elements of batch slice b of x (layout l) as a cols×rows
// matrix with row stride ld.
func (im *Impl[T]) transposed(dst []T, ld int, x []T, l Layout, b, rows, cols int) []T {
	dst = grow(dst, cols*ld)
	if rows > 0 && cols > 0 {
		im.transpose(dst, ld, x[l.at(b, 0):], l.Row, rows, cols)
	}
	return dst
}

// softmaxBackRows64 is vec.SoftmaxBackRows for float64.
func softmaxBackRows64(p, dp []float64, rows, cols, ld int, lse, d []float64) {
	for i := range rows {
		pr, gr := p[i*ld:i*ld+cols], dp[i*ld:i*ld+cols]
		for j, x := range pr {
			e := math.Exp(x - lse[i])
			pr[j] = e
			gr[j] = e * (gr[j] - d[i])
		}
	}
}

// transpose64 sets dst[e·ldd + j] = src[j·lds + e] for j < rows, e < cols.
func transpose64(dst []float64, ldd int, src []float64, lds, rows, cols int) {
	for j := range rows {
		for e, v := range src[j*lds : j*lds+cols] {
			dst[e*ldd+j] = v
		}
	}
}

// smallForward is forward for a batch slice that fits one tile (L ≤
// BlockQ, S ≤ BlockK): a plain softmax over whole rows, with no online
// rescaling (one vec.ExpSubMaxRows call) and the products as LinComb
// calls.
func (im *Impl[T]) smallForward(p *Params[T], sc *scratch[T], b int, q, k, v, out, lse []T) {
	L, S, Ev, ls := p.L, p.S, p.Ev, tileStride(p.S)
	s := sc.s[:L*ls]
	im.smallScores(p, sc, b, q, k, s)
	neg, inf := T(math.Inf(-1)), T(math.Inf(1))
	m, l := sc.m[:L], sc.l[:L]
	keep := T(1 / (1 - p.P))
	// A row's maximum is NaN when the row holds a NaN, which then
	// reaches the output and lse as on the tiled path.
	im.expSubMaxRows(s, L, S, ls, m, l)
	for i := range L {
		row := s[i*ls : i*ls+S]
		if m[i] == neg {
			// Nothing attended: the weights are all 0 (exp(-Inf)).
			clear(row)
			continue
		}
		if p.P > 0 {
			for j := range row {
				if !Keep(p.Seed, b, i, j, L, S, p.P) {
					row[j] = 0
				}
			}
		}
	}
	im.lincomb(out[p.O.at(b, 0):], p.O.Row, L, Ev, S, 1, s, ls, 1, v[p.V.at(b, 0):], p.V.Row)
	ob := p.O.at(b, 0)
	for i := range L {
		o := out[ob+i*p.O.Row:][:Ev]
		li := &lse[b*L+i]
		if l[i] == 0 {
			// As in forward: a zero output and an lse of +Inf.
			clear(o)
			*li = inf
			continue
		}
		inv := keep / l[i]
		for e := range o {
			o[e] *= inv
		}
		*li = m[i] + T(math.Log(float64(l[i])))
	}
}

// smallBackward is backward for a batch slice that fits one tile: the
// same products, each one LinComb call over the whole slice.
func (im *Impl[T]) smallBackward(p *Params[T], sc *scratch[T], b int, q, k, v, out, lse, dout, dlse, dq, dk, dv, dmask []T) {
	L, S, E, Ev, ls := p.L, p.S, p.E, p.Ev, tileStride(p.S)
	ob, lo := p.O.at(b, 0), p.O.Row
	gb := dout[ob:]
	s, dp := sc.s[:L*ls], sc.dp[:L*ls]
	im.smallScores(p, sc, b, q, k, s)
	// dP = dO·Vᵀ, against the values transposed.
	sc.vt = im.transposed(sc.vt, ls, v, p.V, b, S, Ev)
	im.lincomb(dp, ls, L, S, Ev, 1, gb, lo, 1, sc.vt, ls)
	d := sc.d[:L]
	for i := range L {
		g := gb[i*lo:][:Ev]
		o := out[ob+i*lo:][:Ev]
		di := T(0)
		for e, x := range g {
			di += o[e] * x
		}
		if dlse != nil {
			di -= dlse[b*L+i]
		}
		d[i] = di
	}
	if p.P == 0 {
		// s becomes P = exp(S − lse), dp becomes dS = P∘(dP − D).
		im.softmaxBackRows(s, dp, L, S, ls, lse[b*L:], d)
	} else {
		keep := T(1 / (1 - p.P))
		for i := range L {
			row := s[i*ls : i*ls+S]
			li := lse[b*L+i]
			for j := range row {
				row[j] -= li
			}
			im.exp(row, row)
			drow := dp[i*ls : i*ls+S]
			for j := range row {
				pij := row[j]
				z := keep
				if !Keep(p.Seed, b, i, j, L, S, p.P) {
					z = 0
				}
				// drow becomes dS; row becomes P∘Z for dV.
				drow[j] = pij * (drow[j]*z - d[i])
				row[j] = pij * z
			}
		}
	}
	if dmask != nil {
		for i := range L {
			copy(dmask[(b*L+i)*S:(b*L+i+1)*S], dp[i*ls:i*ls+S])
		}
	}
	// dV = (P∘Z)ᵀ·dO, dQ = scale·dS·K, dK = scale·dSᵀ·Q, each written
	// whole (beta 0).
	im.lincomb(dv[p.V.at(b, 0):], p.V.Row, S, Ev, L, 1, s, 1, ls, gb, lo)
	im.lincomb(dq[p.Q.at(b, 0):], p.Q.Row, L, E, S, p.Scale, dp, ls, 1, k[p.K.at(b, 0):], p.K.Row)
	im.lincomb(dk[p.K.at(b, 0):], p.K.Row, S, E, L, p.Scale, dp, 1, ls, q[p.Q.at(b, 0):], p.Q.Row)
}
