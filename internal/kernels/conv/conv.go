package conv

import "math"

// Float is the element type of the kernels.
type Float interface{ ~float32 | ~float64 }

// OutSize returns the output extent of a convolution or pooling along one
// axis: ⌊(in + padBefore + padAfter - dil·(k-1) - 1) / stride⌋ + 1, or 0 if
// the kernel does not fit.
func OutSize(in, k, padBefore, padAfter, stride, dil int) int {
	span := in + padBefore + padAfter - dil*(k-1) - 1
	if span < 0 {
		return 0
	}
	return span/stride + 1
}

// validRange returns the output positions [lo, hi) along one axis whose input
// coordinate o·stride + off lies in [0, in). Computing it once per kernel row
// lets the inner loops copy without per-element bounds tests.
func validRange(off, stride, in, out int) (lo, hi int) {
	if off < 0 {
		lo = (-off + stride - 1) / stride
	}
	if in-off > 0 {
		hi = (in - off + stride - 1) / stride
	}
	lo, hi = min(lo, out), min(hi, out)
	if hi < lo {
		hi = lo
	}
	return lo, hi
}

func check(op string, ok bool) {
	if !ok {
		panic("conv." + op + ": slice too short for the given sizes")
	}
}

// Im2Col unrolls one c×h×w image into the (c·kh·kw)×(outH·outW) column
// matrix of a 2-D convolution, so that the convolution becomes a GEMM of the
// weights [outC, c·kh·kw] with it (per group, on the group's channel slice):
//
//	dst[((ci·kh + ki)·kw + kj)·outH·outW + oy·outW + ox] =
//	    src[ci·h·w + iy·w + ix],  iy = oy·strideH - padT + ki·dilH,
//	                              ix = ox·strideW - padL + kj·dilW,
//
// and 0 where (iy, ix) falls in the padding. Every element of dst is written.
// Padding on the bottom and right is implied by outH and outW.
func Im2Col[T Float](dst, src []T, c, h, w, kh, kw, padT, padL, strideH, strideW, dilH, dilW, outH, outW int) {
	plane := outH * outW
	check("Im2Col", len(dst) >= c*kh*kw*plane && len(src) >= c*h*w)
	row := 0
	for ci := 0; ci < c; ci++ {
		img := src[ci*h*w : (ci+1)*h*w]
		for ki := 0; ki < kh; ki++ {
			yOff := ki*dilH - padT
			yLo, yHi := validRange(yOff, strideH, h, outH)
			for kj := 0; kj < kw; kj++ {
				xOff := kj*dilW - padL
				xLo, xHi := validRange(xOff, strideW, w, outW)
				d := dst[row*plane : (row+1)*plane]
				row++
				clear(d[:yLo*outW])
				clear(d[yHi*outW:])
				for oy := yLo; oy < yHi; oy++ {
					dr := d[oy*outW : (oy+1)*outW]
					sr := img[(oy*strideH+yOff)*w : (oy*strideH+yOff+1)*w]
					clear(dr[:xLo])
					clear(dr[xHi:])
					if strideW == 1 {
						copy(dr[xLo:xHi], sr[xLo+xOff:])
					} else {
						ix := xLo*strideW + xOff
						for ox := xLo; ox < xHi; ox++ {
							dr[ox] = sr[ix]
							ix += strideW
						}
					}
				}
			}
		}
	}
}

// Col2Im is the adjoint of Im2Col, used for the input gradient: it adds
// every element of the column matrix src back into the image position it was
// read from, dst[ci·h·w + iy·w + ix] += src[row·outH·outW + oy·outW + ox]
// (padding positions are dropped). dst is accumulated into, not overwritten:
// zero it first for a plain gradient.
func Col2Im[T Float](dst, src []T, c, h, w, kh, kw, padT, padL, strideH, strideW, dilH, dilW, outH, outW int) {
	plane := outH * outW
	check("Col2Im", len(src) >= c*kh*kw*plane && len(dst) >= c*h*w)
	row := 0
	for ci := 0; ci < c; ci++ {
		img := dst[ci*h*w : (ci+1)*h*w]
		for ki := 0; ki < kh; ki++ {
			yOff := ki*dilH - padT
			yLo, yHi := validRange(yOff, strideH, h, outH)
			for kj := 0; kj < kw; kj++ {
				xOff := kj*dilW - padL
				xLo, xHi := validRange(xOff, strideW, w, outW)
				s := src[row*plane : (row+1)*plane]
				row++
				for oy := yLo; oy < yHi; oy++ {
					sr := s[oy*outW+xLo : oy*outW+xHi]
					ir := img[(oy*strideH+yOff)*w : (oy*strideH+yOff+1)*w]
					ix := xLo*strideW + xOff
					if strideW == 1 {
						ir = ir[ix : ix+len(sr)]
						for k, v := range sr {
							ir[k] += v
						}
						continue
					}
					for _, v := range sr {
						ir[ix] += v
						ix += strideW
					}
				}
			}
		}
	}
}

