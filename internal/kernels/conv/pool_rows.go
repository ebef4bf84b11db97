package conv

import "math"

// The padded pooling kernels below give MaxPool2D's and AvgPool2D's values
// bit for bit, but compute a whole output row at a time: each output row is
// the elementwise maximum (or sum) of the input rows under its windows, read
// at the stride, so the inner loops are a few tight passes with no per-window
// bookkeeping and no bounds branches. Only the output columns whose windows
// reach the left or right padding (one or two per row for the usual 3×3
// windows) are computed one window at a time.

// MaxPool2DRows is MaxPool2D without argmax: the same values, bit for bit
// (padding never wins, the first NaN of a window in row-major order wins,
// ties keep the first element, so a zero maximum keeps the sign of the first
// zero; a window wholly in the padding gives -Inf), for inference, where no
// gradient reads the winners.
//
// The interior of each row takes Go's built-in max, which compiles without
// branches (MaxPool2D's first-wins comparison mispredicts on about every
// other element of random data). A maximum that is neither zero nor NaN has
// one bit pattern, which every element equal to it shares, so the built-in
// max gives MaxPool2D's bits there; the rare window whose maximum is a zero
// or a NaN, where the built-in max may pick another sign or payload, is
// scanned again in MaxPool2D's order.
func MaxPool2DRows[T Float](dst, src []T, planes, h, w, kh, kw, padT, padL, sH, sW, outH, outW int) {
	plane := outH * outW
	check("MaxPool2DRows", len(dst) >= planes*plane && len(src) >= planes*h*w &&
		kh >= 1 && kw >= 1 && sH >= 1 && sW >= 1 && padT >= 0 && padL >= 0)
	if plane == 0 {
		return
	}
	xLo, xHi := interiorColumns(w, kw, padL, sW, outW)
	negInf := T(math.Inf(-1))
	var col [colBuf]T // the column maxima of one row of windows
	for p := 0; p < planes; p++ {
		img := src[p*h*w : (p+1)*h*w]
		d := dst[p*plane : (p+1)*plane]
		for oy := 0; oy < outH; oy++ {
			dr := d[oy*outW : (oy+1)*outW]
			y0 := oy*sH - padT
			r0, r1 := max(y0, 0), min(y0+kh, h)
			if r0 >= r1 {
				for i := range dr {
					dr[i] = negInf
				}
				continue
			}
			for ox := 0; ox < xLo; ox++ {
				dr[ox] = maxWindow(img, w, r0, r1, ox*sW-padL, kw)
			}
			for ox := xHi; ox < outW; ox++ {
				dr[ox] = maxWindow(img, w, r0, r1, ox*sW-padL, kw)
			}
			if xLo >= xHi {
				continue
			}
			m := dr[xLo:xHi]
			c0 := xLo*sW - padL
			if w <= len(col) {
				// Down the columns first, then across: 6 maxima per output
				// of a 3×3 window rather than 9.
				v := col[:w]
				maxRows(v, img[r0*w:r1*w], w)
				maxTaps(m, v[c0:], sW, kw, true)
			} else {
				for y := r0; y < r1; y++ {
					maxTaps(m, img[y*w+c0:(y+1)*w], sW, kw, y == r0)
				}
			}
			for i, v := range m {
				if v == 0 || v != v {
					m[i] = maxWindow(img, w, r0, r1, c0+i*sW, kw)
				}
			}
		}
	}
}

// AvgPool2DRows is AvgPool2D with the same values, bit for bit: each sum
// adds the window's real elements in row-major order starting from zero, and
// is divided by the same count (kh·kw with countIncludePad, else the number
// of real elements; a window wholly in the padding gives 0).
func AvgPool2DRows[T Float](dst, src []T, planes, h, w, kh, kw, padT, padL, sH, sW, outH, outW int, countIncludePad bool) {
	plane := outH * outW
	check("AvgPool2DRows", len(dst) >= planes*plane && len(src) >= planes*h*w &&
		kh >= 1 && kw >= 1 && sH >= 1 && sW >= 1 && padT >= 0 && padL >= 0)
	if plane == 0 {
		return
	}
	xLo, xHi := interiorColumns(w, kw, padL, sW, outW)
	for p := 0; p < planes; p++ {
		img := src[p*h*w : (p+1)*h*w]
		d := dst[p*plane : (p+1)*plane]
		for oy := 0; oy < outH; oy++ {
			dr := d[oy*outW : (oy+1)*outW]
			y0 := oy*sH - padT
			r0, r1 := max(y0, 0), min(y0+kh, h)
			if r0 >= r1 {
				clear(dr)
				continue
			}
			for ox := 0; ox < xLo; ox++ {
				dr[ox] = avgWindow(img, w, r0, r1, ox*sW-padL, kh, kw, countIncludePad)
			}
			for ox := xHi; ox < outW; ox++ {
				dr[ox] = avgWindow(img, w, r0, r1, ox*sW-padL, kh, kw, countIncludePad)
			}
			if xLo >= xHi {
				continue
			}
			m := dr[xLo:xHi]
			clear(m)
			c0 := xLo*sW - padL
			for y := r0; y < r1; y++ {
				sumTaps(m, img[y*w+c0:(y+1)*w], sW, kw)
			}
			n := kh * kw
			if !countIncludePad {
				n = (r1 - r0) * kw
			}
			div := T(n)
			for i := range m {
				m[i] /= div
			}
		}
	}
}

