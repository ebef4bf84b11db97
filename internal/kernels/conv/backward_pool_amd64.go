//go:build amd64 && !noasm

package conv

import "golang.org/x/sys/cpu"

// poolGradAsm reports whether maxPoolReLUGrad2x2AVX512 can run: it needs
// AVX-512F and, for its masked 8-lane load, AVX-512VL.
var poolGradAsm = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL

//go:noescape
func maxPoolReLUGrad2x2AVX512(dst, x, gp *float32, masks *uint16, outH, xstep, wb, dstep, wpb, gstep, two int) int
