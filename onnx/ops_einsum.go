package onnx

import (
	"sort"
	"strings"

	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// Einsum, reduced to the ops spore has: each pair of operands becomes one
// batched MatMul between transposes and reshapes, and an index that only
// one operand has and nothing later needs is summed out first. An index
// repeated within one operand (a diagonal, "ii->i") first takes the
// diagonal: the operand masked by the identity, summed over the repeat.

func init() {
	register("Einsum", 12, 0, einsumOp)
}

// einTerm is one operand with one index letter per axis.
type einTerm struct {
	t   *tensor.Tensor
	idx []rune
}

// ellipsisBase is the first of the letters that stand for the axes of
// "...": runes no equation can spell, so they never clash with the
// user's letters.
const ellipsisBase = rune(0x2460)

// einsumOp is Einsum: it parses the equation, names the axes of "..."
// with letters of their own, then contracts the operands left to right.
func einsumOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	eq := strings.ReplaceAll(c.String("equation", ""), " ", "")
	if eq == "" {
		return nil, c.Errorf("attribute equation is missing")
	}
	if len(ins) == 0 {
		return nil, c.Errorf("needs at least one input")
	}
	lhs, rhs, explicit := strings.Cut(eq, "->")
	specs := strings.Split(lhs, ",")
	if len(specs) != len(ins) {
		return nil, c.Errorf("equation %q has %d operands, the node %d inputs", eq, len(specs), len(ins))
	}
	// The longest "..." decides how many letters it stands for; shorter
	// ones take the rightmost (NumPy's broadcasting alignment).
	ell := 0
	terms := make([]einTerm, len(ins))
	written := make([][]rune, len(ins)) // each operand's letters as written, repeats and all
	for i, spec := range specs {
		x := ins[i]
		if x == nil {
			return nil, c.Errorf("input %d is missing", i)
		}
		letters := strings.Count(spec, "") - 1
		if strings.Contains(spec, "...") {
			letters -= 3
			ell = max(ell, x.Rank()-letters)
		}
	}
	ellRunes := func(n int) []rune {
		r := make([]rune, n)
		for i := range r {
			r[i] = ellipsisBase + rune(ell-n+i)
		}
		return r
	}
	for i, spec := range specs {
		x := ins[i]
		var idx []rune
		before, after, hasEll := strings.Cut(spec, "...")
		if err := checkLetters(c, eq, before+after); err != nil {
			return nil, err
		}
		if hasEll {
			n := x.Rank() - len(before) - len(after)
			if n < 0 {
				return nil, c.Errorf("operand %d %q has more letters than its rank %d", i, spec, x.Rank())
			}
			idx = append(append(append(idx, []rune(before)...), ellRunes(n)...), []rune(after)...)
		} else {
			idx = []rune(spec)
		}
		if len(idx) != x.Rank() {
			return nil, c.Errorf("operand %d %q names %d axes, input %v has %d", i, spec, len(idx), x.Shape(), x.Rank())
		}
		written[i] = append([]rune(nil), idx...)
		for {
			p, q := repeatedIndex(idx)
			if q < 0 {
				break
			}
			if x.Dim(p) != x.Dim(q) {
				return nil, c.Errorf("operand %d %q repeats index %q over axes of extents %d and %d", i, spec, idx[p], x.Dim(p), x.Dim(q))
			}
			x = diagonal(x, p, q)
			idx = append(idx[:q:q], idx[q+1:]...)
		}
		terms[i] = einTerm{t: x, idx: idx}
	}
	var out []rune
	if explicit {
		before, after, hasEll := strings.Cut(rhs, "...")
		if err := checkLetters(c, eq, before+after); err != nil {
			return nil, err
		}
		out = []rune(before)
		if hasEll {
			out = append(append(out, ellRunes(ell)...), []rune(after)...)
		}
	} else {
		// Implicit output: "..." first, then the letters written once, in
		// alphabetical order.
		count := map[rune]int{}
		for _, w := range written {
			for _, r := range w {
				count[r]++
			}
		}
		var once []rune
		for r, n := range count {
			if n == 1 && r < ellipsisBase {
				once = append(once, r)
			}
		}
		sort.Slice(once, func(i, j int) bool { return once[i] < once[j] })
		out = append(ellRunes(ell), once...)
	}
	known := map[rune]bool{}
	for _, t := range terms {
		for _, r := range t.idx {
			known[r] = true
		}
	}
	for _, r := range out {
		if !known[r] {
			return nil, c.Errorf("equation %q: output index %q is in no operand", eq, r)
		}
	}
	// needed(k) is the set of letters that terms after k or the output
	// use.
	needed := func(k int) map[rune]bool {
		m := map[rune]bool{}
		for _, r := range out {
			m[r] = true
		}
		for _, t := range terms[k+1:] {
			for _, r := range t.idx {
				m[r] = true
			}
		}
		return m
	}
	acc := sumOut(terms[0], needed(0), nil)
	for k := 1; k < len(terms); k++ {
		keep := needed(k)
		b := sumOut(terms[k], keep, acc.idx)
		a := sumOut(acc, keep, b.idx)
		var err error
		if acc, err = contract(c, a, b, keep); err != nil {
			return nil, err
		}
	}
	acc = sumOut(acc, needed(len(terms)-1), nil)
	perm := make([]int, len(out))
	for i, r := range out {
		perm[i] = indexOf(acc.idx, r)
	}
	return one(ops.Transpose(acc.t, perm...))
}