// interiorColumns returns the output columns [lo, hi) whose windows lie
// wholly inside the w input columns: lo·sW ≥ padL and
// (hi-1)·sW - padL + kw ≤ w.
func interiorColumns(w, kw, padL, sW, outW int) (lo, hi int) {
	lo = min((padL+sW-1)/sW, outW)
	if span := w + padL - kw; span >= 0 {
		hi = min(span/sW+1, outW)
	}
	return lo, max(hi, lo)
}

// maxWindow is MaxPool2D's scan of one window: input rows [r0, r1) (not
// empty) and columns [x0, x0+kw) clipped to the plane, first-wins in
// row-major order. A window wholly in the padding gives -Inf.
func maxWindow[T Float](img []T, w, r0, r1, x0, kw int) T {
	c0, c1 := max(x0, 0), min(x0+kw, w)
	if c0 >= c1 {
		return T(math.Inf(-1))
	}
	m := img[r0*w+c0]
	for y := r0; y < r1; y++ {
		for _, v := range img[y*w+c0 : y*w+c1] {
			if better(v, m) {
				m = v
			}
		}
	}
	return m
}

// avgWindow is AvgPool2D's sum and division for one window: input rows
// [r0, r1) (not empty) and columns [x0, x0+kw) clipped to the plane.
func avgWindow[T Float](img []T, w, r0, r1, x0, kh, kw int, countIncludePad bool) T {
	c0, c1 := max(x0, 0), min(x0+kw, w)
	var s T
	for y := r0; y < r1 && c0 < c1; y++ {
		for _, v := range img[y*w+c0 : y*w+c1] {
			s += v
		}
	}
	if n := avgDivisor(r0, r1, c0, c1, kh, kw, countIncludePad); n > 0 {
		s /= T(n)
	}
	return s
}

// colBuf is the widest plane whose column maxima MaxPool2DRows keeps on
// the stack; wider planes take one pass per window row instead.
const colBuf = 512

// maxRows sets v[x] to the maximum of rows[y·w + x] over the rows y, for
// the len(rows)/w (at least one) rows of width w.
func maxRows[T Float](v, rows []T, w int) {
	v = v[:w]
	switch len(rows) / w {
	case 3:
		a, b, c := rows[:w], rows[w:2*w], rows[2*w:3*w]
		for x := range v {
			v[x] = max(a[x], b[x], c[x])
		}
	case 2:
		a, b := rows[:w], rows[w:2*w]
		for x := range v {
			v[x] = max(a[x], b[x])
		}
	default:
		copy(v, rows[:w])
		for y := w; y+w <= len(rows); y += w {
			r := rows[y : y+w]
			for x := range v {
				v[x] = max(v[x], r[x])
			}
		}
	}
}

// maxTaps sets m[i] to the maximum of m[i] and s[i·sW : i·sW+kw] (of the
// window's elements alone if set), with unrolled loops for the 2- and
// 3-wide windows at strides 1 and 2.
func maxTaps[T Float](m, s []T, sW, kw int, set bool) {
	n := len(m)
	s = s[:(n-1)*sW+kw]
	if set {
		// Seed each output with its window's first element.
		for i := range m {
			m[i] = s[i*sW]
		}
	}
	switch {
	case sW == 1 && kw == 3:
		s = s[:n+2]
		for i := range m {
			m[i] = max(m[i], s[i], s[i+1], s[i+2])
		}
	case sW == 2 && kw == 3:
		for i := range m {
			j := 2 * i
			m[i] = max(m[i], s[j], s[j+1], s[j+2])
		}
	case sW == 1 && kw == 2:
		s = s[:n+1]
		for i := range m {
			m[i] = max(m[i], s[i], s[i+1])
		}
	case sW == 2 && kw == 2:
		for i := range m {
			j := 2 * i
			m[i] = max(m[i], s[j], s[j+1])
		}
	default:
		for kx := 0; kx < kw; kx++ {
			t := s[kx:]
			for i := range m {
				m[i] = max(m[i], t[i*sW])
			}
		}
	}
}

// sumTaps adds s[i·sW], …, s[i·sW+kw-1] to m[i] in that order (so that each
// window's sum is formed in AvgPool2D's row-major order), with unrolled
// loops for the 2- and 3-wide windows at strides 1 and 2.
func sumTaps[T Float](m, s []T, sW, kw int) {
	n := len(m)
	s = s[:(n-1)*sW+kw]
	switch {
	case sW == 1 && kw == 3:
		s = s[:n+2]
		for i := range m {
			m[i] = m[i] + s[i] + s[i+1] + s[i+2]
		}
	case sW == 2 && kw == 3:
		for i := range m {
			j := 2 * i
			m[i] = m[i] + s[j] + s[j+1] + s[j+2]
		}
	case sW == 1 && kw == 2:
		s = s[:n+1]
		for i := range m {
			m[i] = m[i] + s[i] + s[i+1]
		}
	case sW == 2 && kw == 2:
		for i := range m {
			j := 2 * i
			m[i] = m[i] + s[j] + s[j+1]
		}
	default:
		for kx := 0; kx < kw; kx++ {
			t := s[kx:]
			for i := range m {
				m[i] += t[i*sW]
			}
		}
	}
}
