package gemm

import "math"

// Act selects the activation fused into [SgemmBiasAct].
type Act uint8

const (
	// ActNone applies no activation: C = op(A)·op(B) + bias.
	ActNone Act = iota
	// ActReLU applies max(x, 0); NaN stays NaN.
	ActReLU
	// ActGELU applies the exact (erf) GELU, x·½·(1 + erf(x/√2)), the form
	// the framework's GELU op uses. erf is evaluated in float32 with a
	// rational approximation accurate to a few ulp (see erf32), not the
	// tanh approximation.
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

// erf32 approximates erf(x) in float32 as x·P(x²)/Q(x²) on [-4, 4]
// (erf is ±1 in float32 beyond), the minimax rational form used by Eigen and
// XLA for float32 erf. Its error is a few ulp, far below float32 GEMM
// rounding, and it costs a dozen multiply-adds instead of math.Erf's float64
// evaluation, which matters because GELU runs on every GEMM output.
func erf32(x float32) float32 {
	if x > 4 {
		x = 4
	} else if x < -4 {
		x = -4
	} else if x != x {
		return x
	}
	x2 := x * x
	p := float32(-2.72614225801306e-10)
	p = p*x2 + 2.77068142495902e-08
	p = p*x2 - 2.10102402082508e-06
	p = p*x2 - 5.69250639462346e-05
	p = p*x2 - 7.34990630326855e-04
	p = p*x2 - 2.95459980854025e-03
	p = p*x2 - 1.60960333262415e-02
	q := float32(-1.45660718464996e-05)
	q = q*x2 - 2.13374055278905e-04
	q = q*x2 - 1.68282697438203e-03
	q = q*x2 - 7.37332916720468e-03
	q = q*x2 - 1.42647390514189e-02
	return x * p / q
}

// gelu32 is the erf form of GELU in float32.
func gelu32(x float32) float32 {
	h := 0.5 * x
	return h + h*erf32(x*(math.Sqrt2/2))
}

// geluTile applies GELU in place to a rows×cols block of c, right after a
// micro-kernel wrote it, while it is still in L1. It is the Go twin of the
// vector epilogues (geluAVX512).
func geluTile(c []float32, ldc, rows, cols int) {
	for i := 0; i < rows; i++ {
		row := c[i*ldc : i*ldc+cols]
		for j, v := range row {
			row[j] = gelu32(v)
		}
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
