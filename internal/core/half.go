package core

import (
	"strconv"

	"github.com/sporeml/spore/internal/kernels/half"
)

// BF16 is one bfloat16 value held as its raw bits: the top half of a
// float32 (sign, 8 exponent bits, 7 significand bits). It is the element
// type of BFloat16 tensors. It is a distinct type, not a uint16, so that
// the element type of a buffer says how to read it, and it is outside
// Number so that no generic arithmetic kernel adds its bits as integers.
type BF16 uint16

// F16 is one IEEE 754 binary16 value held as its raw bits (sign, 5
// exponent bits, 10 significand bits): the element type of Float16
// tensors.
type F16 uint16

// BF16From rounds f to the nearest bfloat16 (ties to even). NaN stays a
// NaN and infinities are kept.
func BF16From(f float32) BF16 { return BF16(half.BF16(f)) }

// Float32 returns h's value, exactly.
func (h BF16) Float32() float32 { return half.BF16ToFloat32(uint16(h)) }

// String formats h's value in the shortest form that reads back as h.
func (h BF16) String() string { return shortHalf(float64(h.Float32()), 'g', roundBF16) }

// F16From rounds f to the nearest binary16 value (ties to even); values
// beyond the largest finite one (65504) become infinities, and values
// below the smallest normal one keep what subnormals can hold.
func F16From(f float32) F16 { return F16(half.F16(f)) }

// Float32 returns h's value, exactly.
func (h F16) Float32() float32 { return half.F16ToFloat32(uint16(h)) }

// String formats h's value in the shortest form that reads back as h.
func (h F16) String() string { return shortHalf(float64(h.Float32()), 'g', roundF16) }

// roundBF16 and roundF16 round a value to the 16-bit type and back: what
// survives a store into a tensor of that type.
func roundBF16(v float64) float64 { return float64(BF16From(float32(v)).Float32()) }
func roundF16(v float64) float64  { return float64(F16From(float32(v)).Float32()) }

// shortHalf formats v, a value of a 16-bit type whose rounding is round,
// with the fewest significant digits that round back to v — the form
// strconv gives float32 and float64 values, which it has no bit size for
// here (NumPy prints float16 values this way: 0.1, not 0.0999755859375).
// The format byte is strconv's ('e', 'f' or 'g').
func shortHalf(v float64, fmtc byte, round func(float64) float64) string {
	if v != v || v-v != 0 || v == 0 {
		return strconv.FormatFloat(v, fmtc, -1, 64)
	}
	for prec := 1; prec < 17; prec++ {
		s := strconv.FormatFloat(v, 'e', prec-1, 64)
		d, err := strconv.ParseFloat(s, 64)
		if err == nil && round(d) == v {
			// d has exactly the digits wanted; its own shortest form in
			// the requested notation spells them.
			return strconv.FormatFloat(d, fmtc, -1, 64)
		}
	}
	return strconv.FormatFloat(v, fmtc, -1, 64)
}
