package gemm

// Packing copies a block of op(A) or op(B) into the order the micro-kernel
// reads it, so the kernel's inner loop walks memory strictly sequentially
// whatever the transposes and leading dimensions were. Partial panels are
// zero-padded: padding lanes are computed but never stored, and zeros keep
// them finite.

// packA packs the mc×kc block of op(A) whose top-left element is op(A)[0][0]
// of the slice a (the caller offsets a) into micro-panels of mr rows:
// dst[panel·mr·kc + p·mr + i] = op(A)[panel·mr + i][p].
//
// tr, if not nil, packs a transposed A (a kernel's vector routine, for its
// own mr); nil uses packATGo.
func packA(dst []float32, transA bool, a []float32, lda, mc, kc, mr int, tr func(dst, a []float32, lda, mc, kc int)) {
	if transA {
		if tr != nil {
			tr(dst, a, lda, mc, kc)
		} else {
			packATGo(dst, a, lda, mc, kc, mr)
		}
		return
	}
	for ir := 0; ir < mc; ir += mr {
		rows := min(mr, mc-ir)
		d := dst[ir*kc : ir*kc+mr*kc]
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

// packATGo packs a transposed A block, op(A)[i][p] = a[p·lda + i], as
// packA does; it is the pure-Go twin of the kernels' packAT routines.
//
// Step p of every panel comes from the same stored row p of A, so it walks
// A row by row, each source line read once and in order, and copies a
// piece of mr floats into each panel with a plain loop: copy() would call
// memmove for every piece, which for the usual mr of 4 to 14 costs more
// than the copy (a training step's weight gradients dW = dYᵀ·X pack their
// whole dY this way).
func packATGo(dst, a []float32, lda, mc, kc, mr int) {
	full := mc - mc%mr
	for p := 0; p < kc; p++ {
		src := a[p*lda : p*lda+mc]
		for ir := 0; ir < full; ir += mr {
			s := src[ir : ir+mr]
			d := dst[ir*kc+p*mr : ir*kc+p*mr+mr]
			for i, v := range s {
				d[i] = v
			}
		}
		if full < mc {
			d := dst[full*kc+p*mr : full*kc+p*mr+mr]
			n := copy(d, src[full:])
			clear(d[n:])
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
