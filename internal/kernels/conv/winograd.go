package conv

import "github.com/sporeml/spore/internal/kernels/gemm"

// Winograd F(2×2, 3×3) (Lavin and Gray, "Fast Algorithms for Convolutional
// Neural Networks", 2015): each 2×2 block of outputs of a 3×3 convolution
// is A^T [ (G g G^T) ⊙ (B^T d B) ] A, where d is the block's 4×4 input
// patch, g the 3×3 filter and
//
//	B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]
//	G   = [1 0 0; ½ ½ ½; ½ -½ ½; 0 0 1]
//	A^T = [1 1 1 0; 0 1 -1 -1]
//
// Summed over input channels, the elementwise products become 16 GEMMs (one
// per position ξ of the 4×4 transformed tile) of the transformed filters
// U_ξ [outC × c] by the transformed inputs V_ξ [c × tiles], with 16
// multiplies per 4 outputs and channel pair where the direct convolution
// does 36: 2.25× fewer. The transforms are additions, the price paid per
// tile and channel, so the method pays where the channel counts are large
// enough for the GEMMs to dominate.

// winogradTiles is the number of tiles the transformed inputs of one GEMM
// batch hold: enough columns to keep the GEMMs efficient, few enough for
// V and M to stay in cache.
const winogradTiles = 512

// winogradGeom returns the tile grid of an outH×outW output: th×tw tiles,
// and the images of one GEMM batch.
func winogradGeom(n, outH, outW int) (th, tw, batch int) {
	th, tw = (outH+1)/2, (outW+1)/2
	return th, tw, max(1, min(n, winogradTiles/max(1, th*tw)))
}

// WinogradScratch returns the scratch length Conv2DWinograd needs.
func WinogradScratch(n, c, h, w, outC, padT, padL, outH, outW int) int {
	th, tw, batch := winogradGeom(n, outH, outW)
	t := batch * th * tw
	return 16*outC*c + c*(2*th+2)*(2*tw+2) + 16*c*t + 16*outC*t
}

// Conv2DWinograd computes the same convolution as Conv2DDirect for 3×3
// windows — stride 1, no dilation, no groups, n NCHW images, bias nil or
// one per output channel —
//
//	dst[b,oc,oy,ox] = bias[oc] + Σ_{ci,ki,kj} wt[oc,ci,ki,kj]·src[b,ci,oy+ki-padT,ox+kj-padL]
//
// by Winograd's F(2×2, 3×3). Its rounding differs from the direct sum's
// (the transforms add and subtract inputs before multiplying), by a few
// units in the last place of the largest terms. scratch must hold
// WinogradScratch(...) elements. It is pure Go around the GEMM package.
func Conv2DWinograd(dst, src, wt, bias, scratch []float32, n, c, h, w, outC, padT, padL, outH, outW int) {
	th, tw, batch := winogradGeom(n, outH, outW)
	hp, wp := 2*th+2, 2*tw+2
	check("Conv2DWinograd", len(scratch) >= WinogradScratch(n, c, h, w, outC, padT, padL, outH, outW) &&
		len(dst) >= n*outC*outH*outW && len(src) >= n*c*h*w && len(wt) >= outC*c*9 &&
		(bias == nil || len(bias) >= outC) && padT >= 0 && padL >= 0 &&
		outH <= h+padT && outW <= w+padL && outH >= 0 && outW >= 0)
	if n == 0 || outC == 0 || outH == 0 || outW == 0 {
		return
	}
	tiles := th * tw
	u := scratch[:16*outC*c]
	padded := scratch[len(u) : len(u)+c*hp*wp]
	v := scratch[len(u)+len(padded) : len(u)+len(padded)+16*c*batch*tiles]
	m := scratch[len(u)+len(padded)+len(v) : len(u)+len(padded)+len(v)+16*outC*batch*tiles]
	winogradFilters(u, wt, outC, c)
	for b0 := 0; b0 < n; b0 += batch {
		nb := min(batch, n-b0)
		t := nb * tiles // the GEMMs' columns: this batch's tiles
		for bi := range nb {
			img := src[(b0+bi)*c*h*w:]
			// The image, zero-padded to whole tiles: hp×wp planes hold
			// every 4×4 patch, past the bottom and right edges too.
			clear(padded)
			for ci := range c {
				for y := range min(h, hp-padT) {
					row := img[(ci*h+y)*w : (ci*h+y)*w+min(w, wp-padL)]
					copy(padded[(ci*hp+y+padT)*wp+padL:], row)
				}
			}
			winogradInputs(v, padded, c, hp, wp, th, tw, t, bi*tiles)
		}
		// M_ξ [outC × t] = U_ξ [outC × c] · V_ξ [c × t], ξ = 0..15.
		gemm.SgemmStrided(false, false, outC, t, c, 1, u, c, outC*c, v, t, c*t, 0, m, t, outC*t, 16)
		for bi := range nb {
			winogradOutputs(dst[(b0+bi)*outC*outH*outW:], m, bias, outC, outH, outW, th, tw, t, bi*tiles)
		}
	}
}

