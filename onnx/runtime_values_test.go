package onnx

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/onnx/internal/onnxpb"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// runBoth runs m on xs in PyNative mode (eager) and g in Graph mode
// (Outputs under GraphMode), each returning an error rather than
// panicking.
func runBoth(eager, g *Model, xs ...*tensor.Tensor) (e, gr []*tensor.Tensor, eerr, gerr error) {
	e, eerr = eager.Run(xs...)
	inMode(spore.GraphMode, func() { gr, gerr = g.Run(xs...) })
	return
}

// sumKeep is ReduceSum with keepdims=1 over axes (normalised), written
// from its definition: each element adds to the output element whose
// reduced coordinates are zero.
func sumKeep(x []float32, shape []int, axes []int64) ([]float32, []int) {
	red := make([]bool, len(shape))
	for _, a := range axes {
		if a < 0 {
			a += int64(len(shape))
		}
		red[a] = true
	}
	out := make([]int, len(shape))
	n := 1
	for i, d := range shape {
		out[i] = d
		if red[i] {
			out[i] = 1
		}
		n *= out[i]
	}
	y := make([]float32, n)
	coord := make([]int, len(shape))
	for _, v := range x {
		off := 0
		for i := range shape {
			c := coord[i]
			if red[i] {
				c = 0
			}
			off = off*out[i] + c
		}
		y[off] += v
		for i := len(shape) - 1; i >= 0; i-- {
			if coord[i]++; coord[i] < shape[i] {
				break
			}
			coord[i] = 0
		}
	}
	return y, out
}

// TestValueInputs calls models that read a graph input as a value (a
// ReduceSum's axes, a Reshape's shape) at several values, in PyNative
// mode, in Graph mode and under nn.Jit, checks the results against the
// ops' definitions, and checks that each value compiled exactly once: a
// repeated value runs its plan again.
func TestValueInputs(t *testing.T) {
	f32, i64 := onnxpb.TensorProto_FLOAT, onnxpb.TensorProto_INT64
	xs := make([]float32, 24)
	for i := range xs {
		xs[i] = float32(i*i%7) - 2.5
	}
	x := tensor.FromSlice(xs, 2, 3, 4)
	cases := []struct {
		name   string
		node   *onnxpb.NodeProto
		values [][]int64
		// want gives the expected data and shape for a value.
		want func(v []int64) ([]float32, []int)
	}{
		{
			name:   "ReduceSum axes",
			node:   node("ReduceSum", "r", []string{"x", "v"}, []string{"y"}, attrInt("keepdims", 1)),
			values: [][]int64{{1}, {0, 2}, {1}, {-1}, {0, 2}, {1}},
			want:   func(v []int64) ([]float32, []int) { return sumKeep(xs, []int{2, 3, 4}, v) },
		},
		{
			name:   "Reshape shape",
			node:   node("Reshape", "r", []string{"x", "v"}, []string{"y"}),
			values: [][]int64{{6, 4}, {4, -1}, {6, 4}, {0, -1}, {4, -1}, {24}},
			want: func(v []int64) ([]float32, []int) {
				// 0 copies the input's extent, -1 takes the rest.
				shape := make([]int, len(v))
				rest, known := 24, 1
				for i, d := range v {
					switch d {
					case 0:
						shape[i] = []int{2, 3, 4}[i]
					case -1:
						continue
					default:
						shape[i] = int(d)
					}
					known *= shape[i]
				}
				for i, d := range v {
					if d == -1 {
						shape[i] = rest / known
					}
				}
				return xs, shape
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := graphProto("g", []*onnxpb.NodeProto{tc.node}, nil,
				[]*onnxpb.ValueInfoProto{valueInfoProto("x", f32, 2, 3, 4), valueInfoProto("v", i64, -1)},
				[]*onnxpb.ValueInfoProto{valueInfoProto("y", f32)})
			data := marshal(t, modelProto(17, g))
			eager, graph, jitted := mustLoad(t, data), mustLoad(t, data), nn.Jit(mustLoad(t, data))
			distinct := map[string]bool{}
			for i, v := range tc.values {
				vt := tensor.FromSlice(append([]int64(nil), v...), len(v))
				e, gr, eerr, gerr := runBoth(eager, graph, x, vt)
				if eerr != nil || gerr != nil {
					t.Fatalf("value %v: PyNative: %v; Graph: %v", v, eerr, gerr)
				}
				j := jitted.Call(x, vt)
				wantData, wantShape := tc.want(v)
				for mode, y := range map[string]*tensor.Tensor{"PyNative": e[0], "Graph": gr[0], "nn.Jit": j} {
					if !y.Shape().Equal(wantShape) {
						t.Fatalf("value %v, %s: shape %v, want %v", v, mode, y.Shape(), wantShape)
					}
					for k, got := range y.Float32s() {
						if d := got - wantData[k]; d > 1e-5 || d < -1e-5 {
							t.Fatalf("value %v, %s: element %d is %g, want %g", v, mode, k, got, wantData[k])
						}
					}
				}
				key := fmt.Sprint(v)
				repeat := distinct[key]
				distinct[key] = true
				for mode, m := range map[string]*Model{"Graph": graph, "nn.Jit": jitted} {
					st := m.JitStats()
					if st.Compiles != len(distinct) {
						t.Errorf("call %d (value %v), %s: %d compiles for %d distinct values", i, v, mode, st.Compiles, len(distinct))
					}
					if repeat && st.Hits == 0 {
						t.Errorf("call %d (value %v), %s: a repeated value hit no compiled plan: %+v", i, v, mode, st)
					}
				}
			}
			if st := eager.JitStats(); st.Compiles != 0 {
				t.Errorf("PyNative mode compiled %d plans", st.Compiles)
			}
		})
	}
}

