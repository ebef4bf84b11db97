package conv

import (
	"github.com/sporeml/spore/internal/kernels/gemm"
	"github.com/sporeml/spore/internal/kernels/vec"
)

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
	return 16*outC*c + c*(2*th+2)*(2*tw+2) + 16*c*t + 16*outC*t + max(12*t, 4*(2*tw+2))
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
	rows := scratch[len(u)+len(padded)+len(v)+len(m):][:max(12*batch*tiles, 4*wp)]
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
			winogradInputs(v, padded, rows, c, hp, wp, th, tw, t, bi*tiles)
		}
		// M_ξ [outC × t] = U_ξ [outC × c] · V_ξ [c × t], ξ = 0..15.
		gemm.SgemmStrided(false, false, outC, t, c, 1, u, c, outC*c, v, t, c*t, 0, m, t, outC*t, 16)
		winogradOutputs(dst[b0*outC*outH*outW:], m, rows, bias, nb, outC, outH, outW, th, tw, t)
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
// length of a row of v (the batch's tiles). B^T's combinations of rows run
// on whole padded rows at once (vector operations into e, 4 rows of wp of
// scratch); the combinations of columns go tile by tile.
func winogradInputs(v, padded, e []float32, c, hp, wp, th, tw, ld, t0 int) {
	e0, e1, e2, e3 := e[:wp], e[wp:2*wp], e[2*wp:3*wp], e[3*wp:4*wp]
	for ci := range c {
		p := padded[ci*hp*wp : (ci+1)*hp*wp]
		for ty := range th {
			r0 := p[2*ty*wp : 2*ty*wp+wp]
			r1 := p[(2*ty+1)*wp : (2*ty+1)*wp+wp]
			r2 := p[(2*ty+2)*wp : (2*ty+2)*wp+wp]
			r3 := p[(2*ty+3)*wp : (2*ty+3)*wp+wp]
			// B^T d: rows d0-d2, d1+d2, d2-d1, d1-d3.
			vec.Sub(e0, r0, r2)
			vec.Add(e1, r1, r2)
			vec.Sub(e2, r2, r1)
			vec.Sub(e3, r1, r3)
			// (B^T d) B: the same on each row's four columns.
			col := t0 + ty*tw
			for i, ei := range [4][]float32{e0, e1, e2, e3} {
				base := (i*4*c+ci)*ld + col
				v0 := v[base : base+tw]
				v1 := v[base+c*ld : base+c*ld+tw]
				v2 := v[base+2*c*ld : base+2*c*ld+tw]
				v3 := v[base+3*c*ld : base+3*c*ld+tw]
				for tx := range tw {
					x0, x1, x2, x3 := ei[2*tx], ei[2*tx+1], ei[2*tx+2], ei[2*tx+3]
					v0[tx] = x0 - x2
					v1[tx] = x1 + x2
					v2[tx] = x2 - x1
					v3[tx] = x1 - x3
				}
			}
		}
	}
}

// winogradOutputs writes the outputs of the batch's nb images from
// m[ξ][oc][tile] (rows of length ld, the batch's tiles): A^T m A per tile,
// plus the bias, clipped at the bottom and right edges. The transform runs
// across all the batch's tiles at once, one vector operation per term
// (rows: 12 rows of ld of scratch), and only the final scatter into the
// output planes goes tile by tile.
func winogradOutputs(dst, m, rows, bias []float32, nb, outC, outH, outW, th, tw, ld int) {
	plane := outC * ld // one ξ's block of m
	row := func(i int) []float32 { return rows[i*ld : (i+1)*ld] }
	var s [2][4][]float32 // A^T m: rows q0+q1+q2 and q1-q2-q3
	for j := range 4 {
		s[0][j], s[1][j] = row(j), row(4+j)
	}
	var o [2][2][]float32
	for i := range 2 {
		for j := range 2 {
			o[i][j] = row(8 + 2*i + j)
		}
	}
	tiles := th * tw
	for oc := range outC {
		q := func(xi int) []float32 { return m[xi*plane+oc*ld : xi*plane+oc*ld+ld] }
		for j := range 4 {
			vec.Add(s[0][j], q(j), q(4+j))
			vec.Add(s[0][j], s[0][j], q(8+j))
			vec.Sub(s[1][j], q(4+j), q(8+j))
			vec.Sub(s[1][j], s[1][j], q(12+j))
		}
		for i := range 2 {
			vec.Add(o[i][0], s[i][0], s[i][1])
			vec.Add(o[i][0], o[i][0], s[i][2])
			vec.Sub(o[i][1], s[i][1], s[i][2])
			vec.Sub(o[i][1], o[i][1], s[i][3])
			if bias != nil {
				vec.AddScalar(o[i][0], o[i][0], bias[oc])
				vec.AddScalar(o[i][1], o[i][1], bias[oc])
			}
		}
		for b := range nb {
			out := dst[(b*outC+oc)*outH*outW : (b*outC+oc+1)*outH*outW]
			for i := range 2 {
				for ty := range th {
					y := 2*ty + i
					if y >= outH {
						break
					}
					r := out[y*outW : (y+1)*outW]
					o0 := o[i][0][b*tiles+ty*tw : b*tiles+(ty+1)*tw]
					o1 := o[i][1][b*tiles+ty*tw : b*tiles+(ty+1)*tw]
					for tx, v := range o0 {
						r[2*tx] = v
						if 2*tx+1 < outW {
							r[2*tx+1] = o1[tx]
						}
					}
				}
			}
		}
	}
}
