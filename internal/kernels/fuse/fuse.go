package fuse

import (
	"fmt"
	"unsafe"

	"github.com/sporeml/spore/internal/freelist"

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
	// Chan: Data[(i / Inner) % Period], a value per channel of an NCHW
	// tensor (Period channels of Inner elements each) repeated over the
	// images: a convolution's bias or an inference BatchNorm's scale.
	Chan
)

// Input is one operand of a program, read through register i for the i-th
// input. Data is a slice of one of the element types (float32, float64,
// int32, int64, uint8, bool); other broadcast patterns must be
// materialised by the caller.
type Input struct {
	Data   any
	Mode   Mode
	Period int // the row length for Row and Col, the channel count for Chan
	Inner  int // the elements per channel for Chan; ignored otherwise
}

// Inst is one instruction: Dst = Fn(A, B, C), reading Fn.Arity operands.
// Operands are register numbers; registers [0, NumInputs) hold the inputs
// and are read-only. Name is what a dump prints for it.
type Inst struct {
	Fn      Fn
	Name    string
	Dst     int
	A, B, C int
}

// Program is a fused chain of elementwise ops. It is plain data built by the
// graph compiler; Check validates it once, and Run executes it any number of
// times, concurrently if wanted.
type Program struct {
	Insts     []Inst
	NumInputs int    // registers [0, NumInputs) are the inputs
	InTypes   []Type // the inputs' element types
	NumRegs   int    // total registers, inputs included
	Outs      []int  // registers copied to the outputs, in order
	outTypes  []Type // set by Check
}

// Check reports the first structural error in p: a register out of range, a
// write to an input register, a read of a register before it is written or
// holding another type than the instruction reads, a result written over
// an operand of another width, or an unbound body. Run
// requires a program that passed Check.
func (p *Program) Check() error {
	if p.NumInputs < 0 || p.NumRegs < p.NumInputs || len(p.InTypes) != p.NumInputs {
		return fmt.Errorf("fuse: %d registers for %d inputs of %d types", p.NumRegs, p.NumInputs, len(p.InTypes))
	}
	for i, t := range p.InTypes {
		if t == 0 || t >= numTypes {
			return fmt.Errorf("fuse: input %d has no element type (%v)", i, t)
		}
	}
	typ := make([]Type, p.NumRegs) // 0: not yet written
	copy(typ, p.InTypes)
	for k, in := range p.Insts {
		if in.Fn.call == nil || in.Fn.Arity < 1 || in.Fn.Arity > 3 {
			return fmt.Errorf("fuse: instruction %d (%s): no bound body", k, in.Name)
		}
		if in.Dst < p.NumInputs || in.Dst >= p.NumRegs {
			return fmt.Errorf("fuse: instruction %d (%s): destination r%d is an input or out of range", k, in.Name, in.Dst)
		}
		regs := [3]int{in.A, in.B, in.C}
		for j, r := range regs[:in.Fn.Arity] {
			if r < 0 || r >= p.NumRegs || typ[r] == 0 {
				return fmt.Errorf("fuse: instruction %d (%s): operand r%d is out of range or not yet written", k, in.Name, r)
			}
			if typ[r] != in.Fn.Args[j] {
				return fmt.Errorf("fuse: instruction %d (%s): operand r%d holds %v, the body reads %v", k, in.Name, r, typ[r], in.Fn.Args[j])
			}
			// Element i of the result may overwrite element i of an
			// operand only: a wider or narrower result would overwrite
			// elements not yet read.
			if r == in.Dst && typ[r].size() != in.Fn.Dst.size() {
				return fmt.Errorf("fuse: instruction %d (%s): writes its %v result over operand r%d of type %v", k, in.Name, in.Fn.Dst, r, typ[r])
			}
		}
		typ[in.Dst] = in.Fn.Dst
	}
	p.outTypes = p.outTypes[:0]
	for _, r := range p.Outs {
		if r < 0 || r >= p.NumRegs || typ[r] == 0 {
			return fmt.Errorf("fuse: output register r%d is out of range or never written", r)
		}
		p.outTypes = append(p.outTypes, typ[r])
	}
	return nil
}

