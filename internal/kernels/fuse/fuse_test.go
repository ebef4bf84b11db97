package fuse

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sporeml/spore/internal/kernels/parallel"
	"github.com/sporeml/spore/internal/kernels/vec"
)

// materialise expands an input to a full slice of n elements.
func materialise(in Input, n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		switch in.Mode {
		case Full:
			out[i] = in.Data[i]
		case Scalar:
			out[i] = in.Data[0]
		case Row:
			out[i] = in.Data[i%in.Period]
		case Col:
			out[i] = in.Data[i/in.Period]
		}
	}
	return out
}

// reference runs p op by op over whole slices, every intermediate in memory.
func reference(p *Program, ins []Input, n int) [][]float32 {
	regs := make([][]float32, p.NumRegs)
	for i, in := range ins {
		regs[i] = materialise(in, n)
	}
	for _, in := range p.Insts {
		d := make([]float32, n)
		Eval(in.Op, d, regs[in.A], regs[in.B], regs[in.C], in.Imm)
		regs[in.Dst] = d
	}
	outs := make([][]float32, len(p.Outs))
	for k, r := range p.Outs {
		outs[k] = regs[r]
	}
	return outs
}

// randomProgram draws a valid program: each instruction reads registers that
// are already written and writes a fresh or reused non-input register.
func randomProgram(r *rand.Rand, nin int) *Program {
	nregs := nin + 1 + r.IntN(6)
	p := &Program{NumInputs: nin, NumRegs: nregs}
	written := []int{}
	for i := 0; i < nin; i++ {
		written = append(written, i)
	}
	ninst := 1 + r.IntN(12)
	for k := 0; k < ninst; k++ {
		op := Op(1 + r.IntN(int(numOps)-1))
		pick := func() int { return written[r.IntN(len(written))] }
		in := Inst{Op: op, Dst: nin + r.IntN(nregs-nin), A: pick(), B: pick(), C: pick(), Imm: float32(r.NormFloat64())}
		p.Insts = append(p.Insts, in)
		written = append(written, in.Dst)
	}
	p.Outs = []int{p.Insts[len(p.Insts)-1].Dst}
	if r.IntN(2) == 0 {
		p.Outs = append(p.Outs, written[nin+r.IntN(len(written)-nin)])
	}
	return p
}

func randomInputs(r *rand.Rand, nin, n int) []Input {
	ins := make([]Input, nin)
	period := 1 + r.IntN(700)
	for i := range ins {
		mode := Mode(r.IntN(4))
		var m int
		switch mode {
		case Full:
			m = n
		case Scalar:
			m = 1
		case Row:
			m = period
		case Col:
			m = (n + period - 1) / period
		}
		d := make([]float32, m)
		for j := range d {
			d[j] = float32(r.NormFloat64() * 2)
		}
		ins[i] = Input{Data: d, Mode: mode, Period: period}
	}
	return ins
}

func equal(a, b float32) bool {
	return a == b || (a != a && b != b)
}

func TestRandomPrograms(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	sizes := []int{1, 7, 511, 512, 513, 1500, 4096 + 33, 2*parallelBlocks*BlockSize + 77}
	for trial := 0; trial < 300; trial++ {
		nin := 1 + r.IntN(3)
		p := randomProgram(r, nin)
		if err := p.Check(); err != nil {
			t.Fatalf("generated program invalid: %v", err)
		}
		n := sizes[trial%len(sizes)]
		ins := randomInputs(r, nin, n)
		want := reference(p, ins, n)
		outs := make([][]float32, len(p.Outs))
		for k := range outs {
			outs[k] = make([]float32, n)
		}
		p.Run(outs, ins)
		for k := range outs {
			for i := range outs[k] {
				if !equal(outs[k][i], want[k][i]) {
					t.Fatalf("trial %d n=%d out %d elem %d: fused %v, op by op %v\nprogram %+v", trial, n, k, i, outs[k][i], want[k][i], p)
				}
			}
		}
	}
}

