package ops

import (
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/internal/freelist"
	"github.com/sporeml/spore/tensor"
)

// Kernels for BFloat16 and Float16 by registration, not by editing ops.
//
// Ops that only move elements (transpose, concat, slices, gathers,
// broadcasts, reshapes, Select) get kernels that move the 2-byte elements
// directly: their generic kernels are instantiated at BF16 and F16.
//
// Every other primitive with a Float32 kernel and none for a 16-bit type
// gets the widening adapter: the 16-bit operands are widened to float32
// (exactly), the Float32 kernel runs, and its float results are rounded
// back to the 16-bit type (round to nearest even). So a 16-bit op computes
// what its float32 twin computes on the same, already rounded, inputs,
// with one rounding of each result: the tolerances of the numerics test
// (lowp_test.go) follow from that. Kernels registered for a 16-bit type
// elsewhere (MatMul's bfloat16 GEMM, say) are kept.
//
// Inference is adapted alongside: a primitive's Infer, written for float32,
// sees float32 stand-ins (shape and dtype, no data) for operands of the one
// 16-bit type, and a Float32 result becomes that type. Operands mixing a
// 16-bit type with another float type are left to Infer as they are, so
// the op's usual error ("dtypes differ") names them; the binary
// elementwise ops promote such pairs first (promoteHalf).
//
// This file's init runs after those of the other files of the package
// ("widen.go" sorts after them), when every primitive of the package has
// its float32 kernels; TestEveryPrimHasHalfKernels checks that none was
// missed.

// halfDTypes are the dtypes the adapter serves.
var halfDTypes = [...]tensor.DType{tensor.BFloat16, tensor.Float16}

func init() {
	for _, p := range []*core.Prim{TransposePrim, ConcatPrim, StridedSlicePrim, StridedSliceGradPrim, ReshapePrim, BroadcastToPrim, UnstackPrim, GatherPrim, TakeAlongAxisPrim} {
		movers[p] = true
	}
	moveHalf[core.BF16]()
	moveHalf[core.F16]()
	for _, p := range core.Prims() {
		widenPrim(p)
	}
}

// movers are the primitives whose 16-bit kernels moveHalf registers: their
// inference is adapted although they have kernels of their own.
var movers = map[*core.Prim]bool{}

// moveHalf registers the element-moving kernels of the movement ops for
// the 16-bit type H.
func moveHalf[H halfFloat]() {
	register[H](TransposePrim, transposeKernel[H])
	register[H](ConcatPrim, concatKernel[H])
	register[H](StridedSlicePrim, stridedSliceKernel[H])
	register[H](StridedSliceGradPrim, stridedSliceGradKernel[H])
	register[H](ReshapePrim, copyKernel[H])
	register[H](BroadcastToPrim, broadcastToKernel[H])
	UnstackPrim.RegisterN(core.DTypeOf[H](), core.CPU, unstackInto[H])
	dt := core.DTypeOf[H]()
	GatherPrim.RegisterKey(core.Key{DType: dt, Index: tensor.Int32}, core.CPU, gatherKernel[H, int32])
	GatherPrim.RegisterKey(core.Key{DType: dt, Index: tensor.Int64}, core.CPU, gatherKernel[H, int64])
	TakeAlongAxisPrim.RegisterKey(core.Key{DType: dt, Index: tensor.Int32}, core.CPU, takeAlongAxisKernel[H, int32])
	TakeAlongAxisPrim.RegisterKey(core.Key{DType: dt, Index: tensor.Int64}, core.CPU, takeAlongAxisKernel[H, int64])
	regSelect[H]()
}

// indexKeys are the index dtypes of a primitive's kernel keys: Invalid
// alone for a primitive without an IndexInput.
func indexKeys(p *core.Prim) []tensor.DType {
	if p.IndexInput > 0 {
		return []tensor.DType{tensor.Int32, tensor.Int64}
	}
	return []tensor.DType{tensor.Invalid}
}

