package conv

// Pitched im2col: the data movement of a stride-1 convolution lowered to a
// GEMM whose column matrix is built from whole image rows.
//
// The image is first copied into a zero-padded buffer of row pitch wp, at
// least as wide as every window needs (Pitch). Computing the output at that
// same pitch — outH rows of wp columns, of which only the first outW are
// kept — makes the row of the column matrix for tap (ci, ki, kj) one
// contiguous run of the padded image,
//
//	col[(ci·kh + ki)·kw + kj][j] = padded[ci][ki·dilH·wp + kj·dilW + j],  j < outH·wp,
//
// so it is built with kh·kw·c copies of outH·wp elements instead of the
// kh·kw·c·outH short row copies of Im2Col. The GEMM computes wp − outW
// columns per output row that are thrown away; for the 5×5 windows of
// LeNet that costs 17% more multiply-adds on 28-wide images and 50% on
// 12-wide ones, less than the copies it saves.
//
// The gradients use the same layout. An output gradient laid out at the
// pitch with zeros in the thrown-away columns (PitchRows) makes those
// columns contribute nothing, so the input gradient is the adjoint copy
// (Col2ImPitched, accumulating runs back into a padded buffer, then
// CropPlanes) and the filter gradient is a GEMM of the pitched output
// gradient with the pitched column matrix.

// Pitch returns the height and row pitch of the padded planes of a stride-1
// convolution: hp rows of wp elements hold the image at offset (padT, padL)
// and every window of every kept output, and one spare row (each plane
// takes (hp+1)·wp elements) holds what the last taps of the thrown-away
// columns read past the last row.
func Pitch(h, w, kh, kw, padT, padL, dilH, dilW, outH, outW int) (hp, wp int) {
	return max(h+padT, outH+(kh-1)*dilH), max(w+padL, outW+(kw-1)*dilW)
}

// PadPlanes copies the c planes h×w of src into dst at offset (padT, padL)
// of planes of (hp+1)·wp elements at pitch wp (see Pitch), and zeroes the
// rest of them.
func PadPlanes[T Float](dst, src []T, c, h, w, padT, padL, hp, wp int) {
	plane := (hp + 1) * wp
	check("PadPlanes", len(dst) >= c*plane && len(src) >= c*h*w && h+padT <= hp && w+padL <= wp)
	for ci := 0; ci < c; ci++ {
		d := dst[ci*plane : (ci+1)*plane]
		if padL == 0 && w == wp {
			clear(d[:padT*wp])
			copy(d[padT*wp:], src[ci*h*w:(ci+1)*h*w])
			clear(d[(padT+h)*wp:])
			continue
		}
		clear(d)
		for y := 0; y < h; y++ {
			copy(d[(y+padT)*wp+padL:], src[(ci*h+y)*w:(ci*h+y+1)*w])
		}
	}
}

// CropPlanes is PadPlanes' adjoint for gradients: it copies the h×w image
// at offset (padT, padL) of each of the c padded planes of src into dst,
// overwriting dst.
func CropPlanes[T Float](dst, src []T, c, h, w, padT, padL, hp, wp int) {
	plane := (hp + 1) * wp
	check("CropPlanes", len(src) >= c*plane && len(dst) >= c*h*w && h+padT <= hp && w+padL <= wp)
	for ci := 0; ci < c; ci++ {
		s := src[ci*plane:]
		if padL == 0 && w == wp {
			copy(dst[ci*h*w:(ci+1)*h*w], s[padT*wp:])
			continue
		}
		for y := 0; y < h; y++ {
			copy(dst[(ci*h+y)*w:(ci*h+y+1)*w], s[(y+padT)*wp+padL:])
		}
	}
}

// Im2ColPitched builds the pitched column matrix of c padded planes (from
// PadPlanes): row (ci·kh + ki)·kw + kj of col, at row stride ld ≥ outH·wp,
// is the run of outH·wp elements of plane ci starting at ki·dilH·wp +
// kj·dilW.
func Im2ColPitched[T Float](col []T, ld int, padded []T, c, hp, wp, kh, kw, dilH, dilW, outH int) {
	plane, n := (hp+1)*wp, outH*wp
	rows := c * kh * kw
	check("Im2ColPitched", ld >= n && len(padded) >= c*plane && (rows == 0 || len(col) >= (rows-1)*ld+n) &&
		(outH == 0 || (kh-1)*dilH*wp+(kw-1)*dilW+n <= plane))
	r := 0
	for ci := 0; ci < c; ci++ {
		p := padded[ci*plane : (ci+1)*plane]
		for ki := 0; ki < kh; ki++ {
			for kj := 0; kj < kw; kj++ {
				off := ki*dilH*wp + kj*dilW
				copy(col[r*ld:r*ld+n], p[off:off+n])
				r++
			}
		}
	}
}

// Col2ImPitched is Im2ColPitched's adjoint: it adds each row of col back
// into the run of the padded plane it was copied from. padded is
// accumulated into; zero it first for a plain gradient. add, if not nil,
// is the element-wise sum dst = a + b to use on the runs (vec.Add for
// float32: the runs are long, and this is most of the kernel's time).
func Col2ImPitched[T Float](padded, col []T, ld int, c, hp, wp, kh, kw, dilH, dilW, outH int, add func(dst, a, b []T)) {
	plane, n := (hp+1)*wp, outH*wp
	rows := c * kh * kw
	check("Col2ImPitched", ld >= n && len(padded) >= c*plane && (rows == 0 || len(col) >= (rows-1)*ld+n) &&
		(outH == 0 || (kh-1)*dilH*wp+(kw-1)*dilW+n <= plane))
	r := 0
	for ci := 0; ci < c; ci++ {
		p := padded[ci*plane : (ci+1)*plane]
		for ki := 0; ki < kh; ki++ {
			for kj := 0; kj < kw; kj++ {
				off := ki*dilH*wp + kj*dilW
				if add != nil {
					add(p[off:off+n], p[off:off+n], col[r*ld:r*ld+n])
				} else {
					addTo(p[off:off+n], col[r*ld:r*ld+n])
				}
				r++
			}
		}
	}
}

// PitchRows lays out each of the planes outH×outW planes of src at row
// pitch wp in dst (planes of outH·wp elements), with zeros in the columns
// past outW: the pitched output gradient.
func PitchRows[T Float](dst, src []T, planes, outH, outW, wp int) {
	check("PitchRows", wp >= outW && len(dst) >= planes*outH*wp && len(src) >= planes*outH*outW)
	if wp == outW {
		copy(dst[:planes*outH*wp], src)
		return
	}
	for r := 0; r < planes*outH; r++ {
		d := dst[r*wp : (r+1)*wp]
		copy(d, src[r*outW:(r+1)*outW])
		clear(d[outW:])
	}
}

// UnpitchRows is PitchRows' inverse: it copies the first outW columns of
// each row of the pitched planes of src into the dense planes of dst.
func UnpitchRows[T Float](dst, src []T, planes, outH, outW, wp int) {
	check("UnpitchRows", wp >= outW && len(src) >= planes*outH*wp && len(dst) >= planes*outH*outW)
	if wp == outW {
		copy(dst[:planes*outH*outW], src)
		return
	}
	for r := 0; r < planes*outH; r++ {
		copy(dst[r*outW:(r+1)*outW], src[r*wp:r*wp+outW])
	}
}

// addTo adds src into dst element by element.
func addTo[T Float](dst, src []T) {
	src = src[:len(dst)]
	for i, v := range src {
		dst[i] += v
	}
}
