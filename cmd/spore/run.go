package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/sporeml/spore/npy"
	"github.com/sporeml/spore/onnx"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/profile"
	"github.com/sporeml/spore/tensor"
)

const runSynopsis = `spore run MODEL.onnx [--input X.npy ...] [flags]

Runs an ONNX model on inputs read from NumPy files and prints each output's
name, shape, dtype and a summary (min, max, mean, first values).

Inputs: --input PATH gives the model's inputs in order, one flag each;
--input NAME=PATH gives the input NAME; --input PATH.npz gives the inputs
named by the archive's keys. A float input of another precision than the
model's (NumPy's default float64 for a float32 model) is converted.

A sequence input is one .npz whose keys are its positions ("0", "1", ...):
--input NAME=SEQ.npz, or in order; an optional input is a .npy, or left
out for an empty one.

With --batch B, inputs that are not given are made up (float inputs from
N(0, 1) with seed 0, integer and bool inputs zero) with batch B and the rest
of the shape the model declares, and given inputs whose batch differs are
tiled (their rows repeated) to B rows.

Outputs: --output F.npz writes every output into one archive, keyed by
output name; --output F.npy writes a model's only output; one --output F.npy
per output writes them in order. A sequence output is written as an .npz
of its positions (one --output per output); an empty optional writes
nothing.

--bench N times N calls after a warm-up, best of --rounds rounds, and prints
the time per call; --json prints everything as one JSON object instead.`

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string { return strings.Join(*s, ",") }

func (s *stringList) Set(v string) error {
	*s = append(*s, v)
	return nil
}

// runOptions are spore run's flags.
type runOptions struct {
	model   string
	inputs  stringList
	outputs stringList
	mode    string
	bench   int
	rounds  int
	warmup  int
	batch   int
	json    bool
	prof    profileFlags
}

func cmdRun(args []string, stdout, stderr io.Writer) error {
	var o runOptions
	fs := newFlags("run", runSynopsis, stdout)
	fs.Var(&o.inputs, "input", "an input: PATH.npy (in order), NAME=PATH.npy, or PATH.npz (by name); repeatable")
	fs.Var(&o.outputs, "output", "where to write the outputs: F.npz (all, by name) or F.npy (one per output, in order); repeatable")
	fs.StringVar(&o.mode, "mode", "graph", "execution mode: graph or pynative")
	fs.IntVar(&o.bench, "bench", 0, "time this many calls per round after a warm-up (0: run once)")
	fs.IntVar(&o.rounds, "rounds", 5, "with --bench: timing rounds; the best is reported")
	fs.IntVar(&o.warmup, "warmup", 0, "with --bench: untimed calls first (default: a tenth of --bench, at least 2)")
	fs.IntVar(&o.batch, "batch", 0, "make up missing inputs, and tile given ones, to this batch size (default: none made up or tiled)")
	fs.BoolVar(&o.json, "json", false, "print one JSON object instead of text")
	o.prof.register(fs, true)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) == 0:
		return usagef("no model given (see 'spore run --help')")
	case len(pos) > 1:
		return usagef("unexpected argument %q: one model per run (see 'spore run --help')", pos[1])
	case o.bench < 0:
		return usagef("--bench %d must not be negative (0: run once, untimed)", o.bench)
	case o.rounds <= 0:
		return usagef("--rounds must be positive")
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case set["warmup"] && o.warmup < 0:
		return usagef("--warmup %d must not be negative (leave it out for a tenth of --bench, at least 2)", o.warmup)
	case set["batch"] && o.batch <= 0:
		// 0 is the default only in that it makes nothing up: given,
		// it asks for batches of no rows.
		return usagef("--batch %d must be positive (leave it out to run the inputs as given)", o.batch)
	}
	if err := o.prof.check(); err != nil {
		return err
	}
	if o.prof.on && o.mode != "graph" {
		return usagef("--profile times the steps of compiled plans: use --mode graph")
	}
	o.model = pos[0]
	if !set["warmup"] {
		o.warmup = max(o.bench/10, 2)
	}
	if err := setMode(o.mode); err != nil {
		return err
	}
	if err := checkEnv(); err != nil {
		return err
	}
	for _, p := range o.outputs {
		if !strings.HasSuffix(p, ".npy") && !strings.HasSuffix(p, ".npz") {
			return usagef("--output %s: want a .npy or .npz file", p)
		}
		if err := checkOutPath("--output", p); err != nil {
			return err
		}
	}
	m, err := onnx.LoadFile(o.model)
	if err != nil {
		return err
	}
	infos := m.Inputs()
	outInfos := m.OutputInfo()
	if err := checkOutputFlags(o.outputs, outInfos); err != nil {
		return err
	}
	xs, sources, err := gatherInputs(infos, o.inputs, o.batch)
	if err != nil {
		return err
	}

	start := time.Now()
	outs, err := m.Run(xs...)
	if err != nil {
		return fmt.Errorf("%s: %s", o.model, message(err))
	}
	first := time.Since(start)
	res := runResult{Model: o.model, Mode: o.mode, Threads: runtime.GOMAXPROCS(0), FirstCallMS: ms(first)}
	for i, x := range xs {
		v := valueJSON{Name: infos[i].Name, Shape: shapeOf(x), DType: x.DType().String(), Source: sources[i]}
		if onnx.KindOf(x) != onnx.KindTensor {
			v = describeValue(infos[i].Name, x)
			v.Source = sources[i]
		}
		res.Inputs = append(res.Inputs, v)
	}
	for i, y := range outs {
		name := fmt.Sprintf("output%d", i)
		if i < len(outInfos) {
			name = outInfos[i].Name
		}
		res.Outputs = append(res.Outputs, describeValue(name, y))
	}
	prof, err := profileRun(m, xs, o)
	if err != nil {
		return err
	}
	if o.bench > 0 {
		b, err := benchRun(m, xs, o)
		if err != nil {
			return err
		}
		res.Bench = b
	}
	if err := writeOutputs(o.outputs, res.Outputs, outs); err != nil {
		return err
	}
	if o.json {
		if res.Profile, err = o.prof.reportJSON(prof); err != nil {
			return err
		}
		return json.NewEncoder(stdout).Encode(res)
	}
	res.print(stdout, modeLabel(o.mode))
	return o.prof.report(prof, stdout, "")
}

