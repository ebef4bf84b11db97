//go:build !amd64 || noasm

package gemm

// bf16AsmKernels returns no kernels: this build has no assembly, so the
// pure-Go generic bf16 kernel runs.
func bf16AsmKernels() []*bf16Kernel { return nil }
