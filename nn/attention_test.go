package nn_test

import (
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/nn/initializer"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

func paramNames(c nn.Module) string {
	var names []string
	for _, p := range c.Base().NamedParameters() {
		names = append(names, p.Name+p.Tensor.Shape().String())
	}
	return strings.Join(names, " ")
}

// TestAttentionParameterNames checks the names and shapes PyTorch and
// MindSpore give these layers' parameters, which checkpoints rely on.
func TestAttentionParameterNames(t *testing.T) {
	spore.SetSeed(1)
	layer := nn.NewTransformerEncoderLayer(8, 2, nn.TransformerLayerConfig{DimFeedforward: 16})
	tests := []struct {
		name string
		cell nn.Module
		want string
	}{
		{"MultiheadAttention", nn.NewMultiheadAttention(8, 2),
			"in_proj_weight[24 8] in_proj_bias[24] out_proj.weight[8 8] out_proj.bias[8]"},
		{"MultiheadAttention kdim vdim", nn.NewMultiheadAttention(8, 4, nn.MultiheadAttentionConfig{KDim: 3, VDim: 5}),
			"q_proj_weight[8 8] k_proj_weight[8 3] v_proj_weight[8 5] in_proj_bias[24] out_proj.weight[8 8] out_proj.bias[8]"},
		{"MultiheadAttention no bias", nn.NewMultiheadAttention(4, 1, nn.MultiheadAttentionConfig{NoBias: true}),
			"in_proj_weight[12 4] out_proj.weight[4 4]"},
		{"TransformerEncoderLayer", layer,
			"self_attn.in_proj_weight[24 8] self_attn.in_proj_bias[24] self_attn.out_proj.weight[8 8] self_attn.out_proj.bias[8] " +
				"linear1.weight[16 8] linear1.bias[16] linear2.weight[8 16] linear2.bias[8] " +
				"norm1.gamma[8] norm1.beta[8] norm2.gamma[8] norm2.beta[8]"},
		{"TransformerDecoderLayer", nn.NewTransformerDecoderLayer(4, 2, nn.TransformerLayerConfig{DimFeedforward: 6}),
			"self_attn.in_proj_weight[12 4] self_attn.in_proj_bias[12] self_attn.out_proj.weight[4 4] self_attn.out_proj.bias[4] " +
				"multihead_attn.in_proj_weight[12 4] multihead_attn.in_proj_bias[12] multihead_attn.out_proj.weight[4 4] multihead_attn.out_proj.bias[4] " +
				"linear1.weight[6 4] linear1.bias[6] linear2.weight[4 6] linear2.bias[4] " +
				"norm1.gamma[4] norm1.beta[4] norm2.gamma[4] norm2.beta[4] norm3.gamma[4] norm3.beta[4]"},
		{"PositionalEmbedding", nn.NewPositionalEmbedding(10, 4), "embedding_table[10 4]"},
		{"SinusoidalPositionalEncoding", nn.NewSinusoidalPositionalEncoding(4), ""},
	}
	for _, tt := range tests {
		if got := paramNames(tt.cell); got != tt.want {
			t.Errorf("%s: parameters\n%s\nwant\n%s", tt.name, got, tt.want)
		}
	}
	enc := nn.NewTransformerEncoder(layer, 2, nn.NewLayerNorm([]int{8}))
	names := paramNames(enc)
	for _, w := range []string{"layers.0.self_attn.in_proj_weight[24 8]", "layers.1.linear2.bias[8]", "layers.1.norm2.beta[8]", "norm.gamma[8]"} {
		if !strings.Contains(names, w) {
			t.Errorf("TransformerEncoder lacks %s: %s", w, names)
		}
	}
	if n := len(enc.NamedParameters()); n != 2*12+2 {
		t.Errorf("TransformerEncoder has %d parameters, want 26", n)
	}
}

// TestTransformerEncoderCopiesTheLayer checks that the encoder's layers
// start from the given layer's values but own their parameters, as
// PyTorch's deep copies do.
func TestTransformerEncoderCopiesTheLayer(t *testing.T) {
	spore.SetSeed(2)
	layer := nn.NewTransformerEncoderLayer(4, 2, nn.TransformerLayerConfig{DimFeedforward: 8})
	enc := nn.NewTransformerEncoder(layer, 3, nil)
	src := layer.NamedParameters()
	for i, l := range enc.Layers {
		for j, p := range l.NamedParameters() {
			if p.Tensor == src[j].Tensor {
				t.Fatalf("layer %d shares %s with the template", i, p.Name)
			}
			sameValues(t, p.Name, p.Tensor, src[j].Tensor, 0)
		}
	}
	enc.Layers[0].Linear1.Weight.Assign(tensor.Zeros(tensor.Float32, 8, 4))
	if maxDiff(enc.Layers[1].Linear1.Weight, layer.Linear1.Weight) != 0 {
		t.Fatal("changing one layer changed another")
	}
}

// TestAttentionGradients compares the float64 gradients with respect to
// the inputs and every parameter with finite differences, across layouts,
// masks and options.
func TestAttentionGradients(t *testing.T) {
	const L, S, N, E = 3, 4, 2, 4
	kpm := tensor.FromSlice([]bool{false, false, false, true, false, false, true, true}, N, S)
	attn := tensor.FromSlice([]bool{false, true, false, false, false, false, true, false, true, false, false, false}, L, S)
	floatMask := randT(30, -1, 1, L, S)
	tests := []struct {
		name string
		cfg  nn.MultiheadAttentionConfig
		opts nn.AttentionOptions
		q, k []int // shapes of query and key (value as key, vdim aside)
		vdim int
	}{
		{"seq first", nn.MultiheadAttentionConfig{}, nn.AttentionOptions{}, []int{L, N, E}, []int{S, N, E}, E},
		{"batch first, bool masks, weights", nn.MultiheadAttentionConfig{BatchFirst: true},
			nn.AttentionOptions{AttnMask: attn, KeyPaddingMask: kpm, NeedWeights: true}, []int{N, L, E}, []int{N, S, E}, E},
		{"float mask, per-head weights", nn.MultiheadAttentionConfig{},
			nn.AttentionOptions{AttnMask: floatMask, NeedWeights: true, PerHeadWeights: true}, []int{L, N, E}, []int{S, N, E}, E},
		{"kdim vdim no bias causal", nn.MultiheadAttentionConfig{KDim: 3, VDim: 5, NoBias: true},
			nn.AttentionOptions{IsCausal: true}, []int{L, N, E}, []int{S, N, 3}, 5},
		{"unbatched", nn.MultiheadAttentionConfig{}, nn.AttentionOptions{KeyPaddingMask: tensor.FromSlice([]bool{false, true, false, false}), NeedWeights: true},
			[]int{L, E}, []int{S, E}, E},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spore.SetSeed(int64(40 + i))
			tt.cfg.DType = f64
			m := nn.NewMultiheadAttention(E, 2, tt.cfg)
			if !tt.cfg.NoBias {
				randomise(m.InProjBias, 50)
				randomise(m.OutProj.Bias, 51)
			}
			q := randT(uint64(60+i), -1, 1, tt.q...)
			k := randT(uint64(70+i), -1, 1, tt.k...)
			vs := append([]int(nil), tt.k...)
			vs[len(vs)-1] = tt.vdim
			v := randT(uint64(80+i), -1, 1, vs...)
			checkGrads(t, tt.name, m, func(xs ...*tensor.Tensor) *tensor.Tensor {
				out, w := m.Forward(xs[0], xs[1], xs[2], tt.opts)
				if w == nil {
					return out
				}
				return ops.Concat(0, ops.Reshape(out, -1), ops.Reshape(w, -1))
			}, q, k, v)
		})
	}
	t.Run("self-attention shares one input", func(t *testing.T) {
		spore.SetSeed(45)
		m := nn.NewMultiheadAttention(E, 2, nn.MultiheadAttentionConfig{DType: f64})
		checkGrads(t, "self", m, func(xs ...*tensor.Tensor) *tensor.Tensor {
			out, _ := m.Forward(xs[0], xs[0], xs[0], nn.AttentionOptions{IsCausal: true})
			return out
		}, randT(46, -1, 1, L, N, E))
	})
}

