//go:build amd64 && !noasm

package gemm

// bf16AsmKernels returns the assembly bf16 kernels this CPU supports, best
// first.
func bf16AsmKernels() []*bf16Kernel { return nil }
