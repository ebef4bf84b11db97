package ops

import (
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/internal/freelist"
	"github.com/sporeml/spore/tensor"
)

// Kernels for BFloat16 and Float16 derived on demand, not by editing ops.
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
// Neither kind is registered here. This file installs a core.HalfWidener,
// and core.Prim.KernelForKey asks it, the first time a 16-bit kernel of a
// primitive recorded with core.Define is looked up and none is
// registered, to derive one from the primitive's Float32 kernel (halfKernel);
// core caches it in the primitive. So no kernel depends on which file's
// init runs first: a primitive defined or registered later — in a file
// sorting after this one, in another package, in a test after init — gets
// its 16-bit kernels all the same (TestWidenOnDemand in internal/core).
// TestEveryPrimHasHalfKernels checks that every primitive with a Float32
// kernel finds them.
//
// Inference is adapted alongside: a primitive's Infer, written for float32,
// sees float32 stand-ins (shape and dtype, no data) for operands of the one
// 16-bit type, and a Float32 result becomes that type. Operands mixing a
// 16-bit type with another float type are left to Infer as they are, so
// the op's usual error ("dtypes differ") names them; the binary
// elementwise ops promote such pairs first (promoteHalf). The adapted
// inference is the HalfWidener's Infer (halfMeta), which core.Prim.Meta —
// what eager dispatch, the tracer and graph verification call — runs
// instead of the Infer field for a primitive recorded with core.Define.
// Whether an op's inference is adapted for a dtype is decided when it
// runs, from the kernel table (halfAdapted), so nothing is installed on a
// primitive and no init order matters for inference either
// (TestHalfAdaptsPrimDefinedLater).

// halfDTypes are the dtypes the adapter serves.
var halfDTypes = [...]tensor.DType{tensor.BFloat16, tensor.Float16}

func init() {
	core.SetHalfWidener(core.HalfWidener{Kernel: halfKernel, KernelN: halfKernelN, Infer: halfMeta, InferN: halfMetas})
	// Select keys on its Bool condition and picks its kernel by the
	// branches' dtype from selKernels (compare.go), a table of this
	// package's, not the core's: its 16-bit entries are filled here.
	regSelect[core.BF16]()
	regSelect[core.F16]()
}

// halfKernel is the HalfWidener's Kernel: p's kernel for the 16-bit key,
// an element move for a movement op, else the widening adapter of k32.
func halfKernel(p *core.Prim, key core.Key, k32 core.KernelFunc) core.KernelFunc {
	if key.DType == tensor.BFloat16 {
		if k := moveKernel[core.BF16](p, key.Index); k != nil {
			return k
		}
	} else if k := moveKernel[core.F16](p, key.Index); k != nil {
		return k
	}
	return widenKernel(k32)
}

// halfKernelN is the HalfWidener's KernelN.
func halfKernelN(p *core.Prim, dt tensor.DType, k32 core.KernelNFunc) core.KernelNFunc {
	if p == UnstackPrim {
		if dt == tensor.BFloat16 {
			return unstackInto[core.BF16]
		}
		return unstackInto[core.F16]
	}
	return widenKernelN(k32)
}

// moveKernel returns the element-moving kernel of movement op p for the
// element type H and index dtype ix, or nil when p is not one: the one
// list of those ops, for the 16-bit types here and for every other dtype
// at registration (registerMoves). It compares
// p with the primitives when asked, not at init, so that it does not
// matter which file defines them first.
func moveKernel[H core.Elem](p *core.Prim, ix tensor.DType) core.KernelFunc {
	switch p {
	case TransposePrim:
		return transposeKernel[H]
	case ConcatPrim:
		return concatKernel[H]
	case StridedSlicePrim:
		return stridedSliceKernel[H]
	case StridedSliceGradPrim:
		return stridedSliceGradKernel[H]
	case ReshapePrim:
		return copyKernel[H]
	case BroadcastToPrim:
		return broadcastToKernel[H]
	case GatherPrim:
		if ix == tensor.Int32 {
			return gatherKernel[H, int32]
		}
		return gatherKernel[H, int64]
	case TakeAlongAxisPrim:
		if ix == tensor.Int32 {
			return takeAlongAxisKernel[H, int32]
		}
		return takeAlongAxisKernel[H, int64]
	}
	return nil
}

// isMover reports whether p's 16-bit kernels move elements: its
// inference is adapted although those kernels are not the adapter.
func isMover(p *core.Prim) bool {
	return p == UnstackPrim || moveKernel[core.BF16](p, tensor.Int64) != nil
}

// indexKeys are the index dtypes of a primitive's kernel keys: Invalid
// alone for a primitive without an IndexInput.
func indexKeys(p *core.Prim) []tensor.DType {
	if p.IndexInput > 0 {
		return []tensor.DType{tensor.Int32, tensor.Int64}
	}
	return []tensor.DType{tensor.Invalid}
}

// halfAdapted reports whether p's inference is adapted for the 16-bit
// dtype dt: p has a registered Float32 kernel and its dt kernel is
// derived (the adapter or an element move) rather than registered — a
// registered 16-bit kernel comes with inference that handles the type.
// A multi-result primitive with a Float32 kernel is always adapted.
func halfAdapted(p *core.Prim, dt tensor.DType) bool {
	if p.InferN != nil {
		return p.RegisteredN(tensor.Float32, core.CPU)
	}
	for _, ix := range indexKeys(p) {
		if !p.Registered(core.Key{DType: tensor.Float32, Index: ix}, core.CPU) {
			continue
		}
		if !p.Registered(core.Key{DType: dt, Index: ix}, core.CPU) || isMover(p) {
			return true
		}
	}
	return false
}

// halfOf returns the 16-bit float dtype of p's operands when they have
// exactly one such dtype and no other float dtype, and p's inference is
// adapted for it.
func halfOf(p *core.Prim, in []*tensor.Tensor) (tensor.DType, bool) {
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
	return dt, dt != tensor.Invalid && halfAdapted(p, dt)
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

// halfMeta is the HalfWidener's Infer: p.Infer, with the 16-bit operands
// of an op whose 16-bit kernels are derived replaced by Float32 stand-ins,
// and a Float32 result made that 16-bit type.
func halfMeta(p *core.Prim, attrs any, in []*tensor.Tensor) tensor.Meta {
	dt, ok := halfOf(p, in)
	if !ok {
		return p.Infer(attrs, in)
	}
	var m tensor.Meta
	inferReal(func() { m = p.Infer(attrs, standIns(in, dt)) }, func() { p.Infer(attrs, in) })
	if m.DType == tensor.Float32 {
		m.DType = dt
	}
	return m
}

// halfMetas is the HalfWidener's InferN.
func halfMetas(p *core.Prim, attrs any, in []*tensor.Tensor) []tensor.Meta {
	dt, ok := halfOf(p, in)
	if !ok {
		return p.InferN(attrs, in)
	}
	var ms []tensor.Meta
	inferReal(func() { ms = p.InferN(attrs, standIns(in, dt)) }, func() { p.InferN(attrs, in) })
	for i := range ms {
		if ms[i].DType == tensor.Float32 {
			ms[i].DType = dt
		}
	}
	return ms
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