// TestValueInputsBounded: a model called with a new value on every call
// keeps at most maxValuePlans compiled plans, evicting the least recently
// used; a value still kept runs its plan, an evicted one compiles again.
func TestValueInputsBounded(t *testing.T) {
	f32, i64 := onnxpb.TensorProto_FLOAT, onnxpb.TensorProto_INT64
	const n = maxValuePlans + 8
	g := graphProto("g", []*onnxpb.NodeProto{node("Slice", "s", []string{"x", "b", "e"}, []string{"y"})},
		[]*onnxpb.TensorProto{int64Tensor("b", []int64{1}, []int64{0})},
		[]*onnxpb.ValueInfoProto{valueInfoProto("x", f32, n), valueInfoProto("e", i64, 1)},
		[]*onnxpb.ValueInfoProto{valueInfoProto("y", f32)})
	m := mustLoad(t, marshal(t, modelProto(17, g)))
	x := tensor.Arange(tensor.Float32, 0, n, 1)
	call := func(e int64) {
		t.Helper()
		var y []*tensor.Tensor
		var err error
		inMode(spore.GraphMode, func() { y, err = m.Run(x, tensor.FromSlice([]int64{e}, 1)) })
		if err != nil {
			t.Fatalf("end %d: %v", e, err)
		}
		if got := y[0].Shape(); !got.Equal([]int{int(e)}) {
			t.Fatalf("end %d: shape %v", e, got)
		}
		for i, v := range y[0].Float32s() {
			if v != float32(i) {
				t.Fatalf("end %d: element %d is %g", e, i, v)
			}
		}
	}
	for e := int64(1); e <= n; e++ {
		call(e)
	}
	st := m.JitStats()
	if st.Compiles != n || st.Evictions != n-maxValuePlans {
		t.Fatalf("%d values: %d compiles, %d evictions; want %d and %d", n, st.Compiles, st.Evictions, n, n-maxValuePlans)
	}
	m.mu.Lock()
	kept := m.compiled.size()
	m.mu.Unlock()
	if kept != maxValuePlans {
		t.Errorf("%d plans kept, want %d", kept, maxValuePlans)
	}
	call(n) // the most recent: kept
	if got := m.JitStats().Compiles; got != n {
		t.Errorf("a kept value compiled again: %d compiles", got)
	}
	call(1) // the first: evicted
	if got := m.JitStats().Compiles; got != n+1 {
		t.Errorf("an evicted value: %d compiles, want %d", got, n+1)
	}
}

