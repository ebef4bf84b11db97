//go:build amd64 && !noasm

package half

import "golang.org/x/sys/cpu"

// useAsm selects the AVX-512 forms: F for the 512-bit integer operations,
// masks and the 512-bit VCVTPS2PH/VCVTPH2PS, BW for the word-sized masked
// moves. Without them the pure-Go twins run.
var useAsm = cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VL

// Kernel names the implementation of the slice forms: "avx512" or
// "generic" (pure Go).
func Kernel() string {
	if useAsm {
		return "avx512"
	}
	return "generic"
}

func bf16FromFloat32s(dst []uint16, src []float32) {
	if !useAsm || len(src) == 0 {
		bf16FromFloat32sGo(dst, src)
		return
	}
	bf16FromFloat32sAVX512(&dst[0], &src[0], len(src))
}

func bf16ToFloat32s(dst []float32, src []uint16) {
	if !useAsm || len(src) == 0 {
		bf16ToFloat32sGo(dst, src)
		return
	}
	bf16ToFloat32sAVX512(&dst[0], &src[0], len(src))
}

func f16FromFloat32s(dst []uint16, src []float32) {
	if !useAsm || len(src) == 0 {
		f16FromFloat32sGo(dst, src)
		return
	}
	f16FromFloat32sAVX512(&dst[0], &src[0], len(src))
}

func f16ToFloat32s(dst []float32, src []uint16) {
	if !useAsm || len(src) == 0 {
		f16ToFloat32sGo(dst, src)
		return
	}
	f16ToFloat32sAVX512(&dst[0], &src[0], len(src))
}

// The assembly forms convert n elements; the callers guarantee that dst
// and src hold them.

//go:noescape
func bf16FromFloat32sAVX512(dst *uint16, src *float32, n int)

//go:noescape
func bf16ToFloat32sAVX512(dst *float32, src *uint16, n int)

//go:noescape
func f16FromFloat32sAVX512(dst *uint16, src *float32, n int)

//go:noescape
func f16ToFloat32sAVX512(dst *float32, src *uint16, n int)
