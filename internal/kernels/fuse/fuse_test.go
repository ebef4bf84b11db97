package fuse

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"

	"github.com/sporeml/spore/internal/kernels/parallel"
	"github.com/sporeml/spore/internal/kernels/vec"
)

// testBodies are block functions of the kinds the ops define: vectorised
// float32 kernels, a comparison, a selection, conversions both ways and a
// ternary op. The interpreter knows none of them; it only binds them.
var testBodies = []struct {
	name string
	body any
}{
	{"Add", vec.Add}, {"Sub", vec.Sub}, {"Mul", vec.Mul}, {"Div", vec.Div},
	{"Relu", vec.Relu}, {"Exp", vec.Exp}, {"Tanh", vec.Tanh}, {"Gelu", vec.Gelu}, {"ReluGrad", vec.ReluGrad},
	{"Greater", func(d []bool, a, b []float32) {
		for i := range d {
			d[i] = a[i] > b[i]
		}
	}},
	{"Select", func(d []float32, c []bool, a, b []float32) {
		for i := range d {
			v := b[i] // read every operand before writing: d may alias one
			if c[i] {
				v = a[i]
			}
			d[i] = v
		}
	}},
	{"Not", func(d, a []bool) {
		for i := range d {
			d[i] = !a[i]
		}
	}},
	{"ToF64", func(d []float64, a []float32) {
		for i := range d {
			d[i] = float64(a[i]) * 3
		}
	}},
	{"ToF32", func(d []float32, a []float64) {
		for i := range d {
			d[i] = float32(math.Sqrt(math.Abs(a[i])))
		}
	}},
	{"Clamp", func(d, x, lo, hi []float32) {
		for i := range d {
			d[i] = min(max(x[i], lo[i]), hi[i])
		}
	}},
}

// raw is a whole register or input of n elements, 8 bytes each so that any
// type fits, in the interpreter's raw form.
func raw(n int) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(make([]uint64, max(n, 1)))) }

// materialise expands an input to n elements in raw form.
func materialise(in Input, n int) (unsafe.Pointer, Type) {
	t, p, _, _ := slice(in.Data)
	sz := t.size()
	d := raw(n)
	for i := 0; i < n; i++ {
		j := i
		switch in.Mode {
		case Scalar:
			j = 0
		case Row:
			j = i % in.Period
		case Col:
			j = i / in.Period
		case Chan:
			j = (i / in.Inner) % in.Period
		}
		copy(unsafe.Slice((*byte)(unsafe.Add(d, i*sz)), sz), unsafe.Slice((*byte)(unsafe.Add(p, j*sz)), sz))
	}
	return d, t
}

// reference runs p op by op over whole slices, every intermediate in memory
// (the unfused computation: each body called once on all n elements).
func reference(p *Program, ins []Input, n int) []unsafe.Pointer {
	regs := make([]unsafe.Pointer, p.NumRegs)
	for i, in := range ins {
		regs[i], _ = materialise(in, n)
	}
	for _, in := range p.Insts {
		d := raw(n)
		var a [3]unsafe.Pointer
		rs := [3]int{in.A, in.B, in.C}
		for j, r := range rs[:in.Fn.Arity] {
			a[j] = regs[r]
		}
		in.Fn.call(d, &a, n)
		regs[in.Dst] = d
	}
	outs := make([]unsafe.Pointer, len(p.Outs))
	for k, r := range p.Outs {
		outs[k] = regs[r]
	}
	return outs
}

