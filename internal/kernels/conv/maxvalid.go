package conv

// better reports whether v replaces m as a window's maximum when windows
// are scanned in row-major order: a larger value, or the first NaN (NaN
// propagates, as in PyTorch). Ties keep the earlier element, so -0 and +0
// resolve exactly as MaxPool2D resolves them.
func better[T Float](v, m T) bool { return v > m || (v != v && m == m) }

// validWindows reports whether every kh×kw window at stride sH×sW of an
// h×w plane with outH×outW outputs lies inside the plane.
func validWindows(h, w, kh, kw, sH, sW, outH, outW int) bool {
	return outH >= 0 && outW >= 0 && (outH == 0 || (outH-1)*sH+kh <= h) && (outW == 0 || (outW-1)*sW+kw <= w)
}

// MaxPoolValid is MaxPool2D without padding and without argmax, for the
// common case of windows that all lie inside the plane. It scans a whole
// output row per window tap instead of one window at a time, with no
// clipping, and unrolls the 2×2 stride-2 window of LeNet-style networks.
// It panics if a window would leave the plane.
//
// It takes Go's built-in max, which compiles without branches and so costs
// the same on any data (MaxPool2D's first-wins comparison mispredicts on
// about every other element of random data). The value is MaxPool2D's but
// for two cases that no comparison can tell apart: a window whose maximum
// is a zero of both signs gives +0, where MaxPool2D keeps the first; and a
// window holding NaN gives a NaN, not necessarily the first one's payload.
func MaxPoolValid[T Float](dst, src []T, planes, h, w, kh, kw, sH, sW, outH, outW int) {
	plane := outH * outW
	check("MaxPoolValid", len(dst) >= planes*plane && len(src) >= planes*h*w &&
		kh >= 1 && kw >= 1 && validWindows(h, w, kh, kw, sH, sW, outH, outW))
	if plane == 0 {
		return
	}
	if kh == 2 && kw == 2 && sH == 2 && sW == 2 {
		maxPool2x2(dst, src, planes, h, w, outH, outW)
		return
	}
	for p := 0; p < planes; p++ {
		img := src[p*h*w : (p+1)*h*w]
		d := dst[p*plane : (p+1)*plane]
		for oy := 0; oy < outH; oy++ {
			dr := d[oy*outW : (oy+1)*outW]
			for ky := 0; ky < kh; ky++ {
				r := img[(oy*sH+ky)*w : (oy*sH+ky+1)*w]
				for kx := 0; kx < kw; kx++ {
					if ky == 0 && kx == 0 {
						for ox := range dr {
							dr[ox] = r[ox*sW]
						}
						continue
					}
					for ox, m := range dr {
						dr[ox] = max(m, r[ox*sW+kx])
					}
				}
			}
		}
	}
}

// MaxPoolValidBackward is the gradient of MaxPoolValid: for each output o
// of each plane it adds g[o] to dx at the element of x that won o's window,
// chosen by the rule MaxPool2D uses (the first maximum in row-major order,
// or the first NaN). The winners are recomputed from x, so no argmax array
// need be kept. dx is accumulated into; zero it first for a plain gradient.
// It panics if a window would leave the plane.
func MaxPoolValidBackward[T Float](dx, x, g []T, planes, h, w, kh, kw, sH, sW, outH, outW int) {
	maxPoolValidBackward(dx, x, g, planes, h, w, kh, kw, sH, sW, outH, outW, false)
}

// MaxPoolValidBackwardReLU is MaxPoolValidBackward followed by the ReLU
// gradient, for x the output of a ReLU: it adds g[o] at o's winner only
// where the winner is > 0, which is ReLUGrad(x, MaxPoolValidBackward(...))
// for a zeroed dx, bit for bit (the same additions in the same order), in
// one pass.
func MaxPoolValidBackwardReLU[T Float](dx, x, g []T, planes, h, w, kh, kw, sH, sW, outH, outW int) {
	maxPoolValidBackward(dx, x, g, planes, h, w, kh, kw, sH, sW, outH, outW, true)
}

// maxPoolValidBackward is the two gradients above; relu masks the routed
// gradient by winner > 0.
func maxPoolValidBackward[T Float](dx, x, g []T, planes, h, w, kh, kw, sH, sW, outH, outW int, relu bool) {
	var sink T
	plane := outH * outW
	check("MaxPoolValidBackward", len(dx) >= planes*h*w && len(x) >= planes*h*w && len(g) >= planes*plane &&
		kh >= 1 && kw >= 1 && validWindows(h, w, kh, kw, sH, sW, outH, outW))
	if plane == 0 {
		return
	}
	for p := 0; p < planes; p++ {
		img := x[p*h*w : (p+1)*h*w]
		d := dx[p*h*w : (p+1)*h*w]
		gp := g[p*plane : (p+1)*plane]
		if kh == 2 && kw == 2 && sH == 2 && sW == 2 {
			for oy := 0; oy < outH; oy++ {
				i0 := 2 * oy * w
				r0, r1 := img[i0:i0+2*outW], img[i0+w:i0+w+2*outW]
				for ox, gv := range gp[oy*outW : (oy+1)*outW] {
					j := 2 * ox
					a, b, c, e := r0[j], r0[j+1], r1[j], r1[j+1]
					// The winner is the first element equal to the
					// maximum (-0 == +0, so a zero maximum goes to the
					// first zero, as MaxPool2D's strict comparison has
					// it), found without branches: they would
					// mispredict on about every other window.
					m := max(a, b, c, e)
					sel := b2i(a != m) * (1 + b2i(b != m)*(1+b2i(c != m)))
					if m != m {
						sel = firstNaN(a, b, c)
					}
					p := &d[i0+(sel>>1)*w+j+sel&1]
					if relu && !(m > 0) { // also where the winner is NaN
						// A select, not a branch (which would
						// mispredict on half of a ReLU's outputs):
						// the masked gradient goes to a sink.
						p = &sink
					}
					*p += gv
				}
			}
			continue
		}
		for oy := 0; oy < outH; oy++ {
			for ox, gv := range gp[oy*outW : (oy+1)*outW] {
				base := oy*sH*w + ox*sW
				best, m := base, img[base]
				for ky := 0; ky < kh; ky++ {
					r := base + ky*w
					for i := r; i < r+kw; i++ {
						if v := img[i]; better(v, m) {
							best, m = i, v
						}
					}
				}
				p := &d[best]
				if relu && !(m > 0) {
					p = &sink
				}
				*p += gv
			}
		}
	}
}

// b2i is 1 for true and 0 for false; the compiler turns it into a flag
// move, not a branch.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// firstNaN returns the position among four of the first NaN, given that
// one of them is NaN and it is not one of the first three if none of these
// is.
func firstNaN[T Float](a, b, c T) int {
	switch {
	case a != a:
		return 0
	case b != b:
		return 1
	case c != c:
		return 2
	}
	return 3
}
