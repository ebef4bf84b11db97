//go:build amd64 && !noasm

package gemm

import (
	"golang.org/x/sys/cpu"
)

// bf16AsmKernels returns the assembly bf16 kernels this CPU supports, best
// first: AMX where the CPU has AMX-BF16 and the operating system grants
// the process the tile state (see amxUsable), then AVX512-BF16.
func bf16AsmKernels() []*bf16Kernel {
	var ks []*bf16Kernel
	avx512 := cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VL
	if avx512 && cpu.X86.HasAMXTile && cpu.X86.HasAMXBF16 && amxUsable() {
		ks = append(ks, bf16AMX)
	}
	if avx512 && cpu.X86.HasAVX512BF16 {
		ks = append(ks, bf16DP)
		// A product of a few rows streams B through the core whatever
		// the kernel; VDPBF16PS does that at full width where an AMX tile
		// would compute 16 rows to keep one.
		bf16AMX.small, bf16AMX.smallRows = bf16DP, 4
	}
	return ks
}

// bf16AMX multiplies 32×32 blocks of C in four AMX accumulator tiles. A is
// packed row-major (the generic kernel's layout, so stripRowsGo is its
// twin), its rows padded to a multiple of 32 with zeros.
var bf16AMX = &bf16Kernel{
	name: "amx",
	// A k block of 512 keeps the 32 KiB B panel block in L2 with the
	// A block (64 rows: 64 KiB); interleaved runs of 1024³ put kc = 512
	// with mc of 32 to 128 ahead of kc = 256 or 1024.
	mc:    64,
	kc:    512,
	aRows: func(rows int) int { return (rows + 31) &^ 31 },
	packA: packARowsBF16,
	block: blockAMX,
}

// amxConfig is the tile configuration every AMX call loads: palette 1,
// tiles 0-7 of 16 rows × 64 bytes (C tiles of 16×16 float32, A tiles of
// 16 rows × 32 bf16, B tiles of 16 pair rows × 16 columns).
var amxConfig = func() *[64]byte {
	var c [64]byte
	c[0] = 1
	for t := 0; t < 8; t++ {
		c[16+2*t] = 64
		c[48+t] = 16
	}
	return &c
}()

// blockAMX is the AMX kernel's block: full 32-row blocks of C (and a
// full 16-row block after them) go straight to the tile kernels, 32 or 16
// rows at a time; ragged edges go through a 32×32 scratch block, the last
// rows (fewer than 16) with the 16-row kernel, so that no more than 15
// rows of padding are computed.
func blockAMX(rows, cols, kcp int, a, b []uint16, ps int, c []float32, ldc int, acc bool) {
	_ = a[(rows+31)/32*32*kcp-1]
	_ = b[((cols+31)/32-1)*ps+kcp*bf16NR-1]
	_ = c[(rows-1)*ldc+cols-1]
	iacc := 0
	if acc {
		iacc = 1
	}
	var t [32 * 32]float32
	full32 := rows / 32
	if full32 > 0 {
		amxSeg(&t, a, b, kcp, ps, c, ldc, cols, 0, full32, 32, 32, iacc)
	}
	i0 := full32 * 32
	if rows-i0 >= 16 {
		amxSeg(&t, a, b, kcp, ps, c, ldc, cols, i0, 1, 16, 16, iacc)
		i0 += 16
	}
	if rows > i0 {
		amxSeg(&t, a, b, kcp, ps, c, ldc, cols, i0, 1, 16, rows-i0, iacc)
	}
}

