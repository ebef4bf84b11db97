package half

import (
	"math"
	"strconv"
)

// BF16 rounds f to the nearest bfloat16 (ties to even) and returns its
// bits. NaN becomes a quiet NaN with f's sign and leading payload bits;
// ±Inf, ±0 and subnormals are kept.
func BF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 { // NaN: truncate, set the quiet bit
		return uint16(b>>16) | 0x40
	}
	// Adding 0x7fff plus the lowest kept bit rounds to nearest, ties to
	// even; a carry out of the mantissa bumps the exponent, up to Inf.
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// BF16ToFloat32 returns the float32 value of the bfloat16 bits h (exact).
func BF16ToFloat32(h uint16) float32 {
	return math.Float32frombits(uint32(h) << 16)
}

// F16 rounds f to the nearest IEEE 754 binary16 value (ties to even) and
// returns its bits. Values beyond the binary16 range round to ±Inf;
// values below its normal range become binary16 subnormals (or ±0); NaN
// becomes a quiet NaN with f's sign and leading payload bits.
func F16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	abs := b & 0x7fffffff
	switch {
	case abs > 0x7f800000: // NaN
		return sign | 0x7e00 | uint16(abs>>13)&0x3ff
	case abs >= 0x477ff000: // ≥ 65520 (half-way above the largest finite, 65504), or Inf
		return sign | 0x7c00
	case abs >= 0x38800000: // ≥ 2⁻¹⁴: normal in binary16
		// Rebias the exponent (127 → 15) and round the 13 dropped bits.
		r := abs - (127-15)<<23
		r += 0xfff + (r>>13)&1
		return sign | uint16(r>>13)
	case abs < 0x33000000: // < 2⁻²⁵: rounds to zero (2⁻²⁵ itself is a tie to even, 0)
		return sign
	}
	// Subnormal result: the value in units of 2⁻²⁴ is m·2^(e-150+24) with
	// the implicit bit restored; shift right by s and round to even.
	e := abs >> 23
	m := abs&0x7fffff | 0x800000
	s := 126 - e // 14 … 24 for e in [102, 112]
	h := m >> s
	rem := m & (1<<s - 1)
	half := uint32(1) << (s - 1)
	if rem > half || rem == half && h&1 == 1 {
		h++ // may carry into the smallest normal, which is then correct
	}
	return sign | uint16(h)
}

// F16ToFloat32 returns the float32 value of the binary16 bits h (exact).
// NaN stays NaN, made quiet, its payload kept in the leading mantissa
// bits.
func F16ToFloat32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	man := uint32(h & 0x3ff)
	switch exp {
	case 0x1f: // Inf or NaN (made quiet, as IEEE conversions and VCVTPH2PS do)
		if man != 0 {
			man |= 0x200
		}
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	case 0:
		if man == 0 {
			return math.Float32frombits(sign)
		}
		// Subnormal: man·2⁻²⁴, exact in float32.
		v := float32(man) * (1.0 / (1 << 24))
		if sign != 0 {
			v = -v
		}
		return v
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | man<<13)
}

// BF16FromFloat32s stores BF16(src[i]) in dst[i] for every i. It panics if
// len(dst) < len(src).
func BF16FromFloat32s(dst []uint16, src []float32) {
	checkLen("BF16FromFloat32s", len(dst), len(src))
	bf16FromFloat32s(dst[:len(src)], src)
}

// BF16ToFloat32s stores BF16ToFloat32(src[i]) in dst[i] for every i. It
// panics if len(dst) < len(src).
func BF16ToFloat32s(dst []float32, src []uint16) {
	checkLen("BF16ToFloat32s", len(dst), len(src))
	bf16ToFloat32s(dst[:len(src)], src)
}

// F16FromFloat32s stores F16(src[i]) in dst[i] for every i. It panics if
// len(dst) < len(src).
func F16FromFloat32s(dst []uint16, src []float32) {
	checkLen("F16FromFloat32s", len(dst), len(src))
	f16FromFloat32s(dst[:len(src)], src)
}

// F16ToFloat32s stores F16ToFloat32(src[i]) in dst[i] for every i. It
// panics if len(dst) < len(src).
func F16ToFloat32s(dst []float32, src []uint16) {
	checkLen("F16ToFloat32s", len(dst), len(src))
	f16ToFloat32s(dst[:len(src)], src)
}

func checkLen(fn string, ld, ls int) {
	if ld < ls {
		panic("half: " + fn + ": len(dst) = " + strconv.Itoa(ld) + " < len(src) = " + strconv.Itoa(ls))
	}
}

// The pure-Go twins of the vector forms.

func bf16FromFloat32sGo(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = BF16(v)
	}
}

func bf16ToFloat32sGo(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = BF16ToFloat32(v)
	}
}

func f16FromFloat32sGo(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = F16(v)
	}
}

func f16ToFloat32sGo(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = F16ToFloat32(v)
	}
}
