package profile

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sporeml/spore/compile"
	"github.com/sporeml/spore/exec"
	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// Session records every compiled plan's steps from Start to Stop.
type Session struct {
	rec *exec.Recorder
}

// Start begins recording, keeping at most maxEvents trace events
// (exec.DefaultMaxEvents when maxEvents ≤ 0; steps are timed whatever the
// limit). Only one session records at a time: Start fails while another
// does.
func Start(maxEvents int) (*Session, error) {
	r, err := exec.StartProfile(maxEvents)
	if err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	return &Session{rec: r}, nil
}

// Stop ends the recording and returns its report. It waits for runs in
// flight to finish; call it from outside any compiled function.
func (s *Session) Stop() *Report { return newReport(s.rec.Stop()) }

// Run records fn's calls of compiled functions and returns the report.
func Run(fn func()) (*Report, error) {
	s, err := Start(0)
	if err != nil {
		return nil, err
	}
	defer func() {
		if s != nil {
			s.Stop()
		}
	}()
	fn()
	r := s.Stop()
	s = nil
	return r, nil
}

// Report is what a session recorded: every plan that ran, with its steps.
type Report struct {
	// Functions are the plans that ran, in the order they first ran; a
	// control-flow body is a function of its own (Parent says whose).
	Functions []*Function
	// Wall is the session's duration.
	Wall time.Duration
	// DroppedEvents counts the trace events over the limit, not kept.
	DroppedEvents int64

	prof *exec.Profile
}

// Function is one compiled plan's profile.
type Function struct {
	// Name is the compiled function's name, Inputs its tensor arguments
	// as "(float32[1,3,224,224])".
	Name, Inputs string
	// Parent is the function whose step ParentStep runs this one as a
	// control-flow body; nil for a plan called from outside a plan.
	Parent     *Function
	ParentStep int
	// Track is the trace thread the function's runs are drawn on.
	Track int
	// Runs counts the plan's runs and Time sums their spans.
	Runs int
	Time time.Duration
	// Nodes is the number of values of the plan's graph; step IDs are
	// positions among them.
	Nodes int
	// Steps are the plan's steps, in the order they run.
	Steps []Step

	pp *exec.PlanProfile
}

// Step is one step of a plan, over all its runs.
type Step struct {
	// ID is the value's ID in the plan's graph (its position in it).
	ID int
	// Op is the primitive's name; Absorbed what a fusion pass folded
	// into it (compile.Absorbed), when a fused op's name does not say.
	Op       string
	Absorbed []string
	// Shape is the operands' and the result's shapes, as
	// "[1,64,56,56] [64,64,3,3] → [1,64,56,56]".
	Shape string
	// Calls counts the step's runs; Total is their time, Self the part
	// not spent in control-flow bodies (which their own Function lists).
	Calls       int
	Total, Self time.Duration
	// FLOPs and Bytes are the cost model's estimates for one run.
	FLOPs, Bytes int64
}

// Label is the op as tables show it: its name, and what it absorbed.
func (s *Step) Label() string {
	if len(s.Absorbed) == 0 {
		return s.Op
	}
	return s.Op + "(" + strings.Join(s.Absorbed, "+") + ")"
}

func newReport(p *exec.Profile) *Report {
	r := &Report{Wall: time.Duration(p.WallNs), DroppedEvents: p.DroppedEvents, prof: p}
	byPlan := map[*exec.PlanProfile]*Function{}
	for _, pp := range p.Plans {
		f := &Function{Name: pp.Name, Inputs: signature(pp.Graph), ParentStep: pp.ParentStep, Track: pp.Track,
			Runs: pp.Runs, Time: time.Duration(pp.RunNs), Nodes: len(pp.Graph.Values), pp: pp}
		if pp.Parent != nil {
			f.Parent = byPlan[pp.Parent]
		}
		for _, sp := range pp.Steps {
			f.Steps = append(f.Steps, newStep(sp))
		}
		byPlan[pp] = f
		r.Functions = append(r.Functions, f)
	}
	return r
}

func newStep(sp exec.StepProfile) Step {
	v := sp.Value
	s := Step{ID: v.ID, Op: v.Prim.Name, Calls: sp.Calls, Total: time.Duration(sp.TotalNs),
		Self: time.Duration(sp.TotalNs - sp.ChildNs), FLOPs: FLOPs(v), Bytes: Bytes(v)}
	s.Absorbed = absorbed(v)
	var b strings.Builder
	for i, a := range v.Args {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(shapeText(a.Meta))
	}
	b.WriteString(" → ")
	if v.IsMulti() {
		for i, m := range v.Metas {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(shapeText(m))
		}
	} else {
		b.WriteString(shapeText(v.Meta))
	}
	s.Shape = b.String()
	return s
}