// randomProgram draws a valid program: each instruction reads registers of
// the types its body reads that are already written, and writes a fresh or
// reused non-input register.
func randomProgram(r *rand.Rand, in []Type) *Program {
	nin := len(in)
	nregs := nin + 1 + r.IntN(6)
	p := &Program{NumInputs: nin, InTypes: in, NumRegs: nregs}
	typ := make([]Type, nregs)
	copy(typ, in)
	ninst := 1 + r.IntN(12)
	for len(p.Insts) < ninst {
		b := testBodies[r.IntN(len(testBodies))]
		fn := MustBind(b.body)
		inst := Inst{Fn: fn, Name: b.name, Dst: nin + r.IntN(nregs-nin)}
		ok := true
		for j := 0; j < fn.Arity && ok; j++ {
			var cands []int
			for reg, t := range typ {
				if t == fn.Args[j] {
					cands = append(cands, reg)
				}
			}
			if len(cands) == 0 {
				ok = false
				break
			}
			*[3]*int{&inst.A, &inst.B, &inst.C}[j] = cands[r.IntN(len(cands))]
		}
		rs := [3]int{inst.A, inst.B, inst.C}
		for _, reg := range rs[:fn.Arity] {
			ok = ok && (reg != inst.Dst || typ[reg].size() == fn.Dst.size())
		}
		if !ok {
			continue
		}
		p.Insts = append(p.Insts, inst)
		typ[inst.Dst] = fn.Dst
	}
	p.Outs = []int{p.Insts[len(p.Insts)-1].Dst}
	if r.IntN(2) == 0 {
		var written []int
		for reg := nin; reg < nregs; reg++ {
			if typ[reg] != 0 {
				written = append(written, reg)
			}
		}
		p.Outs = append(p.Outs, written[r.IntN(len(written))])
	}
	return p
}

func randomInputs(r *rand.Rand, types []Type, n int) []Input {
	ins := make([]Input, len(types))
	period := 1 + r.IntN(700)
	inner := 1 + r.IntN(300)
	for i, t := range types {
		mode := Mode(r.IntN(5))
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
		case Chan:
			m = period
		}
		switch t {
		case Bool:
			d := make([]bool, m)
			for j := range d {
				d[j] = r.IntN(2) == 0
			}
			ins[i] = Input{Data: d, Mode: mode, Period: period, Inner: inner}
		default:
			d := make([]float32, m)
			for j := range d {
				d[j] = float32(r.NormFloat64() * 2)
			}
			ins[i] = Input{Data: d, Mode: mode, Period: period, Inner: inner}
		}
	}
	return ins
}

// newOut makes an output slice of type t.
func newOut(t Type, n int) any {
	switch t {
	case F32:
		return make([]float32, n)
	case F64:
		return make([]float64, n)
	case Bool:
		return make([]bool, n)
	}
	panic("newOut: " + t.String())
}

func TestRandomPrograms(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	sizes := []int{1, 7, 511, 512, 513, 1500, 4096 + 33, 2*parallelBlocks*BlockSize + 77}
	for trial := 0; trial < 300; trial++ {
		types := []Type{F32}
		for range r.IntN(3) {
			types = append(types, []Type{F32, F32, Bool}[r.IntN(3)])
		}
		p := randomProgram(r, types)
		if err := p.Check(); err != nil {
			t.Fatalf("generated program invalid: %v", err)
		}
		n := sizes[trial%len(sizes)]
		ins := randomInputs(r, types, n)
		want := reference(p, ins, n)
		outs := make([]any, len(p.Outs))
		for k := range outs {
			outs[k] = newOut(p.OutTypes()[k], n)
		}
		p.Run(outs, ins)
		for k := range outs {
			ot, got, _, _ := slice(outs[k])
			sz := ot.size()
			for i := 0; i < n; i++ {
				g := unsafe.Slice((*byte)(unsafe.Add(got, i*sz)), sz)
				w := unsafe.Slice((*byte)(unsafe.Add(want[k], i*sz)), sz)
				if string(g) != string(w) && !(ot == F32 && isNaN32(g) && isNaN32(w)) && !(ot == F64 && isNaN64(g) && isNaN64(w)) {
					t.Fatalf("trial %d n=%d out %d (%v) elem %d: fused %v, op by op %v\nprogram %+v", trial, n, k, ot, i, g, w, p)
				}
			}
		}
	}
}

