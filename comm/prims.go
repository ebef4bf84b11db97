package comm

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// ReduceAttrs are the attributes of the all-reduce primitives.
type ReduceAttrs struct{ Op ReduceOp }

// String prints the reduction, for IR dumps and CSE keys.
func (a ReduceAttrs) String() string { return "op=" + a.Op.String() }

// RootAttrs are the attributes of Broadcast and Reduce: the root rank.
type RootAttrs struct{ Root int }

// String prints the root, for IR dumps and CSE keys.
func (a RootAttrs) String() string { return fmt.Sprintf("root=%d", a.Root) }

// The collective primitives. All are Impure: a collective must run on
// every rank, in the same order, whether or not its result is used, so no
// pass may fold, merge or remove one.
var (
	// AllReducePrim is the blocking all-reduce (AllReduce).
	AllReducePrim *core.Prim
	// AllReduceStartPrim packs its inputs into a bucket and starts
	// reducing it: its result is the bucket, readable only through
	// AllReduceWaitPrim.
	AllReduceStartPrim *core.Prim
	// AllReduceWaitPrim completes the all-reduce its input started and
	// unpacks the bucket (a multi-result primitive).
	AllReduceWaitPrim *core.Prim
	// BroadcastPrim copies the root rank's value to every rank.
	BroadcastPrim *core.Prim
	// AllGatherPrim concatenates every rank's value along axis 0.
	AllGatherPrim *core.Prim
	// ReducePrim sums every rank's value into the root rank's result.
	ReducePrim *core.Prim
	// ReduceScatterPrim sums every rank's value and gives each rank its
	// block of axis 0.
	ReduceScatterPrim *core.Prim
)