// MaxPool2D takes the maximum over each kh×kw window (stride sH×sW, padding
// padT/padL on top/left, bottom/right implied by outH/outW) of each of the
// planes h×w planes of src (planes = batch·channels, NCHW). Padding never
// wins: it is ignored rather than treated as 0 or -Inf. NaN in a window wins
// (it propagates, as in PyTorch). If argmax is not nil it receives, for each
// output, the index iy·w + ix within its plane of the chosen input, which is
// what MaxPool2DBackward needs; a window lying wholly in the padding yields
// -Inf and index -1. Ties go to the first element in row-major order.
func MaxPool2D[T Float](dst []T, argmax []int32, src []T, planes, h, w, kh, kw, padT, padL, sH, sW, outH, outW int) {
	plane := outH * outW
	check("MaxPool2D", len(dst) >= planes*plane && len(src) >= planes*h*w && (argmax == nil || len(argmax) >= planes*plane))
	negInf := T(math.Inf(-1))
	for p := 0; p < planes; p++ {
		img := src[p*h*w : (p+1)*h*w]
		d := dst[p*plane : (p+1)*plane]
		var am []int32
		if argmax != nil {
			am = argmax[p*plane : (p+1)*plane]
		}
		for oy := 0; oy < outH; oy++ {
			y0 := oy*sH - padT
			ky0, ky1 := max(0, -y0), min(kh, h-y0)
			for ox := 0; ox < outW; ox++ {
				x0 := ox*sW - padL
				kx0 := max(0, -x0)
				kx1 := max(min(kw, w-x0), kx0)
				m, idx := negInf, int32(-1)
				for ky := ky0; ky < ky1 && kx0 < kx1; ky++ { // an empty window may start past the plane
					base := (y0+ky)*w + x0
					r := img[base+kx0 : base+kx1]
					for k, v := range r {
						if v > m || (v != v && m == m) || idx < 0 {
							m, idx = v, int32(base+kx0+k)
						}
					}
				}
				d[oy*outW+ox] = m
				if am != nil {
					am[oy*outW+ox] = idx
				}
			}
		}
	}
}

// MaxPool2DBackward routes each output gradient to the input that won its
// window: dx[p·h·w + argmax[o]] += g[o] for every output o of plane p.
// dx is accumulated into (overlapping windows may share a winner); zero it
// first for a plain gradient. Outputs with index -1 are skipped.
func MaxPool2DBackward[T Float](dx, g []T, argmax []int32, planes, h, w, outH, outW int) {
	plane := outH * outW
	check("MaxPool2DBackward", len(g) >= planes*plane && len(argmax) >= planes*plane && len(dx) >= planes*h*w)
	for p := 0; p < planes; p++ {
		d := dx[p*h*w : (p+1)*h*w]
		gp, ap := g[p*plane:(p+1)*plane], argmax[p*plane:(p+1)*plane]
		for o, i := range ap {
			if i >= 0 {
				d[i] += gp[o]
			}
		}
	}
}

// avgDivisor is the number an average-pooling window is divided by. With
// countIncludePad the padded positions count (the full kh·kw, as PyTorch's
// count_include_pad=True does for windows inside the padded input, which is
// every window when outH/outW come from OutSize); otherwise only the
// in-bounds positions count (count_include_pad=False, TensorFlow's "SAME").
func avgDivisor(ky0, ky1, kx0, kx1, kh, kw int, countIncludePad bool) int {
	if countIncludePad {
		return kh * kw
	}
	return max(ky1-ky0, 0) * max(kx1-kx0, 0)
}

// AvgPool2D averages each kh×kw window (same geometry as MaxPool2D). Padding
// contributes zeros; the divisor is kh·kw when countIncludePad is true and the
// number of in-bounds elements otherwise. A window wholly in the padding
// yields 0.
func AvgPool2D[T Float](dst, src []T, planes, h, w, kh, kw, padT, padL, sH, sW, outH, outW int, countIncludePad bool) {
	plane := outH * outW
	check("AvgPool2D", len(dst) >= planes*plane && len(src) >= planes*h*w)
	for p := 0; p < planes; p++ {
		img := src[p*h*w : (p+1)*h*w]
		d := dst[p*plane : (p+1)*plane]
		for oy := 0; oy < outH; oy++ {
			y0 := oy*sH - padT
			ky0, ky1 := max(0, -y0), min(kh, h-y0)
			for ox := 0; ox < outW; ox++ {
				x0 := ox*sW - padL
				kx0 := max(0, -x0)
				kx1 := max(min(kw, w-x0), kx0)
				var s T
				for ky := ky0; ky < ky1 && kx0 < kx1; ky++ { // an empty window may start past the plane
					base := (y0+ky)*w + x0
					for _, v := range img[base+kx0 : base+kx1] {
						s += v
					}
				}
				if n := avgDivisor(ky0, ky1, kx0, kx1, kh, kw, countIncludePad); n > 0 {
					s /= T(n)
				}
				d[oy*outW+ox] = s
			}
		}
	}
}

// AvgPool2DBackward spreads each output gradient evenly over its window:
// dx[input] += g[o] / divisor, with the divisor AvgPool2D used. dx is
// accumulated into; zero it first for a plain gradient.
func AvgPool2DBackward[T Float](dx, g []T, planes, h, w, kh, kw, padT, padL, sH, sW, outH, outW int, countIncludePad bool) {
	plane := outH * outW
	check("AvgPool2DBackward", len(g) >= planes*plane && len(dx) >= planes*h*w)
	for p := 0; p < planes; p++ {
		d := dx[p*h*w : (p+1)*h*w]
		gp := g[p*plane : (p+1)*plane]
		for oy := 0; oy < outH; oy++ {
			y0 := oy*sH - padT
			ky0, ky1 := max(0, -y0), min(kh, h-y0)
			for ox := 0; ox < outW; ox++ {
				x0 := ox*sW - padL
				kx0 := max(0, -x0)
				kx1 := max(min(kw, w-x0), kx0)
				n := avgDivisor(ky0, ky1, kx0, kx1, kh, kw, countIncludePad)
				if n == 0 {
					continue
				}
				v := gp[oy*outW+ox] / T(n)
				for ky := ky0; ky < ky1 && kx0 < kx1; ky++ { // an empty window may start past the plane
					base := (y0+ky)*w + x0
					r := d[base+kx0 : base+kx1]
					for k := range r {
						r[k] += v
					}
				}
			}
		}
	}
}
