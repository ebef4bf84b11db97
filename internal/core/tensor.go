package core

import (
	"fmt"
	"math"
	"sync/atomic"
	"unsafe"

	"github.com/sporeml/spore/internal/kernels/half"
)

// Tensor is an n-dimensional array of one element type.
//
// A tensor is either concrete — it owns a buffer — or symbolic — it stands
// for a value in a graph being traced and has a shape and dtype but no data
// yet. Ops accept both; see Apply.
//
// Tensors have value semantics: ops return new tensors and never change their
// inputs. The one exception is a parameter (NewParameter), a named tensor with
// identity that optimisers and layers update in place with Assign.
type Tensor struct {
	shape Shape
	dtype DType
	buf   any // []float32, []float64, ...; nil while symbolic
	sym   *symbol
	param *paramInfo
	node  *Node // autodiff record; nil unless the tensor is tracked
	// needsGrad marks an untracked stand-in for a tracked tensor (see
	// Untracked).
	needsGrad bool
}

// symbol ties a symbolic tensor to the trace that produced it.
type symbol struct {
	tr Tracer
	id int
}

type paramInfo struct {
	name         string
	requiresGrad bool
	// version counts the in-place writes to the parameter (Assign, and
	// compiled plans' updates through TouchParam), so that a compiled plan
	// holding a packed copy of it knows when to pack it again.
	version atomic.Uint64
}

// ParamVersion returns the number of in-place writes made to parameter t
// through Assign, Copy or TouchParam (0 for other tensors). A compiled plan
// that keeps a derived copy of a parameter (its weights packed for the
// GEMM kernel) repacks it when this changes; a write through Data() is not
// counted, which is one more reason Data() is read-only.
func ParamVersion(t *Tensor) uint64 {
	if t.param == nil {
		return 0
	}
	return t.param.version.Load()
}

// TouchParam records an in-place write to parameter t that did not go
// through Assign or Copy: a compiled plan's kernel that wrote the update
// straight into the parameter's buffer. It does nothing for other tensors.
func TouchParam(t *Tensor) {
	if t.param != nil {
		t.param.version.Add(1)
	}
}

// Shape returns the extents of t's axes. The caller must not modify it.
func (t *Tensor) Shape() Shape {
	if t == nil {
		nilTensor()
	}
	return t.shape
}

// DType returns t's element type.
func (t *Tensor) DType() DType {
	if t == nil {
		nilTensor()
	}
	return t.dtype
}

// Rank returns the number of axes of t.
func (t *Tensor) Rank() int { return len(t.Shape()) }

// Size returns the number of elements of t.
func (t *Tensor) Size() int { return t.Shape().Size() }

// Dim returns the extent of axis i; negative i counts from the end.
func (t *Tensor) Dim(i int) int { return t.Shape()[NormAxis("Dim", i, len(t.shape))] }

// Meta returns t's shape and dtype.
func (t *Tensor) Meta() Meta { return Meta{Shape: t.Shape(), DType: t.dtype} }

// New returns a zero-filled concrete tensor of the given type and shape.
// The shape is copied.
func New(dt DType, shape ...int) *Tensor {
	s := Shape(shape).Clone()
	CheckShape("New", dt, s)
	return &Tensor{shape: s, dtype: dt, buf: makeBuf(dt, s.Size())}
}

// NewOf returns a zero-filled tensor described by m, sharing m.Shape.
// Kernels and executors use it to allocate outputs.
func NewOf(m Meta) *Tensor {
	return &Tensor{shape: m.Shape, dtype: m.DType, buf: makeBuf(m.DType, m.Shape.Size())}
}

// FromBuffer wraps buf (a slice of one of the element types, Elem, of
// exactly shape.Size() elements) without copying. It is for
// executors and kernels that manage their own memory; the caller must not
// let buf be changed while the tensor is in use.
func FromBuffer(buf any, shape Shape) *Tensor {
	dt, n := bufInfo(buf)
	if dt == Invalid {
		Panicf("FromBuffer", "unsupported buffer type %T", buf)
	}
	if n != shape.Size() {
		Panicf("FromBuffer", "buffer has %d elements, shape %v needs %d", n, shape, shape.Size())
	}
	return &Tensor{shape: shape, dtype: dt, buf: buf}
}

