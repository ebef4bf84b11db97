package half

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestBF16Edges(t *testing.T) {
	tests := []struct {
		name string
		in   uint32 // float32 bits
		want uint16
	}{
		{"+0", 0x00000000, 0x0000},
		{"-0", 0x80000000, 0x8000},
		{"+Inf", 0x7f800000, 0x7f80},
		{"-Inf", 0xff800000, 0xff80},
		{"one", 0x3f800000, 0x3f80},
		{"quiet NaN", 0x7fc00000, 0x7fc0},
		{"signalling NaN becomes quiet", 0x7f800001, 0x7fc0},
		{"negative NaN payload kept", 0xffa50000, 0xffe5},
		{"tie rounds to even (down)", 0x3f808000, 0x3f80},
		{"tie rounds to even (up)", 0x3f818000, 0x3f82},
		{"above tie rounds up", 0x3f808001, 0x3f81},
		{"below tie rounds down", 0x3f807fff, 0x3f80},
		{"max float32 rounds to Inf", 0x7f7fffff, 0x7f80},
		{"largest bf16 kept", 0x7f7f0000, 0x7f7f},
		{"subnormal kept", 0x00010000, 0x0001},
		{"subnormal tie to even", 0x00018000, 0x0002},
		{"smallest subnormal rounds to zero", 0x00000001, 0x0000},
		{"negative subnormal", 0x807f0000, 0x807f},
		{"subnormal rounds up to normal", 0x007fffff, 0x0080},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := BF16(math.Float32frombits(tt.in))
			if got != tt.want {
				t.Errorf("BF16(%#08x) = %#04x, want %#04x", tt.in, got, tt.want)
			}
		})
	}
}

func TestF16Edges(t *testing.T) {
	tests := []struct {
		name string
		in   float32
		want uint16
	}{
		{"+0", 0, 0x0000},
		{"-0", float32(math.Copysign(0, -1)), 0x8000},
		{"+Inf", float32(math.Inf(1)), 0x7c00},
		{"-Inf", float32(math.Inf(-1)), 0xfc00},
		{"one", 1, 0x3c00},
		{"-2", -2, 0xc000},
		{"largest finite", 65504, 0x7bff},
		{"just below overflow tie", 65519.996, 0x7bff},
		{"overflow tie rounds to Inf", 65520, 0x7c00},
		{"large overflows to -Inf", -1e9, 0xfc00},
		{"max float32 to Inf", math.MaxFloat32, 0x7c00},
		{"smallest normal", 1.0 / (1 << 14), 0x0400},
		{"largest subnormal", 1023.0 / (1 << 24), 0x03ff},
		{"smallest subnormal", 1.0 / (1 << 24), 0x0001},
		{"half smallest subnormal ties to 0", 1.0 / (1 << 25), 0x0000},
		{"just above half smallest rounds up", math.Float32frombits(0x33000001), 0x0001},
		{"1.5 smallest subnormal ties to 2", 3.0 / (1 << 25), 0x0002},
		{"2.5 smallest subnormal ties to 2", 5.0 / (1 << 25), 0x0002},
		{"subnormal rounds up to smallest normal", 1023.75 / (1 << 24), 0x0400},
		{"float32 subnormal to 0", math.Float32frombits(1), 0x0000},
		{"negative float32 subnormal to -0", -math.Float32frombits(1), 0x8000},
		{"tie to even down", 1 + 1.0/2048, 0x3c00},
		{"tie to even up", 1 + 3.0/2048, 0x3c02},
		{"rounding carries into exponent", 4095.0 / 2048, 0x4000},
		{"quiet NaN", math.Float32frombits(0x7fc00000), 0x7e00},
		{"signalling NaN becomes quiet, payload kept", math.Float32frombits(0x7f802000), 0x7e01},
		{"negative NaN", math.Float32frombits(0xffc00000), 0xfe00},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := F16(tt.in)
			if got != tt.want {
				t.Errorf("F16(%g = %#08x) = %#04x, want %#04x", tt.in, math.Float32bits(tt.in), got, tt.want)
			}
		})
	}
}

// f16Value is an independent decoding of binary16 bits, in float64.
func f16Value(h uint16) float64 {
	s := 1.0
	if h&0x8000 != 0 {
		s = -1
	}
	e := int(h>>10) & 0x1f
	m := float64(h & 0x3ff)
	switch e {
	case 0x1f:
		if m != 0 {
			return math.NaN()
		}
		return s * math.Inf(1)
	case 0:
		return s * math.Ldexp(m, -24)
	}
	return s * math.Ldexp(1+m/1024, e-15)
}

