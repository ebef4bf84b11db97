package ops

import (
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