// OutTypes returns the outputs' element types (after Check).
func (p *Program) OutTypes() []Type { return p.outTypes }

// regWords is the size of a register's block buffer in 8-byte words: a
// block of the widest type.
const regWords = BlockSize

// scratch is one goroutine's register file: a block buffer per register
// (wide enough for any type) and where each register's current block
// starts (its buffer, or a window of a Full input, read without copying).
type scratch struct {
	buf  []uint64
	view []unsafe.Pointer
	// phase[i] is lo % Period of the block whose broadcast Row input i
	// currently fills its buffer (-1: none). When the period divides the
	// block size every block needs the same fill, so it is done once.
	phase []int
	// args holds an instruction's operands for its call; it lives here
	// because a pointer handed to a function value escapes.
	args [3]unsafe.Pointer
}

var scratchPool freelist.List[scratch]

func getScratch(nregs int) *scratch {
	s := scratchPool.Get()
	if len(s.buf) < nregs*regWords {
		s.buf = make([]uint64, nregs*regWords)
	}
	if len(s.view) < nregs {
		s.view = make([]unsafe.Pointer, nregs)
		s.phase = make([]int, nregs)
	}
	for i := range s.phase {
		s.phase[i] = -1
	}
	return s
}

func putScratch(s *scratch) {
	clear(s.view) // drop references to the caller's inputs
	s.args = [3]unsafe.Pointer{}
	scratchPool.Put(s)
}

func (s *scratch) reg(r int) unsafe.Pointer { return unsafe.Pointer(&s.buf[r*regWords]) }

// operand is an input or output resolved for one Run.
type operand struct {
	p      unsafe.Pointer
	n      int
	t      Type
	mode   Mode
	period int
	inner  int
}

// runner carries one Run; fn is bound once when the runner is made so that
// handing it to parallel.For allocates nothing.
type runner struct {
	p    *Program
	ins  []operand
	outs []operand
	n    int
	lo   int // the first element computed: blocks are counted from it
	hi   int // one past the last element computed
	fn   func(lo, hi int)
}

var runnerPool = freelist.List[runner]{New: func() *runner {
	r := new(runner)
	r.fn = func(lo, hi int) { r.p.blocks(r, lo, hi) }
	return r
}}

// Run evaluates p for every element of the outputs: outs[k][i] gets register
// p.Outs[k] at element i. Outputs are slices of the program's output types,
// all of the same length n; Full inputs must be at least that long. Large
// outputs are split over the parallel package's workers by blocks. Run
// allocates nothing in steady state and may be called concurrently. It
// panics (with a message naming the problem) on a program that did not
// pass Check or on inputs and outputs that do not fit.
func (p *Program) Run(outs []any, ins []Input) { p.RunRange(outs, ins, 0, -1) }

// RunRange is Run restricted to the elements [lo, hi) of the outputs (hi <
// 0: to their end): every operand is indexed by the element's position in
// the whole output, so a Full input is read at the same offset, a Row at
// that position modulo its period, a Chan in that element's channel. A
// fused epilogue calls it on each tile of an anchor's output as soon as
// the tile is computed, while it is in cache; a tile of fewer than
// 2·16 blocks runs on the calling goroutine, so concurrent callers each
// keep their own tile. It allocates nothing in steady state.
func (p *Program) RunRange(outs []any, ins []Input, lo, hi int) {
	r, n := p.bind(outs, ins)
	defer release(r)
	if hi < 0 {
		hi = n
	}
	if lo < 0 || lo > hi || hi > n {
		panic(fmt.Sprintf("fuse: range [%d, %d) of %d outputs", lo, hi, n))
	}
	r.lo, r.hi = lo, hi
	nb := (hi - lo + BlockSize - 1) / BlockSize
	if nb < 2*parallelBlocks || parallel.Workers() < 2 {
		p.blocks(r, 0, nb)
		return
	}
	parallel.For(nb, parallelBlocks, r.fn)
}

