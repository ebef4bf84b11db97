package conv

// MaxPoolReLUGradPitched is MaxPoolValidBackwardReLU into a zeroed buffer
// followed by PitchRows, in one pass, for pooling windows that do not
// overlap (sH ≥ kh, sW ≥ kw): it writes the planes h×w of the gradient of
// ReLU-then-max-pool at row pitch wp ≥ w into dst (planes of h·wp
// elements), every element of them, with 0 + g[o] at the winner of o's
// window where the winner is > 0 and zeros elsewhere (columns past w
// included). x holds the pooling's inputs (the ReLU's outputs), g its
// output gradient.
//
// A convolution's gradients read their output gradient at the pitch of
// their padded planes; built here straight from the pooled gradient, the
// full-size gradient is never written densely, read back and copied. The
// values are those of the two-step path bit for bit (each element is at
// most one window's winner, and 0 + g[o] is what the zeroed buffer of the
// accumulating kernel receives), so a compiled plan that fuses them agrees
// with PyNative mode. Winners are chosen by MaxPool2D's rule (the first
// maximum in row-major order, or the first NaN). It panics if windows
// overlap or leave the plane.
func MaxPoolReLUGradPitched[T Float](dst []T, wp int, x, g []T, planes, h, w, kh, kw, sH, sW, outH, outW int) {
	plane := outH * outW
	check("MaxPoolReLUGradPitched", wp >= w && len(dst) >= planes*h*wp && len(x) >= planes*h*w && len(g) >= planes*plane &&
		kh >= 1 && kw >= 1 && sH >= kh && sW >= kw && validWindows(h, w, kh, kw, sH, sW, outH, outW))
	if kh == 2 && kw == 2 && sH == 2 && sW == 2 {
		maxPoolReLUGradPitched2x2(dst, wp, x, g, planes, h, w, outH, outW)
		return
	}
	for p := 0; p < planes; p++ {
		img := x[p*h*w : (p+1)*h*w]
		d := dst[p*h*wp : (p+1)*h*wp]
		clear(d)
		for oy := 0; oy < outH; oy++ {
			for ox, gv := range g[p*plane+oy*outW : p*plane+(oy+1)*outW] {
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
				if m > 0 {
					d[best/w*wp+best%w] = 0 + gv
				}
			}
		}
	}
}

// maxPoolReLUGradPitched2x2 is MaxPoolReLUGradPitched for 2×2 windows at
// stride 2. Each window's four outputs are written from a small array
// indexed by the winner's position (a fifth slot takes the gradient of a
// window whose winner is not positive), so that nothing branches on the
// data: such branches mispredict on about every other window.
func maxPoolReLUGradPitched2x2[T Float](dst []T, wp int, x, g []T, planes, h, w, outH, outW int) {
	for p := 0; p < planes; p++ {
		img := x[p*h*w : (p+1)*h*w]
		d := dst[p*h*wp : (p+1)*h*wp]
		gp := g[p*outH*outW : (p+1)*outH*outW]
		for oy := 0; oy < outH; oy++ {
			r0, r1 := img[2*oy*w:2*oy*w+2*outW], img[(2*oy+1)*w:(2*oy+1)*w+2*outW]
			d0, d1 := d[2*oy*wp:2*oy*wp+wp], d[(2*oy+1)*wp:(2*oy+1)*wp+wp]
			for ox, gv := range gp[oy*outW : (oy+1)*outW] {
				j := 2 * ox
				a, b, c, e := r0[j], r0[j+1], r1[j], r1[j+1]
				m := max(a, b, c, e)
				sel := b2i(a != m) * (1 + b2i(b != m)*(1+b2i(c != m)))
				if m != m {
					sel = firstNaN(a, b, c)
				}
				sel |= 4 * b2i(!(m > 0)) // not positive (or NaN): the spare slot
				var q [8]T
				q[sel&7] = 0 + gv
				d0[j], d0[j+1], d1[j], d1[j+1] = q[0], q[1], q[2], q[3]
			}
			clear(d0[2*outW:])
			clear(d1[2*outW:])
		}
		clear(d[2*outH*wp:])
	}
}