// RunRange over consecutive ranges of random lengths (tiles) computes what
// Run computes over the whole output, bit for bit, for every mode: each
// operand is indexed by the element's position in the whole output.
func TestRunRange(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	sizes := []int{1, 3, 17, 2049, 3*BlockSize + 5, 2*parallelBlocks*BlockSize + 77}
	for trial := 0; trial < 120; trial++ {
		types := []Type{F32}
		for range r.IntN(3) {
			types = append(types, []Type{F32, F32, Bool}[r.IntN(3)])
		}
		p := randomProgram(r, types)
		if err := p.Check(); err != nil {
			t.Fatalf("generated program invalid: %v", err)
		}
		n := sizes[trial%len(sizes)]
		ins := randomInputs(r, types, n)
		whole, tiled := make([]any, len(p.Outs)), make([]any, len(p.Outs))
		for k := range whole {
			whole[k], tiled[k] = newOut(p.OutTypes()[k], n), newOut(p.OutTypes()[k], n)
		}
		p.Run(whole, ins)
		for lo := 0; lo < n; {
			hi := min(n, lo+1+r.IntN(max(1, n/3)))
			p.RunRange(tiled, ins, lo, hi)
			lo = hi
		}
		for k := range whole {
			ot, w, _, _ := slice(whole[k])
			_, g, _, _ := slice(tiled[k])
			sz := ot.size()
			a, b := unsafe.Slice((*byte)(g), n*sz), unsafe.Slice((*byte)(w), n*sz)
			for i := 0; i < n; i++ {
				ge, we := a[i*sz:(i+1)*sz], b[i*sz:(i+1)*sz]
				if string(ge) != string(we) && !(ot == F32 && isNaN32(ge) && isNaN32(we)) && !(ot == F64 && isNaN64(ge) && isNaN64(we)) {
					t.Fatalf("trial %d n=%d out %d elem %d: tiled %v, whole %v", trial, n, k, i, ge, we)
				}
			}
		}
	}
}

// RunRows over a random 2-D tiling (rows of a stretch of each channel's
// positions) computes what Run computes, bit for bit.
func TestRunRows(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for trial := 0; trial < 60; trial++ {
		types := []Type{F32}
		for range r.IntN(3) {
			types = append(types, []Type{F32, F32, Bool}[r.IntN(3)])
		}
		p := randomProgram(r, types)
		if err := p.Check(); err != nil {
			t.Fatalf("generated program invalid: %v", err)
		}
		chans, plane := 1+r.IntN(9), 1+r.IntN(3000)
		n := chans * plane
		ins := randomInputs(r, types, n)
		whole, tiled := make([]any, len(p.Outs)), make([]any, len(p.Outs))
		for k := range whole {
			whole[k], tiled[k] = newOut(p.OutTypes()[k], n), newOut(p.OutTypes()[k], n)
		}
		p.Run(whole, ins)
		// Tiles of a block of channels by a stretch of positions.
		cb, pb := 1+r.IntN(chans), 1+r.IntN(plane)
		for c0 := 0; c0 < chans; c0 += cb {
			for p0 := 0; p0 < plane; p0 += pb {
				p.RunRows(tiled, ins, c0*plane+p0, min(pb, plane-p0), min(cb, chans-c0), plane)
			}
		}
		for k := range whole {
			ot, w, _, _ := slice(whole[k])
			_, g, _, _ := slice(tiled[k])
			sz := ot.size()
			a, b := unsafe.Slice((*byte)(g), n*sz), unsafe.Slice((*byte)(w), n*sz)
			for i := 0; i < n; i++ {
				ge, we := a[i*sz:(i+1)*sz], b[i*sz:(i+1)*sz]
				if string(ge) != string(we) && !(ot == F32 && isNaN32(ge) && isNaN32(we)) && !(ot == F64 && isNaN64(ge) && isNaN64(we)) {
					t.Fatalf("trial %d %dx%d tiles %dx%d out %d elem %d: tiled %v, whole %v", trial, chans, plane, cb, pb, k, i, ge, we)
				}
			}
		}
	}
}

// RunRange refuses a range outside the outputs.
func TestRunRangeRefusesBadRange(t *testing.T) {
	p := chain5()
	x, bias, y := chain5Inputs(2, 8)
	outs := []any{make([]float32, 16)}
	ins := []Input{{Data: x}, {Data: bias, Mode: Row, Period: 8}, {Data: y}}
	for _, rg := range [][2]int{{-1, 4}, {5, 4}, {0, 17}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("range %v: no panic", rg)
				}
			}()
			p.RunRange(outs, ins, rg[0], rg[1])
		}()
	}
}