// randomise replaces a parameter's values (zero at initialisation) with
// random ones, so that gradient checks see them.
func randomise(p *tensor.Tensor, seed uint64) {
	p.Assign(randT(seed, -0.5, 0.5, p.Shape()...))
}

// TestTransformerEncoderGradients checks the float64 gradients of the
// encoder layer, the encoder and the decoder against finite differences,
// in both norm orders and with both activations.
func TestTransformerEncoderGradients(t *testing.T) {
	const L, N, d = 3, 2, 4
	kpm := tensor.FromSlice([]bool{false, false, true, false, false, false}, N, L)
	for i, cfg := range []nn.TransformerLayerConfig{
		{DimFeedforward: 6, DType: f64},
		{DimFeedforward: 6, DType: f64, NormFirst: true, Activation: "gelu", BatchFirst: true},
	} {
		spore.SetSeed(int64(90 + i))
		layer := nn.NewTransformerEncoderLayer(d, 2, cfg)
		for j, p := range layer.NamedParameters() {
			randomise(p.Tensor, uint64(100+j))
		}
		shape := []int{L, N, d}
		if cfg.BatchFirst {
			shape = []int{N, L, d}
		}
		x := randT(uint64(110+i), -1, 1, shape...)
		checkGrads(t, "layer", layer, func(xs ...*tensor.Tensor) *tensor.Tensor {
			return layer.Forward(xs[0], nn.EncoderOptions{KeyPaddingMask: kpm, IsCausal: i == 1})
		}, x)
		enc := nn.NewTransformerEncoder(layer, 2, nn.NewLayerNorm([]int{d}, nn.LayerNormConfig{DType: f64, Eps: 1e-5}))
		checkGrads(t, "encoder", enc, func(xs ...*tensor.Tensor) *tensor.Tensor { return enc.Call(xs[0]) }, x)

		dl := nn.NewTransformerDecoderLayer(d, 2, cfg)
		for j, p := range dl.NamedParameters() {
			randomise(p.Tensor, uint64(120+j))
		}
		dec := nn.NewTransformerDecoder(dl, 2, nn.NewLayerNorm([]int{d}, nn.LayerNormConfig{DType: f64, Eps: 1e-5}))
		mshape := []int{L + 1, N, d}
		if cfg.BatchFirst {
			mshape = []int{N, L + 1, d}
		}
		memory := randT(uint64(130+i), -1, 1, mshape...)
		checkGrads(t, "decoder", dec, func(xs ...*tensor.Tensor) *tensor.Tensor {
			return dec.Forward(xs[0], xs[1], nn.DecoderOptions{TgtKeyPaddingMask: kpm, TgtIsCausal: true})
		}, x, memory)
	}
}