// RunRows is RunRange over rows ranges of length elements each, the k-th
// starting at lo + k·stride, on the calling goroutine: a 2-D tile of the
// output (a convolution's block of channels by a stretch of positions),
// with the operands bound once for all its rows.
func (p *Program) RunRows(outs []any, ins []Input, lo, length, rows, stride int) {
	r, n := p.bind(outs, ins)
	defer release(r)
	if rows <= 0 || length <= 0 {
		return
	}
	if lo < 0 || stride < 0 || lo+(rows-1)*stride+length > n {
		panic(fmt.Sprintf("fuse: %d rows of %d from %d at stride %d overrun %d outputs", rows, length, lo, stride, n))
	}
	nb := (length + BlockSize - 1) / BlockSize
	for k := range rows {
		r.lo = lo + k*stride
		r.hi = r.lo + length
		p.blocks(r, 0, nb)
	}
}

// bind resolves outs and ins for one run into a pooled runner (release
// returns it) and returns the outputs' length.
func (p *Program) bind(outs []any, ins []Input) (*runner, int) {
	if len(outs) != len(p.Outs) || len(p.outTypes) != len(p.Outs) {
		panic(fmt.Sprintf("fuse: %d outputs for a program with %d (checked: %v)", len(outs), len(p.Outs), len(p.outTypes) == len(p.Outs)))
	}
	if len(ins) != p.NumInputs {
		panic(fmt.Sprintf("fuse: %d inputs for a program with %d", len(ins), p.NumInputs))
	}
	r := runnerPool.Get()
	r.p, r.ins, r.outs = p, r.ins[:0], r.outs[:0]
	n := -1
	for k, o := range outs {
		t := p.outTypes[k]
		ptr, m, ok := unpackers[t](o)
		if !ok {
			release(r)
			panic(fmt.Sprintf("fuse: output %d is %T, the program writes %v", k, o, p.outTypes[k]))
		}
		if n >= 0 && m != n {
			release(r)
			panic("fuse: outputs of different lengths")
		}
		n = m
		r.outs = append(r.outs, operand{p: ptr, n: m, t: t})
	}
	n = max(n, 0)
	for i, in := range ins {
		t := p.InTypes[i]
		ptr, m, ok := unpackers[t](in.Data)
		if !ok {
			release(r)
			panic(fmt.Sprintf("fuse: input %d is %T, the program reads %v", i, in.Data, p.InTypes[i]))
		}
		o := operand{p: ptr, n: m, t: t, mode: in.Mode, period: in.Period, inner: in.Inner}
		if err := o.check(n); err != "" {
			release(r)
			panic(fmt.Sprintf("fuse: input %d: %s", i, err))
		}
		r.ins = append(r.ins, o)
	}
	r.n = n
	return r, n
}

// release drops r's references to the caller's buffers and pools it.
func release(r *runner) {
	clear(r.ins)
	clear(r.outs)
	r.p = nil
	runnerPool.Put(r)
}

func (in *operand) check(n int) string {
	switch in.mode {
	case Full:
		if in.n < n {
			return fmt.Sprintf("Full input of %d elements for %d outputs", in.n, n)
		}
	case Scalar:
		if in.n < 1 {
			return "empty Scalar input"
		}
	case Row:
		if in.period < 1 || in.n < in.period {
			return fmt.Sprintf("Row input of %d elements with period %d", in.n, in.period)
		}
	case Col:
		if in.period < 1 || in.n < (n+in.period-1)/in.period {
			return fmt.Sprintf("Col input of %d elements with period %d for %d outputs", in.n, in.period, n)
		}
	case Chan:
		if in.period < 1 || in.inner < 1 || in.n < in.period {
			return fmt.Sprintf("Chan input of %d elements for %d channels of %d", in.n, in.period, in.inner)
		}
	default:
		return fmt.Sprintf("unknown mode %d", in.mode)
	}
	return ""
}

// at returns the address of element i of an operand.
func (in *operand) at(i int) unsafe.Pointer { return unsafe.Add(in.p, i*in.t.size()) }

