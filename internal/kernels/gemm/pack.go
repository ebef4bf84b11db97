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
// Step p of a panel is a stretch of mr floats of stored row p. It fills
// one panel after another, so the stores form one sequential stream
// (filling all panels row by row measured slower: each row then starts a
// store stream per panel), and copies each stretch with a fixed-size array
// assignment where mr allows, a few register moves where copy() would call
// memmove for every stretch.
func packATGo(dst, a []float32, lda, mc, kc, mr int) {
	for ir := 0; ir < mc; ir += mr {
		rows := min(mr, mc-ir)
		d := dst[ir*kc : ir*kc+mr*kc]
		switch {
		case rows == 4 && mr == 4:
			for p := 0; p < kc; p++ {
				*(*[4]float32)(d[p*4:]) = [4]float32(a[p*lda+ir:])
			}
		case rows == 6 && mr == 6:
			// As 4 + 2: a [6]float32 assignment is itself a memmove call.
			for p := 0; p < kc; p++ {
				s := a[p*lda+ir:]
				*(*[4]float32)(d[p*6:]) = [4]float32(s)
				*(*[2]float32)(d[p*6+4:]) = [2]float32(s[4:])
			}
		default:
			for p := 0; p < kc; p++ {
				dp := d[p*mr : p*mr+mr]
				src := a[p*lda+ir : p*lda+ir+rows]
				for i, v := range src {
					dp[i] = v
				}
				for i := rows; i < mr; i++ {
					dp[i] = 0
				}
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
