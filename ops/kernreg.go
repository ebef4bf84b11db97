package ops

import "github.com/sporeml/spore/internal/core"

// Kernel registration. A primitive's kernels are written once as a generic
// Go function over the element type T and instantiated per dtype here, so
// that the kernel table holds one function per (dtype, backend) and no
// kernel switches on its operands' type when it runs: the type is fixed
// when the kernel is looked up (once per compiled plan, or per eager call
// by indexing the table).

// register installs k, the instantiation at T of a generic kernel, as p's
// CPU kernel for T's dtype.
func register[T core.Elem](p *core.Prim, k core.KernelFunc) {
	p.Register(core.DTypeOf[T](), core.CPU, k)
}

// registerFloats installs the float32 and float64 instantiations of one
// generic kernel.
func registerFloats(p *core.Prim, f32, f64 core.KernelFunc) {
	register[float32](p, f32)
	register[float64](p, f64)
}

// registerSigned installs the instantiations of one generic kernel for
// the floats and the signed integers (Int32, Int64).
func registerSigned(p *core.Prim, f32, f64, i32, i64 core.KernelFunc) {
	registerFloats(p, f32, f64)
	register[int32](p, i32)
	register[int64](p, i64)
}

// registerNumbers installs the instantiations of one generic kernel for
// every numeric dtype (all but Bool).
func registerNumbers(p *core.Prim, f32, f64, i32, i64, u8 core.KernelFunc) {
	registerSigned(p, f32, f64, i32, i64)
	register[uint8](p, u8)
}

// registerElems installs the instantiations of one generic kernel for
// every dtype.
func registerElems(p *core.Prim, f32, f64, i32, i64, b, u8 core.KernelFunc) {
	registerNumbers(p, f32, f64, i32, i64, u8)
	register[bool](p, b)
}