// parseInterleaved parses flags and positional arguments in any order
// ("spore run m.onnx --input x.npy" and "spore run --input x.npy m.onnx"),
// with parse's errors and --help.
func parseInterleaved(fs *flags, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprintf(fs.stdout, "usage: %s\n\nflags:\n", fs.synopsis)
				fs.SetOutput(fs.stdout)
				fs.PrintDefaults()
				return nil, err
			}
			return nil, usagef("%v (see 'spore %s --help')", err, fs.Name())
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		// After "--", everything is an argument.
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// checkOutputFlags checks the --output flags against the model's outputs
// before anything runs.
func checkOutputFlags(paths []string, infos []onnx.ValueInfo) error {
	n := len(infos)
	switch {
	case len(paths) == 0:
		return nil
	case len(paths) == 1 && n == 1 && infos[0].Kind == onnx.KindSequence:
		if !strings.HasSuffix(paths[0], ".npz") {
			return usagef("--output %s: output %s is a sequence, written as an .npz of its positions", paths[0], infos[0].Name)
		}
		return nil
	case len(paths) == 1 && strings.HasSuffix(paths[0], ".npz"):
		for _, in := range infos {
			if in.Kind != onnx.KindTensor {
				return usagef("--output %s: output %s is a %v, which an archive of the outputs cannot hold: give one --output per output (an .npz for a sequence)", paths[0], in.Name, in.Kind)
			}
		}
		return nil
	case len(paths) == 1 && n == 1:
		return nil
	}
	for i, p := range paths {
		if i < n && infos[i].Kind == onnx.KindSequence {
			if !strings.HasSuffix(p, ".npz") {
				return usagef("--output %s: output %s is a sequence, written as an .npz of its positions", p, infos[i].Name)
			}
			continue
		}
		if strings.HasSuffix(p, ".npz") {
			return usagef("--output %s: an .npz archive takes every output; give it alone", p)
		}
	}
	if len(paths) != n {
		return usagef("the model has %s and %s given; give one .npy per output, or one .npz", plural(n, "output"), plural(len(paths), "--output"))
	}
	return nil
}

