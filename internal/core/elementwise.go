package core

// Elementwise is the body of an elementwise primitive: the code computing a
// block of results from equal-length blocks of its inputs. The op's eager
// kernels call it and the compiler's loop fusion strings it into fused
// programs, so the arithmetic of an op exists once (one GELU, one erf).
//
// A block function takes the result first, then one slice per input, all
// of the same length, and may be given a result that aliases an input: it
// reads element i of every input before it writes element i.
// With T the element type of the inputs it is one of
//
//	func(d, a []T), func(d, a, b []T), func(d, a, b, c []T)  (result of dtype T)
//	func(d []bool, a []T), func(d []bool, a, b []T)           (predicates, comparisons)
//	func(d []T, c []bool, a, b []T)                          (selection)
//	func(d []U, a []T)                                       (conversion to U)
//
// with T and U among the element types (Elem); the compiler fuses those of
// float32, float64, int32, int64, uint8 and bool, and leaves the nodes of
// the other types unfused.
type Elementwise struct {
	// Body returns the block function computing the op under attrs for
	// inputs of the given dtypes, or nil when it accepts no such inputs.
	// The compiler calls it once per fused node; ops call it once per
	// dtype to build their eager kernels.
	Body func(attrs any, in []DType) any
	// Scalar, if set, returns the unary block function computing the op
	// with its second input the scalar s (a vectorised x+s, say), or nil
	// when there is none for these dtypes. It must equal Body on an input
	// of s repeated, bit for bit: fusion uses it for a constant operand.
	Scalar func(attrs any, in []DType, s float64) any
	// Copy marks an op whose result is its one input read with
	// broadcasting (BroadcastTo): it has no body, and a fused loop reads
	// the input broadcast in place of computing anything.
	Copy bool
}
