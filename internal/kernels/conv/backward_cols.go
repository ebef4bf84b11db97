package conv

// The column matrices of the convolution gradients, built a piece at a
// time: the columns of output rows [oy0, oy1) of one image, written at a
// row stride ld of the caller's choosing, so that pieces of several images
// (or several row ranges of one large image) sit side by side in one
// matrix of a few hundred columns. One GEMM then multiplies a piece that
// fits in cache, instead of one whole-image column matrix (576 rows of
// 3136 columns, 7 MB, for a 3×3 layer of 64 channels on 56×56 planes)
// that is written to memory and read back.

// Col2ImRows is Im2ColRows' adjoint: it adds every column entry of src
// (rows at stride ld) back into the position of the image dst ([c, h, w])
// it was read from, dropping the padding. dst is accumulated into. add
// (dst = a + b over equal lengths) does the unit-stride rows, so a SIMD
// sum serves them; with oy0 = 0, oy1 = outH it gives Col2Im's sums.
func Col2ImRows[T Float](dst, src []T, ld int, c, h, w, kh, kw, padT, padL, strideH, strideW, dilH, dilW, outW, oy0, oy1 int, add func(dst, a, b []T)) {
	cols := (oy1 - oy0) * outW
	if c == 0 || cols <= 0 {
		return
	}
	check("Col2ImRows", oy0 >= 0 && ld >= cols && len(src) >= (c*kh*kw-1)*ld+cols && len(dst) >= c*h*w)
	row := 0
	for ci := range c {
		img := dst[ci*h*w : (ci+1)*h*w]
		for ki := range kh {
			yOff := ki*dilH - padT
			yLo, yHi := validRange(yOff, strideH, h, oy1)
			yLo, yHi = max(yLo, oy0), max(yHi, oy0)
			for kj := range kw {
				xOff := kj*dilW - padL
				xLo, xHi := validRange(xOff, strideW, w, outW)
				s := src[row*ld : row*ld+cols]
				row++
				if xHi <= xLo {
					continue
				}
				for oy := yLo; oy < yHi; oy++ {
					sr := s[(oy-oy0)*outW+xLo : (oy-oy0)*outW+xHi]
					ir := img[(oy*strideH+yOff)*w : (oy*strideH+yOff+1)*w]
					ix := xLo*strideW + xOff
					if strideW == 1 {
						ir = ir[ix : ix+len(sr)]
						add(ir, ir, sr)
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