// TestValueInputsRefusedWhereUnknown: a value computed from a parameter
// stays refused in both modes, and a model traced inside another function
// (its inputs symbolic) names the input it cannot read.
func TestValueInputsRefusedWhereUnknown(t *testing.T) {
	f32, i64 := onnxpb.TensorProto_FLOAT, onnxpb.TensorProto_INT64
	g := graphProto("g", []*onnxpb.NodeProto{node("Reshape", "r", []string{"x", "s"}, []string{"y"})}, nil,
		[]*onnxpb.ValueInfoProto{valueInfoProto("x", f32, 2, 3), valueInfoProto("s", i64, 2)},
		[]*onnxpb.ValueInfoProto{valueInfoProto("y", f32)})
	m := mustLoad(t, marshal(t, modelProto(17, g)))
	x, s := tensor.Ones(tensor.Float32, 2, 3), tensor.FromSlice([]int64{3, 2}, 2)
	var err error
	func() {
		defer func() {
			if r := recover(); r != nil {
				err = r.(error)
			}
		}()
		spore.Jit(func(a, b *tensor.Tensor) *tensor.Tensor { return m.Outputs(a, b)[0] })(x, s)
	}()
	if err == nil || !strings.Contains(err.Error(), `the model's input(s) "s"`) || !strings.Contains(err.Error(), "traced inside another function") {
		t.Errorf("traced inline: %v", err)
	}
	// Called directly afterwards, the model still reads s.
	if y, err := m.Run(x, s); err != nil || !y[0].Shape().Equal([]int{3, 2}) {
		t.Errorf("called directly: %v, %v", y, err)
	}
}