// amxSeg runs the rows [i0, i0+n·h) of a block in n blocks of h rows (32
// or 16): all rows of them when r == h, else a single block of which the
// first r rows are kept. Full blocks and panels go straight to C; the
// rest through the scratch block t.
func amxSeg(t *[32 * 32]float32, a, b []uint16, kcp, ps int, c []float32, ldc, cols, i0, n, h, r, acc int) {
	k32, fc := kcp/32, cols/32
	// Direct calls, not a func value: go:noescape holds only for those,
	// and t must stay on the stack.
	f := func(panels, blocks, k32 int, a *uint16, lda int, b *uint16, ps int, c *float32, ldc int, acc int) {
		if h == 16 {
			amxBlock16BF16(panels, blocks, k32, a, lda, b, ps, c, ldc, &amxConfig[0], acc)
		} else {
			amxBlockBF16(panels, blocks, k32, a, lda, b, ps, c, ldc, &amxConfig[0], acc)
		}
	}
	if r == h && fc > 0 {
		f(fc, n, k32, &a[i0*kcp], kcp*2, &b[0], ps*2, &c[i0*ldc], ldc*4, acc)
	}
	for blk := 0; blk < n; blk++ {
		r0 := i0 + blk*h
		j0 := fc * 32 // the ragged panel only, when the rows are full
		if r < h {
			j0 = 0
		}
		for ; j0 < cols; j0 += 32 {
			cc := min(32, cols-j0)
			ct := c[r0*ldc+j0:]
			if acc != 0 {
				for i := 0; i < r; i++ {
					copy(t[i*32:i*32+cc], ct[i*ldc:i*ldc+cc])
				}
			}
			f(1, 1, k32, &a[r0*kcp], kcp*2, &b[j0/32*ps], ps*2, &t[0], 32*4, acc)
			for i := 0; i < r; i++ {
				copy(ct[i*ldc:i*ldc+cc], t[i*32:i*32+cc])
			}
		}
	}
}

// bf16DP is the AVX512-BF16 kernel: 14×32 micro-tiles of C in 28 zmm
// accumulators, one VDPBF16PS per 16 columns, row and k pair.
var bf16DP = &bf16Kernel{
	name:  "avx512bf16",
	mc:    14 * 8,
	kc:    256,
	aRows: func(rows int) int { return (rows + 13) / 14 * 14 },
	packA: packAPairsBF16,
	block: blockDP,
}

// dpbf16 holds the VDPBF16PS micro-kernels by row count.
var dpbf16 = [...]func(kq int, a *uint16, b *uint16, c *float32, ldc int, acc int, mask uint32){
	dpbf16R1, dpbf16R2, dpbf16R3, dpbf16R4, dpbf16R5, dpbf16R6, dpbf16R7,
	dpbf16R8, dpbf16R9, dpbf16R10, dpbf16R11, dpbf16R12, dpbf16R13, dpbf16R14,
}

// blockDP runs the VDPBF16PS micro-kernel over the block, panel by panel
// (a B micro-panel then stays in L1 across the A panels); column masks
// absorb a ragged last panel.
func blockDP(rows, cols, kcp int, a, b []uint16, ps int, c []float32, ldc int, acc bool) {
	const mr = 14
	kq := kcp / 2
	_ = a[(rows+mr-1)/mr*mr*kcp-1]
	_ = b[((cols+31)/32-1)*ps+kcp*bf16NR-1]
	_ = c[(rows-1)*ldc+cols-1]
	iacc := 0
	if acc {
		iacc = 1
	}
	for j0 := 0; j0 < cols; j0 += 32 {
		mask := uint32(1<<min(32, cols-j0) - 1)
		bp := &b[j0/32*ps]
		for i0 := 0; i0 < rows; i0 += mr {
			r := min(mr, rows-i0)
			dpbf16[r-1](kq, &a[i0*kcp], bp, &c[i0*ldc+j0], ldc*4, iacc, mask)
		}
	}
}

//go:noescape
func amxBlockBF16(panels, blocks, k32 int, a *uint16, lda int, b *uint16, ps int, c *float32, ldc int, cfg *byte, acc int)

//go:noescape
func amxBlock16BF16(panels, blocks, k32 int, a *uint16, lda int, b *uint16, ps int, c *float32, ldc int, cfg *byte, acc int)

//go:noescape
func dpbf16R1(kq int, a *uint16, b *uint16, c *float32, ldc int, acc int, mask uint32)

