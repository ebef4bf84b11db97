package gemm

// Packing copies a block of op(A) or op(B) into the order the micro-kernel
// reads it, so the kernel's inner loop walks memory strictly sequentially
// whatever the transposes and leading dimensions were. Partial panels are
// zero-padded: padding lanes are computed but never stored, and zeros keep
// them finite.

// packA packs the mc×kc block of op(A) whose top-left element is op(A)[0][0]
// of the slice a (the caller offsets a) into micro-panels of mr rows:
// dst[panel·mr·kc + p·mr + i] = op(A)[panel·mr + i][p].
func packA(dst []float32, transA bool, a []float32, lda, mc, kc, mr int) {
	for ir := 0; ir < mc; ir += mr {
		rows := min(mr, mc-ir)
		d := dst[ir*kc : ir*kc+mr*kc]
		if transA {
			// op(A)[i][p] = a[p·lda + i]: each step copies rows contiguous floats.
			if rows == 14 && mr == 14 {
				// The AVX-512 kernel's full panels: a fixed-size array copy
				// is a few inline moves, where copy() calls memmove for
				// each 56-byte step (a training step's weight gradients
				// pack their transposed A this way).
				for p := 0; p < kc; p++ {
					*(*[14]float32)(d[p*14:]) = [14]float32(a[p*lda+ir:])
				}
				continue
			}
			for p := 0; p < kc; p++ {
				dp := d[p*mr : p*mr+mr]
				copy(dp, a[p*lda+ir:p*lda+ir+rows])
				clear(dp[rows:])
			}
			continue
		}
		// op(A)[i][p] = a[i·lda + p]: read each row sequentially, scatter
		// with stride mr (the writes stay within a few L1 lines).
		for i := 0; i < rows; i++ {
			src := a[(ir+i)*lda : (ir+i)*lda+kc]
			for p, v := range src {
				d[p*mr+i] = v
			}
		}
		if rows < mr {
			for p := 0; p < kc; p++ {
				clear(d[p*mr+rows : p*mr+mr])
			}
		}
	}
}

// packB packs the kc×nc block of op(B) starting at op(B)[0][0] of the slice
// b into micro-panels of up to nr columns; the panel starting at column jr
// begins at dst[jr·kc] and has width w = panel(cols), so
// dst[jr·kc + p·w + j] = op(B)[p][jr + j].
//
// tr, if not nil, is a fast 16×16 block transpose used for transposed B.
func packB(dst []float32, transB bool, b []float32, ldb, kc, nc, nr int, panel func(int) int, tr func(src []float32, lds int, dst []float32, ldd int, groups int)) {
	for jr := 0; jr < nc; jr += nr {
		cols := min(nr, nc-jr)
		w := panel(cols)
		d := dst[jr*kc : jr*kc+w*kc]
		if !transB {
			// op(B)[p][j] = b[p·ldb + j]: contiguous row pieces.
			for p := 0; p < kc; p++ {
				dp := d[p*w : p*w+w]
				copy(dp, b[p*ldb+jr:p*ldb+jr+cols])
				clear(dp[cols:])
			}
			continue
		}
		// op(B)[p][j] = b[j·ldb + p].
		p0 := 0
		if tr != nil && cols == w && w%16 == 0 && kc >= 16 {
			// Whole 16×16 blocks in registers; the scalar loop below
			// finishes the last kc%16 steps.
			g := kc / 16
			for h := 0; h < w; h += 16 {
				tr(b[(jr+h)*ldb:], ldb, d[h:], w, g)
			}
			p0 = 16 * g
		}
		if p0 < kc {
			// Read each stored row sequentially.
			for j := 0; j < cols; j++ {
				src := b[(jr+j)*ldb+p0 : (jr+j)*ldb+kc]
				for p, v := range src {
					d[(p0+p)*w+j] = v
				}
			}
		}
		if cols < w {
			for p := 0; p < kc; p++ {
				clear(d[p*w+cols : p*w+w])
			}
		}
	}
}