func TestInPlace(t *testing.T) {
	// out aliases the Full input x: y = relu(x·2 + 1) written over x.
	p := &Program{NumInputs: 1, NumRegs: 2, Outs: []int{1}, Insts: []Inst{
		{Op: MulScalar, Dst: 1, A: 0, Imm: 2},
		{Op: AddScalar, Dst: 1, A: 1, Imm: 1},
		{Op: Relu, Dst: 1, A: 1},
	}}
	x := make([]float32, 3000)
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	want := make([]float32, len(x))
	for i, v := range x {
		want[i] = max(2*v+1, 0)
	}
	p.Run([][]float32{x}, []Input{{Data: x}})
	for i := range x {
		if x[i] != want[i] {
			t.Fatalf("element %d = %v, want %v", i, x[i], want[i])
		}
	}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    Program
	}{
		{"write to input", Program{NumInputs: 1, NumRegs: 2, Insts: []Inst{{Op: Exp, Dst: 0, A: 0}}}},
		{"read before write", Program{NumInputs: 1, NumRegs: 3, Insts: []Inst{{Op: Add, Dst: 1, A: 0, B: 2}}}},
		{"unknown op", Program{NumInputs: 1, NumRegs: 2, Insts: []Inst{{Op: numOps, Dst: 1, A: 0}}}},
		{"bad output", Program{NumInputs: 1, NumRegs: 2, Outs: []int{1}}},
		{"too few registers", Program{NumInputs: 2, NumRegs: 1}},
	} {
		if err := tc.p.Check(); err == nil {
			t.Errorf("%s: Check accepted it", tc.name)
		}
	}
}

// chain5 is the benchmark's 5-op chain: ((relu(x + bias) · 0.5) - y)².
func chain5() *Program {
	return &Program{NumInputs: 3, NumRegs: 4, Outs: []int{3}, Insts: []Inst{
		{Op: Add, Dst: 3, A: 0, B: 1},
		{Op: Relu, Dst: 3, A: 3},
		{Op: MulScalar, Dst: 3, A: 3, Imm: 0.5},
		{Op: Sub, Dst: 3, A: 3, B: 2},
		{Op: Square, Dst: 3, A: 3},
	}}
}

