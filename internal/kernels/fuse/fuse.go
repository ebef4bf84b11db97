package fuse

import (
	"fmt"
	"sync"

	"github.com/sporeml/spore/internal/kernels/parallel"
)

// BlockSize is the number of output elements a program computes per pass
// through its instructions. It trades L1 residency (2048 float32s are 8 KiB
// per register) against the per-instruction dispatch cost of ~15 ns, which
// at this size is amortised over enough vector work. Measured with
// BenchmarkChain5Ratio (best of 2000 interleaved runs, one thread), the
// fused/unfused speed-up of the 5-op chain was, by block size:
//
//	block     64×512   1024×1024
//	 256      0.45×     0.82×
//	 512      0.67×     1.20×
//	1024      0.81×     1.35×
//	2048      1.04×     1.31×
//
// On this machine L2 is nearly as fast as L1 for streaming kernels, so
// fusion only pays once the unfused temporaries leave L2.
const BlockSize = 2048

// parallelBlocks is the smallest number of blocks a thread is given: below
// 16 blocks (32 Ki elements) the hand-off costs more than a second core saves.
const parallelBlocks = 16

// Mode says how an input is indexed by output element i.
type Mode uint8

const (
	// Full: Data[i]; len(Data) ≥ n. It may be the same slice as an output
	// (in-place), since each block is read before it is written.
	Full Mode = iota
	// Scalar: Data[0] for every i.
	Scalar
	// Row: Data[i % Period], a row broadcast along the leading axes (a bias).
	Row
	// Col: Data[i / Period], a column broadcast along the last axis (a
	// per-row statistic such as a softmax denominator).
	Col
)

// Input is one operand of a program, read through register i for the i-th
// input. Other broadcast patterns must be materialised by the caller.
type Input struct {
	Data   []float32
	Mode   Mode
	Period int // the row length for Row and Col; ignored otherwise
}

// Inst is one instruction: Dst = Op(A, B, C; Imm). Operands are register
// numbers; registers [0, NumInputs) hold the inputs and are read-only.
type Inst struct {
	Op      Op
	Dst     int
	A, B, C int
	Imm     float32
}

// Program is a fused chain of elementwise ops. It is plain data built by the
// graph compiler; Check validates it once, and Run executes it any number of
// times, concurrently if wanted.
type Program struct {
	Insts     []Inst
	NumInputs int   // registers [0, NumInputs) are the inputs
	NumRegs   int   // total registers, inputs included
	Outs      []int // registers copied to the outputs, in order
}

// Check reports the first structural error in p: a register out of range, a
// write to an input register, a read of a register before it is written, or
// an unknown op.
func (p *Program) Check() error {
	if p.NumInputs < 0 || p.NumRegs < p.NumInputs {
		return fmt.Errorf("fuse: %d registers for %d inputs", p.NumRegs, p.NumInputs)
	}
	written := make([]bool, p.NumRegs)
	for i := 0; i < p.NumInputs; i++ {
		written[i] = true
	}
	for k, in := range p.Insts {
		if in.Op == 0 || int(in.Op) >= len(opTable) {
			return fmt.Errorf("fuse: instruction %d: unknown op %d", k, in.Op)
		}
		if in.Dst < p.NumInputs || in.Dst >= p.NumRegs {
			return fmt.Errorf("fuse: instruction %d (%v): destination r%d is an input or out of range", k, in.Op, in.Dst)
		}
		ar := opTable[in.Op].arity
		for j, r := range [3]int{in.A, in.B, in.C} {
			if j >= ar {
				break
			}
			if r < 0 || r >= p.NumRegs || !written[r] {
				return fmt.Errorf("fuse: instruction %d (%v): operand r%d is out of range or not yet written", k, in.Op, r)
			}
		}
		written[in.Dst] = true
	}
	for _, r := range p.Outs {
		if r < 0 || r >= p.NumRegs || !written[r] {
			return fmt.Errorf("fuse: output register r%d is out of range or never written", r)
		}
	}
	return nil
}