func init() {
	AllReducePrim = core.Define(&core.Prim{
		Name:   "AllReduce",
		Traits: core.Traits{Impure: true},
		Infer: func(attrs any, in []*tensor.Tensor) tensor.Meta {
			checkReduce("AllReduce", attrs.(ReduceAttrs).Op, in[0])
			return tensor.Meta{Shape: in[0].Shape().Clone(), DType: in[0].DType()}
		},
		// The gradient of a sum (mean) over ranks with respect to one
		// rank's input is the sum (mean) of every rank's cotangent — the
		// same all-reduce, as in MindSpore. Max has no such rule.
		VJP: func(attrs any, _ []*tensor.Tensor, _, g *tensor.Tensor) []*tensor.Tensor {
			op := attrs.(ReduceAttrs).Op
			if op == Max {
				core.Panicf("AllReduce", "reduction max is not differentiable")
			}
			return []*tensor.Tensor{AllReduce(g, op)}
		},
		JVP: func(attrs any, _, tangents []*tensor.Tensor, _ *tensor.Tensor) *tensor.Tensor {
			op := attrs.(ReduceAttrs).Op
			if op == Max {
				core.Panicf("AllReduce", "reduction max is not differentiable")
			}
			return AllReduce(tangents[0], op)
		},
	})
	AllReducePrim.RegisterAll(core.CPU, allReduceKernel)

	AllReduceStartPrim = core.Define(&core.Prim{
		Name: "AllReduceStart",
		// A compiled plan has the gradients computed straight into the
		// bucket (ArgsInResult), so packing copies nothing.
		Traits: core.Traits{Impure: true, Placement: core.PlaceEarly, ArgsInResult: true},
		Infer: func(attrs any, in []*tensor.Tensor) tensor.Meta {
			if len(in) == 0 {
				core.Panicf("AllReduceStart", "no tensors to reduce")
			}
			n := 0
			for i, x := range in {
				checkReduce("AllReduceStart", attrs.(ReduceAttrs).Op, x)
				if x.DType() != in[0].DType() {
					core.Panicf("AllReduceStart", "a bucket holds one dtype: tensor %d is %v %v, tensor 0 %v", i, x.Shape(), x.DType(), in[0].DType())
				}
				n += x.Size()
			}
			return tensor.Meta{Shape: tensor.Shape{n}, DType: in[0].DType()}
		},
	})
	AllReduceStartPrim.RegisterAll(core.CPU, startKernel)
	AllReduceWaitPrim = core.Define(&core.Prim{
		Name: "AllReduceWait",
		// A compiled plan leaves the results in the bucket (ResultsInArg):
		// the gradients the optimiser reads are the reduced buffer itself,
		// not a copy of it.
		Traits: core.Traits{Impure: true, Placement: core.PlaceLate, ResultsInArg: true},
		InferN: func(attrs any, in []*tensor.Tensor) []tensor.Meta {
			a := attrs.(WaitAttrs)
			h := in[0]
			checkReduce("AllReduceWait", a.Op, h)
			ms := make([]tensor.Meta, len(a.Shapes))
			n := 0
			for i, s := range a.Shapes {
				ms[i] = tensor.Meta{Shape: s.Clone(), DType: h.DType()}
				n += s.Size()
			}
			if h.Rank() != 1 || n != h.Size() {
				core.Panicf("AllReduceWait", "shapes %v hold %d elements, the handle %v", a.Shapes, n, h.Shape())
			}
			return ms
		},
	})
	AllReduceWaitPrim.RegisterNAll(core.CPU, waitKernel)

	BroadcastPrim = core.Define(&core.Prim{
		Name:   "Broadcast",
		Traits: core.Traits{Impure: true},
		Infer:  rootInfer("Broadcast", false),
		// Every rank's output is root's input, so root's input receives
		// the sum of all ranks' cotangents and the others none: Reduce.
		VJP: func(attrs any, _ []*tensor.Tensor, _, g *tensor.Tensor) []*tensor.Tensor {
			return []*tensor.Tensor{Reduce(g, attrs.(RootAttrs).Root)}
		},
		JVP: func(attrs any, _, tangents []*tensor.Tensor, _ *tensor.Tensor) *tensor.Tensor {
			return Broadcast(tangents[0], attrs.(RootAttrs).Root)
		},
	})
	BroadcastPrim.RegisterAll(core.CPU, broadcastKernel)

	ReducePrim = core.Define(&core.Prim{
		Name:   "Reduce",
		Traits: core.Traits{Impure: true},
		Infer:  rootInfer("Reduce", true),
		VJP: func(attrs any, _ []*tensor.Tensor, _, g *tensor.Tensor) []*tensor.Tensor {
			return []*tensor.Tensor{Broadcast(g, attrs.(RootAttrs).Root)}
		},
		JVP: func(attrs any, _, tangents []*tensor.Tensor, _ *tensor.Tensor) *tensor.Tensor {
			return Reduce(tangents[0], attrs.(RootAttrs).Root)
		},
	})
	ReducePrim.RegisterAll(core.CPU, reduceKernel)

	AllGatherPrim = core.Define(&core.Prim{
		Name:   "AllGather",
		Traits: core.Traits{Impure: true},
		Infer: func(_ any, in []*tensor.Tensor) tensor.Meta {
			x := in[0]
			if x.Rank() == 0 {
				core.Panicf("AllGather", "needs a tensor with an axis 0 to concatenate along, got a scalar %v", x.DType())
			}
			s := x.Shape().Clone()
			s[0] *= Size()
			return tensor.Meta{Shape: s, DType: x.DType()}
		},
		// Rank r's input is block r of every rank's output: its gradient
		// is block r of the sum of the cotangents.
		VJP: func(_ any, _ []*tensor.Tensor, _, g *tensor.Tensor) []*tensor.Tensor {
			return []*tensor.Tensor{ReduceScatter(g)}
		},
		JVP: func(_ any, _, tangents []*tensor.Tensor, _ *tensor.Tensor) *tensor.Tensor {
			return AllGather(tangents[0])
		},
	})
	AllGatherPrim.RegisterAll(core.CPU, allGatherKernel)

	ReduceScatterPrim = core.Define(&core.Prim{
		Name:   "ReduceScatter",
		Traits: core.Traits{Impure: true},
		Infer: func(_ any, in []*tensor.Tensor) tensor.Meta {
			x := in[0]
			checkReducible("ReduceScatter", x)
			n := Size()
			if x.Rank() == 0 || x.Shape()[0]%n != 0 {
				core.Panicf("ReduceScatter", "needs an axis 0 divisible by the %d ranks, got %v", n, x.Shape())
			}
			s := x.Shape().Clone()
			s[0] /= n
			return tensor.Meta{Shape: s, DType: x.DType()}
		},
		VJP: func(_ any, _ []*tensor.Tensor, _, g *tensor.Tensor) []*tensor.Tensor {
			return []*tensor.Tensor{AllGather(g)}
		},
		JVP: func(_ any, _, tangents []*tensor.Tensor, _ *tensor.Tensor) *tensor.Tensor {
			return ReduceScatter(tangents[0])
		},
	})
	ReduceScatterPrim.RegisterAll(core.CPU, reduceScatterKernel)
}