func bufInfo(buf any) (DType, int) {
	switch b := buf.(type) {
	case []float32:
		return Float32, len(b)
	case []float64:
		return Float64, len(b)
	case []int32:
		return Int32, len(b)
	case []int64:
		return Int64, len(b)
	case []bool:
		return Bool, len(b)
	case []uint8:
		return Uint8, len(b)
	case []BF16:
		return BFloat16, len(b)
	case []F16:
		return Float16, len(b)
	case []int8:
		return Int8, len(b)
	case []int16:
		return Int16, len(b)
	case []uint16:
		return Uint16, len(b)
	case []uint32:
		return Uint32, len(b)
	case []uint64:
		return Uint64, len(b)
	}
	return Invalid, 0
}

// Rewrap points t, a tensor header of the caller's own (made by MetaTensor
// or FromBuffer and never handed out), at buf with the given shape, for
// kernels that reuse headers over pooled buffers call after call instead
// of allocating new ones. buf must hold shape.Size() elements.
func Rewrap(t *Tensor, buf any, shape Shape) {
	dt, n := bufInfo(buf)
	if dt == Invalid || n != shape.Size() {
		Panicf("Rewrap", "buffer %T of %d elements does not fit shape %v", buf, n, shape)
	}
	t.buf, t.shape, t.dtype = buf, shape, dt
}

// MetaTensor returns a tensor of shape and dtype m with no data: a stand-in
// for inference, which reads operands' shapes and dtypes but never their
// values (reading them panics).
func MetaTensor(m Meta) *Tensor { return &Tensor{shape: m.Shape, dtype: m.DType} }

// FromSlice returns a tensor holding a copy of data with the given shape.
// With no shape, the tensor is one-dimensional. It panics if the shape does
// not hold exactly len(data) elements.
func FromSlice[T Elem](data []T, shape ...int) *Tensor {
	if len(shape) == 0 {
		shape = []int{len(data)}
	}
	s := Shape(shape).Clone()
	if s.Size() != len(data) {
		Panicf("FromSlice", "%d values do not fill shape %v (%d elements)", len(data), s, s.Size())
	}
	return &Tensor{shape: s, dtype: DTypeOf[T](), buf: append([]T(nil), data...)}
}

// Scalar returns a rank-0 tensor holding v.
func Scalar[T Elem](v T) *Tensor {
	return &Tensor{shape: Shape{}, dtype: DTypeOf[T](), buf: []T{v}}
}

// Zeros returns a tensor of zeros.
func Zeros(dt DType, shape ...int) *Tensor { return New(dt, shape...) }

// Ones returns a tensor of ones.
func Ones(dt DType, shape ...int) *Tensor { return Full(dt, 1, shape...) }

// Full returns a tensor with every element set to v (converted to dt).
func Full(dt DType, v float64, shape ...int) *Tensor {
	t := New(dt, shape...)
	for i := range t.Size() {
		t.setFloat(i, v)
	}
	return t
}

// Arange returns the one-dimensional tensor start, start+step, ... up to but
// excluding stop, as NumPy's arange does.
func Arange(dt DType, start, stop, step float64) *Tensor {
	if step == 0 || math.IsNaN(start+stop+step) {
		Panicf("Arange", "bad range start=%v stop=%v step=%v", start, stop, step)
	}
	n := int(math.Ceil((stop - start) / step))
	n = max(n, 0)
	t := New(dt, n)
	for i := range n {
		t.setFloat(i, start+float64(i)*step)
	}
	return t
}

// Eye returns the n×n identity matrix.
func Eye(dt DType, n int) *Tensor {
	t := New(dt, n, n)
	for i := range n {
		t.setFloat(i*n+i, 1)
	}
	return t
}

