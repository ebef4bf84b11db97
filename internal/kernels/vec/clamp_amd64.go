//go:build amd64 && !noasm

package vec

//go:noescape
func clampAVX512(dst, x *float32, n int, lo, hi float32)

//go:noescape
func hardswishAVX512(dst, x *float32, n int)

func clamp(dst, x []float32, lo, hi float32) {
	if useAsm && len(dst) > 0 {
		clampAVX512(&dst[0], &x[0], len(dst), lo, hi)
		return
	}
	clampGo(dst, x, lo, hi)
}

func hardswish(dst, x []float32) {
	if useAsm && len(dst) > 0 {
		hardswishAVX512(&dst[0], &x[0], len(dst))
		return
	}
	hardswishGo(dst, x)
}
