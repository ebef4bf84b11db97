package core

import (
	"math"
	"strconv"
	"strings"
)

// Shape is the extent of each axis of a tensor, outermost first. A scalar
// has the empty shape.
type Shape []int

// Size is the number of elements: the product of the extents (1 for a scalar).
func (s Shape) Size() int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}

// CheckShape panics with an *Error naming op if s has a negative extent, or
// if a tensor of s with elements of dt would hold more bytes than an int can
// count: such a shape's Size wraps around, and a tensor made from it would
// silently hold no data.
func CheckShape(op string, dt DType, s Shape) {
	n := 1
	overflow := false
	for _, d := range s {
		switch {
		case d < 0:
			Panicf(op, "negative extent in shape %v", s)
		case d == 0:
			return // no elements, whatever the other extents
		case n > math.MaxInt/d:
			overflow = true
		default:
			n *= d
		}
	}
	if w := max(dt.Size(), 1); overflow || n > math.MaxInt/w {
		Panicf(op, "shape %v has too many elements: its size overflows", s)
	}
}

// Rank is the number of axes.
func (s Shape) Rank() int { return len(s) }

// Equal reports whether s and o have the same extents.
func (s Shape) Equal(o Shape) bool {
	if len(s) != len(o) {
		return false
	}
	for i := range s {
		if s[i] != o[i] {
			return false
		}
	}
	return true
}

// Clone returns a copy of s that does not share memory with it.
func (s Shape) Clone() Shape {
	if s == nil {
		return Shape{}
	}
	return append(Shape(make([]int, 0, len(s))), s...)
}

// Strides returns the row-major element strides of s.
func (s Shape) Strides() []int {
	st := make([]int, len(s))
	k := 1
	for i := len(s) - 1; i >= 0; i-- {
		st[i] = k
		k *= s[i]
	}
	return st
}

// String formats s as [64 784], the form error messages use.
func (s Shape) String() string { return s.join(" ") }

// join formats s in brackets with sep between the extents.
func (s Shape) join(sep string) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, d := range s {
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(strconv.Itoa(d))
	}
	b.WriteByte(']')
	return b.String()
}

// NormAxis maps a possibly negative axis into [0, rank), panicking with an
// *Error naming op if it is out of range.
func NormAxis(op string, axis, rank int) int {
	a := axis
	if a < 0 {
		a += rank
	}
	if a < 0 || a >= rank {
		Panicf(op, "axis %d out of range for rank %d", axis, rank)
	}
	return a
}
