package conv

import "github.com/sporeml/spore/internal/kernels/vec"

// DirectScratch returns the scratch length Conv2DDirect needs.
func DirectScratch(c, h, w, kh, kw, padT, padL, outH, outW int) int {
	hp, wp := paddedSize(h, w, kh, kw, padT, padL, outH, outW)
	return c*(hp+1)*wp + outH*wp
}

// Conv2DDirect computes a stride-1, undilated, ungrouped 2-D convolution of n
// NCHW images without im2col, for the small channel counts of LeNet-style
// layers where the column matrix would cost more to build than the GEMM
// saves:
//
//	dst[b,oc,oy,ox] = bias[oc] + Σ_{ci,ki,kj} wt[oc,ci,ki,kj]·src[b,ci,oy+ki-padT,ox+kj-padL]
//
// bias may be nil. scratch must hold DirectScratch(...) elements.
//
// Each image is first copied into a zero-padded buffer of width wp; an output
// plane is then accumulated at that same row pitch, so every kernel tap
// (ci, ki, kj) is one long vec.Axpy over outH·wp elements — the columns past
// outW are computed and thrown away — instead of outH short row updates.
func Conv2DDirect(dst, src, wt, bias, scratch []float32, n, c, h, w, outC, kh, kw, padT, padL, outH, outW int) {
	hp, wp := paddedSize(h, w, kh, kw, padT, padL, outH, outW)
	// One spare row: the last taps read up to kw-1 elements past the padded
	// image for the thrown-away columns.
	check("Conv2DDirect", len(scratch) >= c*(hp+1)*wp+outH*wp)
	padded := scratch[:c*(hp+1)*wp]
	acc := scratch[len(padded) : len(padded)+outH*wp]
	check("Conv2DDirect", len(dst) >= n*outC*outH*outW && len(src) >= n*c*h*w &&
		len(wt) >= outC*c*kh*kw && (bias == nil || len(bias) >= outC))
	clear(padded)
	for b := 0; b < n; b++ {
		for ci := 0; ci < c; ci++ {
			pp := padded[ci*(hp+1)*wp:]
			for y := 0; y < h; y++ {
				copy(pp[(y+padT)*wp+padL:], src[((b*c+ci)*h+y)*w:((b*c+ci)*h+y+1)*w])
			}
		}
		for oc := 0; oc < outC; oc++ {
			var b0 float32
			if bias != nil {
				b0 = bias[oc]
			}
			for i := range acc {
				acc[i] = b0
			}
			for ci := 0; ci < c; ci++ {
				pp := padded[ci*(hp+1)*wp:]
				wk := wt[(oc*c+ci)*kh*kw:]
				for ki := 0; ki < kh; ki++ {
					for kj := 0; kj < kw; kj++ {
						off := ki*wp + kj
						vec.Axpy(acc, pp[off:off+len(acc)], wk[ki*kw+kj])
					}
				}
			}
			out := dst[((b*outC+oc)*outH)*outW:]
			for oy := 0; oy < outH; oy++ {
				copy(out[oy*outW:(oy+1)*outW], acc[oy*wp:])
			}
		}
	}
}

// paddedSize is the zero-padded image the direct convolution reads: tall and
// wide enough for every window, the width at least outW+kw-1 so that no valid
// output column's taps wrap into the next row.
func paddedSize(h, w, kh, kw, padT, padL, outH, outW int) (hp, wp int) {
	return max(h+padT, outH-1+kh), max(w+padL, outW+kw-1)
}
