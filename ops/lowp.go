package ops

import (
	"math"
	"unsafe"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/internal/kernels/half"
	"github.com/sporeml/spore/tensor"
)

// Low-precision floats (BFloat16, Float16). Their elements are raw bits,
// so no generic arithmetic kernel is instantiated for them; conversions
// go through float32, which holds every value of both types exactly.

// halfFloat is the set of 16-bit float element types.
type halfFloat interface {
	core.BF16 | core.F16
	Float32() float32
}

// isBF reports whether H is BF16 (else it is F16).
func isBF[H halfFloat]() bool {
	var z H
	_, ok := any(z).(core.BF16)
	return ok
}

// u16 views a buffer of 16-bit floats as the raw bits the conversion
// kernels take.
func u16[H halfFloat](b []H) []uint16 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*uint16)(unsafe.Pointer(&b[0])), len(b))
}

// roundTo rounds f to the 16-bit type H.
func roundTo[H halfFloat](f float32) H {
	if isBF[H]() {
		return H(core.BF16From(f))
	}
	return H(core.F16From(f))
}

// toHalf rounds each of a's values to the 16-bit type H through float32.
func toHalf[H halfFloat, T tensor.Number](d []H, a []T) {
	a = a[:len(d)]
	for i, v := range a {
		d[i] = roundTo[H](float32(v))
	}
}

// narrowFloat32s rounds float32 values to the 16-bit type H with the
// vectorised conversion.
func narrowFloat32s[H halfFloat](d []H, a []float32) {
	a = a[:len(d)]
	if isBF[H]() {
		half.BF16FromFloat32s(u16(d), a)
	} else {
		half.F16FromFloat32s(u16(d), a)
	}
}

// widen writes the float32 values of a's 16-bit floats into d.
func widen[H halfFloat](d []float32, a []H) {
	a = a[:len(d)]
	if isBF[H]() {
		half.BF16ToFloat32s(d, u16(a))
	} else {
		half.F16ToFloat32s(d, u16(a))
	}
}

// castHalf records the casts from BFloat16 and Float16 to every dtype, and
// from Bool to them (those from the numeric dtypes are castNumber's).
func castHalf() {
	// From Float32, the vectorised conversion (in place of castNumber's
	// element loop, which it matches bit for bit).
	castEntry(narrowFloat32s[core.BF16])
	castEntry(narrowFloat32s[core.F16])
	castFromHalf[core.BF16]()
	castFromHalf[core.F16]()
	castEntry(fromBoolHalf[core.BF16])
	castEntry(fromBoolHalf[core.F16])
}

func castFromHalf[H halfFloat]() {
	castEntry(widen[H])
	castEntry(fromHalf[H, float64])
	castEntry(fromHalf[H, int8])
	castEntry(fromHalf[H, int16])
	castEntry(fromHalf[H, int32])
	castEntry(fromHalf[H, int64])
	castEntry(fromHalf[H, uint8])
	castEntry(fromHalf[H, uint16])
	castEntry(fromHalf[H, uint32])
	castEntry(fromHalf[H, uint64])
	castEntry(func(d []bool, a []H) {
		a = a[:len(d)]
		for i, v := range a {
			d[i] = v.Float32() != 0
		}
	})
	castEntry(halfToHalf[H, core.BF16])
	castEntry(halfToHalf[H, core.F16])
}

// fromHalf converts 16-bit floats to a wider number type, through float32
// (and floatTo, for the integers).
func fromHalf[H halfFloat, U tensor.Number](d []U, a []H) {
	a = a[:len(d)]
	f := floatTo[U]()
	for i, v := range a {
		d[i] = f(float64(v.Float32()))
	}
}

// halfToHalf converts between the 16-bit types (a copy within one).
func halfToHalf[H, G halfFloat](d []G, a []H) {
	a = a[:len(d)]
	if isBF[H]() == isBF[G]() {
		copy(u16(d), u16(a))
		return
	}
	for i, v := range a {
		d[i] = roundTo[G](v.Float32())
	}
}

// fromBoolHalf converts Bool to a 16-bit float: true is 1.
func fromBoolHalf[H halfFloat](d []H, a []bool) {
	one := roundTo[H](1)
	a = a[:len(d)]
	for i, v := range a {
		d[i] = 0
		if v {
			d[i] = one
		}
	}
}

// TruncBFloat16Prim converts Float32 or Float64 to BFloat16 rounding
// toward zero: a float32's upper 16 bits (a Float64 is first rounded
// toward zero to float32), a NaN kept a quiet NaN. It exists for formats
// whose bfloat16 conversion truncates (ONNX's Cast before opset 19, whose
// reference implementation drops the low bits); Cast rounds to nearest
// even.
var TruncBFloat16Prim *core.Prim

func init() {
	TruncBFloat16Prim = core.Define(&core.Prim{
		Name:   "TruncBFloat16",
		Batch:  batchBroadcasting(&TruncBFloat16Prim),
		Traits: core.Traits{Cost: 1},
		Infer: func(_ any, in []*tensor.Tensor) tensor.Meta {
			x := in[0]
			if d := x.DType(); d != tensor.Float32 && d != tensor.Float64 && !d.IsHalf() {
				core.Panicf("TruncBFloat16", "unsupported dtype %v (shape %v); want a floating-point type", d, x.Shape())
			}
			return tensor.Meta{Shape: x.Shape(), DType: tensor.BFloat16}
		},
	})
	register[float32](TruncBFloat16Prim, func(_ any, in []*tensor.Tensor, out *tensor.Tensor) {
		d := out.Data().([]core.BF16)
		for i, v := range in[0].Data().([]float32)[:len(d)] {
			d[i] = truncBF16(v)
		}
	})
	// The 16-bit inputs have kernels of their own: a derived (widened)
	// kernel would hand this one a Float32 result buffer.
	register[core.BF16](TruncBFloat16Prim, func(_ any, in []*tensor.Tensor, out *tensor.Tensor) {
		copy(out.Data().([]core.BF16), in[0].Data().([]core.BF16))
	})
	register[core.F16](TruncBFloat16Prim, func(_ any, in []*tensor.Tensor, out *tensor.Tensor) {
		d := out.Data().([]core.BF16)
		for i, v := range in[0].Data().([]core.F16)[:len(d)] {
			d[i] = truncBF16(v.Float32()) // every float16 is exact in float32
		}
	})
	register[float64](TruncBFloat16Prim, func(_ any, in []*tensor.Tensor, out *tensor.Tensor) {
		d := out.Data().([]core.BF16)
		for i, v := range in[0].Data().([]float64)[:len(d)] {
			f := float32(v)
			if math.Abs(float64(f)) > math.Abs(v) { // rounded away from zero
				f = math.Nextafter32(f, 0)
			}
			d[i] = truncBF16(f)
		}
	})
}

// truncBF16 is the bfloat16 of v's upper 16 bits, quieting a NaN whose
// payload was in the low ones.
func truncBF16(v float32) core.BF16 {
	b := core.BF16(math.Float32bits(v) >> 16)
	if v != v {
		b |= 0x40
	}
	return b
}

// TruncBFloat16 converts a Float32 or Float64 tensor to BFloat16 rounding
// toward zero (see TruncBFloat16Prim); Cast is the rounding conversion.
func TruncBFloat16(x *tensor.Tensor) *tensor.Tensor { return core.Apply(TruncBFloat16Prim, nil, x) }