// gatherInputs reads the --input flags and binds them to the model's
// inputs, making up or tiling inputs to batch when batch > 0. sources
// says where each input came from.
func gatherInputs(infos []onnx.ValueInfo, flags []string, batch int) (xs []*tensor.Tensor, sources []string, err error) {
	xs = make([]*tensor.Tensor, len(infos))
	sources = make([]string, len(infos))
	index := map[string]int{}
	var names []string
	for i, in := range infos {
		index[in.Name] = i
		names = append(names, in.Name)
	}
	bind := func(i int, t *tensor.Tensor, src string) error {
		if xs[i] != nil {
			return usagef("input %q is given twice (%s and %s)", infos[i].Name, sources[i], src)
		}
		xs[i], sources[i] = t, src
		return nil
	}
	next := 0 // the next input a plain path fills
	for _, f := range flags {
		if name, path, ok := strings.Cut(f, "="); ok {
			if i, known := index[name]; known {
				t, err := readValue(infos[i], path)
				if err != nil {
					return nil, nil, fmt.Errorf("--input %s: %v", f, err)
				}
				if err := bind(i, t, path); err != nil {
					return nil, nil, err
				}
				continue
			}
			if _, serr := os.Stat(f); serr != nil {
				return nil, nil, usagef("--input %s: the model has no input %q (its inputs: %s)", f, name, strings.Join(names, ", "))
			}
		}
		if strings.HasSuffix(f, ".npz") {
			keys, ts, err := npy.ReadNPZ(f)
			if err != nil {
				return nil, nil, fmt.Errorf("--input %s: %v", f, err)
			}
			for next < len(xs) && xs[next] != nil {
				next++
			}
			if elems, ok := positionKeys(keys, ts); ok && next < len(xs) && infos[next].Kind == onnx.KindSequence {
				// An archive of positions for the next input, a sequence.
				t, err := onnx.NewSequence(elems...)
				if err != nil {
					return nil, nil, fmt.Errorf("--input %s: %v", f, err)
				}
				xs[next], sources[next] = t, f
				continue
			}
			for k, key := range keys {
				i, known := index[key]
				if !known {
					return nil, nil, usagef("--input %s: array %q is not an input of the model (its inputs: %s)", f, key, strings.Join(names, ", "))
				}
				if err := bind(i, ts[k], f+":"+key); err != nil {
					return nil, nil, err
				}
			}
			continue
		}
		for next < len(xs) && xs[next] != nil {
			next++
		}
		if next == len(xs) {
			return nil, nil, usagef("--input %s: the model takes %s, all already given", f, plural(len(infos), "input"))
		}
		t, err := readValue(infos[next], f)
		if err != nil {
			return nil, nil, fmt.Errorf("--input %s: %v", f, err)
		}
		xs[next], sources[next] = t, f
	}
	for i, in := range infos {
		if in.Kind != onnx.KindTensor {
			// Sequences and optionals are neither converted nor tiled;
			// an optional left out is empty.
			switch {
			case xs[i] == nil && in.Kind == onnx.KindOptional:
				xs[i], sources[i] = onnx.NewOptional(nil), "left out (empty)"
			case xs[i] == nil:
				return nil, nil, usagef("input %s is a %v and is not given: pass --input %s=FILE.npz (keys 0, 1, ...)", in.Name, in.Kind, in.Name)
			}
			continue
		}
		// NumPy's default float is float64 (np.random.randn), a model's
		// float32: convert between float types rather than refuse.
		if x := xs[i]; x != nil && x.DType().IsFloat() && in.DType.IsFloat() && x.DType() != in.DType {
			xs[i] = ops.Cast(x, in.DType)
			sources[i] += fmt.Sprintf(" (%v converted to %v)", x.DType(), in.DType)
		}
		switch {
		case xs[i] == nil && batch == 0:
			return nil, nil, usagef("input %s is not given: pass --input (or --batch B to make one up)", in)
		case xs[i] == nil:
			t, err := synthesize(in, batch)
			if err != nil {
				return nil, nil, err
			}
			xs[i], sources[i] = t, "made up"
		case batch > 0 && xs[i].Rank() > 0 && xs[i].Dim(0) != batch:
			if len(in.Shape) > 0 && in.Shape[0] >= 0 && in.Shape[0] != int64(batch) {
				return nil, nil, usagef("input %s has a fixed batch of %d; --batch %d does not fit it", in, in.Shape[0], batch)
			}
			xs[i] = tile(xs[i], batch)
			sources[i] += fmt.Sprintf(" (tiled to %d rows)", batch)
		}
	}
	return xs, sources, nil
}

