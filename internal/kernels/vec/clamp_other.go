//go:build !amd64 || noasm

package vec

func clamp(dst, x []float32, lo, hi float32) { clampGo(dst, x, lo, hi) }
func hardswish(dst, x []float32)             { hardswishGo(dst, x) }