// checkReduce refuses a reduction op cannot do on x.
func checkReduce(name string, op ReduceOp, x *tensor.Tensor) {
	if !op.valid() {
		core.Panicf(name, "unknown reduction %v", op)
	}
	switch x.DType() {
	case tensor.Float32, tensor.Float64:
	case tensor.Int32, tensor.Int64:
		if op == Mean {
			core.Panicf(name, "reduction mean needs a float tensor, got %v %v", x.Shape(), x.DType())
		}
	default:
		core.Panicf(name, "unsupported dtype %v (shape %v)", x.DType(), x.Shape())
	}
}

// rootInfer is the inference of a collective with a root rank; sum says
// it adds (so needs a number type).
func rootInfer(name string, sum bool) func(attrs any, in []*tensor.Tensor) tensor.Meta {
	return func(attrs any, in []*tensor.Tensor) tensor.Meta {
		root := attrs.(RootAttrs).Root
		if n := Size(); root < 0 || root >= n {
			core.Panicf(name, "root rank %d is out of range for %d ranks", root, n)
		}
		if sum {
			checkReducible(name, in[0])
		}
		return tensor.Meta{Shape: in[0].Shape().Clone(), DType: in[0].DType()}
	}
}

// checkReducible refuses element types the transports cannot add.
func checkReducible(name string, x *tensor.Tensor) {
	switch x.DType() {
	case tensor.Float32, tensor.Float64, tensor.Int32, tensor.Int64:
	default:
		core.Panicf(name, "unsupported dtype %v (shape %v)", x.DType(), x.Shape())
	}
}

// AllReduce returns x combined across all ranks with op: every rank gets
// the same result. It is a primitive, so it runs eagerly in PyNative mode
// and becomes a node of the graph under Jit. For Sum and Mean its gradient
// is the same all-reduce of the cotangent; Max is not differentiable.
// Mean needs a float tensor. A failure of the transport panics with a
// *tensor.Error naming the call and the rank.
func AllReduce(x *tensor.Tensor, op ReduceOp) *tensor.Tensor {
	return core.Apply(AllReducePrim, ReduceAttrs{Op: op}, x)
}

// AllReduceStart begins an all-reduce of xs, packed one after another
// into one flat buffer — a bucket, one message however many tensors — and
// returns its handle, which AllReduceWait turns into the results. In a
// compiled plan the start runs as soon as xs are computed and the wait
// just before a result is needed, so that a non-blocking transport
// (MPI_Iallreduce) overlaps the work between them; the Open MPI backend
// reduces at the start unless SPORE_MPI_NONBLOCKING=1 (see the package
// documentation for why). The tensors must share a dtype. Every start must be waited
// for, once; the handle's values are undefined until then. Not
// differentiable: it exists for the training step's gradients, after
// differentiation (use AllReduce inside differentiated code).
func AllReduceStart(op ReduceOp, xs ...*tensor.Tensor) *tensor.Tensor {
	return core.Apply(AllReduceStartPrim, ReduceAttrs{Op: op}, xs...)
}

