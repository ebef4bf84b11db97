package optim_test

import (
	"math"
	"strings"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/optim"
	"github.com/sporeml/spore/tensor"
)

// refState is a float64 reference of one parameter vector and its slots.
type refState struct {
	p, b, m, v []float64
	t          int
}

// gradOf is the gradient used by every update test: that of
// Σ (p − c)², plus a step-dependent term so that moments see varied input.
func gradOf(p []float64, t int) []float64 {
	g := make([]float64, len(p))
	for i, x := range p {
		g[i] = 2*(x-0.3*float64(i)) + 0.1*float64(t)*float64(i%2*2-1)
	}
	return g
}

// refSGD is torch.optim.SGD / mindspore.nn.SGD written out in float64.
func refSGD(s *refState, g []float64, lr, mu, damp, wd float64, nesterov bool) {
	for i := range s.p {
		d := g[i] + wd*s.p[i]
		if mu != 0 {
			if s.t == 0 {
				s.b[i] = d
			} else {
				s.b[i] = mu*s.b[i] + (1-damp)*d
			}
			if nesterov {
				d += mu * s.b[i]
			} else {
				d = s.b[i]
			}
		}
		s.p[i] -= lr * d
	}
	s.t++
}

// refAdam is mindspore.nn.Adam (ApplyAdam) in float64.
func refAdam(s *refState, g []float64, lr, b1, b2, eps, wd float64) {
	s.t++
	t := float64(s.t)
	lrt := lr * math.Sqrt(1-math.Pow(b2, t)) / (1 - math.Pow(b1, t))
	for i := range s.p {
		d := g[i] + wd*s.p[i]
		s.m[i] = b1*s.m[i] + (1-b1)*d
		s.v[i] = b2*s.v[i] + (1-b2)*d*d
		s.p[i] -= lrt * s.m[i] / (math.Sqrt(s.v[i]) + eps)
	}
}

// refAdamW is torch.optim.AdamW in float64.
func refAdamW(s *refState, g []float64, lr, b1, b2, eps, wd float64) {
	s.t++
	t := float64(s.t)
	bc1, bc2 := 1-math.Pow(b1, t), 1-math.Pow(b2, t)
	for i := range s.p {
		s.p[i] *= 1 - lr*wd
		s.m[i] = b1*s.m[i] + (1-b1)*g[i]
		s.v[i] = b2*s.v[i] + (1-b2)*g[i]*g[i]
		den := math.Sqrt(s.v[i])/math.Sqrt(bc2) + eps
		s.p[i] -= lr / bc1 * s.m[i] / den
	}
}