// TestRuntimeIndexOutOfRange: indices given as a graph input are data,
// checked when the model runs: an index out of range fails with the same
// error in both modes, naming the node, the op, the index and the extent,
// and an index in range (negative ones wrap) gives ONNX's answer.
func TestRuntimeIndexOutOfRange(t *testing.T) {
	f32, i64 := onnxpb.TensorProto_FLOAT, onnxpb.TensorProto_INT64
	data := tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	cases := []struct {
		name    string
		node    *onnxpb.NodeProto
		idx     *onnxpb.ValueInfoProto
		upd     bool // the node takes updates of idx's shape (ScatterElements) or updShape
		updDims []int
		good    *tensor.Tensor
		want    []float32 // for good
		bad     *tensor.Tensor
		errs    []string
	}{
		{
			name: "Gather", node: node("Gather", "n", []string{"x", "i"}, []string{"y"}, attrInt("axis", 1)),
			idx:  valueInfoProto("i", i64, 2),
			good: tensor.FromSlice([]int64{-1, 0}, 2), want: []float32{3, 1, 6, 4},
			bad: tensor.FromSlice([]int64{0, 3}, 2), errs: []string{`"n" (Gather)`, "index 3 out of range for axis 1 of extent 3"},
		},
		{
			name: "GatherElements", node: node("GatherElements", "n", []string{"x", "i"}, []string{"y"}, attrInt("axis", 0)),
			idx:  valueInfoProto("i", i64, 1, 3),
			good: tensor.FromSlice([]int64{1, -2, 1}, 1, 3), want: []float32{4, 2, 6},
			bad: tensor.FromSlice([]int64{0, -3, 1}, 1, 3), errs: []string{`"n" (GatherElements)`, "index -3 out of range for axis 0 of extent 2"},
		},
		{
			name: "GatherND", node: node("GatherND", "n", []string{"x", "i"}, []string{"y"}),
			idx:  valueInfoProto("i", i64, 2, 2),
			good: tensor.FromSlice([]int64{1, -1, 0, 1}, 2, 2), want: []float32{6, 2},
			bad: tensor.FromSlice([]int64{1, 0, 2, 0}, 2, 2), errs: []string{`"n" (GatherND)`, "index 2 out of range for axis 0 of extent 2"},
		},
		{
			name: "ScatterElements", node: node("ScatterElements", "n", []string{"x", "i", "u"}, []string{"y"}, attrInt("axis", 1)),
			idx: valueInfoProto("i", i64, 2, 1), upd: true, updDims: []int{2, 1},
			good: tensor.FromSlice([]int64{-1, 0}, 2, 1), want: []float32{1, 2, 10, 20, 5, 6},
			bad: tensor.FromSlice([]int64{1, 4}, 2, 1), errs: []string{`"n" (ScatterElements)`, "index 4 out of range for axis 1 of extent 3"},
		},
		{
			name: "ScatterND", node: node("ScatterND", "n", []string{"x", "i", "u"}, []string{"y"}),
			idx: valueInfoProto("i", i64, 1, 1), upd: true, updDims: []int{1, 3},
			good: tensor.FromSlice([]int64{-1}, 1, 1), want: []float32{1, 2, 3, 10, 20, 30},
			bad: tensor.FromSlice([]int64{-3}, 1, 1), errs: []string{`"n" (ScatterND)`, "index -3 out of range for axis 0 of extent 2"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ins := []*onnxpb.ValueInfoProto{valueInfoProto("x", f32, 2, 3), tc.idx}
			var upd *tensor.Tensor
			if tc.upd {
				dims := make([]int64, len(tc.updDims))
				for i, d := range tc.updDims {
					dims[i] = int64(d)
				}
				ins = append(ins, valueInfoProto("u", f32, dims...))
				upd = ops.Reshape(ops.MulScalar(tensor.Arange(tensor.Float32, 1, float64(tensor.Shape(tc.updDims).Size()+1), 1), 10), tc.updDims...)
			}
			g := graphProto("g", []*onnxpb.NodeProto{tc.node}, nil, ins, []*onnxpb.ValueInfoProto{valueInfoProto("y", f32)})
			raw := marshal(t, modelProto(17, g))
			eager, graph := mustLoad(t, raw), mustLoad(t, raw)
			feed := func(idx *tensor.Tensor) []*tensor.Tensor {
				if upd != nil {
					return []*tensor.Tensor{data, idx, upd}
				}
				return []*tensor.Tensor{data, idx}
			}
			e, gr, eerr, gerr := runBoth(eager, graph, feed(tc.good)...)
			if eerr != nil || gerr != nil {
				t.Fatalf("in range: PyNative: %v; Graph: %v", eerr, gerr)
			}
			for mode, y := range map[string]*tensor.Tensor{"PyNative": e[0], "Graph": gr[0]} {
				got := y.Float32s()
				if len(got) != len(tc.want) {
					t.Fatalf("%s: %v, want %v", mode, got, tc.want)
				}
				for i := range got {
					if got[i] != tc.want[i] {
						t.Fatalf("%s: %v, want %v", mode, got, tc.want)
					}
				}
			}
			_, _, eerr, gerr = runBoth(eager, graph, feed(tc.bad)...)
			if eerr == nil || gerr == nil {
				t.Fatalf("out of range: PyNative: %v; Graph: %v; want errors", eerr, gerr)
			}
			// The same error, but for the caller's line each names.
			var ee, ge *tensor.Error
			if !errors.As(eerr, &ee) || !errors.As(gerr, &ge) || ee.Op != ge.Op || ee.Msg != ge.Msg {
				t.Errorf("the modes differ:\nPyNative: %v\nGraph:    %v", eerr, gerr)
			}
			for _, want := range tc.errs {
				if !strings.Contains(eerr.Error(), want) {
					t.Errorf("PyNative: %v; want it to contain %q", eerr, want)
				}
			}
			if st := graph.JitStats(); st.Compiles != 1 {
				t.Errorf("the indices were specialised on: %d compiles for one shape", st.Compiles)
			}
		})
	}
}

