package conv

// DotRows adds to 16-lane partial sums the dot products of ma rows of a
// with nb rows of b over n elements:
//
//	part[i·ldp + j·16 + l] += Σ_{t < n, t mod 16 = l} a[i·lda + t]·b[j·ldb + t]
//
// for i < ma, j < nb, l < 16. The lanes are summed only once, by the
// caller, after every call has added its share (ReduceLanes), so a long
// sum over many images is never reduced horizontally more than once.
//
// It is the weight gradient of a stride-1 convolution without a column
// matrix: on pitched planes (see Pitch) the column-matrix row of tap
// (c, ki, kj) is the padded plane c from offset ki·dilH·wp + kj·dilW on, so
// with a the pitched output gradients of ma output channels and b the
// plane of one input channel from the offset of (ki, 0), ldb = dilW, the
// sums are dW[oc, c, ki, kj] for the nb taps of a window row. Rows of b may
// overlap (ldb < n); rows of part may not overlap each other.
//
// Any ma, nb ≥ 0 is accepted; the AVX-512 kernels take blocks of up to 4
// rows of a by 5 of b, each keeping its sums in registers for all of n.
// The pure-Go twin (dotRowsGo, used with the noasm tag and on CPUs without
// AVX-512) adds in the same order per lane with separate multiplies and
// adds, so the two agree to float32 rounding, not bit for bit.
func DotRows(part []float32, ldp int, a []float32, lda, ma int, b []float32, ldb, nb, n int) {
	DotRowsBatch(part, ldp, a, lda, ma, b, ldb, nb, n, 1, 0, 0)
}

// DotRowsBatch is DotRows over batch pairs of operands, the k-th at
// a[k·strideA:] and b[k·strideB:], added up in order (per lane, item after
// item): the images of a batch in one call, their sums kept in registers
// from the first image to the last.
func DotRowsBatch(part []float32, ldp int, a []float32, lda, ma int, b []float32, ldb, nb, n, batch, strideA, strideB int) {
	if ma <= 0 || nb <= 0 || batch <= 0 {
		return
	}
	check("DotRowsBatch", n >= 0 && lda >= 0 && ldb >= 0 && ldp >= nb*16 && strideA >= 0 && strideB >= 0 &&
		len(part) >= (ma-1)*ldp+nb*16 &&
		(n == 0 || (len(a) >= (batch-1)*strideA+(ma-1)*lda+n && len(b) >= (batch-1)*strideB+(nb-1)*ldb+n)))
	if n == 0 {
		return
	}
	dotRows(part, ldp, a, lda, ma, b, ldb, nb, n, batch, strideA, strideB)
}

// dotRowsGo is DotRowsBatch's pure-Go twin, on checked arguments.
func dotRowsGo(part []float32, ldp int, a []float32, lda, ma int, b []float32, ldb, nb, n, batch, strideA, strideB int) {
	for i := range ma {
		for j := range nb {
			p := part[i*ldp+j*16 : i*ldp+j*16+16]
			for l := range 16 {
				s := p[l]
				for k := range batch {
					ar := a[k*strideA+i*lda : k*strideA+i*lda+n]
					br := b[k*strideB+j*ldb : k*strideB+j*ldb+n]
					for t := l; t < n; t += 16 {
						s += ar[t] * br[t]
					}
				}
				p[l] = s
			}
		}
	}
}

// ReduceLanes sets dst[i] to the sum of the 16 lanes of the partial sums
// src[i·16 : i·16+16], for i < len(dst), adding the lanes in a fixed
// pairwise order (the same in every build).
func ReduceLanes(dst, src []float32) {
	check("ReduceLanes", len(src) >= 16*len(dst))
	for i := range dst {
		p := (*[16]float32)(src[i*16 : i*16+16])
		var h [8]float32
		for l := range 8 {
			h[l] = p[l] + p[l+8]
		}
		q0, q1, q2, q3 := h[0]+h[4], h[1]+h[5], h[2]+h[6], h[3]+h[7]
		dst[i] = (q0 + q2) + (q1 + q3)
	}
}

