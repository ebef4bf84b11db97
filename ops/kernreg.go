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

// registerCopy installs copyKernel for every dtype: the kernel of ops
// whose result is their operand's elements unchanged (Reshape run as a
// copy).
func registerCopy(p *core.Prim) {
	registerElems(p, copyKernel[float32], copyKernel[float64], copyKernel[int32], copyKernel[int64], copyKernel[bool], copyKernel[uint8])
}

// copyKernel copies the first operand's elements into the result.
func copyKernel[T core.Elem](_ any, in []*core.Tensor, out *core.Tensor) {
	copy(out.Data().([]T), in[0].Data().([]T))
}

// registerElemsN is registerElems for multi-result primitives.
func registerElemsN(p *core.Prim, f32, f64, i32, i64, b, u8 core.KernelNFunc) {
	p.RegisterN(core.Float32, core.CPU, f32)
	p.RegisterN(core.Float64, core.CPU, f64)
	p.RegisterN(core.Int32, core.CPU, i32)
	p.RegisterN(core.Int64, core.CPU, i64)
	p.RegisterN(core.Bool, core.CPU, b)
	p.RegisterN(core.Uint8, core.CPU, u8)
}