func TestToFloat32Exhaustive(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		got := float64(F16ToFloat32(h))
		want := f16Value(h)
		if math.IsNaN(want) {
			if !math.IsNaN(got) {
				t.Fatalf("F16ToFloat32(%#04x) = %g, want NaN", h, got)
			}
		} else if got != want || math.Signbit(got) != math.Signbit(want) {
			t.Fatalf("F16ToFloat32(%#04x) = %g, want %g", h, got, want)
		}
		// Round trips are exact for every non-NaN value, and NaN stays NaN.
		if back := F16(float32(got)); !math.IsNaN(want) && back != h {
			t.Fatalf("F16(F16ToFloat32(%#04x)) = %#04x", h, back)
		}
		if b := BF16(BF16ToFloat32(h)); BF16ToFloat32(h) == BF16ToFloat32(h) && b != h {
			t.Fatalf("BF16(BF16ToFloat32(%#04x)) = %#04x", h, b)
		}
		if v := BF16ToFloat32(h); math.Float32bits(v) != uint32(h)<<16 {
			t.Fatalf("BF16ToFloat32(%#04x) bits %#08x", h, math.Float32bits(v))
		}
	}
}

// checkNearest verifies that bits h (decoded by dec, with next/prev
// neighbours h±1 in magnitude) is a correctly rounded (nearest, ties to
// even) value of x.
func checkNearest(t *testing.T, name string, x float32, h uint16, dec func(uint16) float64, maxBits uint16) {
	t.Helper()
	xv := float64(x)
	if math.IsNaN(xv) {
		if v := dec(h); !math.IsNaN(v) {
			t.Fatalf("%s(NaN %#08x) = %#04x, not NaN", name, math.Float32bits(x), h)
		}
		return
	}
	got := dec(h)
	if math.Signbit(got) != math.Signbit(xv) {
		t.Fatalf("%s(%g) = %#04x: sign lost", name, x, h)
	}
	mag := h & 0x7fff
	err := math.Abs(xv - got)
	if math.IsInf(got, 0) {
		// Inf is right only if x is at or beyond the tie above the largest finite value.
		largest := math.Abs(dec(maxBits))
		below := math.Abs(dec(maxBits - 1))
		limit := largest + (largest-below)/2
		if math.Abs(xv) < limit {
			t.Fatalf("%s(%g) = Inf, below overflow threshold %g", name, x, limit)
		}
		return
	}
	for _, nb := range []uint16{mag - 1, mag + 1} {
		if nb > maxBits || (mag == 0 && nb == 0xffff) {
			continue
		}
		o := math.Abs(xv - math.Abs(dec(nb)))
		if o < err || (o == err && mag&1 == 1) {
			t.Fatalf("%s(%g = %#08x) = %#04x (%g), but %#04x (%g) is nearer or the even tie",
				name, x, math.Float32bits(x), h, got, nb, dec(nb))
		}
	}
}

func TestRoundingRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 200000
	if testing.Short() {
		n = 20000
	}
	for i := 0; i < n; i++ {
		var x float32
		switch i % 3 {
		case 0: // any bit pattern
			x = math.Float32frombits(r.Uint32())
		case 1: // near binary16's range
			x = float32(r.NormFloat64() * math.Ldexp(1, r.IntN(40)-26))
		case 2: // exact ties and near-ties of binary16 and bfloat16
			x = math.Float32frombits(r.Uint32()&0xffffe000 | []uint32{0x1000, 0x0fff, 0x1001}[r.IntN(3)])
		}
		checkNearest(t, "F16", x, F16(x), f16Value, 0x7bff)
		checkNearest(t, "BF16", x, BF16(x), func(h uint16) float64 { return float64(BF16ToFloat32(h)) }, 0x7f7f)
	}
}

// sample returns float32 inputs covering the special values and random
// bit patterns, for the slice forms.
func sample(n int, r *rand.Rand) []float32 {
	xs := []float32{0, float32(math.Copysign(0, -1)), 1, -1, float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.NaN()), math.Float32frombits(0x7f800001), math.Float32frombits(0xffa50000),
		math.Float32frombits(1), math.Float32frombits(0x00018000), 65504, 65520, 1.0 / (1 << 25), math.MaxFloat32,
		math.Float32frombits(0x3f808000), math.Float32frombits(0x3f818000)}
	for len(xs) < n {
		if len(xs)%2 == 0 {
			xs = append(xs, math.Float32frombits(r.Uint32()))
		} else {
			xs = append(xs, float32(r.NormFloat64()*100))
		}
	}
	return xs
}