// IsSymbolic reports whether t stands for a value of a graph being traced.
func (t *Tensor) IsSymbolic() bool {
	if t == nil {
		nilTensor()
	}
	return t.sym != nil
}

// Data returns t's buffer without copying: a []T for T the Go element type
// of t's dtype ([]float32, []int8, []uint64, []bool, []BF16, ...). Kernels use it; user code should prefer the
// copying accessors (Float32s, ...). Writing to it breaks value semantics,
// and a parameter written through it may go unseen by compiled plans that
// hold packed copies of it (see ParamVersion): change parameters with
// Assign.
func (t *Tensor) Data() any {
	t.mustConcrete("Data")
	return t.buf
}

func (t *Tensor) mustConcrete(method string) {
	if t == nil {
		nilTensor()
	}
	if t.sym != nil {
		panic(&ConcretizationError{Func: t.sym.tr.FuncName(), Method: method, Loc: CallerLoc()})
	}
}

// Float32s returns a copy of t's elements converted to float32 (exactly,
// for BFloat16 and Float16 tensors).
func (t *Tensor) Float32s() []float32 { return convertAll[float32](t, "Float32s") }

// Float64s returns a copy of t's elements converted to float64.
func (t *Tensor) Float64s() []float64 { return convertAll[float64](t, "Float64s") }

// Int32s returns a copy of t's elements converted to int32.
func (t *Tensor) Int32s() []int32 { return convertAll[int32](t, "Int32s") }

// Int64s returns a copy of t's elements converted to int64.
func (t *Tensor) Int64s() []int64 { return convertAll[int64](t, "Int64s") }

// Bools returns a copy of t's elements as bools (non-zero is true).
func (t *Tensor) Bools() []bool {
	t.mustConcrete("Bools")
	out := make([]bool, t.Size())
	for i := range out {
		out[i] = t.floatAt(i) != 0
	}
	return out
}

// Item returns the value of a one-element tensor as float64.
func (t *Tensor) Item() float64 {
	t.mustConcrete("Item")
	if t.Size() != 1 {
		Panicf("Item", "tensor of shape %v has %d elements, want 1", t.shape, t.Size())
	}
	return t.floatAt(0)
}

// Bool returns the value of a one-element tensor as a Go bool.
func (t *Tensor) Bool() bool {
	t.mustConcrete("Bool")
	if t.Size() != 1 {
		Panicf("Bool", "tensor of shape %v has %d elements, want 1", t.shape, t.Size())
	}
	return t.floatAt(0) != 0
}

// At returns the element at the given index (one per axis) as float64.
func (t *Tensor) At(idx ...int) float64 {
	t.mustConcrete("At")
	if len(idx) != len(t.shape) {
		Panicf("At", "%d indices for a tensor of rank %d", len(idx), len(t.shape))
	}
	off := 0
	for i, x := range idx {
		if x < 0 || x >= t.shape[i] {
			Panicf("At", "index %v out of range for shape %v", idx, t.shape)
		}
		off = off*t.shape[i] + x
	}
	return t.floatAt(off)
}

func convertAll[T Number](t *Tensor, method string) []T {
	t.mustConcrete(method)
	out := make([]T, t.Size())
	switch b := t.buf.(type) {
	case []float32:
		for i, v := range b {
			out[i] = T(v)
		}
	case []float64:
		for i, v := range b {
			out[i] = T(v)
		}
	case []int32:
		for i, v := range b {
			out[i] = T(v)
		}
	case []int64:
		for i, v := range b {
			out[i] = T(v)
		}
	case []uint8:
		for i, v := range b {
			out[i] = T(v)
		}
	case []int8:
		convertInts(out, b)
	case []int16:
		convertInts(out, b)
	case []uint16:
		convertInts(out, b)
	case []uint32:
		convertInts(out, b)
	case []uint64:
		convertInts(out, b)
	case []bool:
		for i, v := range b {
			if v {
				out[i] = 1
			}
		}
	case []BF16:
		if o, ok := any(out).([]float32); ok {
			half.BF16ToFloat32s(o, bits16(b))
			break
		}
		for i, v := range b {
			out[i] = T(v.Float32())
		}
	case []F16:
		if o, ok := any(out).([]float32); ok {
			half.F16ToFloat32s(o, bits16(b))
			break
		}
		for i, v := range b {
			out[i] = T(v.Float32())
		}
	}
	return out
}