// blocks runs blocks [b0, b1) on one goroutine.
func (p *Program) blocks(r *runner, b0, b1 int) {
	s := getScratch(p.NumRegs)
	defer putScratch(s)
	ins, outs, n := r.ins, r.outs, r.hi
	// A Scalar input is the same in every block: fill its buffer once, as
	// far as the longest block reads (a tiny tensor's one short block
	// must not pay for a full one).
	fillLen := max(0, min(BlockSize, n-(r.lo+b0*BlockSize)))
	for i := range ins {
		if in := &ins[i]; in.mode == Scalar {
			fill(s.reg(i), in.p, in.t.size(), fillLen)
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
	args := &s.args
	for b := b0; b < b1; b++ {
		lo := r.lo + b*BlockSize
		hi := min(lo+BlockSize, n)
		m := hi - lo
		for i := range ins {
			in := &ins[i]
			switch in.mode {
			case Full:
				s.view[i] = in.at(lo)
			case Scalar:
				s.view[i] = s.reg(i)
			case Row:
				if ph := lo % in.period; ph != s.phase[i] || m != BlockSize {
					s.view[i] = fillRow(s.reg(i), in, lo, m)
					s.phase[i] = ph
					if m != BlockSize {
						s.phase[i] = -1
					}
				}
			case Col:
				s.view[i] = fillCol(s.reg(i), in, lo, m)
			case Chan:
				s.view[i] = fillChan(s.reg(i), in, lo, m)
			}
		}
		for k := range p.Insts {
			in := &p.Insts[k]
			d := s.reg(in.Dst)
			if k == last && direct >= 0 {
				d = outs[direct].at(lo)
			}
			args[0], args[1], args[2] = s.view[in.A], nil, nil
			if in.Fn.Arity > 1 {
				args[1] = s.view[in.B]
			}
			if in.Fn.Arity > 2 {
				args[2] = s.view[in.C]
			}
			in.Fn.call(d, args, m)
			s.view[in.Dst] = d
		}
		for k, r := range p.Outs {
			if k != direct {
				o := &outs[k]
				sz := o.t.size()
				copy(unsafe.Slice((*byte)(o.at(lo)), m*sz), unsafe.Slice((*byte)(s.view[r]), m*sz))
			}
		}
	}
}

// fill writes the element of size sz at src into dst[0:m].
func fill(dst, src unsafe.Pointer, sz, m int) {
	switch sz {
	case 8:
		fillT(unsafe.Slice((*uint64)(dst), m), *(*uint64)(src))
	case 4:
		fillT(unsafe.Slice((*uint32)(dst), m), *(*uint32)(src))
	default:
		fillT(unsafe.Slice((*uint8)(dst), m), *(*uint8)(src))
	}
}

func fillT[T uint8 | uint32 | uint64](d []T, v T) {
	for j := range d {
		d[j] = v
	}
}

// fillRow makes a block of m elements from lo of a row repeated with the
// input's period: a window of the row when the block lies within one
// (no copy), else whole runs copied into buf.
func fillRow(buf unsafe.Pointer, in *operand, lo, m int) unsafe.Pointer {
	o := lo % in.period
	if o+m <= in.period {
		return in.at(o)
	}
	sz := in.t.size()
	dst := unsafe.Slice((*byte)(buf), m*sz)
	row := unsafe.Slice((*byte)(in.p), in.period*sz)
	for j := 0; j < len(dst); {
		j += copy(dst[j:], row[o*sz:])
		o = 0
	}
	return buf
}

// fillCol writes col[(lo+j) / period] into element j of buf, one run per
// value.
func fillCol(buf unsafe.Pointer, in *operand, lo, m int) unsafe.Pointer {
	sz := in.t.size()
	for j := 0; j < m; {
		i := lo + j
		end := min(m, j+in.period-i%in.period)
		fill(unsafe.Add(buf, j*sz), in.at(i/in.period), sz, end-j)
		j = end
	}
	return buf
}

// fillChan writes chan[((lo+j) / inner) % period] into element j of buf,
// one run per channel.
func fillChan(buf unsafe.Pointer, in *operand, lo, m int) unsafe.Pointer {
	sz := in.t.size()
	for j := 0; j < m; {
		i := lo + j
		end := min(m, j+in.inner-i%in.inner)
		fill(unsafe.Add(buf, j*sz), in.at((i/in.inner)%in.period), sz, end-j)
		j = end
	}
	return buf
}
