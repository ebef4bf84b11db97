//go:build !amd64 || noasm

package gemm

// bf16AsmKernels returns no kernels: this build has no assembly, so the
// pure-Go generic bf16 kernel runs.
func bf16AsmKernels() []*bf16Kernel { return nil }

// packPairsAsm has no assembly in this build: the caller packs in Go.
func packPairsAsm(dst, src []uint16, ld, kq int) bool { return false }

// transposePairsAsm has no assembly in this build: the caller packs in Go.
func transposePairsAsm(dst, src []uint16, ld, groups int) bool { return false }

// bf16PackAsm is false: this build packs in Go.
const bf16PackAsm = false