func isNaN32(b []byte) bool { v := *(*float32)(unsafe.Pointer(&b[0])); return v != v }
func isNaN64(b []byte) bool { v := *(*float64)(unsafe.Pointer(&b[0])); return v != v }

// scale is a body with the constant bound, as the compiler binds an op's
// scalar form.
func scale(s float32) func(d, a []float32) { return func(d, a []float32) { vec.MulScalar(d, a, s) } }
func shift(s float32) func(d, a []float32) { return func(d, a []float32) { vec.AddScalar(d, a, s) } }

func TestInPlace(t *testing.T) {
	// out aliases the Full input x: y = relu(x·2 + 1) written over x.
	p := &Program{NumInputs: 1, InTypes: []Type{F32}, NumRegs: 2, Outs: []int{1}, Insts: []Inst{
		{Fn: MustBind(scale(2)), Dst: 1, A: 0},
		{Fn: MustBind(shift(1)), Dst: 1, A: 1},
		{Fn: MustBind(vec.Relu), Dst: 1, A: 1},
	}}
	if err := p.Check(); err != nil {
		t.Fatal(err)
	}
	x := make([]float32, 3000)
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	want := make([]float32, len(x))
	for i, v := range x {
		want[i] = max(2*v+1, 0)
	}
	p.Run([]any{x}, []Input{{Data: x}})
	for i := range x {
		if x[i] != want[i] {
			t.Fatalf("element %d = %v, want %v", i, x[i], want[i])
		}
	}
}

func TestCheck(t *testing.T) {
	exp, add, gt := MustBind(vec.Exp), MustBind(vec.Add), MustBind(testBodies[9].body)
	f32 := []Type{F32}
	for _, tc := range []struct {
		name string
		p    Program
	}{
		{"write to input", Program{NumInputs: 1, InTypes: f32, NumRegs: 2, Insts: []Inst{{Fn: exp, Dst: 0, A: 0}}}},
		{"read before write", Program{NumInputs: 1, InTypes: f32, NumRegs: 3, Insts: []Inst{{Fn: add, Dst: 1, A: 0, B: 2}}}},
		{"unbound body", Program{NumInputs: 1, InTypes: f32, NumRegs: 2, Insts: []Inst{{Dst: 1, A: 0}}}},
		{"narrow over wide", Program{NumInputs: 1, InTypes: f32, NumRegs: 2, Insts: []Inst{
			{Fn: MustBind(testBodies[12].body), Dst: 1, A: 0}, {Fn: MustBind(testBodies[13].body), Dst: 1, A: 1}}}},
		{"wrong type", Program{NumInputs: 1, InTypes: f32, NumRegs: 3, Insts: []Inst{{Fn: gt, Dst: 1, A: 0, B: 0}, {Fn: exp, Dst: 2, A: 1}}}},
		{"input types", Program{NumInputs: 2, InTypes: f32, NumRegs: 3}},
		{"bad output", Program{NumInputs: 1, InTypes: f32, NumRegs: 2, Outs: []int{1}}},
		{"too few registers", Program{NumInputs: 2, InTypes: []Type{F32, F32}, NumRegs: 1}},
	} {
		if err := tc.p.Check(); err == nil {
			t.Errorf("%s: Check accepted it", tc.name)
		}
	}
}

func TestBind(t *testing.T) {
	for _, tc := range []struct {
		name  string
		body  any
		dst   Type
		arity int
		args  [3]Type
	}{
		{"unary", vec.Exp, F32, 1, [3]Type{F32}},
		{"binary f64", func(d, a, b []float64) {}, F64, 2, [3]Type{F64, F64}},
		{"ternary i32", func(d, a, b, c []int32) {}, I32, 3, [3]Type{I32, I32, I32}},
		{"comparison", func(d []bool, a, b []int64) {}, Bool, 2, [3]Type{I64, I64}},
		{"selection", func(d []uint8, c []bool, a, b []uint8) {}, U8, 3, [3]Type{Bool, U8, U8}},
		{"conversion", func(d []int64, a []float32) {}, I64, 1, [3]Type{F32}},
		{"predicate", func(d []bool, a []float64) {}, Bool, 1, [3]Type{F64}},
	} {
		fn, err := Bind(tc.body)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if fn.Dst != tc.dst || fn.Arity != tc.arity || fn.Args != tc.args {
			t.Errorf("%s: bound as %v %d %v, want %v %d %v", tc.name, fn.Dst, fn.Arity, fn.Args, tc.dst, tc.arity, tc.args)
		}
	}
	for _, bad := range []any{nil, 3, func(d []float32) {}, func(d, a []string) {}, func(d, a []float32, s float32) {}} {
		if _, err := Bind(bad); err == nil {
			t.Errorf("Bind(%T) accepted it", bad)
		}
	}
}

