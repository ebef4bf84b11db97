package control

import (
	"fmt"
	"reflect"
	"unsafe"

	"github.com/sporeml/spore/internal/ad"

	"github.com/sporeml/spore/exec"
	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// ScanFunc is spore.ScanFunc, whose documentation is the reference.
type ScanFunc func(carry, x []*Tensor) (newCarry, y []*Tensor)

// Scan is spore.Scan, whose documentation is the reference.
func Scan(fn ScanFunc, init, xs []*Tensor) (carry, ys []*Tensor) {
	return scan(fn, init, xs, false)
}

// ScanReverse is spore.ScanReverse, whose documentation is the reference.
func ScanReverse(fn ScanFunc, init, xs []*Tensor) (carry, ys []*Tensor) {
	return scan(fn, init, xs, true)
}

func scanLength(xs []*Tensor) int {
	if len(xs) == 0 {
		core.Panicf("Scan", "no inputs to scan over")
	}
	n := -1
	for i, x := range xs {
		if x.Rank() == 0 {
			core.Panicf("Scan", "input %d is a scalar; scanned inputs need a leading axis", i)
		}
		if n >= 0 && x.Dim(0) != n {
			core.Panicf("Scan", "inputs differ in length: %v and %v", xs[0].Shape(), x.Shape())
		}
		n = x.Dim(0)
	}
	return n
}

func scan(fn ScanFunc, init, xs []*Tensor, reverse bool) ([]*Tensor, []*Tensor) {
	T := scanLength(xs)
	if !staged(append(append([]*Tensor(nil), init...), xs...)...) {
		return scanEager(fn, init, xs, T, reverse)
	}
	nc, nx := len(init), len(xs)
	metas := metasOf(init)
	for _, x := range xs {
		metas = append(metas, tensor.Meta{Shape: x.Shape()[1:].Clone(), DType: x.DType()})
	}
	name := "scan"
	if tr := core.CurrentTracer(); tr != nil {
		name = tr.FuncName() + ".scan"
	}
	ny := 0
	b := traceBody(name+".body", metas, func(a []*Tensor) []*Tensor {
		c, y := fn(a[:nc], a[nc:])
		ny = len(y)
		return append(append([]*Tensor(nil), c...), y...)
	})
	if !sameTypes(b.outs[:min(nc, len(b.outs))], metasOf(init)) || len(b.outs) < nc {
		core.Panicf("Scan", "Type Join Failed: the body returns carries %s but the scan carries %s", typesString(b.outs[:min(nc, len(b.outs))]), typesString(metasOf(init)))
	}
	in := nodeInputs(nil, append(append([]*Tensor(nil), init...), xs...), b)
	// The body reads carries and x slices at the node positions of init and
	// xs; the kernel substitutes its per-step buffers there.
	a := &scanAttrs{body: b, nc: nc, nx: nx, ny: ny, T: T, reverse: reverse, lazyPlans: lazyPlans{level: b.level}}
	outs := core.ApplyN(scanPrim, a, in...)
	return outs[:nc], outs[nc:]
}

// scanEager is Scan in PyNative mode: a Go loop whose ops the tape records.
func scanEager(fn ScanFunc, init, xs []*Tensor, T int, reverse bool) ([]*Tensor, []*Tensor) {
	carry := init
	var steps [][]*Tensor
	if T > 0 {
		steps = make([][]*Tensor, T)
	}
	// One Unstack per input, not a slice per step: a slice's gradient is
	// as large as the whole input, which would make the backward pass
	// quadratic in the length.
	rows := make([][]*Tensor, len(xs))
	for i, x := range xs {
		rows[i] = ops.Unstack(x, 0)
	}
	for k := range T {
		t := k
		if reverse {
			t = T - 1 - k
		}
		xt := make([]*Tensor, len(xs))
		for i := range xs {
			xt[i] = rows[i][t]
		}
		var y []*Tensor
		carry, y = fn(carry, xt)
		steps[t] = y
	}
	if T == 0 {
		return carry, nil
	}
	ys := make([]*Tensor, len(steps[0]))
	for j := range ys {
		col := make([]*Tensor, T)
		for t := range T {
			col[t] = steps[t][j]
		}
		ys[j] = ops.Stack(0, col...)
	}
	return carry, ys
}

// scanAttrs are a Scan node's attributes: the traced body and the loop's
// shape.
type scanAttrs struct {
	body          *body
	nc, nx, ny, T int
	reverse       bool
	lazyPlans
}

func (s *scanAttrs) String() string {
	return fmt.Sprintf("body=%s length=%d reverse=%v", s.body.orig.Name, s.T, s.reverse)
}

// Regions returns the body, the node's region 0: a loop whose lead inputs
// are the carries and one slice of each scanned input.
func (s *scanAttrs) Regions() []*graph.Region {
	return []*graph.Region{s.body.region(s.nc+s.nx, true)}
}

// BindRegions returns the Scan kernel's attributes for the planned body,
// with every buffer it steps through.
func (s *scanAttrs) BindRegions(subs []*exec.SubPlan) any {
	r := &scanRun{scanAttrs: s, body: newRunner(subs[0])}
	for i := range s.nc {
		m := s.body.outs[i]
		r.a = append(r.a, core.NewOf(m))
		r.b = append(r.b, core.NewOf(m))
		r.cpC = append(r.cpC, core.CopierFor(m.DType))
		r.sizeC = append(r.sizeC, m.Shape.Size())
	}
	for k := range s.nx {
		m := s.body.orig.Inputs[s.nc+k].Meta
		r.shapeX = append(r.shapeX, m.Shape)
		r.sizeX = append(r.sizeX, m.Shape.Size())
	}
	for j := range s.ny {
		m := s.body.outs[s.nc+j]
		r.yt = append(r.yt, core.NewOf(m))
		r.sizeY = append(r.sizeY, m.Shape.Size())
		r.cpY = append(r.cpY, core.CopierFor(m.DType))
	}
	r.views = make([][2]scanViews, s.nx)
	r.stepOut = make([]*Tensor, s.nc+s.ny)
	r.cur = make([]*Tensor, width(s.nc+s.nx, r.body))
	return r
}

// scanRun is a planned Scan.
type scanRun struct {
	*scanAttrs
	body         *runner
	cur          []*Tensor // the node inputs the body reads: carries and slices substituted
	a, b, yt     []*Tensor // carries (double-buffered) and y slices
	stepOut      []*Tensor
	sizeX, sizeY []int
	shapeX       []tensor.Shape // of one slice of each scanned input
	// views holds, per scanned input, the step views (rowView) of the
	// last two buffers it was given, so that a plan called again on the
	// same buffers (or on two alternating ones: the queues of a data
	// sink) allocates nothing. Those buffers stay referenced until they
	// are replaced.
	views    [][2]scanViews
	viewRows [][]*Tensor
	// Copies resolved when planned: of each carry (its element count in
	// sizeC) and each scanned output.
	cpC, cpY []core.Copier
	sizeC    []int
}

func (s *scanRun) run(in, outs []*Tensor) {
	copy(s.cur, in)
	for i := range s.nc {
		s.cpC[i](s.a[i], 0, in[i], 0, s.sizeC[i])
		s.cur[i] = s.a[i]
	}
	copy(s.stepOut[s.nc:], s.yt)
	views := s.viewsOf(in[s.nc : s.nc+s.nx])
	for k := range s.T {
		t := k
		if s.reverse {
			t = s.T - 1 - k
		}
		// The body reads step t's slice of each scanned input in place,
		// a view of the input's buffer, not a copy: a sunk training loop
		// scans a queue of batches, and copying each batch out of the
		// queue cost as much as the step's small matrix products.
		for i, v := range views {
			s.cur[s.nc+i] = v[t]
		}
		copy(s.stepOut, s.b)
		s.body.run(s.cur, s.stepOut)
		for j, y := range s.yt {
			s.cpY[j](outs[s.nc+j], t*s.sizeY[j], y, 0, s.sizeY[j])
		}
		s.a, s.b = s.b, s.a
		for i := range s.nc {
			s.cur[i] = s.a[i]
		}
	}
	for i := range s.nc {
		s.cpC[i](outs[i], 0, s.a[i], 0, s.sizeC[i])
	}
}

var scanPrim *core.Prim

func init() {
	scanPrim = &core.Prim{
		Name:   "Scan",
		Traits: core.Traits{Cost: 1000},
		InferN: func(attrs any, _ []*Tensor) []tensor.Meta {
			s := attrs.(*scanAttrs)
			ms := append([]tensor.Meta(nil), s.body.outs[:s.nc]...)
			for _, m := range s.body.outs[s.nc:] {
				ms = append(ms, tensor.Meta{Shape: append(tensor.Shape{s.T}, m.Shape...), DType: m.DType})
			}
			return ms
		},
		JVPN: scanJVP,
		VJPN: scanVJP,
	}
	scanPrim.RegisterNAll(core.CPU, cfKernel)
}

// scanJVP pushes tangents through a Scan node: a Scan in the same
// direction whose carries are the carries and their tangents and whose
// scanned inputs are the inputs and theirs; each step replays the body's
// traced graph and pushes the tangents through it.
func scanJVP(attrs any, in, ts, _ []*Tensor) []*Tensor {
	s := attrs.(*scanAttrs)
	nc, nx := s.nc, s.nx
	init, xs, rest := in[:nc], in[nc:nc+nx], in[nc+nx:]
	trest := ts[nc+nx:]
	b := s.body
	orZeros := func(t, x *Tensor) *Tensor {
		if t == nil {
			return ops.ZerosLike(x)
		}
		return t
	}
	carry0 := append([]*Tensor(nil), init...)
	for i, x := range init {
		carry0 = append(carry0, orZeros(ts[i], x))
	}
	scanned := append([]*Tensor(nil), xs...)
	for k, x := range xs {
		scanned = append(scanned, orZeros(ts[nc+k], x))
	}
	fwd := Scan
	if s.reverse {
		fwd = ScanReverse
	}
	final, ys := fwd(func(c, x []*Tensor) ([]*Tensor, []*Tensor) {
		nodeIn := append(append(append([]*Tensor(nil), c[:nc]...), x[:nx]...), rest...)
		tin := append(append(append([]*Tensor(nil), c[nc:]...), x[nx:]...), trest...)
		outs, touts := ad.JVPN(func(leaves []*Tensor) []*Tensor {
			bodyIn := make([]*Tensor, len(b.idx))
			for i, j := range b.idx {
				bodyIn[i] = leaves[j]
			}
			return b.replay(bodyIn, leaves, 0)
		}, nodeIn, tin)
		next := append(append([]*Tensor(nil), outs[:nc]...), touts[:nc]...)
		return next, append(append([]*Tensor(nil), outs[nc:]...), touts[nc:]...)
	}, carry0, scanned)
	return append(append([]*Tensor(nil), final[nc:]...), ys[s.ny:]...)
}

// scanVJP differentiates a Scan node: a forward Scan recomputes the carry
// entering each step, then a reverse Scan runs the body's VJP step by
// step, threading the carries' cotangents and summing those of the
// captured values and parameters.
func scanVJP(attrs any, in, _, gs []*Tensor) []*Tensor {
	s := attrs.(*scanAttrs)
	nc, nx := s.nc, s.nx
	init, xs, rest := in[:nc], in[nc:nc+nx], in[nc+nx:]
	b := s.body
	step := func(c, x []*Tensor) []*Tensor { // one forward step via the traced body
		nodeIn := append(append(append([]*Tensor(nil), c...), x...), rest...)
		bodyIn := make([]*Tensor, len(b.idx))
		for i, j := range b.idx {
			bodyIn[i] = nodeIn[j]
		}
		return b.replay(bodyIn, nodeIn, 0)
	}
	// The recomputation runs in the forward scan's direction and the
	// backward pass in the opposite one.
	fwd, bwd := Scan, ScanReverse
	if s.reverse {
		fwd, bwd = ScanReverse, Scan
	}
	_, hist := fwd(func(c, x []*Tensor) ([]*Tensor, []*Tensor) {
		return step(c, x)[:nc], c
	}, init, xs)
	gcarry0 := append([]*Tensor(nil), gs[:nc]...)
	for _, r := range rest {
		gcarry0 = append(gcarry0, ops.ZerosLike(r))
	}
	scanned := append(append(append([]*Tensor(nil), hist...), xs...), gs[nc:]...)
	final, gxs := bwd(func(c, x []*Tensor) ([]*Tensor, []*Tensor) {
		gc, grest := c[:nc], c[nc:]
		ct, xt, gyt := x[:nc], x[nc:nc+nx], x[nc+nx:]
		nodeIn := append(append(append([]*Tensor(nil), ct...), xt...), rest...)
		g := b.vjp(nodeIn, append(append([]*Tensor(nil), gc...), gyt...), 0)
		next := append([]*Tensor(nil), g[:nc]...)
		for i, gr := range grest {
			next = append(next, ops.Add(gr, g[nc+nx+i]))
		}
		return next, g[nc : nc+nx]
	}, gcarry0, scanned)
	out := append(append([]*Tensor(nil), final[:nc]...), gxs...)
	return append(out, final[nc:]...)
}

// RowView is elements [lo, hi) of x's buffer as a tensor of the given
// shape, sharing the buffer (a scanned input's slice for one step; the
// body's plan reads its inputs and never writes them).
func RowView(x *Tensor, lo, hi int, shape tensor.Shape) *Tensor {
	// Every dtype's buffer is a Go slice ([]float32, the 16-bit types'
	// []uint16, ...): slicing it by reflection serves them all.
	buf := reflect.ValueOf(x.Data())
	if buf.Kind() != reflect.Slice {
		core.Panicf("Scan", "unsupported dtype %v of a scanned input", x.DType())
	}
	return core.FromBuffer(buf.Slice3(lo, hi, hi).Interface(), shape)
}

// scanViews are the step views of one buffer of a scanned input.
type scanViews struct {
	base unsafe.Pointer // the buffer's first element
	rows []*Tensor
}

// viewsOf returns, for each scanned input, its T step views, reusing
// those made for the same buffer before. The returned slice is reused by
// the next call.
func (s *scanRun) viewsOf(xs []*Tensor) [][]*Tensor {
	if cap(s.viewRows) < len(xs) {
		s.viewRows = make([][]*Tensor, len(xs))
	}
	out := s.viewRows[:len(xs)]
	for i, x := range xs {
		base := dataPointer(x)
		c := &s.views[i]
		switch {
		case base != nil && base == c[0].base:
		case base != nil && base == c[1].base:
			c[0], c[1] = c[1], c[0]
		default:
			c[1] = c[0]
			n := s.sizeX[i]
			rows := make([]*Tensor, s.T)
			for t := range rows {
				rows[t] = RowView(x, t*n, (t+1)*n, s.shapeX[i])
			}
			c[0] = scanViews{base: base, rows: rows}
		}
		out[i] = c[0].rows
	}
	return out
}

// dataPointer is the address of x's first element (nil when it has
// none): the identity of its buffer.
func dataPointer(x *Tensor) unsafe.Pointer {
	if buf := reflect.ValueOf(x.Data()); buf.Kind() == reflect.Slice {
		return buf.UnsafePointer()
	}
	return nil
}