// convertInts converts integers to T as Go's conversion does (integers
// wrap, floats take the nearest value).
func convertInts[T Number, S Int](out []T, b []S) {
	for i, v := range b {
		out[i] = T(v)
	}
}

// bits16 views a buffer of 16-bit floats as the raw bits the conversion
// kernels take.
func bits16[H BF16 | F16](b []H) []uint16 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*uint16)(unsafe.Pointer(&b[0])), len(b))
}

// Bits16 returns the buffer of a BFloat16 or Float16 tensor as raw bits,
// without copying, for conversion and GEMM kernels that take []uint16; it
// panics for other dtypes. The same cautions as for Data apply.
func Bits16(t *Tensor) []uint16 {
	t.mustConcrete("Bits16")
	switch b := t.buf.(type) {
	case []BF16:
		return bits16(b)
	case []F16:
		return bits16(b)
	}
	Panicf("Bits16", "tensor of shape %v is %v, not BFloat16 or Float16", t.shape, t.dtype)
	return nil
}

// floatAt reads flat element i as float64.
func (t *Tensor) floatAt(i int) float64 {
	switch b := t.buf.(type) {
	case []float32:
		return float64(b[i])
	case []float64:
		return b[i]
	case []int32:
		return float64(b[i])
	case []int64:
		return float64(b[i])
	case []uint8:
		return float64(b[i])
	case []bool:
		if b[i] {
			return 1
		}
		return 0
	case []BF16:
		return float64(b[i].Float32())
	case []F16:
		return float64(b[i].Float32())
	case []int8:
		return float64(b[i])
	case []int16:
		return float64(b[i])
	case []uint16:
		return float64(b[i])
	case []uint32:
		return float64(b[i])
	case []uint64:
		return float64(b[i])
	}
	panic("spore: tensor without buffer")
}

// setFloat writes v, converted to t's dtype, into flat element i.
func (t *Tensor) setFloat(i int, v float64) {
	switch b := t.buf.(type) {
	case []float32:
		b[i] = float32(v)
	case []float64:
		b[i] = v
	case []int32:
		b[i] = int32(v)
	case []int64:
		b[i] = FloatToInt64(v)
	case []uint8:
		b[i] = uint8(v)
	case []bool:
		b[i] = v != 0
	case []BF16:
		b[i] = BF16From(float32(v))
	case []F16:
		b[i] = F16From(float32(v))
	case []int8:
		b[i] = int8(FloatToInt64(v))
	case []int16:
		b[i] = int16(FloatToInt64(v))
	case []uint16:
		b[i] = uint16(FloatToInt64(v))
	case []uint32:
		b[i] = uint32(FloatToInt64(v))
	case []uint64:
		b[i] = FloatToUint64(v)
	}
}

// FloatToInt64 converts v to int64 truncating toward zero, saturating
// beyond int64's range (NaN gives 0), so that no value meets Go's
// implementation-specific conversion of an out-of-range float. The
// narrower integer types convert through it, wrapping as C's
// conversions do on common hardware (-1.0 becomes Uint8 255).
func FloatToInt64(v float64) int64 {
	switch {
	case v != v:
		return 0
	case v >= 1<<63:
		return math.MaxInt64
	case v <= -(1 << 63):
		return math.MinInt64
	}
	return int64(v)
}

// FloatToUint64 converts v to uint64 truncating toward zero, saturating at
// 2^64-1, with FloatToInt64's wrap-around below 2^63 (-1 is 2^64-1).
func FloatToUint64(v float64) uint64 {
	switch {
	case v >= 1<<64:
		return math.MaxUint64
	case v >= 1<<63:
		return uint64(v)
	}
	return uint64(FloatToInt64(v))
}

