package gemm

import "github.com/sporeml/spore/internal/kernels/vec"

// Act selects the activation fused into [SgemmBiasAct].
type Act uint8

const (
	// ActNone applies no activation: C = op(A)·op(B) + bias.
	ActNone Act = iota
	// ActReLU applies max(x, 0); NaN stays NaN.
	ActReLU
	// ActGELU applies the exact (erf) GELU, x·½·(1 + erf(x/√2)), not the
	// tanh approximation: vec.Gelu, the framework's GELU op itself
	// (accurate to 6.5 ulp; see package vec).
	ActGELU
)

// String returns the activation's name.
func (a Act) String() string {
	switch a {
	case ActNone:
		return "none"
	case ActReLU:
		return "relu"
	case ActGELU:
		return "gelu"
	}
	return "Act(" + itoa(int(a)) + ")"
}

// geluTile applies GELU in place to a rows×cols block of c, right after a
// micro-kernel wrote it, while it is still in L1. It runs vec.Gelu, the
// float32 GELU of the framework (the GELU op's body, vectorised with
// AVX-512 where the CPU has it), so the fused epilogue computes what the
// op computes, bit for bit.
func geluTile(c []float32, ldc, rows, cols int) {
	for i := 0; i < rows; i++ {
		row := c[i*ldc : i*ldc+cols]
		vec.Gelu(row, row)
	}
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b [20]byte
	n := len(b)
	neg := i < 0
	if neg {
		i = -i
	}
	for i > 0 {
		n--
		b[n] = byte('0' + i%10)
		i /= 10
	}
	if neg {
		n--
		b[n] = '-'
	}
	return string(b[n:])
}
