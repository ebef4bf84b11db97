package onnx

import (
	"slices"

	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// EyeLike, ReverseSequence and TfIdfVectorizer: ops that build their
// result from positions (a diagonal, reversed prefixes, n-gram windows).
// Every position is known from the shapes alone, so each op is a constant
// or a few gathers and comparisons of its inputs, and traces in Graph mode;
// only ReverseSequence's sequence_lens are data, read through comparisons.

func init() {
	register("EyeLike", 9, 0, eyeLikeOp)
	register("ReverseSequence", 10, 0, reverseSequenceOp)
	register("TfIdfVectorizer", 9, 0, tfIdfVectorizerOp)
}

// eyeLikeOp is EyeLike: a matrix of the input's shape, ones on the
// diagonal k (k > 0 above the main one, k < 0 below) and zeros elsewhere,
// of the dtype attribute's type or else the input's. Only the input's
// shape is read, so the result is a constant.
func eyeLikeOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := c.need(ins, 0, "input")
	if err != nil {
		return nil, err
	}
	if x.Rank() != 2 {
		return nil, c.Errorf("input %v must have rank 2", x.Shape())
	}
	dt := x.DType()
	if c.Has("dtype") {
		if dt, err = dtypeOf(int32(c.Int("dtype", 0))); err != nil {
			return nil, c.Errorf("dtype: %v", err)
		}
	}
	r, cols := x.Dim(0), x.Dim(1)
	k := c.Int("k", 0)
	v := make([]float64, r*cols)
	for i := 0; i < r; i++ {
		// Compared as int64, so that a k beyond the extents (however large)
		// leaves the matrix zero rather than overflowing.
		if j := int64(i) + k; j >= 0 && j < int64(cols) {
			v[i*cols+int(j)] = 1
		}
	}
	out := tensor.FromSlice(v, r, cols)
	if dt != tensor.Float64 {
		out = ops.Cast(out, dt)
	}
	return one(out)
}

// reverseSequenceOp is ReverseSequence: for each batch entry b, the first
// sequence_lens[b] steps along the time axis are reversed and the rest
// kept. The lengths are data: each output step t of entry b reads step
// L-1-t when t < L and step t otherwise, an index built with comparisons
// and taken along the time axis, so a model's lengths need not be
// constants. Lengths outside [0, T] fail the index checks (in both
// modes); the second check reports the length less T+1.
func reverseSequenceOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	req, err := c.needs(ins, "input", "sequence_lens")
	if err != nil {
		return nil, err
	}
	x, lens := req[0], req[1]
	if x.Rank() < 2 {
		return nil, c.Errorf("input %v must have rank 2 or more", x.Shape())
	}
	bAx, tAx := c.Int("batch_axis", 1), c.Int("time_axis", 0)
	if !((bAx == 0 && tAx == 1) || (bAx == 1 && tAx == 0)) {
		return nil, c.Errorf("batch_axis %d and time_axis %d must be 0 and 1 in either order", bAx, tAx)
	}
	if lens.DType() != tensor.Int64 && lens.DType() != tensor.Int32 {
		return nil, c.Errorf("sequence_lens have dtype %v, want int64 or int32", lens.DType())
	}
	b, t := x.Dim(int(bAx)), x.Dim(int(tAx))
	if lens.Rank() != 1 || lens.Dim(0) != b {
		return nil, c.Errorf("sequence_lens %v must have shape [%d], the batch extent of input %v", lens.Shape(), b, x.Shape())
	}
	l := lens
	if l.DType() != tensor.Int64 {
		l = ops.Cast(l, tensor.Int64)
	}
	// L ∈ [0, T] ⟺ L passes a check of extent T+1 (which admits
	// [-(T+1), T]) and L-(T+1) does too (which admits L ≥ 0 of those).
	l = c.checkIndices(l, 0, t+1)
	l = ops.AddScalar(c.checkIndices(ops.AddScalar(l, -float64(t+1)), 0, t+1), float64(t+1))
	steps := make([]int64, t)
	for i := range steps {
		steps[i] = int64(i)
	}
	// The index over [T, B] (or [B, T]): L-1-t for t < L, else t.
	tt, ll := tensor.FromSlice(steps, t, 1), ops.Reshape(l, 1, b)
	if tAx == 1 {
		tt, ll = tensor.FromSlice(steps, 1, t), ops.Reshape(l, b, 1)
	}
	idx := ops.Select(ops.Less(tt, ll), ops.Sub(ops.AddScalar(ll, -1), tt), ops.BroadcastTo(tt, idxShape(tAx, t, b)...))
	// Broadcast over the remaining axes of the input.
	shape := slices.Clone(x.Shape())
	rest := make([]int, len(shape))
	for i := range rest {
		rest[i] = 1
	}
	rest[tAx], rest[bAx] = t, b
	idx = ops.BroadcastTo(ops.Reshape(idx, rest...), shape...)
	return one(ops.TakeAlongAxis(x, idx, int(tAx)))
}

