package fuse

import (
	"math"

	"github.com/sporeml/spore/internal/kernels/vec"
)

// Op is an elementwise operation. Operands are A, B, C in that order; Imm is
// an immediate constant for the ops that say so. Comparisons produce 1 or 0.
type Op uint8

// The ops. Those with a vec kernel run vectorised; the rest are plain Go
// loops over the block (still one pass over memory, just not SIMD).
const (
	_          Op = iota
	Copy          // A
	Add           // A + B
	Sub           // A - B
	Mul           // A · B
	Div           // A / B
	Max           // max(A, B), NaN if either is NaN
	Min           // min(A, B), NaN if either is NaN
	Pow           // A^B (math.Pow in float64)
	Neg           // -A
	Abs           // |A|
	Exp           // e^A (vec.Exp, ≤ 1.01 ulp)
	Log           // ln A
	Log1p         // ln(1+A)
	Sqrt          // √A
	Rsqrt         // 1/√A
	Square        // A²
	Reciprocal    // 1/A
	Tanh          // tanh A (vec.Tanh)
	Sigmoid       // 1/(1+e^-A) (vec.Sigmoid)
	Relu          // max(A, 0), NaN propagates (vec.Relu)
	ReluGrad      // B where A > 0, else 0 (vec.ReluGrad: A is the forward input, B the gradient)
	Gelu          // A·Φ(A) (vec.Gelu)
	Softplus      // ln(1+e^A), computed without overflow
	Sign          // -1, 0 or 1 (NaN for NaN)
	Sin           // sin A
	Cos           // cos A
	Select        // B where A ≠ 0, else C
	Greater       // 1 where A > B, else 0
	Less          // 1 where A < B, else 0
	Equal         // 1 where A = B, else 0
	AddScalar     // A + Imm
	MulScalar     // A · Imm
	MaxScalar     // max(A, Imm) (a lower clip)
	MinScalar     // min(A, Imm) (an upper clip)
	PowScalar     // A^Imm
	MulAdd        // A·B + C (rounded twice: the result matches Mul then Add)
	numOps
)

var opNames = [...]string{
	Copy: "Copy", Add: "Add", Sub: "Sub", Mul: "Mul", Div: "Div", Max: "Max", Min: "Min", Pow: "Pow",
	Neg: "Neg", Abs: "Abs", Exp: "Exp", Log: "Log", Log1p: "Log1p", Sqrt: "Sqrt", Rsqrt: "Rsqrt",
	Square: "Square", Reciprocal: "Reciprocal", Tanh: "Tanh", Sigmoid: "Sigmoid", Relu: "Relu",
	ReluGrad: "ReluGrad", Gelu: "Gelu", Softplus: "Softplus", Sign: "Sign", Sin: "Sin", Cos: "Cos",
	Select: "Select", Greater: "Greater", Less: "Less", Equal: "Equal", AddScalar: "AddScalar",
	MulScalar: "MulScalar", MaxScalar: "MaxScalar", MinScalar: "MinScalar", PowScalar: "PowScalar",
	MulAdd: "MulAdd",
}

// String returns the op's name.
func (o Op) String() string {
	if o > 0 && o < numOps {
		return opNames[o]
	}
	return "Op(?)"
}

// Arity returns how many register operands the op reads (A, then B, then C).
func (o Op) Arity() int {
	if o > 0 && o < numOps {
		return opTable[o].arity
	}
	return 0
}

type opEntry struct {
	arity int
	// fn computes one block: d = op(a, b, c; imm). len(a), len(b), len(c)
	// ≥ len(d) for the operands the op reads; d may alias any of them.
	fn func(d, a, b, c []float32, imm float32)
}

