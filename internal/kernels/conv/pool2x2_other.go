//go:build !amd64 || noasm

package conv

// useAsm is false: there is no assembly in this build, and the pooling
// kernels run their Go twins.
const useAsm = false

func maxPool2x2AVX512(dst, src *float32, outH, outW, w int) {
	panic("conv: no assembly in this build")
}

func avgPool2x2AVX512(dst, src *float32, outH, outW, w int) {
	panic("conv: no assembly in this build")
}

func affineAVX512(dst *float32, n int, bias, scale, shift, floor float32) {
	panic("conv: no assembly in this build")
}
