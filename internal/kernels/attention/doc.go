// Package attention holds the fused scaled dot-product attention kernels,
// forward and backward, for float32 and float64.
//
// The forward pass (Impl.Forward) follows FlashAttention: for a block of
// BlockQ queries it walks the keys in blocks of BlockK, computing one
// BlockQ×BlockK tile of scores with a small GEMM, and keeps per query a
// running maximum m and a running sum l of exp(score − m). When a tile
// raises the maximum, the partial output and sum are rescaled by
// exp(m_old − m_new) before the tile's weights are added, so the softmax is
// never normalised over a full row and the L×S score matrix never exists.
// It stores the log-sum-exp m + log l of each query (O(L)), which is all
// the backward pass needs to recompute any tile of weights exactly:
// P = exp(score − lse).
//
// The backward pass (Impl.Backward) is FlashAttention-2's: for each block
// of keys it walks the query blocks, recomputes the weights, and
// accumulates dV, dK and dQ with GEMMs on the tile, using
// D = rowsum(dO∘O) in place of the row sums of P∘dP.
//
// A batch slice that fits one tile (L ≤ BlockQ, S ≤ BlockK: short
// sequences such as a vision transformer's 17 tokens) takes a shorter
// path: a plain softmax over whole rows (vec.ExpSubMaxRows), and in the
// backward pass the weights and the scores' gradient in one pass
// (vec.SoftmaxBackRows). Its products are a few dozen rows each, too
// small for a GEMM's packing and dispatch to pay, so they are
// vec.LinComb calls that accumulate each output row in registers, with
// the keys and values transposed once per slice (vec.Transpose) for the
// two products against them.
//
// Dropout on the weights is a hash of (seed, batch slice, query, key)
// (Keep), so the backward pass regenerates exactly the forward pass's
// mask tile by tile instead of storing it.
//
// A query whose keys are all masked gets a zero output and an lse of +Inf
// (every weight recomputed from it is then 0), as FlashAttention and
// torch's scaled_dot_product_attention (since 2.5) do, instead of the NaN
// of a softmax over nothing.
//
// Work is spread over the threads of package parallel: query blocks of
// every batch slice in the forward pass, batch slices (batch × heads) in
// the backward pass, whose key blocks accumulate into shared dQ rows.
// Each operand's rows may lie in a larger slice at a stride (Params.Q, K,
// V and O, a Layout each): multi-head self-attention reads q, k and v
// straight from the packed projection [batch, L, 3, H, D] and writes its
// output as [batch, L, H, D], the layout the projections around it use,
// so no transpose splits or merges the heads.
//
// Like every kernel package it knows nothing of tensors: flat row-major
// slices plus sizes, panicking if a slice is too short for them.
package attention