// TestValueInputsScalars: a Range's limit and a TopK's k given as graph
// inputs are values (one plan per value), and a Clip's bounds are data
// (one plan for every value): in each case both modes give the answer of
// the op's definition.
func TestValueInputsScalars(t *testing.T) {
	f32, i64 := onnxpb.TensorProto_FLOAT, onnxpb.TensorProto_INT64
	ints := []int64{5, math.MinInt64, -2, math.MaxInt64, 0, -2}
	cases := []struct {
		name     string
		nodes    []*onnxpb.NodeProto
		inits    []*onnxpb.TensorProto
		ins      []*onnxpb.ValueInfoProto
		outType  onnxpb.TensorProto_DataType
		feed     func(v int64) []*tensor.Tensor
		values   []int64
		want     func(v int64) []float64
		compiles int // after all values; -1: one per distinct value
	}{
		{
			name:  "Range limit",
			nodes: []*onnxpb.NodeProto{node("Range", "r", []string{"s", "l", "d"}, []string{"y"})},
			inits: []*onnxpb.TensorProto{int64Tensor("s", nil, []int64{2}), int64Tensor("d", nil, []int64{3})},
			ins:   []*onnxpb.ValueInfoProto{valueInfoProto("l", i64)}, outType: i64,
			feed:   func(v int64) []*tensor.Tensor { return []*tensor.Tensor{tensor.Scalar(v)} },
			values: []int64{10, 3, 10, 14},
			want: func(v int64) []float64 {
				var out []float64
				for x := int64(2); x < v; x += 3 {
					out = append(out, float64(x))
				}
				return out
			},
			compiles: -1,
		},
		{
			name:  "TopK k, smallest, int64",
			nodes: []*onnxpb.NodeProto{node("TopK", "k", []string{"x", "k"}, []string{"y", "i"}, attrInt("largest", 0))},
			ins:   []*onnxpb.ValueInfoProto{valueInfoProto("x", i64, 6), valueInfoProto("k", i64, 1)}, outType: i64,
			feed: func(v int64) []*tensor.Tensor {
				return []*tensor.Tensor{tensor.FromSlice(append([]int64(nil), ints...), 6), tensor.FromSlice([]int64{v}, 1)}
			},
			values: []int64{2, 4, 2},
			// Ascending, ties by position: MinInt64, -2 (at 2), -2 (at 5), 0.
			want:     func(v int64) []float64 { return []float64{math.MinInt64, -2, -2, 0}[:v] },
			compiles: -1,
		},
		{
			name:  "Clip bounds",
			nodes: []*onnxpb.NodeProto{node("Clip", "c", []string{"x", "lo", "hi"}, []string{"y"})},
			ins:   []*onnxpb.ValueInfoProto{valueInfoProto("x", f32, 4), valueInfoProto("lo", f32), valueInfoProto("hi", f32)}, outType: f32,
			feed: func(v int64) []*tensor.Tensor {
				return []*tensor.Tensor{tensor.FromSlice([]float32{-3, -1, 1, 3}, 4), tensor.Scalar(float32(-v)), tensor.Scalar(float32(v))}
			},
			values: []int64{1, 2, 5},
			want: func(v int64) []float64 {
				out := []float64{-3, -1, 1, 3}
				for i := range out {
					out[i] = math.Max(-float64(v), math.Min(float64(v), out[i]))
				}
				return out
			},
			compiles: 1,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := graphProto("g", tc.nodes, tc.inits, tc.ins, []*onnxpb.ValueInfoProto{valueInfoProto("y", tc.outType)})
			raw := marshal(t, modelProto(17, g))
			eager, graph := mustLoad(t, raw), mustLoad(t, raw)
			distinct := map[int64]bool{}
			for _, v := range tc.values {
				distinct[v] = true
				e, gr, eerr, gerr := runBoth(eager, graph, tc.feed(v)...)
				if eerr != nil || gerr != nil {
					t.Fatalf("value %d: PyNative: %v; Graph: %v", v, eerr, gerr)
				}
				want := tc.want(v)
				for mode, y := range map[string]*tensor.Tensor{"PyNative": e[0], "Graph": gr[0]} {
					got := y.Float64s()
					if y.DType() == tensor.Int64 {
						got = got[:0]
						for _, x := range y.Int64s() {
							got = append(got, float64(x))
						}
					}
					if fmt.Sprint(got) != fmt.Sprint(want) {
						t.Fatalf("value %d, %s: %v, want %v", v, mode, got, want)
					}
				}
			}
			want := tc.compiles
			if want < 0 {
				want = len(distinct)
			}
			if st := graph.JitStats(); st.Compiles != want {
				t.Errorf("%d compiles for values %v, want %d", st.Compiles, tc.values, want)
			}
		})
	}
}