// checkLetters accepts only ASCII letters (and the dots of "...", cut out
// before the call).
func checkLetters(c *nodeCtx, eq, s string) error {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return c.Errorf("equation %q: %q is not an index letter", eq, r)
		}
	}
	return nil
}

// sumOut sums t over its letters that neither keep nor other has.
func sumOut(t einTerm, keep map[rune]bool, other []rune) einTerm {
	var axes []int
	var idx []rune
	for i, r := range t.idx {
		if keep[r] || indexOf(other, r) >= 0 {
			idx = append(idx, r)
		} else {
			axes = append(axes, i)
		}
	}
	if len(axes) == 0 {
		return t
	}
	return einTerm{t: ops.Sum(t.t, axes...), idx: idx}
}

// contract multiplies two terms that share only letters both have: the
// shared letters keep needs are batch axes, the others are summed by the
// product.
func contract(c *nodeCtx, a, b einTerm, keep map[rune]bool) (einTerm, error) {
	var batch, sum, freeA, freeB []rune
	for _, r := range a.idx {
		switch {
		case indexOf(b.idx, r) < 0:
			freeA = append(freeA, r)
		case keep[r]:
			batch = append(batch, r)
		default:
			sum = append(sum, r)
		}
	}
	for _, r := range b.idx {
		if indexOf(a.idx, r) < 0 {
			freeB = append(freeB, r)
		}
	}
	dim := func(t einTerm, r rune) int { return t.t.Dim(indexOf(t.idx, r)) }
	for _, r := range sum {
		if dim(a, r) != dim(b, r) {
			return einTerm{}, c.Errorf("index %q has extent %d in one operand and %d in the other", r, dim(a, r), dim(b, r))
		}
	}
	prod := func(t einTerm, rs []rune) int {
		n := 1
		for _, r := range rs {
			n *= dim(t, r)
		}
		return n
	}
	order := func(rs ...[]rune) []rune {
		var o []rune
		for _, r := range rs {
			o = append(o, r...)
		}
		return o
	}
	arrange := func(t einTerm, want []rune) *tensor.Tensor {
		perm := make([]int, len(want))
		for i, r := range want {
			perm[i] = indexOf(t.idx, r)
		}
		return ops.Transpose(t.t, perm...)
	}
	bShape := func(t einTerm) []int {
		s := make([]int, len(batch))
		for i, r := range batch {
			s[i] = dim(t, r)
		}
		return s
	}
	am := ops.Reshape(arrange(a, order(batch, freeA, sum)), append(bShape(a), prod(a, freeA), prod(a, sum))...)
	bm := ops.Reshape(arrange(b, order(batch, sum, freeB)), append(bShape(b), prod(b, sum), prod(b, freeB))...)
	y := ops.MatMul(am, bm)
	shape := append([]int(nil), y.Shape()[:len(batch)]...)
	for _, r := range freeA {
		shape = append(shape, dim(a, r))
	}
	for _, r := range freeB {
		shape = append(shape, dim(b, r))
	}
	return einTerm{t: ops.Reshape(y, shape...), idx: order(batch, freeA, freeB)}, nil
}

// indexOf returns the position of r in rs, or -1.
func indexOf(rs []rune, r rune) int {
	for i, x := range rs {
		if x == r {
			return i
		}
	}
	return -1
}

// repeatedIndex returns the first axes p < q that share a letter, or -1,
// -1 when the letters are distinct.
func repeatedIndex(idx []rune) (int, int) {
	for q := range idx {
		for p := range q {
			if idx[p] == idx[q] {
				return p, q
			}
		}
	}
	return -1, -1
}

// diagonal returns x's elements where the indices of axes p and q (of one
// extent) are equal, as a tensor without axis q.
func diagonal(x *tensor.Tensor, p, q int) *tensor.Tensor {
	n := x.Dim(p)
	shape := make([]int, x.Rank())
	for i := range shape {
		shape[i] = 1
	}
	shape[p], shape[q] = n, n
	// Select, not a product with the identity, so that an infinity off
	// the diagonal does not make a NaN on it.
	eye := ops.Reshape(ops.Cast(tensor.Eye(tensor.Float64, n), tensor.Bool), shape...)
	return ops.Sum(ops.Select(eye, x, ops.ScalarLike(x, 0)), q)
}