// chain5 is the benchmark's 5-op chain: ((relu(x + bias) · 0.5) - y)².
func chain5() *Program {
	p := &Program{NumInputs: 3, InTypes: []Type{F32, F32, F32}, NumRegs: 4, Outs: []int{3}, Insts: []Inst{
		{Fn: MustBind(vec.Add), Dst: 3, A: 0, B: 1},
		{Fn: MustBind(vec.Relu), Dst: 3, A: 3},
		{Fn: MustBind(scale(0.5)), Dst: 3, A: 3},
		{Fn: MustBind(vec.Sub), Dst: 3, A: 3, B: 2},
		{Fn: MustBind(func(d, a []float32) { vec.Mul(d, a, a) }), Dst: 3, A: 3},
	}}
	if err := p.Check(); err != nil {
		panic(err)
	}
	return p
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
		outs := []any{out}
		ins := []Input{{Data: x}, {Data: bias, Mode: Row, Period: 512}, {Data: y}}
		p.Run(outs, ins)
		if a := testing.AllocsPerRun(50, func() { p.Run(outs, ins) }); a != 0 {
			t.Errorf("rows=%d: %v allocations per Run", rows, a)
		}
		chans := []Input{{Data: x}, {Data: bias[:8], Mode: Chan, Period: 8, Inner: 64}, {Data: y}}
		if a := testing.AllocsPerRun(50, func() { p.RunRange(outs, chans, 512, len(x)) }); a != 0 {
			t.Errorf("rows=%d: %v allocations per RunRange", rows, a)
		}
		if a := testing.AllocsPerRun(50, func() { p.RunRows(outs, chans, 3, 100, 8, 64*8) }); a != 0 {
			t.Errorf("rows=%d: %v allocations per RunRows", rows, a)
		}
		p.Run(outs, ins)
		for i := range out {
			v := max(x[i]+bias[i%512], 0)*0.5 - y[i]
			if out[i] != v*v {
				t.Fatalf("rows=%d element %d = %v, want %v", rows, i, out[i], v*v)
			}
		}
	}
}

func TestRunRefusesMismatch(t *testing.T) {
	p := chain5()
	x, bias, y := chain5Inputs(4, 8)
	for _, tc := range []struct {
		name string
		outs []any
		ins  []Input
	}{
		{"output type", []any{make([]float64, len(x))}, []Input{{Data: x}, {Data: bias, Mode: Row, Period: 8}, {Data: y}}},
		{"input type", []any{make([]float32, len(x))}, []Input{{Data: x}, {Data: []int32{1}, Mode: Scalar}, {Data: y}}},
		{"short input", []any{make([]float32, len(x))}, []Input{{Data: x[:3]}, {Data: bias, Mode: Row, Period: 8}, {Data: y}}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Run accepted it", tc.name)
				}
			}()
			p.Run(tc.outs, tc.ins)
		}()
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
		n := int64(len(x))
		b.Run(shape.name+"/fused", func(b *testing.B) {
			outs := []any{out}
			ins := []Input{{Data: x}, {Data: bias, Mode: Row, Period: shape.cols}, {Data: y}}
			b.SetBytes(4 * 3 * n)
			for b.Loop() {
				p.Run(outs, ins)
			}
		})
		b.Run(shape.name+"/fused-1thread", func(b *testing.B) {
			old := parallel.SetWorkers(1)
			defer parallel.SetWorkers(old)
			outs := []any{out}
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
			outs := []any{out}
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