// idxShape is the shape of ReverseSequence's index: [T, B] or [B, T].
func idxShape(tAx int64, t, b int) []int {
	if tAx == 0 {
		return []int{t, b}
	}
	return []int{b, t}
}

// tfIdfVectorizerOp is TfIdfVectorizer on integer tokens: it counts, in
// each row of X ([C] or [B, C], int32 or int64), the occurrences of the
// pool's n-grams (n from min_gram_length to max_gram_length; for n ≥ 2
// the tokens of an n-gram may stand 1 + s apart for each s up to
// max_skip_count, every spacing counted, while unigrams are counted once),
// and writes each count at its n-gram's output column (ngram_indexes):
// mode TF gives the counts, IDF the weight of each n-gram seen, TFIDF the
// count times the weight (one weight per n-gram, in pool order;
// weights default to 1). Every window is a
// position known from C, so the count is a gather of X, a comparison with
// the pool and sums. String tokens (pool_strings) are refused: spore has
// no string tensors.
func tfIdfVectorizerOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := c.need(ins, 0, "X")
	if err != nil {
		return nil, err
	}
	if c.Has("pool_strings") {
		return nil, c.Errorf("pool_strings are not supported: spore has no string tensors (pool_int64s with int32 or int64 input is)")
	}
	if dt := x.DType(); dt != tensor.Int32 && dt != tensor.Int64 {
		return nil, c.Errorf("X has dtype %v; only int32 and int64 tokens are supported", dt)
	}
	if x.Rank() != 1 && x.Rank() != 2 {
		return nil, c.Errorf("X %v must have rank 1 or 2", x.Shape())
	}
	mode := c.String("mode", "")
	if mode != "TF" && mode != "IDF" && mode != "TFIDF" {
		return nil, c.Errorf("mode %q must be TF, IDF or TFIDF", mode)
	}
	minN, maxN, maxSkip := c.Int("min_gram_length", 0), c.Int("max_gram_length", 0), c.Int("max_skip_count", 0)
	if minN < 1 || maxN < minN || maxSkip < 0 {
		return nil, c.Errorf("min_gram_length %d, max_gram_length %d and max_skip_count %d must satisfy 1 ≤ min ≤ max and skip ≥ 0", minN, maxN, maxSkip)
	}
	counts, indexes := c.IntsAttr("ngram_counts", nil), c.IntsAttr("ngram_indexes", nil)
	pool := c.IntsAttr("pool_int64s", nil)
	if maxN > int64(len(counts)) {
		return nil, c.Errorf("max_gram_length %d exceeds the %d entries of ngram_counts", maxN, len(counts))
	}
	// Each size's n-grams: pool[counts[n-1]:counts[n]] (the last to the
	// pool's end), their ordinals in ngram_indexes following pool order.
	type sizeGrams struct{ start, n, first int }
	var sizes []sizeGrams
	total := 0
	for i, s := range counts {
		end := int64(len(pool))
		if i+1 < len(counts) {
			end = counts[i+1]
		}
		n := int64(i + 1)
		if s < 0 || end < s || end > int64(len(pool)) || (end-s)%n != 0 {
			return nil, c.Errorf("ngram_counts %v do not split the %d pool entries into n-grams", counts, len(pool))
		}
		sizes = append(sizes, sizeGrams{start: int(s), n: int((end - s) / n), first: total})
		total += int((end - s) / n)
	}
	if len(indexes) != total {
		return nil, c.Errorf("ngram_indexes has %d entries; the pool holds %d n-grams", len(indexes), total)
	}
	width := int64(0)
	for _, j := range indexes {
		if j < 0 || j >= int64(maxMade) {
			return nil, c.Errorf("ngram_indexes entry %d is out of range", j)
		}
		width = max(width, j+1)
	}
	weights := c.FloatsAttr("weights", nil)
	if weights != nil && len(weights) != total {
		return nil, c.Errorf("weights has %d entries; the pool holds %d n-grams", len(weights), total)
	}
	// Int32 tokens compare as Int64: a pool entry beyond int32's range
	// then matches nothing, where narrowing the pool would wrap it onto
	// some token.
	x2 := x
	if x2.DType() != tensor.Int64 {
		x2 = ops.Cast(x2, tensor.Int64)
	}
	if x.Rank() == 1 {
		x2 = ops.Reshape(x2, 1, x.Dim(0))
	}
	b, cols, w := x2.Dim(0), x2.Dim(1), int(width)
	if err := c.checkMade([]int{b, w}, "output"); err != nil {
		return nil, err
	}
	tf := tensor.Zeros(tensor.Float32, b, w)
	for n := int(minN); n <= int(maxN); n++ {
		sg := sizes[n-1]
		if sg.n == 0 {
			continue
		}
		grams := make([]int64, sg.n*n)
		copy(grams, pool[sg.start:sg.start+sg.n*n])
		g := tensor.FromSlice(grams, 1, 1, sg.n, n)
		found := tensor.Zeros(tensor.Float32, b, sg.n)
		skips := int(maxSkip)
		if n == 1 {
			skips = 0 // a unigram has no spacing: counted once
		}
		for s := 0; s <= skips; s++ {
			step := s + 1
			var pos []int64
			for i := 0; i+(n-1)*step < cols; i++ {
				for j := 0; j < n; j++ {
					pos = append(pos, int64(i+j*step))
				}
			}
			windows := len(pos) / n
			if windows == 0 {
				break // wider spacings fit no better
			}
			if err := c.checkMade([]int{b, windows, sg.n, n}, "the n-gram comparison"); err != nil {
				return nil, err
			}
			win := ops.Reshape(ops.Gather(x2, tensor.FromSlice(pos, windows, n), 1), b, windows, 1, n)
			same := ops.Sum(ops.Cast(ops.Equal(win, g), tensor.Float32), 3) // [b, windows, grams]
			whole := ops.Cast(ops.Equal(same, tensor.Full(tensor.Float32, float64(n))), tensor.Float32)
			found = ops.Add(found, ops.Sum(whole, 1))
		}
		// Each n-gram's count goes to its output column: a product with a
		// one-hot [grams, width] matrix, exact for counts below 2^24.
		place := make([]float32, sg.n*w)
		for k := 0; k < sg.n; k++ {
			place[k*w+int(indexes[sg.first+k])] = 1
		}
		tf = ops.Add(tf, ops.MatMul(found, tensor.FromSlice(place, sg.n, w)))
	}
	// A weight belongs to its n-gram (pool order), as ngram_indexes does:
	// it lands in that n-gram's column.
	wt := make([]float32, w)
	for j := range wt {
		wt[j] = 1
	}
	for k, j := range indexes {
		if weights != nil {
			wt[j] = weights[k]
		}
	}
	wts := tensor.FromSlice(wt, 1, w)
	out := tf
	switch mode {
	case "IDF":
		out = ops.Select(ops.Greater(tf, tensor.Full(tensor.Float32, 0)), ops.BroadcastTo(wts, b, w), tensor.Zeros(tensor.Float32, b, w))
	case "TFIDF":
		out = ops.Mul(tf, wts)
	}
	if x.Rank() == 1 {
		out = ops.Reshape(out, w)
	}
	return one(out)
}