// WaitAttrs are the attributes of AllReduceWait: the reduction and the
// shapes of the tensors the bucket holds.
type WaitAttrs struct {
	Op     ReduceOp
	Shapes []tensor.Shape
}

// String prints every attribute, for IR dumps.
func (a WaitAttrs) String() string { return fmt.Sprintf("op=%v shapes=%v", a.Op, a.Shapes) }

// AllReduceWait completes the all-reduce whose handle h AllReduceStart(op,
// xs...) returned and returns the reduced tensors, shaped as xs (shapes).
// In a compiled plan it runs just before its first result is needed.
func AllReduceWait(h *tensor.Tensor, op ReduceOp, shapes ...tensor.Shape) []*tensor.Tensor {
	return core.ApplyN(AllReduceWaitPrim, WaitAttrs{Op: op, Shapes: shapes}, h)
}

// Broadcast returns root's x on every rank. x must have the same shape and
// dtype on every rank. Its gradient is Reduce of the cotangent to root.
func Broadcast(x *tensor.Tensor, root int) *tensor.Tensor {
	return core.Apply(BroadcastPrim, RootAttrs{Root: root}, x)
}

// Reduce returns, on the root rank, the sum of every rank's x, and zeros on
// the others (MPI_Reduce). Its gradient is Broadcast of root's cotangent.
func Reduce(x *tensor.Tensor, root int) *tensor.Tensor {
	return core.Apply(ReducePrim, RootAttrs{Root: root}, x)
}

// AllGather returns every rank's x concatenated along axis 0, in rank
// order. x must have the same shape and dtype on every rank. Its gradient
// is ReduceScatter of the cotangent.
func AllGather(x *tensor.Tensor) *tensor.Tensor {
	return core.Apply(AllGatherPrim, nil, x)
}

// ReduceScatter sums every rank's x and returns this rank's block of the
// sum: axis 0 split into Size equal blocks, in rank order
// (MPI_Reduce_scatter_block). Its gradient is AllGather of the cotangent.
func ReduceScatter(x *tensor.Tensor) *tensor.Tensor {
	return core.Apply(ReduceScatterPrim, nil, x)
}

// fail panics with an *Error naming the collective and the rank, for a
// kernel whose transport failed mid-step.
func fail(call string, err error) {
	b := active()
	core.Panicf(call, "on rank %d of %d: %v", b.rank(), b.size(), err)
}

// reduceOp is the backend's reduction for op: Mean is a Sum.
func reduceOp(op ReduceOp) ReduceOp {
	if op == Mean {
		return Sum
	}
	return op
}

// divide divides buf (a float slice) by n, completing a Mean.
func divide(buf any, n int) {
	switch b := buf.(type) {
	case []float32:
		f := float32(n)
		for i := range b {
			b[i] /= f
		}
	case []float64:
		f := float64(n)
		for i := range b {
			b[i] /= f
		}
	}
}

func allReduceKernel(attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
	op := attrs.(ReduceAttrs).Op
	core.Copy(out, in[0])
	b := active()
	if err := b.allReduce(out.Data(), reduceOp(op)); err != nil {
		fail("AllReduce", err)
	}
	if op == Mean && b.size() > 1 {
		divide(out.Data(), b.size())
	}
}

// pending holds the all-reduces started and not yet waited for, keyed by
// the address of the buffer being reduced (the start's result), which is
// unique while the reduction is under way: the buffer stays live, and
// untouched, until the wait reads it. A compiled plan reuses its buffers,
// so after the first run the map holds its keys' slots and the kernels
// allocate nothing.
var pending = struct {
	sync.Mutex
	m map[unsafe.Pointer]request
}{m: map[unsafe.Pointer]request{}}