func chain5Inputs(rows, cols int) (x, bias, y []float32) {
	r := rand.New(rand.NewPCG(3, 4))
	x, bias, y = make([]float32, rows*cols), make([]float32, cols), make([]float32, rows*cols)
	for i := range x {
		x[i], y[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
	}
	for i := range bias {
		bias[i] = float32(r.NormFloat64())
	}
	return
}

func TestAllocs(t *testing.T) {
	p := chain5()
	for _, rows := range []int{64, 1024} { // serial, and split over workers
		x, bias, y := chain5Inputs(rows, 512)
		out := make([]float32, len(x))
		outs := [][]float32{out}
		ins := []Input{{Data: x}, {Data: bias, Mode: Row, Period: 512}, {Data: y}}
		p.Run(outs, ins)
		if a := testing.AllocsPerRun(50, func() { p.Run(outs, ins) }); a != 0 && !raceEnabled {
			t.Errorf("rows=%d: %v allocations per Run", rows, a)
		}
		for i := range out {
			v := max(x[i]+bias[i%512], 0)*0.5 - y[i]
			if out[i] != v*v {
				t.Fatalf("rows=%d element %d = %v, want %v", rows, i, out[i], v*v)
			}
		}
	}
}

func TestOpsAgainstMath(t *testing.T) {
	xs := []float32{-3, -0.5, 0, 0.25, 2, float32(math.Inf(1)), float32(math.NaN())}
	ys := []float32{2, 2, -1, 0.25, 3, 1, 1}
	for _, tc := range []struct {
		op  Op
		ref func(x, y float64) float64
	}{
		{Max, math.Max}, {Min, math.Min}, {Pow, math.Pow},
		{Log, func(x, y float64) float64 { return math.Log(x) }},
		{Sqrt, func(x, y float64) float64 { return math.Sqrt(x) }},
		{Softplus, func(x, y float64) float64 { return math.Log1p(math.Exp(x)) }},
		{Sign, func(x, y float64) float64 {
			if x > 0 {
				return 1
			} else if x < 0 {
				return -1
			}
			return x
		}},
		{Greater, func(x, y float64) float64 { return map[bool]float64{true: 1}[x > y] }},
		{Abs, func(x, y float64) float64 { return math.Abs(x) }},
		{Neg, func(x, y float64) float64 { return -x }},
	} {
		d := make([]float32, len(xs))
		Eval(tc.op, d, xs, ys, nil, 0)
		for i := range d {
			want := float32(tc.ref(float64(xs[i]), float64(ys[i])))
			if !equal(d[i], want) && math.Abs(float64(d[i]-want)) > 1e-6*math.Abs(float64(want)) {
				t.Errorf("%v(%v, %v) = %v, want %v", tc.op, xs[i], ys[i], d[i], want)
			}
		}
	}
}

func BenchmarkChain5(b *testing.B) {
	for _, shape := range []struct {
		name       string
		rows, cols int
	}{{"64x512", 64, 512}, {"1024x1024", 1024, 1024}} {
		x, bias, y := chain5Inputs(shape.rows, shape.cols)
		out := make([]float32, len(x))
		p := chain5()
		p.Outs = []int{3}
		n := int64(len(x))
		b.Run(shape.name+"/fused", func(b *testing.B) {
			outs := [][]float32{out}
			ins := []Input{{Data: x}, {Data: bias, Mode: Row, Period: shape.cols}, {Data: y}}
			b.SetBytes(4 * 3 * n)
			for b.Loop() {
				p.Run(outs, ins)
			}
		})
		b.Run(shape.name+"/fused-1thread", func(b *testing.B) {
			old := parallel.SetWorkers(1)
			defer parallel.SetWorkers(old)
			outs := [][]float32{out}
			ins := []Input{{Data: x}, {Data: bias, Mode: Row, Period: shape.cols}, {Data: y}}
			b.SetBytes(4 * 3 * n)
			for b.Loop() {
				p.Run(outs, ins)
			}
		})
		b.Run(shape.name+"/unfused", func(b *testing.B) {
			t1 := make([]float32, len(x))
			b.SetBytes(4 * 3 * n)
			for b.Loop() {
				vec.AddRow(t1, x, bias)
				vec.Relu(t1, t1)
				vec.MulScalar(t1, t1, 0.5)
				vec.Sub(t1, t1, y)
				vec.Mul(out, t1, t1)
			}
		})
	}
}

// BenchmarkChain5Ratio interleaves fused and unfused runs and reports the
// ratio of their best times, which survives the noise of a shared machine
// better than two separate benchmarks.
func BenchmarkChain5Ratio(b *testing.B) {
	for _, shape := range []struct {
		name       string
		rows, cols int
	}{{"64x512", 64, 512}, {"1024x1024", 1024, 1024}} {
		b.Run(shape.name, func(b *testing.B) {
			old := parallel.SetWorkers(1)
			defer parallel.SetWorkers(old)
			x, bias, y := chain5Inputs(shape.rows, shape.cols)
			out, t1 := make([]float32, len(x)), make([]float32, len(x))
			p := chain5()
			outs := [][]float32{out}
			ins := []Input{{Data: x}, {Data: bias, Mode: Row, Period: shape.cols}, {Data: y}}
			best := [2]time.Duration{time.Hour, time.Hour}
			for b.Loop() {
				t0 := time.Now()
				p.Run(outs, ins)
				best[0] = min(best[0], time.Since(t0))
				t0 = time.Now()
				vec.AddRow(t1, x, bias)
				vec.Relu(t1, t1)
				vec.MulScalar(t1, t1, 0.5)
				vec.Sub(t1, t1, y)
				vec.Mul(out, t1, t1)
				best[1] = min(best[1], time.Since(t0))
			}
			b.ReportMetric(float64(best[0].Nanoseconds()), "fused-ns")
			b.ReportMetric(float64(best[1].Nanoseconds()), "unfused-ns")
			b.ReportMetric(float64(best[1])/float64(best[0]), "speedup")
		})
	}
}
