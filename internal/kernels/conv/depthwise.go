package conv

import "github.com/sporeml/spore/internal/kernels/vec"

// Depthwise convolution: every output channel reads one input channel, so
// the convolution is kh·kw multiply-adds per output with no reduction over
// channels. Lowered to a GEMM per channel it is a 1×(kh·kw) by
// (kh·kw)×(outH·outW) product — one output row, nothing for the GEMM's
// register tiles to reuse — after an im2col that copies the plane kh·kw
// times. The direct kernel instead accumulates each output plane at the
// row pitch of a zero-padded copy of its input plane, so that each tap is
// one long vector multiply-add (vec.Axpy) over a block of output rows.
//
// Strides are handled by splitting the padded plane by phase: phase
// (a, b) holds the padded elements (sH·y + a, sW·x + b). Tap (ki, kj) of
// output (oy, ox) reads padded element (sH·oy + ki·dilH, sW·ox + kj·dilW),
// which is element (oy + ⌊ki·dilH/sH⌋, ox + ⌊kj·dilW/sW⌋) of phase
// (ki·dilH mod sH, kj·dilW mod sW): contiguous along the output row, so
// the multiply-add is a vector operation at any stride and dilation.

// depthwiseRows is the number of accumulator elements (a block of output
// rows at the phase pitch) the kernel works on at a time: small enough to
// stay in the L1 cache across the kh·kw passes over it.
const depthwiseRows = 2048

// depthwiseGeom returns the phase planes' geometry: ph rows (one spare)
// of pitch pw per phase, and the rows of output a block holds.
func depthwiseGeom(h, w, kh, kw, padT, padL, sH, sW, dilH, dilW, outH, outW int) (ph, pw, rows int) {
	hp := max(h+padT, (outH-1)*sH+(kh-1)*dilH+1)
	wp := max(w+padL, (outW-1)*sW+(kw-1)*dilW+1)
	ph, pw = (hp+sH-1)/sH+1, (wp+sW-1)/sW
	rows = max(1, min(outH, depthwiseRows/pw))
	return ph, pw, rows
}

// DepthwiseScratch returns the scratch length Depthwise needs.
func DepthwiseScratch(h, w, kh, kw, padT, padL, sH, sW, dilH, dilW, outH, outW int) int {
	ph, pw, rows := depthwiseGeom(h, w, kh, kw, padT, padL, sH, sW, dilH, dilW, outH, outW)
	return sH*sW*ph*pw + rows*pw
}

// Depthwise computes planes output channels of a convolution whose every
// output channel reads a single input channel: output plane p (outH×outW,
// at dst[p·outH·outW]) is the 2-D cross-correlation of input plane
// src[(p/mult)·h·w] (h×w) with the kh×kw window wt[p·kh·kw], at the given
// strides, dilations and top/left padding (bottom and right padding are
// implied by outH and outW):
//
//	dst[p,oy,ox] = Σ_{ki,kj} wt[p,ki,kj]·src[p/mult, sH·oy+ki·dilH−padT, sW·ox+kj·dilW−padL]
//
// with zero outside the input. mult is the number of output channels per
// input channel (1 for the usual depthwise convolution). scratch must hold
// DepthwiseScratch(...) elements. Each output is a chain of multiply-adds
// in the order of the taps, (ki, kj) row-major, from zero.
func Depthwise(dst, src, wt, scratch []float32, planes, mult, h, w, kh, kw, padT, padL, sH, sW, dilH, dilW, outH, outW int) {
	ph, pw, rows := depthwiseGeom(h, w, kh, kw, padT, padL, sH, sW, dilH, dilW, outH, outW)
	phaseLen := ph * pw
	check("Depthwise", mult >= 1 && len(scratch) >= sH*sW*phaseLen+rows*pw &&
		len(dst) >= planes*outH*outW && len(src) >= (planes+mult-1)/mult*h*w && len(wt) >= planes*kh*kw)
	phases := scratch[:sH*sW*phaseLen]
	acc := scratch[len(phases) : len(phases)+rows*pw]
	for p := range planes {
		if p%mult == 0 {
			depthwisePhases(phases, src[(p/mult)*h*w:(p/mult+1)*h*w], h, w, padT, padL, sH, sW, ph, pw)
		}
		wk := wt[p*kh*kw : (p+1)*kh*kw]
		out := dst[p*outH*outW : (p+1)*outH*outW]
		for r0 := 0; r0 < outH; r0 += rows {
			nr := min(rows, outH-r0)
			// The last row's columns past outW are not needed; leaving
			// them out keeps every read inside its phase plane.
			n := (nr-1)*pw + outW
			a := acc[:n]
			clear(a)
			for ki := range kh {
				dy := ki * dilH
				for kj := range kw {
					dx := kj * dilW
					ph0 := phases[((dy%sH)*sW+dx%sW)*phaseLen:]
					off := (r0+dy/sH)*pw + dx/sW
					vec.Axpy(a, ph0[off:off+n], wk[ki*kw+kj])
				}
			}
			for y := range nr {
				copy(out[(r0+y)*outW:(r0+y+1)*outW], a[y*pw:])
			}
		}
	}
}

// depthwisePhases writes the zero-padded plane img (h×w at offset (padT,
// padL)) split by phase into phases: phase (a, b) at
// phases[(a·sW+b)·ph·pw] holds padded element (sH·y+a, sW·x+b) at y·pw+x.
func depthwisePhases(phases, img []float32, h, w, padT, padL, sH, sW, ph, pw int) {
	clear(phases)
	if sH == 1 && sW == 1 {
		for y := range h {
			copy(phases[(y+padT)*pw+padL:], img[y*w:(y+1)*w])
		}
		return
	}
	phaseLen := ph * pw
	for y := range h {
		py := y + padT
		a, yy := py%sH, py/sH
		row := img[y*w : (y+1)*w]
		if sW == 2 {
			// Both column phases in one pass over the row.
			e := phases[(a*2+padL%2)*phaseLen+yy*pw+padL/2:]
			o := phases[(a*2+(padL+1)%2)*phaseLen+yy*pw+(padL+1)/2:]
			deinterleave(e[:(w+1)/2], o[:w/2], row)
			continue
		}
		for b := range sW {
			// Input columns x with (x+padL) mod sW == b land at
			// (x+padL)/sW of phase (a, b).
			x0 := (b - padL%sW + sW) % sW
			if x0 >= w {
				continue
			}
			d := phases[(a*sW+b)*phaseLen+yy*pw+(x0+padL)/sW:]
			n := (w - x0 + sW - 1) / sW
			d = d[:n]
			for i := range d {
				d[i] = row[x0+i*sW]
			}
		}
	}
}

// deinterleave sets even[i] = src[2i] and odd[i] = src[2i+1].
func deinterleave(even, odd, src []float32) {
	n := len(odd)
	src = src[:len(even)+n]
	even = even[:len(src)-n]
	i := 0
	for ; i+4 <= n; i += 4 {
		s := src[2*i : 2*i+8]
		e, o := even[i:i+4], odd[i:i+4]
		e[0], o[0], e[1], o[1] = s[0], s[1], s[2], s[3]
		e[2], o[2], e[3], o[3] = s[4], s[5], s[6], s[7]
	}
	for ; i < n; i++ {
		even[i], odd[i] = src[2*i], src[2*i+1]
	}
	if len(even) > n {
		even[n] = src[2*n]
	}
}
