//go:build !amd64 || noasm

package half

// Kernel names the implementation of the slice forms: "generic" in this
// build (no assembly).
func Kernel() string { return "generic" }

func bf16FromFloat32s(dst []uint16, src []float32) { bf16FromFloat32sGo(dst, src) }
func bf16ToFloat32s(dst []float32, src []uint16)   { bf16ToFloat32sGo(dst, src) }
func f16FromFloat32s(dst []uint16, src []float32)  { f16FromFloat32sGo(dst, src) }
func f16ToFloat32s(dst []float32, src []uint16)    { f16ToFloat32sGo(dst, src) }