func startKernel(attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
	op := attrs.(ReduceAttrs).Op
	off := 0
	for _, x := range in {
		n := x.Size()
		if !placed(out, off, x) {
			core.CopyElems(out, off, x, 0, n)
		}
		off += n
	}
	buf := out.Data()
	p, _, _ := sliceInfo(buf)
	if p == nil {
		return // nothing to reduce; the wait finds nothing pending
	}
	pending.Lock()
	_, dup := pending.m[p]
	pending.Unlock()
	if dup {
		// Cannot happen while every start is waited for before its
		// buffer is reused; a plan that broke that rule would corrupt
		// the reduction, so it is an error rather than a silent overwrite.
		core.Panicf("AllReduceStart", "a buffer already being reduced was reused before its AllReduceWait")
	}
	req, err := active().startAllReduce(buf, reduceOp(op))
	if err != nil {
		fail("AllReduceStart", err)
	}
	pending.Lock()
	pending.m[p] = req
	pending.Unlock()
}

// placed reports whether x's elements are those of out from off on, the
// same memory: in a compiled plan, an argument computed in place
// (ArgsInResult).
func placed(out *tensor.Tensor, off int, x *tensor.Tensor) bool {
	p, n, elem := sliceInfo(out.Data())
	q, m, _ := sliceInfo(x.Data())
	return m > 0 && off+m <= n && unsafe.Add(p, off*elem) == q
}

func waitKernel(attrs any, in []*tensor.Tensor, outs []*tensor.Tensor) {
	op := attrs.(WaitAttrs).Op
	h := in[0]
	p, n, _ := sliceInfo(h.Data())
	if n > 0 {
		pending.Lock()
		req, ok := pending.m[p]
		delete(pending.m, p)
		pending.Unlock()
		if !ok {
			core.Panicf("AllReduceWait", "its input is not the handle of an all-reduce under way (each AllReduceStart is waited for once)")
		}
		if err := req.wait(); err != nil {
			fail("AllReduceWait", err)
		}
	}
	// Unpacking divides for a mean in the same pass.
	k := 1
	if op == Mean {
		k = active().size()
	}
	off := 0
	for _, o := range outs {
		m := o.Size()
		switch d := o.Data().(type) {
		case []float32:
			unpack(d, h.Data().([]float32)[off:off+m], k)
		case []float64:
			unpack(d, h.Data().([]float64)[off:off+m], k)
		case []int32:
			unpack(d, h.Data().([]int32)[off:off+m], 1)
		case []int64:
			unpack(d, h.Data().([]int64)[off:off+m], 1)
		}
		off += m
	}
}

// unpack copies src into dst divided by k (copied alone when k is 1). In
// a compiled plan dst is src itself (ResultsInArg): the copy is skipped and
// the division made in place.
func unpack[T float32 | float64 | int32 | int64](dst, src []T, k int) {
	if len(dst) == 0 {
		return
	}
	if &dst[0] != &src[0] {
		copy(dst, src)
	}
	if k == 1 {
		return
	}
	f := T(k)
	for i, v := range dst {
		dst[i] = v / f
	}
}

func broadcastKernel(attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
	core.Copy(out, in[0])
	if err := active().broadcast(out.Data(), attrs.(RootAttrs).Root); err != nil {
		fail("Broadcast", err)
	}
}

func reduceKernel(attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
	if err := active().reduce(in[0].Data(), out.Data(), attrs.(RootAttrs).Root); err != nil {
		fail("Reduce", err)
	}
}

func reduceScatterKernel(_ any, in []*tensor.Tensor, out *tensor.Tensor) {
	if err := active().reduceScatter(in[0].Data(), out.Data()); err != nil {
		fail("ReduceScatter", err)
	}
}

func allGatherKernel(_ any, in []*tensor.Tensor, out *tensor.Tensor) {
	if err := active().allGather(in[0].Data(), out.Data()); err != nil {
		fail("AllGather", err)
	}
}
