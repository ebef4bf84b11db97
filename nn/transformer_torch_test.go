package nn_test

import (
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/checkpoint"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// The fixtures under testdata/transformer are written by
// testdata/transformer/make_fixtures.py with PyTorch: inputs, masks,
// parameters under PyTorch's names, outputs, and the gradients of
// sum(output·w) (+ sum(weights·w2)) with respect to the inputs and every
// parameter.

// torchFixture is one fixture file.
type torchFixture struct {
	tensors map[string]*tensor.Tensor
	meta    map[string]string
}

func loadTorchFixture(t *testing.T, path string) torchFixture {
	t.Helper()
	ps, meta, err := checkpoint.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	f := torchFixture{tensors: map[string]*tensor.Tensor{}, meta: meta}
	for _, p := range ps {
		f.tensors[p.Name] = p.Tensor
	}
	return f
}

func (f torchFixture) int(t *testing.T, key string) int {
	t.Helper()
	v, err := strconv.Atoi(f.meta[key])
	if err != nil {
		t.Fatalf("metadata %s=%q: %v", key, f.meta[key], err)
	}
	return v
}

func (f torchFixture) float(t *testing.T, key string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(f.meta[key], 64)
	if err != nil {
		t.Fatalf("metadata %s=%q: %v", key, f.meta[key], err)
	}
	return v
}

// loadTorchParams loads the fixture's parameters into cell by their
// PyTorch names (nn.TorchParams), strictly: every parameter of the cell
// must be in the fixture and every fixture parameter must be in the cell.
func loadTorchParams(t *testing.T, f torchFixture, cell nn.Module) {
	t.Helper()
	var src []checkpoint.Param
	for name, v := range f.tensors {
		if torch, ok := strings.CutPrefix(name, "param."); ok {
			src = append(src, checkpoint.Param{Name: torch, Tensor: v})
		}
	}
	if _, _, _, err := checkpoint.LoadInto(nn.TorchParams(cell), src, true); err != nil {
		t.Fatal(err)
	}
}

// relErr is max|got − want| / max|want|, the error relative to the
// tensor's scale; elementwise relative error means nothing for entries
// that are zero (masked weights) or nearly so.
func relErr(got, want *tensor.Tensor) float64 {
	g, w := got.Float64s(), want.Float64s()
	d, s := 0.0, 0.0
	for i := range w {
		d = max(d, math.Abs(g[i]-w[i]))
		s = max(s, math.Abs(w[i]))
	}
	if math.IsNaN(d) {
		return math.Inf(1)
	}
	return d / max(s, 1e-30)
}

// torchCase is a fixture turned into a function of its inputs and masks.
type torchCase struct {
	cell   nn.Module
	inputs []string         // fixture input names, in argument order
	masks  []*tensor.Tensor // the masks, passed after the inputs
	// run computes the outputs from the inputs and masks.
	run     func(xs, masks []*tensor.Tensor) []*tensor.Tensor
	outputs []string // fixture output names, in run's order
}

func buildTorchCase(t *testing.T, f torchFixture) torchCase {
	t.Helper()
	var c torchCase
	var maskNames []string
	for _, n := range []string{"mask.attn", "mask.key_padding", "mask.memory", "mask.tgt_key_padding", "mask.memory_key_padding"} {
		if m := f.tensors[n]; m != nil {
			c.masks = append(c.masks, m)
			maskNames = append(maskNames, n)
		}
	}
	// mask returns the mask called name among the masks ms passed after
	// the inputs, or nil.
	mask := func(ms []*tensor.Tensor, name string) *tensor.Tensor {
		for i, n := range maskNames {
			if n == name {
				return ms[i]
			}
		}
		return nil
	}
	masksOf := func(ms []*tensor.Tensor) (attn, kpm *tensor.Tensor) {
		return mask(ms, "mask.attn"), mask(ms, "mask.key_padding")
	}
	causal := f.meta["is_causal"] == "1"
	switch f.meta["layer"] {
	case "MultiheadAttention":
		m := nn.NewMultiheadAttention(f.int(t, "embed_dim"), f.int(t, "num_heads"), nn.MultiheadAttentionConfig{
			NoBias: f.meta["bias"] == "0", KDim: f.int(t, "kdim"), VDim: f.int(t, "vdim"), BatchFirst: f.meta["batch_first"] == "1",
		})
		c.cell = m
		self := f.meta["self_attn"] == "1"
		c.inputs = []string{"query", "key", "value"}
		if self {
			c.inputs = []string{"query"}
		}
		need := f.meta["need_weights"] == "1"
		c.outputs = []string{"output"}
		if need {
			c.outputs = append(c.outputs, "weights")
		}
		c.run = func(xs, ms []*tensor.Tensor) []*tensor.Tensor {
			attn, kpm := masksOf(ms)
			q, k, v := xs[0], xs[0], xs[0]
			if !self {
				k, v = xs[1], xs[2]
			}
			out, w := m.Forward(q, k, v, nn.AttentionOptions{
				AttnMask: attn, KeyPaddingMask: kpm, IsCausal: causal,
				NeedWeights: need, PerHeadWeights: f.meta["average_attn_weights"] == "0",
			})
			if need {
				return []*tensor.Tensor{out, w}
			}
			return []*tensor.Tensor{out}
		}
	case "TransformerDecoderLayer", "TransformerDecoder":
		cfg := layerConfig(t, f)
		layer := nn.NewTransformerDecoderLayer(f.int(t, "d_model"), f.int(t, "nhead"), cfg)
		fwd := layer.Forward
		c.cell = layer
		if f.meta["layer"] == "TransformerDecoder" {
			var norm *nn.LayerNorm
			if f.meta["final_norm"] == "1" {
				norm = nn.NewLayerNorm([]int{f.int(t, "d_model")}, nn.LayerNormConfig{Eps: cfg.LayerNormEps})
			}
			d := nn.NewTransformerDecoder(layer, f.int(t, "num_layers"), norm)
			c.cell, fwd = d, d.Forward
		}
		c.inputs, c.outputs = []string{"tgt", "memory"}, []string{"output"}
		c.run = func(xs, ms []*tensor.Tensor) []*tensor.Tensor {
			return []*tensor.Tensor{fwd(xs[0], xs[1], nn.DecoderOptions{
				TgtIsCausal: f.meta["tgt_is_causal"] == "1", MemoryMask: mask(ms, "mask.memory"),
				TgtKeyPaddingMask: mask(ms, "mask.tgt_key_padding"), MemoryKeyPaddingMask: mask(ms, "mask.memory_key_padding"),
			})}
		}
	case "TransformerEncoderLayer", "TransformerEncoder":
		cfg := layerConfig(t, f)
		layer := nn.NewTransformerEncoderLayer(f.int(t, "d_model"), f.int(t, "nhead"), cfg)
		fwd := layer.Forward
		c.cell = layer
		if f.meta["layer"] == "TransformerEncoder" {
			var norm *nn.LayerNorm
			if f.meta["final_norm"] == "1" {
				norm = nn.NewLayerNorm([]int{f.int(t, "d_model")}, nn.LayerNormConfig{Eps: cfg.LayerNormEps})
			}
			e := nn.NewTransformerEncoder(layer, f.int(t, "num_layers"), norm)
			c.cell, fwd = e, e.Forward
		}
		c.inputs, c.outputs = []string{"src"}, []string{"output"}
		c.run = func(xs, ms []*tensor.Tensor) []*tensor.Tensor {
			attn, kpm := masksOf(ms)
			return []*tensor.Tensor{fwd(xs[0], nn.EncoderOptions{Mask: attn, KeyPaddingMask: kpm, IsCausal: causal})}
		}
	default:
		t.Fatalf("unknown layer %q", f.meta["layer"])
	}
	loadTorchParams(t, f, c.cell)
	return c
}

func layerConfig(t *testing.T, f torchFixture) nn.TransformerLayerConfig {
	t.Helper()
	return nn.TransformerLayerConfig{
		DimFeedforward: f.int(t, "dim_feedforward"), Activation: f.meta["activation"],
		LayerNormEps: f.float(t, "layer_norm_eps"), BatchFirst: f.meta["batch_first"] == "1", NormFirst: f.meta["norm_first"] == "1",
	}
}

// TestLayersMatchPyTorch loads each PyTorch fixture's weights by name
// and checks the outputs, the loss and its gradients with respect to the
// inputs and every parameter against PyTorch's, in PyNative mode and
// compiled (the whole forward and backward as one Graph-mode plan), to
// 1e-5 relative.
func TestLayersMatchPyTorch(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "transformer", "*.safetensors"))
	if err != nil || len(files) < 12 {
		t.Fatalf("want at least 12 fixtures, found %d (%v)", len(files), err)
	}
	sort.Strings(files)
	const tol = 1e-5
	worst := 0.0
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".safetensors")
		t.Run(name, func(t *testing.T) {
			f := loadTorchFixture(t, path)
			c := buildTorchCase(t, f)
			params := c.cell.Base().TrainableParameters()
			nin := len(c.inputs)
			pos := make([]int, nin)
			args := make([]*tensor.Tensor, 0, nin+len(c.masks))
			for i, n := range c.inputs {
				pos[i] = i
				args = append(args, f.tensors["in."+n])
			}
			args = append(args, c.masks...)
			loss := func(xs ...*tensor.Tensor) (*tensor.Tensor, []*tensor.Tensor) {
				outs := c.run(xs[:nin], xs[nin:])
				var l *tensor.Tensor
				for i, o := range outs {
					term := ops.Sum(ops.Mul(o, f.tensors["lossw."+c.outputs[i]]))
					if l == nil {
						l = term
					} else {
						l = ops.Add(l, term)
					}
				}
				return l, outs
			}
			vg := spore.ValueAndGradAux(loss, spore.GradPosition(pos...), spore.Weights(params...))
			step := func(xs ...*tensor.Tensor) []*tensor.Tensor {
				l, outs, grads := vg(xs...)
				return append(append([]*tensor.Tensor{l}, outs...), grads...)
			}
			// The expected results, in step's order.
			want := []*tensor.Tensor{f.tensors["out.loss"]}
			what := []string{"loss"}
			for _, o := range c.outputs {
				want, what = append(want, f.tensors["out."+o]), append(what, o)
			}
			for _, n := range c.inputs {
				want, what = append(want, f.tensors["grad.in."+n]), append(what, "d/d"+n)
			}
			np, torch := c.cell.Base().NamedParameters(), nn.TorchParams(c.cell)
			for i := range params {
				g := f.tensors["grad.param."+torch[i].Name]
				if g == nil {
					t.Fatalf("no PyTorch gradient for %s", np[i].Name)
				}
				want, what = append(want, g), append(what, "d/d"+np[i].Name)
			}
			for _, mode := range []struct {
				name string
				run  func(...*tensor.Tensor) []*tensor.Tensor
			}{
				{"PyNative", step},
				{"Graph O0", spore.Jit(step, spore.JitConfig{Level: spore.O0})},
				{"Graph O1", spore.Jit(step, spore.JitConfig{Level: spore.O1})},
			} {
				got := mode.run(args...)
				if len(got) != len(want) {
					t.Fatalf("%s: %d results, want %d", mode.name, len(got), len(want))
				}
				for i := range want {
					if !got[i].Shape().Equal(want[i].Shape()) {
						t.Fatalf("%s: %s is %v, PyTorch's %v", mode.name, what[i], got[i].Shape(), want[i].Shape())
					}
					e := relErr(got[i], want[i])
					worst = max(worst, e)
					if e > tol {
						t.Errorf("%s: %s differs from PyTorch by %.3g relative (tolerance %g)", mode.name, what[i], e, tol)
					}
				}
			}
		})
	}
	t.Logf("largest relative difference from PyTorch over all fixtures, outputs and gradients: %.3g", worst)
}