// TestValueInputsLoopTrips: a Loop with scan outputs whose trip count M is
// a graph input runs in both modes, Graph mode compiling one plan per M:
// the carried value counts the trips and the scan output stacks each.
func TestValueInputsLoopTrips(t *testing.T) {
	f32, i64, b := onnxpb.TensorProto_FLOAT, onnxpb.TensorProto_INT64, onnxpb.TensorProto_BOOL
	body := graphProto("body", []*onnxpb.NodeProto{
		node("Identity", "c", []string{"cond"}, []string{"cond_out"}),
		node("Add", "a", []string{"carry", "one"}, []string{"carry_out"}),
		node("Identity", "s", []string{"carry_out"}, []string{"scan"}),
	}, []*onnxpb.TensorProto{floatTensor("one", []int64{3}, []float32{1, 1, 1})},
		[]*onnxpb.ValueInfoProto{valueInfoProto("iter", i64), valueInfoProto("cond", b), valueInfoProto("carry", f32, 3)},
		[]*onnxpb.ValueInfoProto{valueInfoProto("cond_out", b), valueInfoProto("carry_out", f32, 3), valueInfoProto("scan", f32, 3)})
	g := graphProto("g", []*onnxpb.NodeProto{node("Loop", "l", []string{"m", "", "x"}, []string{"last", "all"}, attrGraph("body", body))}, nil,
		[]*onnxpb.ValueInfoProto{valueInfoProto("m", i64), valueInfoProto("x", f32, 3)},
		[]*onnxpb.ValueInfoProto{valueInfoProto("last", f32, 3), valueInfoProto("all", f32, -1, 3)})
	raw := marshal(t, modelProto(17, g))
	eager, graph := mustLoad(t, raw), mustLoad(t, raw)
	x := []float32{0.5, -1, 2}
	trips := []int64{3, 1, 3, 5}
	for _, m := range trips {
		e, gr, eerr, gerr := runBoth(eager, graph, tensor.Scalar(m), tensor.FromSlice(append([]float32(nil), x...), 3))
		if eerr != nil || gerr != nil {
			t.Fatalf("M=%d: PyNative: %v; Graph: %v", m, eerr, gerr)
		}
		var all []float32
		for k := range m {
			for _, v := range x {
				all = append(all, v+float32(k+1))
			}
		}
		for mode, ys := range map[string][]*tensor.Tensor{"PyNative": e, "Graph": gr} {
			if got, want := fmt.Sprint(ys[0].Float32s()), fmt.Sprint(all[len(all)-3:]); got != want {
				t.Errorf("M=%d, %s: last %s, want %s", m, mode, got, want)
			}
			if !ys[1].Shape().Equal([]int{int(m), 3}) || fmt.Sprint(ys[1].Float32s()) != fmt.Sprint(all) {
				t.Errorf("M=%d, %s: scan %v %v, want %v", m, mode, ys[1].Shape(), ys[1].Float32s(), all)
			}
		}
	}
	if st := graph.JitStats(); st.Compiles != 3 {
		t.Errorf("%d compiles for trip counts %v, want 3", st.Compiles, trips)
	}
}

