//go:build amd64 && !noasm

package conv

import "golang.org/x/sys/cpu"

// useAsm selects the AVX-512 pooling kernels (F for the 512-bit ops and
// masks, DQ for VANDPS on ZMM registers); without them the Go twins run.
var useAsm = cpu.X86.HasAVX512F && cpu.X86.HasAVX512DQ

// maxPool2x2AVX512 is maxPool2x2Plane for float32: outH×outW outputs into
// dst from the planes' rows of w elements at src.
//
//go:noescape
func maxPool2x2AVX512(dst, src *float32, outH, outW, w int)

// avgPool2x2AVX512 is avgPool2x2Plane for float32.
//
//go:noescape
func avgPool2x2AVX512(dst, src *float32, outH, outW, w int)
