package conv

// MaxPoolBackward adds each output gradient g[o] of a max pooling of the
// planes h×w of x (windows kh×kw at stride sH×sW, padded by padT rows on
// top and padL columns on the left, giving outH×outW) to dx at the winner
// of o's window clipped to the plane: its first maximum in row-major order,
// or its first NaN, MaxPool2D's rule. Padding never wins. dx is
// accumulated into.
//
// The windows that lie inside the plane's columns (all but one or two at
// each end of a row, for resnet's 3×3 windows at stride 2 with one column
// of padding) take a loop with no clipping, unrolled for windows three
// wide; the generic loop, clipping every window, took four times as long
// per window in the profile of resnet18's training step.
func MaxPoolBackward[T Float](dx, x, g []T, planes, h, w, kh, kw, sH, sW, padT, padL, outH, outW int) {
	plane, oplane := h*w, outH*outW
	check("MaxPoolBackward", len(dx) >= planes*plane && len(x) >= planes*plane && len(g) >= planes*oplane &&
		kh >= 1 && kw >= 1 && sH >= 1 && sW >= 1 && padT >= 0 && padL >= 0)
	if oplane == 0 || plane == 0 {
		return
	}
	// Output columns [oxLo, oxHi) have windows inside the columns [0, w).
	oxLo := min(outW, (padL+sW-1)/sW)
	oxHi := oxLo
	if w-kw+padL >= 0 {
		oxHi = max(oxLo, min(outW, (w-kw+padL)/sW+1))
	}
	for p := range planes {
		img, d, gp := x[p*plane:(p+1)*plane], dx[p*plane:(p+1)*plane], g[p*oplane:(p+1)*oplane]
		for oy := range outH {
			y0 := oy*sH - padT
			ya, yb := max(y0, 0), min(y0+kh, h)
			if ya >= yb {
				continue // a window wholly in the padding has no winner
			}
			grow := gp[oy*outW : (oy+1)*outW]
			for ox := 0; ox < oxLo; ox++ {
				d[argmaxClipped(img, w, ya, yb, ox*sW-padL, kw)] += grow[ox]
			}
			if kw == 3 {
				for ox := oxLo; ox < oxHi; ox++ {
					x0 := ox*sW - padL
					best := ya*w + x0
					bv := img[best]
					for y := ya; y < yb; y++ {
						i := y*w + x0
						r := img[i : i+3 : i+3]
						if v := r[0]; v > bv || (v != v && bv == bv) {
							best, bv = i, v
						}
						if v := r[1]; v > bv || (v != v && bv == bv) {
							best, bv = i+1, v
						}
						if v := r[2]; v > bv || (v != v && bv == bv) {
							best, bv = i+2, v
						}
					}
					d[best] += grow[ox]
				}
			} else {
				for ox := oxLo; ox < oxHi; ox++ {
					d[argmaxClipped(img, w, ya, yb, ox*sW-padL, kw)] += grow[ox]
				}
			}
			for ox := oxHi; ox < outW; ox++ {
				d[argmaxClipped(img, w, ya, yb, ox*sW-padL, kw)] += grow[ox]
			}
		}
	}
}

// argmaxClipped returns the in-plane index of the winner of the window of
// rows [ya, yb) and columns [x0, x0+kw) clipped to [0, w).
func argmaxClipped[T Float](img []T, w, ya, yb, x0, kw int) int {
	xa, xb := max(x0, 0), min(x0+kw, w)
	if xa >= xb {
		return ya * w // unreachable for windows that hold a real column
	}
	best := ya*w + xa
	bv := img[best]
	for y := ya; y < yb; y++ {
		for i := y*w + xa; i < y*w+xb; i++ {
			if v := img[i]; v > bv || (v != v && bv == bv) {
				best, bv = i, v
			}
		}
	}
	return best
}