func TestUpdatesAgainstReference(t *testing.T) {
	p0 := []float64{0.5, -1.0, 2.0, 0.05}
	cases := []struct {
		name string
		make func(p *tensor.Tensor) optim.Optimizer
		ref  func(s *refState, g []float64)
	}{
		{"sgd", func(p *tensor.Tensor) optim.Optimizer {
			return optim.NewSGD([]*tensor.Tensor{p}, optim.SGDConfig{Common: optim.Common{LR: optim.Constant(0.1)}})
		}, func(s *refState, g []float64) { refSGD(s, g, 0.1, 0, 0, 0, false) }},
		{"sgd momentum", func(p *tensor.Tensor) optim.Optimizer {
			return optim.NewSGD([]*tensor.Tensor{p}, optim.SGDConfig{Common: optim.Common{LR: optim.Constant(0.05)}, Momentum: 0.9})
		}, func(s *refState, g []float64) { refSGD(s, g, 0.05, 0.9, 0, 0, false) }},
		{"sgd momentum dampening wd", func(p *tensor.Tensor) optim.Optimizer {
			return optim.NewSGD([]*tensor.Tensor{p}, optim.SGDConfig{Common: optim.Common{LR: optim.Constant(0.05), WeightDecay: 0.01}, Momentum: 0.8, Dampening: 0.3})
		}, func(s *refState, g []float64) { refSGD(s, g, 0.05, 0.8, 0.3, 0.01, false) }},
		{"sgd nesterov wd", func(p *tensor.Tensor) optim.Optimizer {
			return optim.NewSGD([]*tensor.Tensor{p}, optim.SGDConfig{Common: optim.Common{LR: optim.Constant(0.05), WeightDecay: 1e-2}, Momentum: 0.9, Nesterov: true})
		}, func(s *refState, g []float64) { refSGD(s, g, 0.05, 0.9, 0, 1e-2, true) }},
		{"adam", func(p *tensor.Tensor) optim.Optimizer {
			return optim.NewAdam([]*tensor.Tensor{p}, optim.AdamConfig{Common: optim.Common{LR: optim.Constant(0.01)}})
		}, func(s *refState, g []float64) { refAdam(s, g, 0.01, 0.9, 0.999, 1e-8, 0) }},
		{"adam wd betas eps", func(p *tensor.Tensor) optim.Optimizer {
			return optim.NewAdam([]*tensor.Tensor{p}, optim.AdamConfig{Common: optim.Common{LR: optim.Constant(0.02), WeightDecay: 0.1}, Beta1: 0.8, Beta2: 0.99, Eps: 1e-3})
		}, func(s *refState, g []float64) { refAdam(s, g, 0.02, 0.8, 0.99, 1e-3, 0.1) }},
		{"adamw", func(p *tensor.Tensor) optim.Optimizer {
			return optim.NewAdamW([]*tensor.Tensor{p}, optim.AdamConfig{Common: optim.Common{LR: optim.Constant(0.01)}})
		}, func(s *refState, g []float64) { refAdamW(s, g, 0.01, 0.9, 0.999, 1e-8, 0.01) }},
		{"adamw wd", func(p *tensor.Tensor) optim.Optimizer {
			return optim.NewAdamW([]*tensor.Tensor{p}, optim.AdamConfig{Common: optim.Common{LR: optim.Constant(0.03), WeightDecay: 0.2}, Eps: 1e-4})
		}, func(s *refState, g []float64) { refAdamW(s, g, 0.03, 0.9, 0.999, 1e-4, 0.2) }},
	}
	for _, c := range cases {
		for _, graph := range []bool{false, true} {
			name := c.name
			if graph {
				name += "/graph"
			}
			t.Run(name, func(t *testing.T) {
				p := tensor.NewParameter("w", tensor.FromSlice(p0))
				opt := c.make(p)
				step := func(g *tensor.Tensor) *tensor.Tensor { opt.Step([]*tensor.Tensor{g}); return ops.Sum(g) }
				j := spore.NewJit(step)
				n := len(p0)
				ref := &refState{p: append([]float64(nil), p0...), b: make([]float64, n), m: make([]float64, n), v: make([]float64, n)}
				for k := range 5 {
					g := gradOf(p.Float64s(), k)
					if graph {
						j.Fn(tensor.FromSlice(g))
					} else {
						step(tensor.FromSlice(g))
					}
					c.ref(ref, g)
					got := p.Float64s()
					for i := range got {
						if d := math.Abs(got[i] - ref.p[i]); d > 1e-12*max(1, math.Abs(ref.p[i])) {
							t.Fatalf("step %d: p[%d] = %.15g, want %.15g", k+1, i, got[i], ref.p[i])
						}
					}
				}
				if graph && j.Stats().Compiles != 1 {
					t.Fatalf("compiled %d times, want 1", j.Stats().Compiles)
				}
				st := opt.State()
				if st[0].Name() != "global_step" || st[0].Item() != 5 {
					t.Fatalf("state[0] = %s %v, want global_step 5", st[0].Name(), st[0])
				}
				for _, s := range st {
					if s.RequiresGrad() {
						t.Fatalf("state %s is trainable", s.Name())
					}
				}
			})
		}
	}
}

func TestStateNames(t *testing.T) {
	w := tensor.NewParameter("dense.weight", tensor.Zeros(tensor.Float32, 2, 2))
	b := tensor.NewParameter("dense.bias", tensor.Zeros(tensor.Float32, 2))
	names := func(o optim.Optimizer) string {
		var s []string
		for _, x := range o.State() {
			s = append(s, x.Name())
		}
		return strings.Join(s, " ")
	}
	cases := []struct {
		o    optim.Optimizer
		want string
	}{
		{optim.NewSGD([]*tensor.Tensor{w, b}, optim.SGDConfig{}), "global_step"},
		{optim.NewSGD([]*tensor.Tensor{w, b}, optim.SGDConfig{Momentum: 0.9}), "global_step accum.dense.weight accum.dense.bias"},
		{optim.NewAdam([]*tensor.Tensor{w, b}, optim.AdamConfig{}), "global_step moment1.dense.weight moment1.dense.bias moment2.dense.weight moment2.dense.bias"},
	}
	for _, c := range cases {
		if got := names(c.o); got != c.want {
			t.Errorf("state %q, want %q", got, c.want)
		}
	}
}

