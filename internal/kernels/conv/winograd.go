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

// winogradGeom returns the tile grid of an outH×outW output — th rows of
// tw tiles, laid out at a row pitch of tw+1 tiles (the last one of each
// row computed and thrown away, so that the input transform is whole
// vector operations; see winogradInputs) — and the images of one GEMM
// batch.
func winogradGeom(n, outH, outW int) (th, tw, batch int) {
	th, tw = (outH+1)/2, (outW+1)/2
	return th, tw, max(1, min(n, winogradTiles/max(1, th*(tw+1))))
}

// winogradPhase is the length of one parity plane of a padded input
// channel: th+1 rows of tw+1, and one spare element for the last shifted
// read.
func winogradPhase(th, tw int) int { return (th+1)*(tw+1) + 1 }

// WinogradScratch returns the scratch length Conv2DWinograd needs.
func WinogradScratch(n, c, h, w, outC, padT, padL, outH, outW int) int {
	th, tw, batch := winogradGeom(n, outH, outW)
	t := batch * th * (tw + 1)
	return 16*outC*c + 4*c*winogradPhase(th, tw) + 16*c*t + 16*outC*t + max(12*t, 8*(th*(tw+1)+1))
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
// WinogradScratch(...) elements. It is pure Go around the vec and GEMM
// packages.
func Conv2DWinograd(dst, src, wt, bias, scratch []float32, n, c, h, w, outC, padT, padL, outH, outW int) {
	check("Conv2DWinograd", len(scratch) >= WinogradScratch(n, c, h, w, outC, padT, padL, outH, outW) && len(wt) >= outC*c*9)
	u := scratch[:16*outC*c]
	WinogradFilters(u, wt, outC, c)
	Conv2DWinogradTransformed(dst, src, u, bias, scratch[len(u):], n, c, h, w, outC, padT, padL, outH, outW)
}

// WinogradFiltersLen is the length of the transformed filters of outC×c
// 3×3 windows: 16 values per window.
func WinogradFiltersLen(outC, c int) int { return 16 * outC * c }

// Conv2DWinogradTransformed is Conv2DWinograd with the filters already
// transformed by WinogradFilters into u, for a caller that holds them
// between calls (a weight that has not changed need not be transformed
// again); scratch must hold WinogradScratch(...) − WinogradFiltersLen(outC,
// c) elements.
func Conv2DWinogradTransformed(dst, src, u, bias, scratch []float32, n, c, h, w, outC, padT, padL, outH, outW int) {
	th, tw, batch := winogradGeom(n, outH, outW)
	check("Conv2DWinogradTransformed", len(u) >= WinogradFiltersLen(outC, c) &&
		len(scratch) >= WinogradScratch(n, c, h, w, outC, padT, padL, outH, outW)-WinogradFiltersLen(outC, c) &&
		len(dst) >= n*outC*outH*outW && len(src) >= n*c*h*w &&
		(bias == nil || len(bias) >= outC) && padT >= 0 && padL >= 0 &&
		outH <= h+padT && outW <= w+padL && outH >= 0 && outW >= 0)
	if n == 0 || outC == 0 || outH == 0 || outW == 0 {
		return
	}
	tiles := th * (tw + 1) // per image, at the tile row pitch
	ph := winogradPhase(th, tw)
	phases := scratch[:4*c*ph]
	v := scratch[len(phases) : len(phases)+16*c*batch*tiles]
	m := scratch[len(phases)+len(v) : len(phases)+len(v)+16*outC*batch*tiles]
	rows := scratch[len(phases)+len(v)+len(m):][:max(12*batch*tiles, 8*(tiles+1))]
	for b0 := 0; b0 < n; b0 += batch {
		nb := min(batch, n-b0)
		t := nb * tiles // the GEMMs' columns: this batch's tiles
		for bi := range nb {
			winogradPhases(phases, src[(b0+bi)*c*h*w:], c, h, w, padT, padL, th, tw)
			winogradInputs(v, phases, rows, c, th, tw, t, bi*tiles)
		}
		// M_ξ [outC × t] = U_ξ [outC × c] · V_ξ [c × t], ξ = 0..15.
		gemm.SgemmStrided(false, false, outC, t, c, 1, u, c, outC*c, v, t, c*t, 0, m, t, outC*t, 16)
		winogradOutputs(dst[b0*outC*outH*outW:], m, rows, bias, nb, outC, outH, outW, th, tw, t)
	}
}

// WinogradFilters sets u[ξ][oc][ci] = (G g G^T)[ξ] for each 3×3 filter g
// of wt [outC, c, 3, 3]: the filters Conv2DWinogradTransformed takes. u
// must hold WinogradFiltersLen(outC, c) elements.
func WinogradFilters(u, wt []float32, outC, c int) {
	WinogradFiltersRange(u, wt, outC, c, 0, outC)
}

// WinogradFiltersRange is WinogradFilters for the output channels [oc0,
// oc1) only, so that the transform can be split over threads: u is the
// whole transformed filter set of outC×c windows, of which it writes
// those channels' entries.
func WinogradFiltersRange(u, wt []float32, outC, c, oc0, oc1 int) {
	check("WinogradFilters", len(u) >= WinogradFiltersLen(outC, c) && len(wt) >= outC*c*9 && 0 <= oc0 && oc0 <= oc1 && oc1 <= outC)
	for oc := oc0; oc < oc1; oc++ {
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

// winogradPhases splits each channel of one image, zero-padded to whole
// tiles, by row and column parity: phase (a, b) of channel ci holds the
// padded element (2y+a, 2x+b) at y·(tw+1)+x, for y ≤ th and x ≤ tw. Every
// element of a tile's 4×4 patch is then one phase at the tile's own index,
// shifted by a row (tw+1) or a column (1) or both.
func winogradPhases(phases, img []float32, c, h, w, padT, padL, th, tw int) {
	ph, pw := winogradPhase(th, tw), tw+1
	clear(phases[:4*c*ph])
	hp, wp := 2*th+2, 2*tw+2
	for ci := range c {
		q := phases[4*ci*ph : 4*(ci+1)*ph]
		for y := range min(h, hp-padT) {
			py := y + padT
			row := img[(ci*h+y)*w : (ci*h+y)*w+min(w, wp-padL)]
			base := (py % 2 * 2) * ph
			even, odd := q[base+py/2*pw:], q[base+ph+py/2*pw:]
			for x, val := range row {
				px := x + padL
				if px%2 == 0 {
					even[px/2] = val
				} else {
					odd[px/2] = val
				}
			}
		}
	}
}

// winogradInputs sets v[ξ][ci][t0+ty·(tw+1)+tx] = (B^T d B)[ξ] for the 4×4
// patch d of tile (ty, tx) of each channel, from the channel's parity
// phases; ld is the length of a row of v (the batch's tiles). With the
// phases, each step of the transform is one vector operation over all the
// image's tiles (e: 8 rows of scratch), tx = tw included (thrown away).
func winogradInputs(v, phases, e []float32, c, th, tw, ld, t0 int) {
	ph, pw := winogradPhase(th, tw), tw+1
	l := th * pw // tiles, at the row pitch
	for ci := range c {
		q := phases[4*ci*ph : 4*(ci+1)*ph]
		// Phase (a, b), shifted down dy tile rows: the patch rows
		// 2·dy + a, columns b and b+2 (the latter one tile further).
		at := func(a, b, dy int) []float32 {
			o := (2*a+b)*ph + dy*pw
			return q[o : o+l+1]
		}
		// B^T d, for the even (b = 0) and odd (b = 1) patch columns:
		// rows d0-d2, d1+d2, d2-d1, d1-d3, with d0 = phase (0, b),
		// d1 = (1, b), d2 = (0, b) a row down, d3 = (1, b) a row down.
		var rb [4][2][]float32
		for b := range 2 {
			for i := range 4 {
				rb[i][b] = e[(2*i+b)*(l+1) : (2*i+b+1)*(l+1)]
			}
			vec.Sub(rb[0][b], at(0, b, 0), at(0, b, 1))
			vec.Add(rb[1][b], at(1, b, 0), at(0, b, 1))
			vec.Sub(rb[2][b], at(0, b, 1), at(1, b, 0))
			vec.Sub(rb[3][b], at(1, b, 0), at(1, b, 1))
		}
		// (B^T d) B on each row: x0-x2, x1+x2, x2-x1, x1-x3 with x0 the
		// even column, x1 the odd, x2 and x3 the same a tile right.
		for i := range 4 {
			x0, x1 := rb[i][0][:l], rb[i][1][:l]
			x2, x3 := rb[i][0][1:l+1], rb[i][1][1:l+1]
			out := func(j int) []float32 {
				o := ((i*4+j)*c+ci)*ld + t0
				return v[o : o+l]
			}
			vec.Sub(out(0), x0, x2)
			vec.Add(out(1), x1, x2)
			vec.Sub(out(2), x2, x1)
			vec.Sub(out(3), x1, x3)
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
	tiles, pw := th*(tw+1), tw+1
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
					o0 := o[i][0][b*tiles+ty*pw : b*tiles+ty*pw+tw]
					o1 := o[i][1][b*tiles+ty*pw : b*tiles+ty*pw+tw]
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