// widenPrim gives p the widening adapter for each 16-bit type it has no
// kernel for, and adapts its inference; movement kernels registered by
// moveHalf count as kernels, their ops' inference is adapted too.
func widenPrim(p *core.Prim) {
	var adapted [core.NumDTypes]bool
	touched := false
	for _, dt := range halfDTypes {
		for _, ix := range indexKeys(p) {
			key, key32 := core.Key{DType: dt, Index: ix}, core.Key{DType: tensor.Float32, Index: ix}
			if p.InferN != nil {
				if k32, err := p.KernelNFor(tensor.Float32, core.CPU); err == nil {
					if _, err := p.KernelNFor(dt, core.CPU); err != nil {
						p.RegisterN(dt, core.CPU, widenKernelN(k32))
					}
					adapted[dt], touched = true, true
				}
				continue
			}
			k32, err := p.KernelForKey(key32, core.CPU)
			if err != nil {
				continue
			}
			if _, err := p.KernelForKey(key, core.CPU); err != nil {
				p.RegisterKey(key, core.CPU, widenKernel(k32))
				adapted[dt], touched = true, true
			} else if movers[p] {
				adapted[dt], touched = true, true
			}
		}
	}
	if !touched {
		return
	}
	if p.Infer != nil {
		p.Infer = widenInfer(p.Infer, adapted)
	}
	if p.InferN != nil {
		p.InferN = widenInferN(p.InferN, adapted)
	}
}

// halfOf returns the 16-bit float dtype of p's operands when they have
// exactly one such dtype and no other float dtype, and adapted says the
// primitive's inference is adapted for it.
func halfOf(in []*tensor.Tensor, adapted *[core.NumDTypes]bool) (tensor.DType, bool) {
	dt := tensor.Invalid
	for _, x := range in {
		d := x.DType()
		switch {
		case d.IsHalf():
			if dt != tensor.Invalid && dt != d {
				return 0, false
			}
			dt = d
		case d.IsFloat():
			return 0, false
		}
	}
	return dt, dt != tensor.Invalid && adapted[dt]
}

// standIns returns in with each operand of dtype dt replaced by a float32
// stand-in of its shape (no data: inference reads none).
func standIns(in []*tensor.Tensor, dt tensor.DType) []*tensor.Tensor {
	s := make([]*tensor.Tensor, len(in))
	for i, x := range in {
		s[i] = x
		if x.DType() == dt {
			s[i] = core.MetaTensor(tensor.Meta{Shape: x.Shape(), DType: tensor.Float32})
		}
	}
	return s
}

func widenInfer(infer func(any, []*tensor.Tensor) tensor.Meta, adapted [core.NumDTypes]bool) func(any, []*tensor.Tensor) tensor.Meta {
	return func(attrs any, in []*tensor.Tensor) tensor.Meta {
		dt, ok := halfOf(in, &adapted)
		if !ok {
			return infer(attrs, in)
		}
		var m tensor.Meta
		inferReal(func() { m = infer(attrs, standIns(in, dt)) }, func() { infer(attrs, in) })
		if m.DType == tensor.Float32 {
			m.DType = dt
		}
		return m
	}
}

func widenInferN(infer func(any, []*tensor.Tensor) []tensor.Meta, adapted [core.NumDTypes]bool) func(any, []*tensor.Tensor) []tensor.Meta {
	return func(attrs any, in []*tensor.Tensor) []tensor.Meta {
		dt, ok := halfOf(in, &adapted)
		if !ok {
			return infer(attrs, in)
		}
		var ms []tensor.Meta
		inferReal(func() { ms = infer(attrs, standIns(in, dt)) }, func() { infer(attrs, in) })
		for i := range ms {
			if ms[i].DType == tensor.Float32 {
				ms[i].DType = dt
			}
		}
		return ms
	}
}

// inferReal runs stand, inference on stand-ins; should it refuse them, it
// runs real, inference on the operands themselves, so that the error
// names their dtypes rather than the stand-ins' Float32 (and re-raises
// stand's error if real accepts them).
func inferReal(stand, real func()) {
	defer func() {
		if e := recover(); e != nil {
			real()
			panic(e)
		}
	}()
	stand()
}

// frame is what one call of a widened kernel borrows: the float32 buffers
// of its widened operands and results, the tensor headers over them, and
// the argument slices. Each widened kernel keeps its own frames, so that
// a compiled plan calling it with the same shapes call after call finds
// buffers of the right sizes and allocates nothing. They are kept in a
// freelist.List, which a garbage collection does not empty.
type frame struct {
	pool       *freelist.List[frame]
	wide, outs []*tensor.Tensor
	hdrs       []*tensor.Tensor
	bufs       [][]float32
	// boxed[i][n] is bufs[i][:n] as an interface value, made once per
	// length (a kernel serving several nodes of a plan sees several), since
	// each conversion of a slice to an interface allocates.
	boxed []map[int]any
	used  int
}

