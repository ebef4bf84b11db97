//go:build !amd64 || noasm

package gemm

// asmKernels returns no kernels: this build has no assembly, so the pure-Go
// generic kernel runs.
func asmKernels() []*kernel { return nil }

// fmaPeak has no probe without assembly.
func fmaPeak(name string, n int) float64 { return 0 }