// synthesize makes up an input of batch rows and the declared shape.
func synthesize(in onnx.ValueInfo, batch int) (*tensor.Tensor, error) {
	if in.Shape == nil {
		return nil, usagef("input %s declares no shape, so --batch cannot make it up; pass --input", in.Name)
	}
	shape := make([]int, len(in.Shape))
	for i, d := range in.Shape {
		switch {
		case i == 0 && d < 0:
			shape[i] = batch
		case i == 0 && d != int64(batch):
			return nil, usagef("input %s has a fixed batch of %d; --batch %d does not fit it", in, d, batch)
		case d < 0:
			return nil, usagef("input %s has a dynamic dimension %d besides the batch; pass --input", in, i)
		default:
			shape[i] = int(d)
		}
	}
	if n := tensor.Shape(shape).Size(); n > 1<<28 {
		return nil, usagef("input %s at batch %d would hold %d elements; choose a smaller --batch", in, batch, n)
	}
	switch {
	case in.DType.IsFloat():
		tensor.SetSeed(0)
		return tensor.RandNormal(in.DType, 0, 1, shape...), nil
	case in.DType == tensor.Invalid:
		return nil, usagef("input %s has an element type spore cannot make up; pass --input", in)
	}
	return tensor.Zeros(in.DType, shape...), nil
}

// tile returns t with its rows (axis 0) repeated cyclically to n rows.
func tile(t *tensor.Tensor, n int) *tensor.Tensor {
	shape := slices.Clone([]int(t.Shape()))
	rows := shape[0]
	shape[0] = n
	if rows == 0 {
		return tensor.Zeros(t.DType(), shape...)
	}
	row := t.Size() / rows
	switch b := t.Data().(type) {
	case []float32:
		return tensor.FromSlice(tileRows(b, row, n), shape...)
	case []float64:
		return tensor.FromSlice(tileRows(b, row, n), shape...)
	case []int32:
		return tensor.FromSlice(tileRows(b, row, n), shape...)
	case []int64:
		return tensor.FromSlice(tileRows(b, row, n), shape...)
	case []bool:
		return tensor.FromSlice(tileRows(b, row, n), shape...)
	case []uint8:
		return tensor.FromSlice(tileRows(b, row, n), shape...)
	}
	panic(fmt.Sprintf("tile: unexpected buffer %T", t.Data()))
}

func tileRows[T any](b []T, row, n int) []T {
	out := make([]T, 0, row*n)
	for len(out) < row*n {
		out = append(out, b[:min(len(b), row*n-len(out))]...)
	}
	return out
}

// writeOutputs writes the outputs as the --output flags say (checked by
// checkOutputFlags) and records the files in vs.
func writeOutputs(paths []string, vs []valueJSON, outs []*tensor.Tensor) error {
	if len(paths) == 1 && strings.HasSuffix(paths[0], ".npz") && onnx.KindOf(outs[0]) != onnx.KindSequence {
		names := make([]string, len(vs))
		for i, v := range vs {
			names[i] = v.Name
		}
		if err := npy.WriteNPZ(paths[0], names, outs); err != nil {
			return err
		}
		for i := range vs {
			vs[i].File = paths[0]
		}
		return nil
	}
	for i, p := range paths {
		wrote, err := writeValue(p, outs[i])
		if err != nil {
			return err
		}
		if wrote {
			vs[i].File = p
		}
	}
	return nil
}

// profileRun profiles --profile-calls calls of the model on xs, when
// --profile is on (nil otherwise).
func profileRun(m *onnx.Model, xs []*tensor.Tensor, o runOptions) (*profile.Report, error) {
	s, err := o.prof.start()
	if s == nil || err != nil {
		return nil, err
	}
	for range o.prof.calls {
		if _, err := m.Run(xs...); err != nil {
			s.Stop()
			return nil, err
		}
	}
	return s.Stop(), nil
}

// benchRun times the model on xs: best of o.rounds rounds of o.bench
// calls, after o.warmup calls.
func benchRun(m *onnx.Model, xs []*tensor.Tensor, o runOptions) (*benchJSON, error) {
	for range o.warmup {
		if _, err := m.Run(xs...); err != nil {
			return nil, err
		}
	}
	best := time.Duration(math.MaxInt64)
	for range o.rounds {
		start := time.Now()
		for range o.bench {
			m.Run(xs...) // the same inputs ran without error above
		}
		best = min(best, time.Since(start))
	}
	batch := 0
	if len(xs) > 0 && xs[0].Rank() > 0 {
		batch = xs[0].Dim(0)
	}
	return &benchJSON{Calls: o.bench, Rounds: o.rounds, Warmup: o.warmup, Batch: batch,
		USPerCall: float64(best.Nanoseconds()) / float64(o.bench) / 1e3}, nil
}

// runResult is what spore run reports; with --json it is printed as is,
// and its keys are stable.
type runResult struct {
	Model       string      `json:"model"`
	Mode        string      `json:"mode"`
	Threads     int         `json:"threads"`
	FirstCallMS float64     `json:"first_call_ms"`
	Inputs      []valueJSON `json:"inputs"`
	Outputs     []valueJSON `json:"outputs"`
	Bench       *benchJSON  `json:"bench,omitempty"`
	// Profile is --profile's, in --json output.
	Profile *profileJSON `json:"profile,omitempty"`
}