// wrap returns a float32 tensor of the given shape over a buffer of the
// frame's, reusing the frame's headers and buffers.
func (f *frame) wrap(shape tensor.Shape) *tensor.Tensor {
	n := shape.Size()
	if f.used == len(f.hdrs) {
		f.hdrs = append(f.hdrs, core.MetaTensor(tensor.Meta{}))
		f.bufs = append(f.bufs, nil)
		f.boxed = append(f.boxed, nil)
	}
	i := f.used
	f.used++
	if cap(f.bufs[i]) < n {
		f.bufs[i] = make([]float32, n)
		f.boxed[i] = map[int]any{}
	}
	b, ok := f.boxed[i][n]
	if !ok {
		b = f.bufs[i][:n]
		f.boxed[i][n] = b
	}
	core.Rewrap(f.hdrs[i], b, shape)
	return f.hdrs[i]
}

// widenArgs returns in with its 16-bit operands widened to float32 in the
// frame's buffers.
func (f *frame) widenArgs(in []*tensor.Tensor) []*tensor.Tensor {
	f.wide = f.wide[:0]
	for _, x := range in {
		if !x.DType().IsHalf() {
			f.wide = append(f.wide, x)
			continue
		}
		w := f.wrap(x.Shape())
		if x.DType() == tensor.BFloat16 {
			widen(w.Data().([]float32), x.Data().([]core.BF16))
		} else {
			widen(w.Data().([]float32), x.Data().([]core.F16))
		}
		f.wide = append(f.wide, w)
	}
	return f.wide
}

// wideOut returns the float32 tensor a float32 kernel writes for the
// 16-bit result out (out itself for other dtypes).
func (f *frame) wideOut(out *tensor.Tensor) *tensor.Tensor {
	if !out.DType().IsHalf() {
		return out
	}
	return f.wrap(out.Shape())
}

// release returns the frame to the pool, dropping its references to the
// call's tensors.
func (f *frame) release() {
	clear(f.wide)
	clear(f.outs)
	f.used = 0
	f.pool.Put(f)
}

// narrow rounds the float32 result w into the 16-bit result out.
func narrow(out, w *tensor.Tensor) {
	if out == w {
		return
	}
	v := w.Data().([]float32)
	switch d := out.Data().(type) {
	case []core.BF16:
		narrowFloat32s(d, v)
	case []core.F16:
		narrowFloat32s(d, v)
	}
}

// widenKernel is the adapter running k32, a Float32 kernel, for 16-bit
// operands.
func widenKernel(k32 core.KernelFunc) core.KernelFunc {
	var pool freelist.List[frame]
	return func(attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
		f := pool.Get()
		f.pool = &pool
		wide := f.widenArgs(in)
		w := f.wideOut(out)
		k32(attrs, wide, w)
		narrow(out, w)
		f.release()
	}
}

// widenKernelN is widenKernel for multi-result primitives.
func widenKernelN(k32 core.KernelNFunc) core.KernelNFunc {
	var pool freelist.List[frame]
	return func(attrs any, in []*tensor.Tensor, outs []*tensor.Tensor) {
		f := pool.Get()
		f.pool = &pool
		wide := f.widenArgs(in)
		f.outs = f.outs[:0]
		for _, o := range outs {
			f.outs = append(f.outs, f.wideOut(o))
		}
		k32(attrs, wide, f.outs)
		for i, o := range outs {
			narrow(o, f.outs[i])
		}
		f.release()
	}
}

// promoteHalf casts the operands of a binary elementwise op to one dtype
// when they mix a 16-bit float with another float type: PyTorch's rule,
// under which BFloat16 with Float32 computes in Float32, and BFloat16 with
// Float16 too (neither holds the other's values); with Float64 it is
// Float64. Other pairs are returned as they are: spore promotes nothing
// else, and the op's inference names the mismatch.
func promoteHalf(a, b *tensor.Tensor) (*tensor.Tensor, *tensor.Tensor) {
	if a == nil || b == nil {
		return a, b // Apply names the nil argument
	}
	da, db := a.DType(), b.DType()
	if da == db || !da.IsFloat() || !db.IsFloat() || !da.IsHalf() && !db.IsHalf() {
		return a, b
	}
	to := tensor.Float32
	if da == tensor.Float64 || db == tensor.Float64 {
		to = tensor.Float64
	}
	if da != to {
		a = Cast(a, to)
	}
	if db != to {
		b = Cast(b, to)
	}
	return a, b
}