// TestAttentionFullyMaskedRow checks the documented handling of a query
// that may attend no key: zero weights, the output projection's bias as
// output, and finite gradients.
func TestAttentionFullyMaskedRow(t *testing.T) {
	spore.SetSeed(3)
	m := nn.NewMultiheadAttention(4, 2, nn.MultiheadAttentionConfig{DType: f64})
	randomise(m.OutProj.Bias, 4)
	// Query 0 may attend nothing; query 1 attends key 1 only.
	mask := tensor.FromSlice([]bool{true, true, true, false}, 2, 2)
	q, kv := randT(5, -1, 1, 2, 1, 4), randT(6, -1, 1, 2, 1, 4)
	out, w := m.Forward(q, kv, kv, nn.AttentionOptions{AttnMask: mask, NeedWeights: true})
	sameValues(t, "weights", w, tensor.FromSlice([]float64{0, 0, 0, 1}, 1, 2, 2), 1e-15)
	row0 := ops.Reshape(ops.Slice(out, []int{0, 0, 0}, []int{1, 1, 4}), 4)
	sameValues(t, "output of the masked query", row0, m.OutProj.Bias, 1e-15)
	g := spore.Grad(func(q, kv *tensor.Tensor) *tensor.Tensor {
		o, _ := m.Forward(q, kv, kv, nn.AttentionOptions{AttnMask: mask})
		return ops.Sum(o)
	}, spore.GradPosition(0, 1), spore.Weights(m.TrainableParameters()...))(q, kv)
	for i, gi := range g {
		for _, v := range gi.Float64s() {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("gradient %d is not finite: %v", i, gi.Float64s())
			}
		}
	}
}