// printValues writes a model's inputs and outputs for people, one line
// each: name, shape, dtype, and where an input came from or an output's
// summary and file (spore run and spore infer print alike).
func printValues(w io.Writer, inputs, outputs []valueJSON) {
	for _, v := range inputs {
		fmt.Fprintf(w, "input   %-12s %-14s %-8s from %s\n", v.Name, shapeString(v.Shape), v.DType, v.Source)
	}
	for _, v := range outputs {
		fmt.Fprintf(w, "output  %-12s %-14s %-8s", v.Name, shapeString(v.Shape), v.DType)
		if v.Min != nil {
			fmt.Fprintf(w, " min %s max %s mean %s first [%s", g(v.Min), g(v.Max), g(v.Mean), joinG(v.First))
			if n := prod(v.Shape); n > len(v.First) {
				fmt.Fprintf(w, " ... (%d values)", n)
			}
			fmt.Fprint(w, "]")
		}
		fmt.Fprintln(w)
		for _, e := range v.Elements {
			printValues(w, nil, []valueJSON{e})
		}
		if v.File != "" {
			fmt.Fprintf(w, "        wrote %s\n", v.File)
		}
	}
}

// valueJSON describes an input or output. Min, Max and Mean are numbers
// when finite and strings ("NaN", "+Inf") otherwise, which JSON cannot
// hold as numbers.
type valueJSON struct {
	Name   string `json:"name"`
	Shape  []int  `json:"shape"`
	DType  string `json:"dtype"`
	Source string `json:"source,omitempty"`
	File   string `json:"file,omitempty"`
	Min    any    `json:"min,omitempty"`
	Max    any    `json:"max,omitempty"`
	Mean   any    `json:"mean,omitempty"`
	First  []any  `json:"first,omitempty"`
	// Elements describes a sequence's elements (see runseq.go).
	Elements []valueJSON `json:"elements,omitempty"`
}

// benchJSON is the timing of --bench.
type benchJSON struct {
	Calls     int     `json:"calls"`
	Rounds    int     `json:"rounds"`
	Warmup    int     `json:"warmup"`
	Batch     int     `json:"batch"`
	USPerCall float64 `json:"us_per_call"`
}

// firstValues is how many leading values the summary shows.
const firstValues = 5

func shapeOf(t *tensor.Tensor) []int { return append([]int{}, t.Shape()...) }

// summarize fills the min, max, mean and first values of a concrete t.
func (v *valueJSON) summarize(t *tensor.Tensor) {
	if t.Size() == 0 {
		return
	}
	vals := t.Float64s()
	lo, hi, sum := math.Inf(1), math.Inf(-1), 0.0
	nan := false
	for _, x := range vals {
		if math.IsNaN(x) {
			nan = true
			continue
		}
		lo, hi, sum = math.Min(lo, x), math.Max(hi, x), sum+x
	}
	mean := sum / float64(len(vals))
	if nan {
		lo, hi, mean = math.NaN(), math.NaN(), math.NaN()
	}
	v.Min, v.Max, v.Mean = number(lo), number(hi), number(mean)
	for _, x := range vals[:min(len(vals), firstValues)] {
		v.First = append(v.First, number(x))
	}
}

// number is x for JSON: itself when finite, else its name.
func number(x float64) any {
	switch {
	case math.IsNaN(x):
		return "NaN"
	case math.IsInf(x, 1):
		return "+Inf"
	case math.IsInf(x, -1):
		return "-Inf"
	}
	return x
}

// print writes the result for people.
func (r *runResult) print(w io.Writer, mode string) {
	fmt.Fprintf(w, "%s: %s, %s, first call %.1f ms\n", r.Model, mode, plural(r.Threads, "thread"), r.FirstCallMS)
	printValues(w, r.Inputs, r.Outputs)
	if b := r.Bench; b != nil {
		fmt.Fprintf(w, "bench: %.1f µs per call at batch %d (best of %d rounds of %d calls, after %d warm-up calls)\n",
			b.USPerCall, b.Batch, b.Rounds, b.Calls, b.Warmup)
	}
}

func shapeString(shape []int) string { return fmt.Sprint(shape) }

func g(v any) string {
	if x, ok := v.(float64); ok {
		return fmt.Sprintf("%.6g", x)
	}
	return fmt.Sprint(v)
}

func joinG(vs []any) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = g(v)
	}
	return strings.Join(s, " ")
}

func prod(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}