// scratch is one goroutine's register file: a BlockSize buffer per register
// and the slice each register currently denotes (a buffer, or a window of a
// Full input, which is read without copying).
type scratch struct {
	buf  []float32
	view [][]float32
	// phase[i] is lo % Period of the block whose broadcast Row input i
	// currently fills its buffer (-1: none). When the period divides the
	// block size every block needs the same fill, so it is done once.
	phase []int
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

func getScratch(nregs int) *scratch {
	s := scratchPool.Get().(*scratch)
	if len(s.buf) < nregs*BlockSize {
		s.buf = make([]float32, nregs*BlockSize)
	}
	if len(s.view) < nregs {
		s.view = make([][]float32, nregs)
		s.phase = make([]int, nregs)
	}
	for i := range s.phase {
		s.phase[i] = -1
	}
	return s
}

func putScratch(s *scratch) {
	clear(s.view) // drop references to the caller's inputs
	scratchPool.Put(s)
}

// runner carries one parallel Run; fn is bound once when the runner is made
// so that handing it to parallel.For allocates nothing.
type runner struct {
	p    *Program
	outs [][]float32
	ins  []Input
	n    int
	fn   func(lo, hi int)
}

var runnerPool = sync.Pool{New: func() any {
	r := new(runner)
	r.fn = func(lo, hi int) { r.p.blocks(r.outs, r.ins, r.n, lo, hi) }
	return r
}}

// Run evaluates p for every element of the outputs: outs[k][i] gets register
// p.Outs[k] at element i. All outputs have the same length n; Full inputs
// must be at least that long. Large outputs are split over the
// parallel package's workers by blocks. Run allocates nothing in steady state
// and may be called concurrently. It panics (with a message naming the
// problem) on a malformed program or on inputs that do not fit.
func (p *Program) Run(outs [][]float32, ins []Input) {
	if len(outs) != len(p.Outs) {
		panic(fmt.Sprintf("fuse: %d outputs for a program with %d", len(outs), len(p.Outs)))
	}
	if len(ins) != p.NumInputs {
		panic(fmt.Sprintf("fuse: %d inputs for a program with %d", len(ins), p.NumInputs))
	}
	n := 0
	if len(outs) > 0 {
		n = len(outs[0])
	}
	for _, o := range outs {
		if len(o) != n {
			panic("fuse: outputs of different lengths")
		}
	}
	for i, in := range ins {
		if err := in.check(n); err != "" {
			panic(fmt.Sprintf("fuse: input %d: %s", i, err))
		}
	}
	nb := (n + BlockSize - 1) / BlockSize
	if nb < 2*parallelBlocks || parallel.Workers() < 2 {
		p.blocks(outs, ins, n, 0, nb)
		return
	}
	r := runnerPool.Get().(*runner)
	r.p, r.outs, r.ins, r.n = p, outs, ins, n
	parallel.For(nb, parallelBlocks, r.fn)
	r.p, r.outs, r.ins = nil, nil, nil
	runnerPool.Put(r)
}

func (in *Input) check(n int) string {
	switch in.Mode {
	case Full:
		if len(in.Data) < n {
			return fmt.Sprintf("Full input of %d elements for %d outputs", len(in.Data), n)
		}
	case Scalar:
		if len(in.Data) < 1 {
			return "empty Scalar input"
		}
	case Row:
		if in.Period < 1 || len(in.Data) < in.Period {
			return fmt.Sprintf("Row input of %d elements with period %d", len(in.Data), in.Period)
		}
	case Col:
		if in.Period < 1 || len(in.Data) < (n+in.Period-1)/in.Period {
			return fmt.Sprintf("Col input of %d elements with period %d for %d outputs", len(in.Data), in.Period, n)
		}
	default:
		return fmt.Sprintf("unknown mode %d", in.Mode)
	}
	return ""
}

// blocks runs blocks [b0, b1) on one goroutine.
func (p *Program) blocks(outs [][]float32, ins []Input, n, b0, b1 int) {
	s := getScratch(p.NumRegs)
	defer putScratch(s)
	bufOf := func(r int) []float32 { return s.buf[r*BlockSize : (r+1)*BlockSize] }
	// A Scalar input is the same in every block: fill its buffer once.
	for i, in := range ins {
		if in.Mode == Scalar {
			b := bufOf(i)
			for j := range b {
				b[j] = in.Data[0]
			}
		}
	}
	// The last instruction writes straight into its output when it defines
	// one: nothing reads after it, so even an output that is also a Full
	// input (in place) is safe, and a copy per block is saved.
	last, direct := len(p.Insts)-1, -1
	if last >= 0 {
		for k, r := range p.Outs {
			if r == p.Insts[last].Dst {
				direct = k
				break
			}
		}
	}
	for b := b0; b < b1; b++ {
		lo := b * BlockSize
		hi := min(lo+BlockSize, n)
		m := hi - lo
		for i := range ins {
			in := &ins[i]
			switch in.Mode {
			case Full:
				s.view[i] = in.Data[lo:hi]
			case Scalar:
				s.view[i] = bufOf(i)[:m]
			case Row:
				if ph := lo % in.Period; ph != s.phase[i] || m != BlockSize {
					s.view[i] = fillRow(bufOf(i)[:m], in.Data[:in.Period], lo)
					s.phase[i] = ph
					if m != BlockSize {
						s.phase[i] = -1
					}
				}
			case Col:
				s.view[i] = fillCol(bufOf(i)[:m], in.Data, in.Period, lo)
			}
		}
		for k := range p.Insts {
			in := &p.Insts[k]
			d := bufOf(in.Dst)[:m]
			if k == last && direct >= 0 {
				d = outs[direct][lo:hi]
			}
			e := &opTable[in.Op]
			var a, bb, c []float32
			switch e.arity {
			case 3:
				c = s.view[in.C]
				fallthrough
			case 2:
				bb = s.view[in.B]
				fallthrough
			case 1:
				a = s.view[in.A]
			}
			e.fn(d, a, bb, c, in.Imm)
			s.view[in.Dst] = d
		}
		for k, r := range p.Outs {
			if k != direct {
				copy(outs[k][lo:hi], s.view[r])
			}
		}
	}
}

// fillRow writes row[(lo+j) % len(row)] into dst[j], copying whole runs.
func fillRow(dst, row []float32, lo int) []float32 {
	if len(row) >= len(dst) && lo%len(row)+len(dst) <= len(row) {
		o := lo % len(row)
		return row[o : o+len(dst)] // the block lies within one row: no copy
	}
	j, o := 0, lo%len(row)
	for j < len(dst) {
		j += copy(dst[j:], row[o:])
		o = 0
	}
	return dst
}

// fillCol writes col[(lo+j) / period] into dst[j], one run per value.
func fillCol(dst, col []float32, period, lo int) []float32 {
	for j := 0; j < len(dst); {
		i := lo + j
		v := col[i/period]
		end := min(len(dst), j+period-i%period)
		for k := j; k < end; k++ {
			dst[k] = v
		}
		j = end
	}
	return dst
}