// TestAttentionShapesAndModes checks output and weight shapes for every
// layout, and that Graph mode (the cell compiled through Call) agrees
// with PyNative.
func TestAttentionShapesAndModes(t *testing.T) {
	spore.SetSeed(7)
	tests := []struct {
		name       string
		cfg        nn.MultiheadAttentionConfig
		q, kv      []int
		opts       nn.AttentionOptions
		out, wants []int
	}{
		{"seq first", nn.MultiheadAttentionConfig{}, []int{5, 2, 8}, []int{3, 2, 8}, nn.AttentionOptions{NeedWeights: true}, []int{5, 2, 8}, []int{2, 5, 3}},
		{"batch first per head", nn.MultiheadAttentionConfig{BatchFirst: true}, []int{2, 5, 8}, []int{2, 3, 8},
			nn.AttentionOptions{NeedWeights: true, PerHeadWeights: true}, []int{2, 5, 8}, []int{2, 4, 5, 3}},
		{"unbatched", nn.MultiheadAttentionConfig{}, []int{5, 8}, []int{3, 8}, nn.AttentionOptions{NeedWeights: true}, []int{5, 8}, []int{5, 3}},
		{"unbatched batch first per head", nn.MultiheadAttentionConfig{BatchFirst: true}, []int{5, 8}, []int{3, 8},
			nn.AttentionOptions{NeedWeights: true, PerHeadWeights: true}, []int{5, 8}, []int{4, 5, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := nn.NewMultiheadAttention(8, 4, tt.cfg)
			q := ops.Cast(randT(8, -1, 1, tt.q...), tensor.Float32)
			kv := ops.Cast(randT(9, -1, 1, tt.kv...), tensor.Float32)
			out, w := m.Forward(q, kv, kv, tt.opts)
			if !out.Shape().Equal(tt.out) || !w.Shape().Equal(tt.wants) {
				t.Fatalf("output %v and weights %v, want %v and %v", out.Shape(), w.Shape(), tensor.Shape(tt.out), tensor.Shape(tt.wants))
			}
			if _, w := m.Forward(q, kv, kv, nn.AttentionOptions{}); w != nil {
				t.Fatal("weights returned without NeedWeights")
			}
			eager := m.Call(q, kv, kv)
			var graph *tensor.Tensor
			withMode(spore.GraphMode, spore.O1, func() { graph = m.Call(q, kv, kv) })
			sameValues(t, "Graph mode", graph, eager, 1e-6)
			sameValues(t, "Construct", eager, out, 1e-6)
		})
	}
	t.Run("encoder", func(t *testing.T) {
		enc := nn.NewTransformerEncoder(nn.NewTransformerEncoderLayer(8, 2, nn.TransformerLayerConfig{DimFeedforward: 16, BatchFirst: true}), 2, nil)
		x := ops.Cast(randT(10, -1, 1, 3, 5, 8), tensor.Float32)
		eager := enc.Call(x)
		var graph *tensor.Tensor
		withMode(spore.GraphMode, spore.O1, func() { graph = enc.Call(x) })
		if !eager.Shape().Equal(x.Shape()) {
			t.Fatalf("output %v, want %v", eager.Shape(), x.Shape())
		}
		sameValues(t, "Graph mode", graph, eager, 1e-5)
	})
}

