//go:build !amd64 || noasm

package vec

func flushSubnormal(dst, x []float32) { flushSubnormalGo(dst, x) }