//go:noescape
func dpbf16R2(kq int, a *uint16, b *uint16, c *float32, ldc int, acc int, mask uint32)

//go:noescape
func dpbf16R3(kq int, a *uint16, b *uint16, c *float32, ldc int, acc int, mask uint32)

//go:noescape
func dpbf16R4(kq int, a *uint16, b *uint16, c *float32, ldc int, acc int, mask uint32)

//go:noescape
func dpbf16R5(kq int, a *uint16, b *uint16, c *float32, ldc int, acc int, mask uint32)

//go:noescape
func dpbf16R6(kq int, a *uint16, b *uint16, c *float32, ldc int, acc int, mask uint32)

//go:noescape
func dpbf16R7(kq int, a *uint16, b *uint16, c *float32, ldc int, acc int, mask uint32)

//go:noescape
func dpbf16R8(kq int, a *uint16, b *uint16, c *float32, ldc int, acc int, mask uint32)

//go:noescape
func dpbf16R9(kq int, a *uint16, b *uint16, c *float32, ldc int, acc int, mask uint32)

//go:noescape
func dpbf16R10(kq int, a *uint16, b *uint16, c *float32, ldc int, acc int, mask uint32)

//go:noescape
func dpbf16R11(kq int, a *uint16, b *uint16, c *float32, ldc int, acc int, mask uint32)

//go:noescape
func dpbf16R12(kq int, a *uint16, b *uint16, c *float32, ldc int, acc int, mask uint32)

//go:noescape
func dpbf16R13(kq int, a *uint16, b *uint16, c *float32, ldc int, acc int, mask uint32)

//go:noescape
func dpbf16R14(kq int, a *uint16, b *uint16, c *float32, ldc int, acc int, mask uint32)

//go:noescape
func interleaveBF16(src *uint16, ld int, dst *uint16, kq int, idx *uint16)

//go:noescape
func transposeDW16(src *uint16, lds int, dst *uint16, ldd int, groups int)

// interleaveIdx holds the VPERMI2W indices that interleave two rows of 32
// bf16 (a: 0-31, b: 32-63) into pairs: columns 0-15, then 16-31.
var interleaveIdx = func() *[64]uint16 {
	var x [64]uint16
	for j := 0; j < 16; j++ {
		x[2*j], x[2*j+1] = uint16(j), uint16(32+j)
		x[32+2*j], x[32+2*j+1] = uint16(16+j), uint16(48+j)
	}
	return &x
}()

// packPairsAsm, for an AVX-512 CPU, packs kq pair rows of a full 32-column
// panel from bf16 rows ld elements apart (interleaving rows 2q and 2q+1)
// and reports whether it did.
func packPairsAsm(dst, src []uint16, ld, kq int) bool {
	if !bf16PackAsm || kq == 0 {
		return false
	}
	_ = src[(2*kq-1)*ld+bf16NR-1]
	_ = dst[kq*2*bf16NR-1]
	interleaveBF16(&src[0], ld*2, &dst[0], kq, &interleaveIdx[0])
	return true
}

// transposePairsAsm, for an AVX-512 CPU, packs 16·groups pair rows of a
// full 32-column panel from a transposed B: panel column j is the bf16 row
// src[j·ld:], its pairs adjacent. It reports whether it did.
func transposePairsAsm(dst, src []uint16, ld, groups int) bool {
	if !bf16PackAsm || groups == 0 {
		return false
	}
	_ = src[31*ld+32*groups-1]
	_ = dst[16*groups*2*bf16NR-1]
	transposeDW16(&src[0], ld*2, &dst[0], 2*bf16NR*2, groups)
	transposeDW16(&src[16*ld], ld*2, &dst[bf16NR], 2*bf16NR*2, groups)
	return true
}

// bf16PackAsm selects the AVX-512 packing routines.
var bf16PackAsm = cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW

// dpbf16Peak runs n iterations of 24 independent VDPBF16PS (768
// multiply-adds each).
//
//go:noescape
func dpbf16Peak(n int)