// TestAttentionDropout checks that attention dropout acts in training
// only, and is reproducible under the framework seed in both modes.
func TestAttentionDropout(t *testing.T) {
	spore.SetSeed(11)
	layer := nn.NewTransformerEncoderLayer(8, 2, nn.TransformerLayerConfig{DimFeedforward: 16, Dropout: 0.3})
	x := ops.Cast(randT(12, -1, 1, 4, 2, 8), tensor.Float32)
	a, b := layer.Call(x), layer.Call(x)
	sameValues(t, "inference is deterministic", a, b, 0)
	layer.SetTrain(true)
	for _, mode := range []spore.Mode{spore.PyNativeMode, spore.GraphMode} {
		withMode(mode, spore.O1, func() {
			spore.SetSeed(13)
			c := layer.Call(x)
			d := layer.Call(x)
			spore.SetSeed(13)
			e := layer.Call(x)
			if maxDiff(c, a) == 0 || maxDiff(c, d) == 0 {
				t.Fatalf("mode %v: training dropout changed nothing", mode)
			}
			sameValues(t, "same seed, same dropout", e, c, 0)
		})
	}
}

// TestPositionalEncodings checks the sinusoidal table against its
// formula, the learned embedding's sum and gradient, and both layouts.
func TestPositionalEncodings(t *testing.T) {
	tab := nn.SinusoidalTable(4, 5).Float64s()
	for _, c := range []struct {
		t, j int
		want float64
	}{
		{0, 0, 0}, {0, 1, 1}, {3, 0, math.Sin(3)}, {3, 1, math.Cos(3)},
		{2, 2, math.Sin(2 / math.Pow(10000, 2.0/5))}, {2, 3, math.Cos(2 / math.Pow(10000, 2.0/5))},
		{3, 4, math.Sin(3 / math.Pow(10000, 4.0/5))},
	} {
		if got := tab[c.t*5+c.j]; math.Abs(got-c.want) > 1e-15 {
			t.Errorf("PE[%d, %d] = %v, want %v", c.t, c.j, got, c.want)
		}
	}

	spore.SetSeed(14)
	for _, bf := range []bool{false, true} {
		s := nn.NewSinusoidalPositionalEncoding(5, nn.SinusoidalPositionalEncodingConfig{MaxLen: 10, BatchFirst: bf, DType: f64})
		p := nn.NewPositionalEmbedding(10, 5, nn.PositionalEmbeddingConfig{BatchFirst: bf, DType: f64, Init: initializer.Uniform(1)})
		shape, seqAxis := []int{4, 2, 5}, 0
		if bf {
			shape, seqAxis = []int{2, 4, 5}, 1
		}
		x := randT(15, -1, 1, shape...)
		ys, yp := s.Call(x).Float64s(), p.Call(x).Float64s()
		xv, table := x.Float64s(), p.EmbeddingTable.Float64s()
		for i := range xv {
			pos := i / 5 / []int{2, 1}[seqAxis] % 4
			j := i % 5
			if math.Abs(ys[i]-xv[i]-tab[pos*5+j]) > 1e-15 || math.Abs(yp[i]-xv[i]-table[pos*5+j]) > 1e-15 {
				t.Fatalf("batch first %v: element %d (position %d) is not x + PE", bf, i, pos)
			}
		}
		var graph *tensor.Tensor
		withMode(spore.GraphMode, spore.O1, func() { graph = s.Call(x) })
		sameValues(t, "sinusoidal in Graph mode", graph, s.Call(x), 0)
		checkGrads(t, "PositionalEmbedding", p, func(xs ...*tensor.Tensor) *tensor.Tensor { return p.Call(xs[0]) }, x)
	}
	unbatched := nn.NewSinusoidalPositionalEncoding(6).Call(tensor.Zeros(tensor.Float32, 3, 6))
	sameValues(t, "unbatched", unbatched, ops.Cast(nn.SinusoidalTable(3, 6), tensor.Float32), 1e-7)
}