// NewParameter returns a parameter: a named tensor with identity holding a
// copy of init's values. Parameters are the only tensors that change in
// place (Assign); traced graphs capture them by reference.
func NewParameter(name string, init *Tensor) *Tensor {
	init.mustConcrete("NewParameter")
	p := &Tensor{shape: init.shape.Clone(), dtype: init.dtype, buf: makeBuf(init.dtype, init.Size())}
	CopyBuf(p.buf, init.buf)
	p.param = &paramInfo{name: name, requiresGrad: true}
	return p
}

// IsParameter reports whether t is a parameter.
func (t *Tensor) IsParameter() bool {
	if t == nil {
		nilTensor()
	}
	return t.param != nil
}

// Name returns a parameter's name ("" for other tensors).
func (t *Tensor) Name() string {
	if t.param == nil {
		return ""
	}
	return t.param.name
}

// SetName renames a parameter; cells use it to give hierarchical names.
func (t *Tensor) SetName(name string) {
	if t.param == nil {
		Panicf("SetName", "tensor of shape %v is not a parameter", t.shape)
	}
	t.param.name = name
}

// RequiresGrad reports whether a parameter takes part in training.
func (t *Tensor) RequiresGrad() bool { return t.IsParameter() && t.param.requiresGrad }

// SetRequiresGrad freezes (false) or unfreezes (true) a parameter.
func (t *Tensor) SetRequiresGrad(on bool) {
	if t.param == nil {
		Panicf("SetRequiresGrad", "tensor of shape %v is not a parameter", t.shape)
	}
	t.param.requiresGrad = on
}

// Assign overwrites parameter t with v's values, in place. v must have t's
// shape and dtype. While a trace is active, the assignment is recorded in
// the graph and performed by the executor at run time.
func (t *Tensor) Assign(v *Tensor) {
	if t.param == nil {
		Panicf("Assign", "tensor of shape %v is not a parameter; only parameters change in place", t.shape)
	}
	if !t.shape.Equal(v.shape) || t.dtype != v.dtype {
		Panicf("Assign", "value %v %v does not match parameter %q %v %v", v.shape, v.dtype, t.param.name, t.shape, t.dtype)
	}
	if tr := tracerOf(v); tr != nil {
		tr.Assign(t, v)
		return
	}
	if tr := CurrentTracer(); tr != nil {
		tr.Assign(t, v)
		return
	}
	CopyBuf(t.buf, v.buf)
	t.param.version.Add(1)
}

// Copy overwrites t's buffer with src's values. It is the executor's
// in-place write; model code uses Assign.
func Copy(t, src *Tensor) {
	CopyBuf(t.buf, src.buf)
	TouchParam(t)
}

// CopyBuf copies src into dst, two buffers (Go slices) of one element
// type, as far as the shorter reaches.
func CopyBuf(dst, src any) {
	switch d := dst.(type) {
	case []float32:
		copy(d, src.([]float32))
	case []float64:
		copy(d, src.([]float64))
	case []int32:
		copy(d, src.([]int32))
	case []int64:
		copy(d, src.([]int64))
	case []bool:
		copy(d, src.([]bool))
	case []uint8:
		copy(d, src.([]uint8))
	case []BF16:
		copy(d, src.([]BF16))
	case []F16:
		copy(d, src.([]F16))
	case []int8:
		copy(d, src.([]int8))
	case []int16:
		copy(d, src.([]int16))
	case []uint16:
		copy(d, src.([]uint16))
	case []uint32:
		copy(d, src.([]uint32))
	case []uint64:
		copy(d, src.([]uint64))
	}
}

// Clone returns a concrete copy of t that shares nothing with it (and is not
// a parameter).
func (t *Tensor) Clone() *Tensor {
	t.mustConcrete("Clone")
	c := &Tensor{shape: t.shape.Clone(), dtype: t.dtype, buf: makeBuf(t.dtype, t.Size())}
	CopyBuf(c.buf, t.buf)
	return c
}

// GoString supports %#v with the verbose form.
func (t *Tensor) GoString() string { return t.Verbose() }