// Col2ImPitchedF32 is Col2ImPitched for float32 with the sums done by one
// AVX-512 kernel (where the CPU has it) instead of one vec.Add call per
// row of col: in LeNet-5's second layer a row is 96 elements, so the
// calls cost more than the additions. Each element receives the same sums
// in the same order as Col2ImPitched with vec.Add gives it, bit for bit.
func Col2ImPitchedF32(padded, col []float32, ld int, c, hp, wp, kh, kw, dilH, dilW, outH int) {
	plane, n := (hp+1)*wp, outH*wp
	rows := c * kh * kw
	check("Col2ImPitchedF32", ld >= n && len(padded) >= c*plane && (rows == 0 || len(col) >= (rows-1)*ld+n) &&
		(outH == 0 || (kh-1)*dilH*wp+(kw-1)*dilW+n <= plane))
	col2ImPitched(padded, col, ld, c, hp, wp, kh, kw, dilH, dilW, outH)
}

// col2ImPitchedGo is Col2ImPitchedF32's pure-Go twin, on checked
// arguments.
func col2ImPitchedGo(padded, col []float32, ld int, c, hp, wp, kh, kw, dilH, dilW, outH int) {
	plane, n := (hp+1)*wp, outH*wp
	r := 0
	for ci := 0; ci < c; ci++ {
		p := padded[ci*plane : (ci+1)*plane]
		for ki := 0; ki < kh; ki++ {
			for kj := 0; kj < kw; kj++ {
				off := ki*dilH*wp + kj*dilW
				d, s := p[off:off+n], col[r*ld:r*ld+n]
				for i, v := range s {
					d[i] = v + d[i]
				}
				r++
			}
		}
	}
}

// TapRows adds the transposed convolution of og pitched output-gradient
// rows into padded input-gradient planes: for t < n and every tap, kj
// outermost, then ki, then the input channel ci,
//
//	dx[ci·plane + ki·rowStep + kj·colStep + t] += Σ_{oc < og} wt[tap·og + oc]·dy[oc·ldy + t]
//
// with tap = (kj·kh + ki)·c + ci, so wt holds, tap after tap, the og
// filter entries W[oc, ci, ki, kj]. It is Col2ImPitched(Wᵀ·dy) without the
// column matrix: the sums stay in registers and go straight into dx. The
// element order is fixed: 16 elements of t at a time, all taps for each.
//
// Row oc's products go to partial sum oc mod 4, added up as (p0 + p1) +
// (p2 + p3): four short chains of multiply-adds rather than one of og,
// whose latency held up every tap's read-modify-write of dx. The AVX-512
// kernels (one per og up to 16) use fused multiply-adds; the pure-Go twin
// (tapRowsGo; the noasm tag, CPUs without AVX-512, og > 16) adds the same
// products in the same order with separate multiplies and adds, so the two
// agree to float32 rounding.
func TapRows(dx, dy []float32, ldy, og int, wt []float32, n, c, kh, kw, plane, rowStep, colStep int) {
	if n <= 0 || og <= 0 || c <= 0 || kh <= 0 || kw <= 0 {
		return
	}
	last := (c-1)*plane + (kh-1)*rowStep + (kw-1)*colStep + n
	check("TapRows", ldy >= 0 && plane >= 0 && rowStep >= 0 && colStep >= 0 &&
		len(dy) >= (og-1)*ldy+n && len(wt) >= kw*kh*c*og && len(dx) >= last)
	tapRows(dx, dy, ldy, og, wt, n, c, kh, kw, plane, rowStep, colStep)
}

// tapRowsGo is TapRows' pure-Go twin, on checked arguments.
func tapRowsGo(dx, dy []float32, ldy, og int, wt []float32, n, c, kh, kw, plane, rowStep, colStep int) {
	var sum [4][16]float32
	for t0 := 0; t0 < n; t0 += 16 {
		lanes := min(16, n-t0)
		w := wt
		for kj := range kw {
			for ki := range kh {
				for ci := range c {
					// Row oc into partial sum oc mod 4, then
					// (p0 + p1) + (p2 + p3).
					for oc := range og {
						r := dy[oc*ldy+t0 : oc*ldy+t0+lanes]
						p := sum[oc%4][:lanes]
						if oc < 4 {
							for l, v := range r {
								p[l] = w[oc] * v
							}
							continue
						}
						for l, v := range r {
							p[l] += w[oc] * v
						}
					}
					s := sum[0][:lanes]
					for l := range s {
						switch min(og, 4) {
						case 2:
							s[l] += sum[1][l]
						case 3:
							s[l] = s[l] + sum[1][l] + sum[2][l]
						case 4:
							s[l] = (s[l] + sum[1][l]) + (sum[2][l] + sum[3][l])
						}
					}
					w = w[og:]
					d := dx[ci*plane+ki*rowStep+kj*colStep+t0:]
					for l, v := range s {
						d[l] = v + d[l]
					}
				}
			}
		}
	}
}
