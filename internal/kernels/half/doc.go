// Package half converts between float32 and the two 16-bit floating-point
// formats of mixed-precision training: bfloat16 (8 exponent bits, 7
// mantissa bits: float32's range at a quarter of its precision) and IEEE
// 754 binary16 ("fp16": 5 exponent bits, 10 mantissa bits).
//
// Values are raw bit patterns in uint16, so the package depends on nothing
// and kernels can store operands compactly. Every conversion from float32
// rounds to nearest, ties to even, and keeps what the target format can
// hold:
//
//   - NaN stays NaN (made quiet, sign and leading payload bits kept);
//   - ±Inf and ±0 are kept;
//   - subnormal results are kept (no flush to zero), in both formats;
//   - finite values too large for binary16 round to ±Inf (bfloat16 shares
//     float32's exponent range, so only values within half an ulp of the
//     float32 maximum round up to ±Inf).
//
// Conversions to float32 are exact (a signalling binary16 NaN comes back
// quiet).
//
// The slice forms ([BF16FromFloat32s] and friends) are vectorised with
// AVX-512 (bfloat16) and F16C (binary16) where the CPU has them, and run
// pure-Go twins elsewhere and under the noasm build tag; the two agree bit
// for bit, NaN payloads included. The bfloat16 rounding is done with
// integer vector operations rather than VCVTNEPS2BF16, because that
// instruction flushes subnormal inputs to zero and the slice forms must
// agree with the scalar ones.
package half