// TestDropoutTrainingModeInput: Dropout follows the cell's mode. A
// constant training_mode does not change that; one given as a graph input
// that asks for the other mode is refused, alike in both modes, rather
// than answered in a mode the caller did not ask for.
func TestDropoutTrainingModeInput(t *testing.T) {
	f32, b := onnxpb.TensorProto_FLOAT, onnxpb.TensorProto_BOOL
	x := tensor.FromSlice([]float32{1, 2, 3, 4}, 4)
	cases := []struct {
		name  string
		inits []*onnxpb.TensorProto
		ins   []*onnxpb.ValueInfoProto
		feed  []*tensor.Tensor
		want  string // "" for the identity
	}{
		{"constant true", []*onnxpb.TensorProto{floatTensor("r", nil, []float32{0.5}), boolTensor("tm", true)},
			[]*onnxpb.ValueInfoProto{valueInfoProto("x", f32, 4)}, []*tensor.Tensor{x}, ""},
		{"input false", []*onnxpb.TensorProto{floatTensor("r", nil, []float32{0.5})},
			[]*onnxpb.ValueInfoProto{valueInfoProto("x", f32, 4), valueInfoProto("tm", b)}, []*tensor.Tensor{x, tensor.Scalar(false)}, ""},
		{"input true", []*onnxpb.TensorProto{floatTensor("r", nil, []float32{0.5})},
			[]*onnxpb.ValueInfoProto{valueInfoProto("x", f32, 4), valueInfoProto("tm", b)}, []*tensor.Tensor{x, tensor.Scalar(true)},
			"input training_mode is true while the cell's training mode is false"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := graphProto("g", []*onnxpb.NodeProto{node("Dropout", "d", []string{"x", "r", "tm"}, []string{"y"})}, tc.inits, tc.ins,
				[]*onnxpb.ValueInfoProto{valueInfoProto("y", f32)})
			raw := marshal(t, modelProto(17, g))
			e, gr, eerr, gerr := runBoth(mustLoad(t, raw), mustLoad(t, raw), tc.feed...)
			if tc.want != "" {
				for mode, err := range map[string]error{"PyNative": eerr, "Graph": gerr} {
					if err == nil || !strings.Contains(err.Error(), tc.want) {
						t.Errorf("%s: %v, want an error containing %q", mode, err, tc.want)
					}
				}
				return
			}
			if eerr != nil || gerr != nil {
				t.Fatalf("PyNative: %v; Graph: %v", eerr, gerr)
			}
			for mode, ys := range map[string][]*tensor.Tensor{"PyNative": e, "Graph": gr} {
				if fmt.Sprint(ys[0].Float32s()) != fmt.Sprint(x.Float32s()) {
					t.Errorf("%s: %v, want the input %v", mode, ys[0].Float32s(), x.Float32s())
				}
			}
		})
	}
}

// TestRuntimeIndexInSubGraph: an index out of range in a Loop's body
// names the Loop and the node in its body, the same in both modes (Graph
// mode checks it inside the compiled Scan).
func TestRuntimeIndexInSubGraph(t *testing.T) {
	f32, i64, b := onnxpb.TensorProto_FLOAT, onnxpb.TensorProto_INT64, onnxpb.TensorProto_BOOL
	body := graphProto("body", []*onnxpb.NodeProto{
		node("Identity", "c", []string{"cond"}, []string{"cond_out"}),
		node("Gather", "n", []string{"x", "i"}, []string{"scan"}),
	}, nil,
		[]*onnxpb.ValueInfoProto{valueInfoProto("iter", i64), valueInfoProto("cond", b)},
		[]*onnxpb.ValueInfoProto{valueInfoProto("cond_out", b), valueInfoProto("scan", f32, 2)})
	g := graphProto("g", []*onnxpb.NodeProto{node("Loop", "l", []string{"m", ""}, []string{"all"}, attrGraph("body", body))},
		[]*onnxpb.TensorProto{int64Tensor("m", nil, []int64{2})},
		[]*onnxpb.ValueInfoProto{valueInfoProto("x", f32, 3), valueInfoProto("i", i64, 2)},
		[]*onnxpb.ValueInfoProto{valueInfoProto("all", f32, 2, 2)})
	raw := marshal(t, modelProto(17, g))
	eager, graph := mustLoad(t, raw), mustLoad(t, raw)
	x := tensor.FromSlice([]float32{1, 2, 3}, 3)
	e, gr, eerr, gerr := runBoth(eager, graph, x, tensor.FromSlice([]int64{2, -3}, 2))
	if eerr != nil || gerr != nil {
		t.Fatalf("in range: PyNative: %v; Graph: %v", eerr, gerr)
	}
	for mode, ys := range map[string][]*tensor.Tensor{"PyNative": e, "Graph": gr} {
		if got := fmt.Sprint(ys[0].Float32s()); got != "[3 1 3 1]" {
			t.Errorf("%s: %s, want [3 1 3 1]", mode, got)
		}
	}
	_, _, eerr, gerr = runBoth(eager, graph, x, tensor.FromSlice([]int64{0, 3}, 2))
	want := `onnx: node "l" (Loop): node "n" (Gather): index 3 out of range for axis 0 of extent 3`
	for mode, err := range map[string]error{"PyNative": eerr, "Graph": gerr} {
		var te *tensor.Error
		if !errors.As(err, &te) || te.Op+": "+te.Msg != want {
			t.Errorf("%s: %v, want %q", mode, err, want)
		}
	}
}