func TestSliceFormsMatchScalar(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	// Lengths around the vector widths exercise the tails.
	for _, n := range []int{0, 1, 7, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 1000} {
		src := sample(n, r)[:n]
		h := make([]uint16, n+1)
		h[n] = 0xdead
		BF16FromFloat32s(h, src)
		for i, v := range src {
			if h[i] != BF16(v) {
				t.Fatalf("n=%d: BF16FromFloat32s[%d] = %#04x, BF16 = %#04x", n, i, h[i], BF16(v))
			}
		}
		f := make([]float32, n+1)
		f[n] = 42
		BF16ToFloat32s(f, h[:n])
		for i := range n {
			if math.Float32bits(f[i]) != math.Float32bits(BF16ToFloat32(h[i])) {
				t.Fatalf("n=%d: BF16ToFloat32s[%d] = %#08x", n, i, math.Float32bits(f[i]))
			}
		}
		F16FromFloat32s(h, src)
		for i, v := range src {
			if h[i] != F16(v) {
				t.Fatalf("n=%d: F16FromFloat32s[%d] of %#08x = %#04x, F16 = %#04x", n, i, math.Float32bits(v), h[i], F16(v))
			}
		}
		F16ToFloat32s(f, h[:n])
		for i := range n {
			if math.Float32bits(f[i]) != math.Float32bits(F16ToFloat32(h[i])) {
				t.Fatalf("n=%d: F16ToFloat32s[%d] of %#04x = %#08x, want %#08x", n, i, h[i], math.Float32bits(f[i]), math.Float32bits(F16ToFloat32(h[i])))
			}
		}
		if h[n] != 0xdead || f[n] != 42 {
			t.Fatalf("n=%d: slice form wrote past len(src)", n)
		}
	}
}

func TestSliceFormsShortDst(t *testing.T) {
	tests := []struct {
		name string
		f    func()
	}{
		{"BF16FromFloat32s", func() { BF16FromFloat32s(make([]uint16, 2), make([]float32, 3)) }},
		{"BF16ToFloat32s", func() { BF16ToFloat32s(make([]float32, 2), make([]uint16, 3)) }},
		{"F16FromFloat32s", func() { F16FromFloat32s(make([]uint16, 2), make([]float32, 3)) }},
		{"F16ToFloat32s", func() { F16ToFloat32s(make([]float32, 2), make([]uint16, 3)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				r := recover()
				msg, _ := r.(string)
				want := "half: " + tt.name + ": len(dst) = 2 < len(src) = 3"
				if msg != want {
					t.Errorf("panic %v, want %q", r, want)
				}
			}()
			tt.f()
		})
	}
}

// TestSliceFormsWide compares the slice forms (assembly where the CPU has
// it) with the scalar conversions on every 16-bit pattern and on a million
// float32 patterns drawn across the whole range, NaN payloads and
// subnormals included.
func TestSliceFormsWide(t *testing.T) {
	t.Logf("slice forms: %s", Kernel())
	all := make([]uint16, 1<<16)
	for i := range all {
		all[i] = uint16(i)
	}
	f := make([]float32, len(all))
	BF16ToFloat32s(f, all)
	for i, h := range all {
		if math.Float32bits(f[i]) != math.Float32bits(BF16ToFloat32(h)) {
			t.Fatalf("BF16ToFloat32s(%#04x) = %#08x", h, math.Float32bits(f[i]))
		}
	}
	F16ToFloat32s(f, all)
	for i, h := range all {
		if math.Float32bits(f[i]) != math.Float32bits(F16ToFloat32(h)) {
			t.Fatalf("F16ToFloat32s(%#04x) = %#08x, want %#08x", h, math.Float32bits(f[i]), math.Float32bits(F16ToFloat32(h)))
		}
	}
	r := rand.New(rand.NewPCG(5, 6))
	n := 1 << 20
	if testing.Short() {
		n = 1 << 16
	}
	src := make([]float32, n)
	for i := range src {
		b := r.Uint32()
		if i%4 == 1 { // small exponents: float32 and binary16 subnormals
			b = b&0x807fffff | uint32(r.IntN(0x40))<<23
		}
		src[i] = math.Float32frombits(b)
	}
	h := make([]uint16, n)
	BF16FromFloat32s(h, src)
	for i, v := range src {
		if h[i] != BF16(v) {
			t.Fatalf("BF16FromFloat32s(%#08x) = %#04x, BF16 = %#04x", math.Float32bits(v), h[i], BF16(v))
		}
	}
	F16FromFloat32s(h, src)
	for i, v := range src {
		if h[i] != F16(v) {
			t.Fatalf("F16FromFloat32s(%#08x) = %#04x, F16 = %#04x", math.Float32bits(v), h[i], F16(v))
		}
	}
}