// TestAttentionErrors checks that bad settings and inputs are refused
// with messages naming what is wrong.
func TestAttentionErrors(t *testing.T) {
	spore.SetSeed(16)
	m := nn.NewMultiheadAttention(8, 2)
	x := tensor.Zeros(tensor.Float32, 5, 2, 8)
	kv := tensor.Zeros(tensor.Float32, 3, 2, 8)
	tests := []struct {
		name  string
		f     func()
		wants []string
	}{
		{"heads", func() { nn.NewMultiheadAttention(8, 3) }, []string{"embed_dim 8", "num_heads 3"}},
		{"dropout", func() { nn.NewMultiheadAttention(8, 2, nn.MultiheadAttentionConfig{Dropout: 1}) }, []string{"dropout 1"}},
		{"width", func() { m.Call(tensor.Zeros(tensor.Float32, 5, 2, 7), kv, kv) }, []string{"query [5 2 7]", "8"}},
		{"rank", func() { m.Call(x, tensor.Zeros(tensor.Float32, 3, 8), kv) }, []string{"key [3 8]", "[seq, batch, feature]"}},
		{"batch", func() { m.Call(x, tensor.Zeros(tensor.Float32, 3, 4, 8), tensor.Zeros(tensor.Float32, 3, 4, 8)) }, []string{"batch size"}},
		{"lengths", func() { m.Call(x, kv, tensor.Zeros(tensor.Float32, 4, 2, 8)) }, []string{"sequence length"}},
		{"dtype", func() { m.Call(ops.Cast(x, f64), ops.Cast(kv, f64), ops.Cast(kv, f64)) }, []string{"Float64", "Float32"}},
		{"attn_mask shape", func() {
			m.Forward(x, kv, kv, nn.AttentionOptions{AttnMask: tensor.Zeros(tensor.Bool, 3, 5)})
		}, []string{"attn_mask [3 5]", "[5 3]", "[4 5 3]"}},
		{"attn_mask dtype", func() {
			m.Forward(x, kv, kv, nn.AttentionOptions{AttnMask: tensor.Zeros(tensor.Int32, 5, 3)})
		}, []string{"attn_mask [5 3] is Int32", "Bool"}},
		{"key_padding_mask", func() {
			m.Forward(x, kv, kv, nn.AttentionOptions{KeyPaddingMask: tensor.Zeros(tensor.Bool, 2, 5)})
		}, []string{"key_padding_mask [2 5]", "[2 3]"}},
		{"activation", func() { nn.NewTransformerEncoderLayer(8, 2, nn.TransformerLayerConfig{Activation: "tanh"}) }, []string{`"tanh"`, "relu or gelu"}},
		{"encoder layers", func() { nn.NewTransformerEncoder(nn.NewTransformerEncoderLayer(8, 2), 0, nil) }, []string{"num_layers"}},
		{"positions", func() {
			nn.NewSinusoidalPositionalEncoding(8, nn.SinusoidalPositionalEncodingConfig{MaxLen: 4}).Call(x)
		}, []string{"5 positions", "max_len=4"}},
		{"position width", func() { nn.NewPositionalEmbedding(10, 4).Call(x) }, []string{"[5 2 8]", "dim=4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { testkit.MustPanic(t, tt.f, tt.wants...) })
	}
}

// TestAttentionFusedMatchesWeightsPath checks that the two ways Forward
// computes attention agree, outputs and gradients: the fused
// ops.ScaledDotProductAttention (without NeedWeights) and the composition
// of ops that builds the weights (with it), across masks, including a
// query with no key to attend.
func TestAttentionFusedMatchesWeightsPath(t *testing.T) {
	const L, S, N, E = 4, 5, 2, 6
	kpm := tensor.FromSlice([]bool{false, false, false, false, true, false, true, false, false, true}, N, S)
	dead := tensor.FromSlice([]bool{
		true, true, true, true, true, // query 0 attends nothing
		false, true, false, true, false,
		false, false, false, false, false,
		true, false, false, false, false,
	}, L, S)
	tests := []struct {
		name string
		opts nn.AttentionOptions
	}{
		{"no mask", nn.AttentionOptions{}},
		{"causal", nn.AttentionOptions{IsCausal: true}},
		{"bool masks", nn.AttentionOptions{AttnMask: dead, KeyPaddingMask: kpm}},
		{"float mask and padding, causal", nn.AttentionOptions{AttnMask: randT(1, -1, 1, L, S), KeyPaddingMask: kpm, IsCausal: true}},
		{"float padding", nn.AttentionOptions{KeyPaddingMask: randT(2, -2, 0, N, S)}},
	}
	for _, dt := range []tensor.DType{tensor.Float32, f64} {
		for _, tt := range tests {
			t.Run(tt.name+" "+dt.String(), func(t *testing.T) {
				spore.SetSeed(3)
				m := nn.NewMultiheadAttention(E, 3, nn.MultiheadAttentionConfig{DType: dt})
				opts := tt.opts
				for _, mk := range []**tensor.Tensor{&opts.AttnMask, &opts.KeyPaddingMask} {
					if *mk != nil && (*mk).DType() != tensor.Bool {
						*mk = ops.Cast(*mk, dt)
					}
				}
				q := ops.Cast(randT(4, -1, 1, L, N, E), dt)
				kv := ops.Cast(randT(5, -1, 1, S, N, E), dt)
				run := func(need bool) []*tensor.Tensor {
					o := opts
					o.NeedWeights = need
					l, g := spore.ValueAndGrad(func(q, kv *tensor.Tensor) *tensor.Tensor {
						out, _ := m.Forward(q, kv, kv, o)
						return ops.Sum(ops.Mul(out, out))
					}, spore.GradPosition(0, 1), spore.Weights(m.TrainableParameters()...))(q, kv)
					return append([]*tensor.Tensor{l}, g...)
				}
				fused, unfused := run(false), run(true)
				tol := 1e-12
				if dt == tensor.Float32 {
					tol = 1e-5
				}
				for i := range fused {
					if e := relErr(fused[i], unfused[i]); !(e <= tol) {
						t.Errorf("result %d: fused and weights paths differ by %.3g relative", i, e)
					}
				}
			})
		}
	}
}

// TestEncoderLayerGraph checks what Graph mode compiles an encoder layer
// to: one fused attention primitive (no L×S weights, so no Exp), and the
// feed-forward activation fused into its GEMM.
func TestEncoderLayerGraph(t *testing.T) {
	spore.SetSeed(17)
	for _, act := range []string{"relu", "gelu"} {
		l := nn.NewTransformerEncoderLayer(8, 2, nn.TransformerLayerConfig{DimFeedforward: 16, BatchFirst: true, Activation: act})
		x := tensor.Zeros(tensor.Float32, 2, 5, 8)
		kpm := tensor.Zeros(tensor.Bool, 2, 5)
		ir, err := spore.IR(func(x, kpm *spore.Tensor) *spore.Tensor {
			return l.Forward(x, nn.EncoderOptions{KeyPaddingMask: kpm, IsCausal: true})
		}, []any{x, kpm}, spore.JitConfig{Level: spore.O1})
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(ir, "= ScaledDotProductAttention("); n != 1 || strings.Contains(ir, "Exp") {
			t.Errorf("%s: want one fused attention and no Exp, got %d:\n%s", act, n, ir)
		}
		epi := regexp.MustCompile(`= Anchor\(.*epilogue:.* = ` + map[string]string{"relu": "ReLU", "gelu": "GELU"}[act] + ` `)
		if !strings.Contains(ir, "causal=true") || !epi.MatchString(ir) {
			t.Errorf("%s: want causal attention and the activation in a GEMM epilogue:\n%s", act, ir)
		}
	}
}
