package conv

import "math"

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
// stride 2. Nothing branches on the data, as such branches mispredict on
// about every other window: float32 takes the path below it; float64
// routes the gradient to one of the window's four outputs or a spare slot.
func maxPoolReLUGradPitched2x2[T Float](dst []T, wp int, x, g []T, planes, h, w, outH, outW int) {
	if d32, ok := any(dst).([]float32); ok {
		maxPoolReLUGradPitched2x2F32(d32, wp, any(x).([]float32), any(g).([]float32), planes, h, w, outH, outW)
		return
	}
	for p := 0; p < planes; p++ {
		img := x[p*h*w : (p+1)*h*w]
		d := dst[p*h*wp : (p+1)*h*wp]
		gp := g[p*outH*outW : (p+1)*outH*outW]
		for oy := 0; oy < outH; oy++ {
			r0, r1 := img[2*oy*w:2*oy*w+2*outW], img[(2*oy+1)*w:(2*oy+1)*w+2*outW]
			d0, d1 := d[2*oy*wp:2*oy*wp+wp], d[(2*oy+1)*wp:(2*oy+1)*wp+wp]
			for ox, gv := range gp[oy*outW : (oy+1)*outW] {
				j := 2 * ox
				var q [8]T
				q[winner2x2(r0[j], r0[j+1], r1[j], r1[j+1])] = 0 + gv
				d0[j], d0[j+1], d1[j], d1[j+1] = q[0], q[1], q[2], q[3]
			}
			clear(d0[2*outW:])
			clear(d1[2*outW:])
		}
		clear(d[2*outH*wp:])
	}
}

// maxPoolReLUGradPitched2x2F32 is maxPoolReLUGradPitched2x2 for float32:
// the AVX-512 kernel where the CPU has it and the pitch is at most 32,
// then rows2x2F32 for the row pairs it leaves (those from the first that
// holds a NaN on).
func maxPoolReLUGradPitched2x2F32(dst []float32, wp int, x, g []float32, planes, h, w, outH, outW int) {
	asm := poolGradAsm && wp <= 32 && outH > 0 && outW > 0
	var masks [8]uint16 // per 16-lane step: x's lanes, the row's lanes, the gradients
	if asm {
		for s := range 2 {
			masks[4*s] = lanes(2*outW - 16*s)
			masks[4*s+1] = lanes(wp - 16*s)
			masks[4*s+2] = lanes(outW - 8*s)
		}
	}
	for p := 0; p < planes; p++ {
		img := x[p*h*w : (p+1)*h*w]
		d := dst[p*h*wp : (p+1)*h*wp]
		gp := g[p*outH*outW : (p+1)*outH*outW]
		r := 0
		if asm {
			r = maxPoolReLUGrad2x2AVX512(&d[0], &img[0], &gp[0], &masks[0], outH, 8*w, 4*w, 8*wp, 4*wp, 4*outW, b2i(wp > 16))
		}
		rows2x2F32(d, wp, img, gp, w, outW, r, outH)
		clear(d[2*outH*wp:])
	}
}

// lanes is the mask of the first n of 16 lanes (none for n ≤ 0).
func lanes(n int) uint16 {
	return uint16(1<<min(max(n, 0), 16) - 1)
}

// rows2x2F32 is the pure-Go twin of maxPoolReLUGrad2x2AVX512: row pairs
// [r0, r1) of one plane. Each output is the gradient's bits under a mask,
// all ones at the winner (if positive) and zero elsewhere, so nothing
// branches on the data.
func rows2x2F32(d []float32, wp int, img, gp []float32, w, outW, r0, r1 int) {
	for oy := r0; oy < r1; oy++ {
		x0, x1 := img[2*oy*w:2*oy*w+2*outW], img[(2*oy+1)*w:(2*oy+1)*w+2*outW]
		d0, d1 := d[2*oy*wp:2*oy*wp+wp], d[(2*oy+1)*wp:(2*oy+1)*wp+wp]
		for ox, gv := range gp[oy*outW : (oy+1)*outW] {
			j := 2 * ox
			sel := winner2x2(x0[j], x0[j+1], x1[j], x1[j+1])
			bits := math.Float32bits(0 + gv)
			d0[j] = math.Float32frombits(bits & -uint32(b2i(sel == 0)))
			d0[j+1] = math.Float32frombits(bits & -uint32(b2i(sel == 1)))
			d1[j] = math.Float32frombits(bits & -uint32(b2i(sel == 2)))
			d1[j+1] = math.Float32frombits(bits & -uint32(b2i(sel == 3)))
		}
		clear(d0[2*outW:])
		clear(d1[2*outW:])
	}
}

// winner2x2 returns the position (0 to 3, row-major) of the winner of the
// window a b / c e by MaxPool2D's rule, plus 4 if the winner is not
// positive (or is NaN), when the ReLU's gradient masks it.
func winner2x2[T Float](a, b, c, e T) int {
	m := max(a, b, c, e)
	// The first element equal to the maximum (-0 == +0, so a zero
	// maximum goes to the first zero, as MaxPool2D's strict comparison
	// has it).
	sel := b2i(a != m) * (1 + b2i(b != m)*(1+b2i(c != m)))
	if m != m {
		sel = firstNaN(a, b, c)
	}
	return sel | 4*b2i(!(m > 0))
}
