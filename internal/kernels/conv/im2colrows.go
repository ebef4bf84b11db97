package conv

// Im2ColRows is Im2Col restricted to the output rows [r0, r1): it builds
// the (c·kh·kw)×((r1−r0)·outW) block of the column matrix whose columns
// are those rows' output positions, row t of the block at dst[t·ld], so
// that a convolution can be computed a cache-sized block of output
// positions at a time instead of from one column matrix for the whole
// image:
//
//	dst[((ci·kh + ki)·kw + kj)·ld + (oy−r0)·outW + ox] =
//	    src[ci·h·w + iy·w + ix],  iy = oy·strideH − padT + ki·dilH,
//	                              ix = ox·strideW − padL + kj·dilW,
//
// and 0 where (iy, ix) falls in the padding. ld must be at least
// (r1−r0)·outW; the first (r1−r0)·outW elements of every row are written.
func Im2ColRows[T Float](dst []T, ld int, src []T, c, h, w, kh, kw, padT, padL, strideH, strideW, dilH, dilW, outH, outW, r0, r1 int) {
	n := (r1 - r0) * outW
	check("Im2ColRows", r0 >= 0 && r1 <= outH && r0 <= r1 && ld >= n &&
		(c*kh*kw == 0 || len(dst) >= (c*kh*kw-1)*ld+n) && len(src) >= c*h*w)
	row := 0
	for ci := 0; ci < c; ci++ {
		img := src[ci*h*w : (ci+1)*h*w]
		for ki := 0; ki < kh; ki++ {
			yOff := ki*dilH - padT
			yLo, yHi := validRange(yOff, strideH, h, outH)
			yLo, yHi = max(yLo, r0), min(yHi, r1)
			for kj := 0; kj < kw; kj++ {
				xOff := kj*dilW - padL
				xLo, xHi := validRange(xOff, strideW, w, outW)
				d := dst[row*ld : row*ld+n]
				row++
				if yLo >= yHi {
					clear(d)
					continue
				}
				clear(d[:(yLo-r0)*outW])
				clear(d[(yHi-r0)*outW:])
				for oy := yLo; oy < yHi; oy++ {
					dr := d[(oy-r0)*outW : (oy-r0+1)*outW]
					sr := img[(oy*strideH+yOff)*w : (oy*strideH+yOff+1)*w]
					clear(dr[:xLo])
					clear(dr[xHi:])
					if xLo >= xHi {
						continue
					}
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
