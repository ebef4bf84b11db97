//go:build amd64 && !noasm

package vec

//go:noescape
func flushSubnormalAVX512(dst, x *float32, n int)

func flushSubnormal(dst, x []float32) {
	if useAsm && len(dst) > 0 {
		flushSubnormalAVX512(&dst[0], &x[0], len(dst))
		return
	}
	flushSubnormalGo(dst, x)
}