// absorbed is what a fused op folded in: compile.Absorbed's answer, and
// the chain of a convolution anchor's epilogue; nil for a fused loop,
// whose name lists its members already.
func absorbed(v *graph.Value) []string {
	if _, loop := v.Attrs.(*compile.FusedAttrs); loop {
		return nil
	}
	a, ok := v.Attrs.(ops.ConvEpilogueAttrs)
	if !ok {
		return compile.Absorbed(v)
	}
	names := []string{ops.Conv2DPrim.Name}
	for _, st := range []struct {
		on bool
		p  *core.Prim
	}{{a.Bias, ops.AddPrim}, {a.Scale, ops.MulPrim}, {a.Shift, ops.AddPrim}, {a.ReLU, ops.ReluPrim}, {a.Pool != nil && !a.AvgPool, ops.MaxPoolPrim}, {a.Pool != nil && a.AvgPool, ops.AvgPoolPrim}} {
		if st.on {
			names = append(names, st.p.Name)
		}
	}
	return names
}

// shapeText prints a shape as [1,64,56,56], a scalar as [].
func shapeText(m tensor.Meta) string {
	parts := make([]string, len(m.Shape))
	for i, d := range m.Shape {
		parts[i] = fmt.Sprint(d)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// signature prints a graph's tensor inputs as jit's compile records do,
// "(float32[1,3,224,224], int32[1])".
func signature(g *graph.Graph) string {
	parts := make([]string, len(g.Inputs))
	for i, in := range g.Inputs {
		parts[i] = strings.ToLower(in.Meta.DType.String()) + shapeText(in.Meta)
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// StepTime is the time of every recorded step, bodies counted once: the
// sum of the top-level functions' run spans, which is the sum of every
// step's Self.
func (r *Report) StepTime() time.Duration {
	var t time.Duration
	for _, f := range r.Functions {
		for _, s := range f.Steps {
			t += s.Self
		}
	}
	return t
}

// Row is one line of the table: the steps of one op on one shape, over
// every function and run.
type Row struct {
	Op, Shape string
	Calls     int
	// Total is the steps' own time (Step.Self), Mean it per call.
	Total, Mean time.Duration
	// Share is Total over the report's StepTime.
	Share float64
	// FLOPs per call, and the rate, in GFLOP/s (0 when the op does no
	// arithmetic the cost model counts).
	FLOPs  int64
	GFLOPS float64
	// Bytes per call.
	Bytes int64
}

// Rows aggregates the steps by op and shape, largest total first.
func (r *Report) Rows() []Row {
	type key struct{ op, shape string }
	idx := map[key]int{}
	var rows []Row
	for _, f := range r.Functions {
		for i := range f.Steps {
			s := &f.Steps[i]
			if s.Calls == 0 {
				continue
			}
			k := key{s.Label(), s.Shape}
			j, ok := idx[k]
			if !ok {
				j = len(rows)
				idx[k] = j
				rows = append(rows, Row{Op: k.op, Shape: k.shape, FLOPs: s.FLOPs, Bytes: s.Bytes})
			}
			rows[j].Calls += s.Calls
			rows[j].Total += s.Self
		}
	}
	total := r.StepTime()
	for i := range rows {
		w := &rows[i]
		w.Mean = w.Total / time.Duration(w.Calls)
		if total > 0 {
			w.Share = float64(w.Total) / float64(total)
		}
		if w.Total > 0 {
			w.GFLOPS = float64(w.FLOPs) * float64(w.Calls) / w.Total.Seconds() / 1e9
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Total > rows[j].Total })
	return rows
}

// maxShape is the widest Shape column the table prints.
const maxShape = 60

// Table writes the n rows of most time (all when n ≤ 0), a line for the
// rest, and the totals: as torch.profiler's key_averages().table().
func (r *Report) Table(w io.Writer, n int) error {
	rows := r.Rows()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "op\tshape\tcalls\ttotal\tmean\tshare\tGFLOP/s\t")
	shown := rows
	if n > 0 && len(rows) > n {
		shown = rows[:n]
	}
	for _, row := range shown {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%.1f%%\t%s\t\n", row.Op, clipShape(row.Shape), row.Calls, dur(row.Total), dur(row.Mean), 100*row.Share, rate(row.GFLOPS))
	}
	if rest := rows[len(shown):]; len(rest) > 0 {
		var c int
		var t time.Duration
		var sh float64
		for _, row := range rest {
			c += row.Calls
			t += row.Total
			sh += row.Share
		}
		fmt.Fprintf(tw, "(%d more)\t\t%d\t%s\t\t%.1f%%\t\t\n", len(rest), c, dur(t), 100*sh)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	top, runs := 0, 0
	for _, f := range r.Functions {
		if f.Parent == nil {
			top++
			runs += f.Runs
		}
	}
	_, err := fmt.Fprintf(w, "steps: %s in %d run(s) of %d compiled function(s) (%d body plan(s)); session %s\n",
		dur(r.StepTime()), runs, top, len(r.Functions)-top, dur(r.Wall))
	if err == nil && r.DroppedEvents > 0 {
		_, err = fmt.Fprintf(w, "trace: %d events over the limit were dropped (the table counts them)\n", r.DroppedEvents)
	}
	return err
}

func clipShape(s string) string {
	if r := []rune(s); len(r) > maxShape {
		return string(r[:maxShape-1]) + "…"
	}
	return s
}

// dur prints a duration with three significant digits in a fixed unit
// per magnitude.
func dur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.3gs", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.3gms", float64(d)/1e6)
	default:
		return fmt.Sprintf("%.3gµs", float64(d)/1e3)
	}
}

func rate(g float64) string {
	if g == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", g)
}