// TestGroups checks per-group learning rates and weight decay: a bias
// group with its own rate and no decay, the default group decayed.
func TestGroups(t *testing.T) {
	w := tensor.NewParameter("fc.weight", tensor.FromSlice([]float64{1, 2}))
	b := tensor.NewParameter("fc.bias", tensor.FromSlice([]float64{1, 2}))
	gamma := tensor.NewParameter("ln.gamma", tensor.FromSlice([]float64{1, 2}))
	decay, noDecay := optim.SplitBiases([]*tensor.Tensor{w, b, gamma})
	if len(decay) != 1 || decay[0] != w || len(noDecay) != 2 {
		t.Fatalf("SplitBiases: %v / %v", decay, noDecay)
	}
	opt := optim.NewSGD([]*tensor.Tensor{w, b, gamma}, optim.SGDConfig{
		Common: optim.Common{LR: optim.Constant(0.1), WeightDecay: 0.5, Groups: []optim.Group{
			{Params: []*tensor.Tensor{b}, LR: optim.Constant(1), WeightDecay: optim.Decay(0)},
		}},
	})
	zero := tensor.Zeros(tensor.Float64, 2)
	opt.Step([]*tensor.Tensor{zero, zero, zero})
	// w decays: p − 0.1·0.5·p; b has no decay and a zero gradient; gamma
	// is exempt from decay by MindSpore's default filter.
	want := map[*tensor.Tensor][]float64{w: {0.95, 1.9}, b: {1, 2}, gamma: {1, 2}}
	for p, v := range want {
		if got := p.Float64s(); got[0] != v[0] || got[1] != v[1] {
			t.Errorf("%s = %v, want %v", p.Name(), got, v)
		}
	}
	g := tensor.Ones(tensor.Float64, 2)
	opt.Step([]*tensor.Tensor{nil, g, nil})
	if got := b.Float64s(); got[0] != 0 || got[1] != 1 {
		t.Errorf("bias with group lr 1: %v, want [0 1]", got)
	}
	if got := w.Float64s(); got[0] != 0.95 {
		t.Errorf("nil gradient changed w: %v", got)
	}
}

func TestMisuse(t *testing.T) {
	w := tensor.NewParameter("w", tensor.Zeros(tensor.Float32, 2))
	cases := []struct {
		name string
		f    func()
		want string
	}{
		{"not a parameter", func() { optim.NewSGD([]*tensor.Tensor{tensor.Zeros(tensor.Float32, 2)}, optim.SGDConfig{}) }, "not a parameter"},
		{"twice", func() { optim.NewSGD([]*tensor.Tensor{w, w}, optim.SGDConfig{}) }, "twice"},
		{"nesterov", func() { optim.NewSGD([]*tensor.Tensor{w}, optim.SGDConfig{Nesterov: true}) }, "Nesterov"},
		{"betas", func() { optim.NewAdam([]*tensor.Tensor{w}, optim.AdamConfig{Beta1: 1}) }, "betas"},
		{"grad count", func() { optim.NewSGD([]*tensor.Tensor{w}, optim.SGDConfig{}).Step(nil) }, "0 gradients for 1"},
		{"grad shape", func() {
			optim.NewSGD([]*tensor.Tensor{w}, optim.SGDConfig{}).Step([]*tensor.Tensor{tensor.Zeros(tensor.Float32, 3)})
		}, "gradient 0"},
		{"empty", func() { optim.NewSGD(nil, optim.SGDConfig{}) }, "no parameters"},
		{"stray group", func() {
			optim.NewSGD([]*tensor.Tensor{w}, optim.SGDConfig{Common: optim.Common{Groups: []optim.Group{{Params: []*tensor.Tensor{tensor.NewParameter("x", tensor.Zeros(tensor.Float32, 1))}}}}})
		}, "not among"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				r := recover()
				e, ok := r.(error)
				if !ok || !strings.Contains(e.Error(), c.want) {
					t.Fatalf("panic %v, want one mentioning %q", r, c.want)
				}
			}()
			c.f()
		})
	}
}