// TestValueInputsConcurrent calls one model from several goroutines in
// Graph mode, each with its own shape value: each gets its own answer.
func TestValueInputsConcurrent(t *testing.T) {
	f32, i64 := onnxpb.TensorProto_FLOAT, onnxpb.TensorProto_INT64
	g := graphProto("g", []*onnxpb.NodeProto{node("Reshape", "r", []string{"x", "s"}, []string{"y"})}, nil,
		[]*onnxpb.ValueInfoProto{valueInfoProto("x", f32, 12), valueInfoProto("s", i64, 2)},
		[]*onnxpb.ValueInfoProto{valueInfoProto("y", f32)})
	m := mustLoad(t, marshal(t, modelProto(17, g)))
	shapes := [][]int64{{1, 12}, {2, 6}, {3, 4}, {4, 3}, {6, 2}, {12, 1}}
	x := tensor.Arange(tensor.Float32, 0, 12, 1)
	errs := make(chan error, len(shapes)*4)
	inMode(spore.GraphMode, func() {
		var wg sync.WaitGroup
		for r := range 4 {
			for _, s := range shapes {
				wg.Add(1)
				go func() {
					defer wg.Done()
					y, err := m.Run(x, tensor.FromSlice(append([]int64(nil), s...), 2))
					if err == nil && !y[0].Shape().Equal([]int{int(s[0]), int(s[1])}) {
						err = fmt.Errorf("round %d, shape %v: got %v", r, s, y[0].Shape())
					}
					errs <- err
				}()
			}
		}
		wg.Wait()
	})
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if st := m.JitStats(); st.Compiles != len(shapes) {
		t.Errorf("%d compiles for %d shape values", st.Compiles, len(shapes))
	}
}

// TestValueInputCarriedByLoop: a value input that is also a Loop's
// initial carried value stays a value outside the Loop (the body's marks
// are its own), so the Reshape after the Loop reads it in both modes.
func TestValueInputCarriedByLoop(t *testing.T) {
	f32, i64, b := onnxpb.TensorProto_FLOAT, onnxpb.TensorProto_INT64, onnxpb.TensorProto_BOOL
	body := graphProto("body", []*onnxpb.NodeProto{
		node("Identity", "c", []string{"cond"}, []string{"cond_out"}),
		node("Add", "a", []string{"carry", "one"}, []string{"carry_out"}),
	}, []*onnxpb.TensorProto{int64Tensor("one", []int64{1}, []int64{1})},
		[]*onnxpb.ValueInfoProto{valueInfoProto("iter", i64), valueInfoProto("cond", b), valueInfoProto("carry", i64, 2)},
		[]*onnxpb.ValueInfoProto{valueInfoProto("cond_out", b), valueInfoProto("carry_out", i64, 2)})
	g := graphProto("g", []*onnxpb.NodeProto{
		node("Loop", "l", []string{"m", "", "s"}, []string{"last"}, attrGraph("body", body)),
		node("Reshape", "r", []string{"x", "s"}, []string{"y"}),
	}, []*onnxpb.TensorProto{int64Tensor("m", nil, []int64{2})},
		[]*onnxpb.ValueInfoProto{valueInfoProto("x", f32, 6), valueInfoProto("s", i64, 2)},
		[]*onnxpb.ValueInfoProto{valueInfoProto("y", f32), valueInfoProto("last", i64, 2)})
	raw := marshal(t, modelProto(17, g))
	e, gr, eerr, gerr := runBoth(mustLoad(t, raw), mustLoad(t, raw), tensor.Arange(tensor.Float32, 0, 6, 1), tensor.FromSlice([]int64{2, 3}, 2))
	if eerr != nil || gerr != nil {
		t.Fatalf("PyNative: %v; Graph: %v", eerr, gerr)
	}
	for mode, ys := range map[string][]*tensor.Tensor{"PyNative": e, "Graph": gr} {
		if !ys[0].Shape().Equal([]int{2, 3}) || fmt.Sprint(ys[1].Int64s()) != "[4 5]" {
			t.Errorf("%s: y %v, last %v; want shape [2 3] and [4 5]", mode, ys[0].Shape(), ys[1].Int64s())
		}
	}
}
