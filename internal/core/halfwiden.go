package core

import (
	"fmt"
	"sync/atomic"
)

// HalfWidener derives a primitive's kernels for the 16-bit float types
// (BFloat16, Float16) from its Float32 ones. Package ops installs one
// (SetHalfWidener): most primitives are written for float32 alone, and
// their 16-bit kernels widen the operands, run the float32 kernel and
// round the results back.
//
// The derivation is lazy, at the first lookup of a 16-bit key that has no
// registered kernel (KernelForKey, KernelNFor), so that it does not
// depend on the order in which packages or files register their float32
// kernels: a primitive defined and registered at any time, even after
// init, finds its 16-bit kernels when first asked.
type HalfWidener struct {
	// Kernel returns p's kernel for key (a 16-bit dtype) given p's Float32
	// kernel k32 for the same index dtype and backend, or nil for none.
	Kernel func(p *Prim, key Key, k32 KernelFunc) KernelFunc
	// KernelN is Kernel for multi-result primitives.
	KernelN func(p *Prim, dt DType, k32 KernelNFunc) KernelNFunc
	// Infer and InferN, when set, run p's inference (p.Infer, p.InferN)
	// adapted to 16-bit operands: an Infer written for Float32 sees
	// Float32 stand-ins where p's 16-bit kernels are derived.
	Infer  func(p *Prim, attrs any, in []*Tensor) Meta
	InferN func(p *Prim, attrs any, in []*Tensor) []Meta
}

// Meta is p's shape and dtype inference of in: p.Infer, adapted by the
// installed HalfWidener when p is recorded with Define. Every caller of
// inference (eager dispatch, the tracer, graph verification) goes through
// it rather than the field, so the adaptation is decided when inference
// runs and needs nothing installed on p: a primitive defined at any time,
// by a file of any name, is adapted like every other.
func (p *Prim) Meta(attrs any, in []*Tensor) Meta {
	if p.defined {
		if w := halfWidener.Load(); w != nil && w.Infer != nil {
			return w.Infer(p, attrs, in)
		}
	}
	return p.Infer(attrs, in)
}

// Metas is Meta for multi-result primitives (p.InferN).
func (p *Prim) Metas(attrs any, in []*Tensor) []Meta {
	if p.defined {
		if w := halfWidener.Load(); w != nil && w.InferN != nil {
			return w.InferN(p, attrs, in)
		}
	}
	return p.InferN(attrs, in)
}

// halfWidener is the installed HalfWidener; nil until SetHalfWidener.
var halfWidener atomic.Pointer[HalfWidener]

// SetHalfWidener installs w as the source of 16-bit kernels for the
// primitives recorded with Define. It is set once, by package ops at
// init; a second call panics, since kernels already derived by the first
// would silently disagree with the second's.
func SetHalfWidener(w HalfWidener) {
	if !halfWidener.CompareAndSwap(nil, &w) {
		panic("core: SetHalfWidener called twice")
	}
}

// halfSlot is the index of a 16-bit dtype in a primitive's cache of
// widened kernels, or -1 for any other dtype.
func halfSlot(dt DType) int {
	switch dt {
	case BFloat16:
		return 0
	case Float16:
		return 1
	}
	return -1
}

// widened is a primitive's cache of kernels derived by the HalfWidener:
// one slot per 16-bit dtype, index dtype and backend, so it never holds
// more than that many however often it is asked. Slots are atomic because
// eager dispatch and plan compilation look kernels up from any goroutine.
type widened struct {
	k  [2][numDTypes][numBackends]atomic.Pointer[KernelFunc]
	kn [2][numBackends]atomic.Pointer[KernelNFunc]
}

// widen returns p's derived kernel for key on b, deriving and caching it
// on the first call, or nil when key is not a 16-bit dtype, p is not
// recorded with Define, it has no Float32 kernel to widen, or no
// HalfWidener is installed (nothing is cached then, so a later call
// retries).
func (p *Prim) widen(key Key, b Backend) KernelFunc {
	h := halfSlot(key.DType)
	if h < 0 || !p.defined {
		return nil
	}
	return deriveOnce(&p.widened.k[h][key.Index][b], func() (KernelFunc, bool) {
		w := halfWidener.Load()
		k32 := p.kernels[Float32][key.Index][b]
		if w == nil || w.Kernel == nil || k32 == nil {
			return nil, false
		}
		k := w.Kernel(p, key, k32)
		return k, k != nil
	})
}

// widenN is widen for multi-result primitives.
func (p *Prim) widenN(dt DType, b Backend) KernelNFunc {
	h := halfSlot(dt)
	if h < 0 || !p.defined {
		return nil
	}
	return deriveOnce(&p.widened.kn[h][b], func() (KernelNFunc, bool) {
		w := halfWidener.Load()
		k32 := p.kernelsN[Float32][Invalid][b]
		if w == nil || w.KernelN == nil || k32 == nil {
			return nil, false
		}
		k := w.KernelN(p, dt, k32)
		return k, k != nil
	})
}

// deriveOnce returns the kernel cached in slot, deriving and storing it on
// the first call. Nothing is stored when derive finds none (ok false), so
// a later call retries. Two goroutines may derive at once; both then use
// the first stored, so that the primitive has one kernel (and one set of
// scratch buffers) per key.
func deriveOnce[K any](slot *atomic.Pointer[K], derive func() (K, bool)) K {
	if k := slot.Load(); k != nil {
		return *k
	}
	k, ok := derive()
	if !ok {
		return k
	}
	if !slot.CompareAndSwap(nil, &k) {
		return *slot.Load()
	}
	return k
}

// Registered reports whether a kernel was registered for key on backend b
// (Register, RegisterKey, RegisterAll), as opposed to one KernelForKey
// would derive: the HalfWidener uses it to tell a primitive's own 16-bit
// kernels, whose inference handles 16-bit operands, from derived ones.
func (p *Prim) Registered(key Key, b Backend) bool {
	p.checkKey(key, b)
	return p.kernels[key.DType][key.Index][b] != nil
}

// RegisteredN is Registered for multi-result primitives.
func (p *Prim) RegisteredN(dt DType, b Backend) bool {
	p.checkKey(Key{DType: dt}, b)
	return p.kernelsN[dt][Invalid][b] != nil
}

// errNoKernel is KernelForKey's error.
func (p *Prim) errNoKernel(key Key, b Backend) error {
	return fmt.Errorf("%s has no kernel for %v on %v", p.Name, key, b)
}