var _ fmt.Stringer = (*Tensor)(nil)

// Rebind makes t share src's buffer. Compiled plans use it to point their
// argument slots at each call's inputs without allocating; src must have
// t's shape and dtype.
func Rebind(t, src *Tensor) {
	src.mustConcrete("Rebind")
	t.buf = src.buf
}

// Repoint gives the header t the shape shape and the buffer buf, which
// must hold exactly shape's elements of t's dtype: a plan compiled for a
// dynamic dimension's bound points its headers at a prefix of their
// buffers, with the actual shape, before each run at a smaller size. The
// shape is kept, not copied: the caller never changes it afterwards.
func Repoint(t *Tensor, buf any, shape Shape) {
	dt, n := bufInfo(buf)
	if dt != t.dtype || n != shape.Size() {
		Panicf("Repoint", "a %v buffer of %d elements cannot hold a %v tensor of shape %v", dt, n, t.dtype, shape)
	}
	t.buf = buf
	t.shape = shape
}

// SetShape gives the header t the shape shape, of as many elements as its
// buffer will hold once rebound (Rebind): a compiled plan's argument slot
// takes each call's shape this way. The shape is kept, not copied.
func SetShape(t *Tensor, shape Shape) { t.shape = shape }

// Copier copies n elements of src, from srcOff, into dst at dstOff, for
// tensors of one dtype. Planned code resolves it once with CopierFor, so a
// loop kernel copying carries and slices every iteration switches on no
// dtype.
type Copier func(dst *Tensor, dstOff int, src *Tensor, srcOff, n int)

var copiers = [numDTypes]Copier{
	Float32: copyElems[float32], Float64: copyElems[float64], Int32: copyElems[int32],
	Int64: copyElems[int64], Bool: copyElems[bool], Uint8: copyElems[uint8],
	BFloat16: copyElems[BF16], Float16: copyElems[F16], Int8: copyElems[int8],
	Int16: copyElems[int16], Uint16: copyElems[uint16], Uint32: copyElems[uint32],
	Uint64: copyElems[uint64],
}

// CopierFor returns the Copier of dtype dt.
func CopierFor(dt DType) Copier {
	if dt >= numDTypes || copiers[dt] == nil {
		panic(fmt.Sprintf("core: no element copy for dtype %v", dt))
	}
	return copiers[dt]
}

func copyElems[T Elem](dst *Tensor, dstOff int, src *Tensor, srcOff, n int) {
	copy(dst.buf.([]T)[dstOff:dstOff+n], src.buf.([]T)[srcOff:srcOff+n])
}

// CopyElems copies n elements of src starting at flat offset srcOff into
// dst at dstOff; both must have the same dtype. Executors use it to move
// rows in and out of loop bodies without allocating.
func CopyElems(dst *Tensor, dstOff int, src *Tensor, srcOff, n int) {
	switch d := dst.buf.(type) {
	case []float32:
		copy(d[dstOff:dstOff+n], src.buf.([]float32)[srcOff:srcOff+n])
	case []float64:
		copy(d[dstOff:dstOff+n], src.buf.([]float64)[srcOff:srcOff+n])
	case []int32:
		copy(d[dstOff:dstOff+n], src.buf.([]int32)[srcOff:srcOff+n])
	case []int64:
		copy(d[dstOff:dstOff+n], src.buf.([]int64)[srcOff:srcOff+n])
	case []bool:
		copy(d[dstOff:dstOff+n], src.buf.([]bool)[srcOff:srcOff+n])
	case []uint8:
		copy(d[dstOff:dstOff+n], src.buf.([]uint8)[srcOff:srcOff+n])
	case []BF16:
		copy(d[dstOff:dstOff+n], src.buf.([]BF16)[srcOff:srcOff+n])
	case []F16:
		copy(d[dstOff:dstOff+n], src.buf.([]F16)[srcOff:srcOff+n])
	default:
		CopierFor(dst.dtype)(dst, dstOff, src, srcOff, n)
	}
}