// winogradFilters sets u[ξ][oc][ci] = (G g G^T)[ξ] for each 3×3 filter g
// of wt [outC, c, 3, 3].
func winogradFilters(u, wt []float32, outC, c int) {
	for oc := range outC {
		for ci := range c {
			g := wt[(oc*c+ci)*9 : (oc*c+ci)*9+9]
			// t = G g: 4×3.
			var t [4][3]float32
			for j := range 3 {
				g0, g1, g2 := g[j], g[3+j], g[6+j]
				t[0][j] = g0
				t[1][j] = 0.5 * (g0 + g1 + g2)
				t[2][j] = 0.5 * (g0 - g1 + g2)
				t[3][j] = g2
			}
			// (G g) G^T: 4×4.
			for i := range 4 {
				t0, t1, t2 := t[i][0], t[i][1], t[i][2]
				r := [4]float32{t0, 0.5 * (t0 + t1 + t2), 0.5 * (t0 - t1 + t2), t2}
				for j, x := range r {
					u[((i*4+j)*outC+oc)*c+ci] = x
				}
			}
		}
	}
}

// winogradInputs sets v[ξ][ci][t0+ty·tw+tx] = (B^T d B)[ξ] for the 4×4
// patch d at rows 2ty.., columns 2tx.. of each padded plane; ld is the
// length of a row of v (the batch's tiles).
func winogradInputs(v, padded []float32, c, hp, wp, th, tw, ld, t0 int) {
	for ci := range c {
		p := padded[ci*hp*wp : (ci+1)*hp*wp]
		for ty := range th {
			r0 := p[2*ty*wp : 2*ty*wp+wp]
			r1 := p[(2*ty+1)*wp : (2*ty+1)*wp+wp]
			r2 := p[(2*ty+2)*wp : (2*ty+2)*wp+wp]
			r3 := p[(2*ty+3)*wp : (2*ty+3)*wp+wp]
			for tx := range tw {
				x := 2 * tx
				// B^T d: rows d0-d2, d1+d2, d2-d1, d1-d3.
				var b [4][4]float32
				for j := range 4 {
					d0, d1, d2, d3 := r0[x+j], r1[x+j], r2[x+j], r3[x+j]
					b[0][j] = d0 - d2
					b[1][j] = d1 + d2
					b[2][j] = d2 - d1
					b[3][j] = d1 - d3
				}
				// (B^T d) B: the same on each row.
				col := t0 + ty*tw + tx
				for i := range 4 {
					e0, e1, e2, e3 := b[i][0], b[i][1], b[i][2], b[i][3]
					base := (i*4*c+ci)*ld + col
					v[base] = e0 - e2
					v[base+c*ld] = e1 + e2
					v[base+2*c*ld] = e2 - e1
					v[base+3*c*ld] = e1 - e3
				}
			}
		}
	}
}

// winogradOutputs writes the outC×outH×outW outputs of one image from
// m[ξ][oc][t0+tile] (rows of length ld): A^T m A per tile, plus the bias,
// clipped at the bottom and right edges.
func winogradOutputs(dst, m, bias []float32, outC, outH, outW, th, tw, ld, t0 int) {
	plane := outC * ld // one ξ's block of m
	for oc := range outC {
		var b0 float32
		if bias != nil {
			b0 = bias[oc]
		}
		out := dst[oc*outH*outW : (oc+1)*outH*outW]
		for ty := range th {
			for tx := range tw {
				col := oc*ld + t0 + ty*tw + tx
				var q [4][4]float32
				for xi := range 16 {
					q[xi/4][xi%4] = m[xi*plane+col]
				}
				// A^T q: rows q0+q1+q2, q1-q2-q3.
				var s [2][4]float32
				for j := range 4 {
					s[0][j] = q[0][j] + q[1][j] + q[2][j]
					s[1][j] = q[1][j] - q[2][j] - q[3][j]
				}
				oy, ox := 2*ty, 2*tx
				for i := range 2 {
					if oy+i >= outH {
						break
					}
					row := out[(oy+i)*outW:]
					row[ox] = b0 + s[i][0] + s[i][1] + s[i][2]
					if ox+1 < outW {
						row[ox+1] = b0 + s[i][1] - s[i][2] - s[i][3]
					}
				}
			}
		}
	}
}
