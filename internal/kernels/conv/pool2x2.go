package conv

// The 2×2 stride-2 windows of LeNet-style networks take a vector kernel on
// AVX-512 (pool2x2_amd64.s) and these Go twins elsewhere and under the
// noasm tag. Both reduce a window down its columns first and then across:
//
//	max:  max(max(a, c), max(b, d))
//	mean: ((a + c) + (b + d)) · 0.25
//
// for the window [a b; c d], with Go's max (NaN if either is NaN, +0 over
// -0) and float32 rounding after every operation, so that the kernel and
// its twin give the same bits (NaN payloads aside). Multiplying by 0.25 is
// dividing by 4 exactly.

// maxPool2x2 is MaxPoolValid for 2×2 windows at stride 2.
func maxPool2x2[T Float](dst, src []T, planes, h, w, outH, outW int) {
	if d, ok := any(dst).([]float32); ok && useAsm {
		s := any(src).([]float32)
		for p := range planes {
			maxPool2x2AVX512(&d[p*outH*outW], &s[p*h*w], outH, outW, w)
		}
		return
	}
	for p := range planes {
		maxPool2x2Plane(dst[p*outH*outW:(p+1)*outH*outW], src[p*h*w:(p+1)*h*w], outH, outW, w)
	}
}

// maxPool2x2Plane is maxPool2x2's Go twin on one plane.
func maxPool2x2Plane[T Float](d, img []T, outH, outW, w int) {
	for oy := range outH {
		r0 := img[2*oy*w : 2*oy*w+2*outW]
		r1 := img[(2*oy+1)*w : (2*oy+1)*w+2*outW]
		dr := d[oy*outW : (oy+1)*outW]
		for ox := range dr {
			i := 2 * ox
			dr[ox] = max(max(r0[i], r1[i]), max(r0[i+1], r1[i+1]))
		}
	}
}

// avgPool2x2 is AvgPoolValid for 2×2 windows at stride 2.
func avgPool2x2[T Float](dst, src []T, planes, h, w, outH, outW int) {
	if d, ok := any(dst).([]float32); ok && useAsm {
		s := any(src).([]float32)
		for p := range planes {
			avgPool2x2AVX512(&d[p*outH*outW], &s[p*h*w], outH, outW, w)
		}
		return
	}
	for p := range planes {
		avgPool2x2Plane(dst[p*outH*outW:(p+1)*outH*outW], src[p*h*w:(p+1)*h*w], outH, outW, w)
	}
}

// avgPool2x2Plane is avgPool2x2's Go twin on one plane.
func avgPool2x2Plane[T Float](d, img []T, outH, outW, w int) {
	for oy := range outH {
		r0 := img[2*oy*w : 2*oy*w+2*outW]
		r1 := img[(2*oy+1)*w : (2*oy+1)*w+2*outW]
		dr := d[oy*outW : (oy+1)*outW]
		for ox := range dr {
			i := 2 * ox
			dr[ox] = ((r0[i] + r1[i]) + (r0[i+1] + r1[i+1])) * 0.25
		}
	}
}

// AvgPoolValid is AvgPool2D without padding, for the common case of
// windows that all lie inside the plane: each output is the sum of its
// kh×kw window divided by kh·kw (with no padding, PyTorch's
// count_include_pad makes no difference). It scans a whole output row per
// window tap instead of one window at a time, and takes the vector kernel
// for 2×2 windows at stride 2. It panics if a window would leave the plane.
func AvgPoolValid[T Float](dst, src []T, planes, h, w, kh, kw, sH, sW, outH, outW int) {
	plane := outH * outW
	check("AvgPoolValid", len(dst) >= planes*plane && len(src) >= planes*h*w &&
		kh >= 1 && kw >= 1 && validWindows(h, w, kh, kw, sH, sW, outH, outW))
	if plane == 0 {
		return
	}
	if kh == 2 && kw == 2 && sH == 2 && sW == 2 {
		avgPool2x2(dst, src, planes, h, w, outH, outW)
		return
	}
	n := T(kh * kw)
	for p := range planes {
		img := src[p*h*w : (p+1)*h*w]
		d := dst[p*plane : (p+1)*plane]
		for oy := range outH {
			dr := d[oy*outW : (oy+1)*outW]
			for ky := range kh {
				r := img[(oy*sH+ky)*w : (oy*sH+ky+1)*w]
				for kx := range kw {
					if ky == 0 && kx == 0 {
						for ox := range dr {
							dr[ox] = r[ox*sW]
						}
						continue
					}
					for ox, s := range dr {
						dr[ox] = s + r[ox*sW+kx]
					}
				}
			}
			for ox, s := range dr {
				dr[ox] = s / n
			}
		}
	}
}