var opTable = [numOps]opEntry{
	Copy:       {1, func(d, a, b, c []float32, imm float32) { copy(d, a) }},
	Add:        {2, func(d, a, b, c []float32, imm float32) { vec.Add(d, a, b) }},
	Sub:        {2, func(d, a, b, c []float32, imm float32) { vec.Sub(d, a, b) }},
	Mul:        {2, func(d, a, b, c []float32, imm float32) { vec.Mul(d, a, b) }},
	Div:        {2, func(d, a, b, c []float32, imm float32) { vec.Div(d, a, b) }},
	Max:        {2, func(d, a, b, c []float32, imm float32) { zip(d, a, b, func(x, y float32) float32 { return max(x, y) }) }},
	Min:        {2, func(d, a, b, c []float32, imm float32) { zip(d, a, b, func(x, y float32) float32 { return min(x, y) }) }},
	Pow:        {2, func(d, a, b, c []float32, imm float32) { zip(d, a, b, pow32) }},
	Neg:        {1, func(d, a, b, c []float32, imm float32) { vec.MulScalar(d, a, -1) }},
	Abs:        {1, func(d, a, b, c []float32, imm float32) { each(d, a, abs32) }},
	Exp:        {1, func(d, a, b, c []float32, imm float32) { vec.Exp(d, a) }},
	Log:        {1, func(d, a, b, c []float32, imm float32) { each(d, a, log32) }},
	Log1p:      {1, func(d, a, b, c []float32, imm float32) { each(d, a, log1p32) }},
	Sqrt:       {1, func(d, a, b, c []float32, imm float32) { each(d, a, sqrt32) }},
	Rsqrt:      {1, func(d, a, b, c []float32, imm float32) { each(d, a, rsqrt32) }},
	Square:     {1, func(d, a, b, c []float32, imm float32) { vec.Mul(d, a, a) }},
	Reciprocal: {1, func(d, a, b, c []float32, imm float32) { each(d, a, func(x float32) float32 { return 1 / x }) }},
	Tanh:       {1, func(d, a, b, c []float32, imm float32) { vec.Tanh(d, a) }},
	Sigmoid:    {1, func(d, a, b, c []float32, imm float32) { vec.Sigmoid(d, a) }},
	Relu:       {1, func(d, a, b, c []float32, imm float32) { vec.Relu(d, a) }},
	ReluGrad:   {2, func(d, a, b, c []float32, imm float32) { vec.ReluGrad(d, a, b) }},
	Gelu:       {1, func(d, a, b, c []float32, imm float32) { vec.Gelu(d, a) }},
	Softplus:   {1, func(d, a, b, c []float32, imm float32) { each(d, a, softplus32) }},
	Sign:       {1, func(d, a, b, c []float32, imm float32) { each(d, a, sign32) }},
	Sin:        {1, func(d, a, b, c []float32, imm float32) { each(d, a, sin32) }},
	Cos:        {1, func(d, a, b, c []float32, imm float32) { each(d, a, cos32) }},
	Select:     {3, func(d, a, b, c []float32, imm float32) { sel(d, a, b, c) }},
	Greater: {2, func(d, a, b, c []float32, imm float32) {
		zip(d, a, b, func(x, y float32) float32 { return b2f(x > y) })
	}},
	Less: {2, func(d, a, b, c []float32, imm float32) {
		zip(d, a, b, func(x, y float32) float32 { return b2f(x < y) })
	}},
	Equal: {2, func(d, a, b, c []float32, imm float32) {
		zip(d, a, b, func(x, y float32) float32 { return b2f(x == y) })
	}},
	AddScalar: {1, func(d, a, b, c []float32, imm float32) { vec.AddScalar(d, a, imm) }},
	MulScalar: {1, func(d, a, b, c []float32, imm float32) { vec.MulScalar(d, a, imm) }},
	MaxScalar: {1, func(d, a, b, c []float32, imm float32) {
		each(d, a, func(x float32) float32 { return max(x, imm) })
	}},
	MinScalar: {1, func(d, a, b, c []float32, imm float32) {
		each(d, a, func(x float32) float32 { return min(x, imm) })
	}},
	PowScalar: {1, func(d, a, b, c []float32, imm float32) {
		each(d, a, func(x float32) float32 { return pow32(x, imm) })
	}},
	MulAdd: {3, func(d, a, b, c []float32, imm float32) { mulAdd(d, a, b, c) }},
}

// Eval applies op to whole slices (the unfused reference the tests compare
// against, and a convenience for callers that run a single op): dst[i] =
// op(a[i], b[i], c[i]; imm) for the operands the op reads.
func Eval(op Op, dst, a, b, c []float32, imm float32) {
	if op == 0 || op >= numOps {
		panic("fuse.Eval: unknown op")
	}
	opTable[op].fn(dst, a, b, c, imm)
}

func each(d, a []float32, f func(float32) float32) {
	a = a[:len(d)]
	for i, x := range a {
		d[i] = f(x)
	}
}

func zip(d, a, b []float32, f func(x, y float32) float32) {
	a, b = a[:len(d)], b[:len(d)]
	for i := range d {
		d[i] = f(a[i], b[i])
	}
}

func sel(d, a, b, c []float32) {
	a, b, c = a[:len(d)], b[:len(d)], c[:len(d)]
	for i := range d {
		v := c[i]
		if a[i] != 0 {
			v = b[i]
		}
		d[i] = v
	}
}

// The ops without a float32 kernel go through float64 math: correctly
// rounded or nearly, but scalar. Built once so that no closure is made per
// block.
var (
	log32      = via64(math.Log)
	log1p32    = via64(math.Log1p)
	sqrt32     = via64(math.Sqrt)
	rsqrt32    = via64(rsqrt)
	softplus32 = via64(softplus)
	sin32      = via64(math.Sin)
	cos32      = via64(math.Cos)
)

func via64(f func(float64) float64) func(float32) float32 {
	return func(x float32) float32 { return float32(f(float64(x))) }
}

func abs32(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }

func b2f(b bool) float32 {
	if b {
		return 1
	}
	return 0
}

func sign32(x float32) float32 {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return x // ±0 and NaN
}

func pow32(x, y float32) float32 { return float32(math.Pow(float64(x), float64(y))) }

func rsqrt(x float64) float64 { return 1 / math.Sqrt(x) }

// softplus = max(x, 0) + log1p(e^-|x|): never overflows, exact for large |x|.
func softplus(x float64) float64 { return math.Max(x, 0) + math.Log1p(math.Exp(-math.Abs(x))) }

// mulAdd computes a·b into a stack buffer first, since d may alias c.
func mulAdd(d, a, b, c []float32) {
	var t [BlockSize]float32
	for lo := 0; lo < len(d); lo += BlockSize {
		hi := min(lo+BlockSize, len(d))
		tt := t[:hi-lo]
		vec.Mul(tt, a[lo:hi], b[lo:hi])
		vec.Add(d[lo:hi], tt, c[lo:hi])
	}
}
