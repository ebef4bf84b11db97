package initializer_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/nn/initializer"
	"github.com/sporeml/spore/tensor"
)

func stats(t *tensor.Tensor) (mean, std, lo, hi float64) {
	v := t.Float64s()
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, x := range v {
		mean += x
		lo, hi = min(lo, x), max(hi, x)
	}
	mean /= float64(len(v))
	for _, x := range v {
		std += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(std / float64(len(v))), lo, hi
}

func TestDistributions(t *testing.T) {
	spore.SetSeed(1)
	shape := []int{200, 100, 3} // fan_in 300, fan_out 600
	tests := []struct {
		init      initializer.Initializer
		mean, std float64 // expected moments
		bound     float64 // values must lie in [-bound+mean, bound+mean]; 0 for no bound
	}{
		{initializer.Zero(), 0, 0, 1e-300},
		{initializer.One(), 1, 0, 1e-300},
		{initializer.Constant(0.25), 0.25, 0, 1e-300},
		{initializer.Normal(0.5, 1), 1, 0.5, 0},
		{initializer.Uniform(0.07), 0, 0.07 / math.Sqrt(3), 0.07},
		{initializer.TruncatedNormal(1.5), 0, 1.0233, 2}, // 1.5·std of N(0,1) cut at ±4/3,
		{initializer.TruncatedNormalRange(1, 0, -1, 1), 0, 0.5399, 1},
		{initializer.XavierUniform(2), 0, 2 * math.Sqrt(2.0/900), 2 * math.Sqrt(6.0/900)},
		{initializer.XavierNormal(1), 0, math.Sqrt(2.0 / 900), 0},
		{initializer.HeUniform(math.Sqrt(5)), 0, 1 / math.Sqrt(300) / math.Sqrt(3), 1 / math.Sqrt(300)},
		{initializer.HeNormal(0), 0, math.Sqrt(2.0 / 300), 0},
		{initializer.HeNormalMode(0, initializer.FanOut, "relu"), 0, math.Sqrt(2.0 / 600), 0},
		{initializer.HeUniformMode(0, initializer.FanIn, "tanh"), 0, 5.0 / 3 / math.Sqrt(300), 5.0 / 3 * math.Sqrt(3.0/300)},
	}
	for _, tt := range tests {
		t.Run(tt.init.String(), func(t *testing.T) {
			v := tt.init.New(tensor.Float64, shape...)
			if !v.Shape().Equal(shape) || v.DType() != tensor.Float64 {
				t.Fatalf("got %v %v", v.Shape(), v.DType())
			}
			mean, std, lo, hi := stats(v)
			tol := 0.03*tt.std + 1e-12
			if math.Abs(mean-tt.mean) > tol*3 || math.Abs(std-tt.std) > tol {
				t.Fatalf("mean %v std %v, want %v and %v", mean, std, tt.mean, tt.std)
			}
			if tt.bound > 0 && (lo < tt.mean-tt.bound || hi > tt.mean+tt.bound) {
				t.Fatalf("values in [%v, %v], want within ±%v", lo, hi, tt.bound)
			}
			if f := tt.init.New(tensor.Float32, 2, 3); f.DType() != tensor.Float32 {
				t.Fatalf("Float32 request gave %v", f.DType())
			}
		})
	}
}

func TestSeedReproducible(t *testing.T) {
	for _, init := range []initializer.Initializer{initializer.HeUniform(1), initializer.TruncatedNormal(0.02), initializer.Normal(1, 0)} {
		spore.SetSeed(42)
		a := init.New(tensor.Float32, 4, 5).Float32s()
		spore.SetSeed(42)
		b := init.New(tensor.Float32, 4, 5).Float32s()
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("%v: same seed, different values", init)
			}
		}
	}
}

func TestFans(t *testing.T) {
	tests := []struct {
		shape   []int
		in, out int
	}{
		{[]int{512, 784}, 784, 512},
		{[]int{32, 3, 5, 5}, 75, 800},
		{[]int{8, 2, 3}, 6, 24},
	}
	for _, tt := range tests {
		if in, out := initializer.Fans(tt.shape); in != tt.in || out != tt.out {
			t.Errorf("Fans(%v) = %d, %d, want %d, %d", tt.shape, in, out, tt.in, tt.out)
		}
	}
}

func TestErrors(t *testing.T) {
	for name, f := range map[string]func(){
		"fans of a vector": func() { initializer.Fans([]int{3}) },
		"bad nonlinearity": func() { initializer.Gain("swish", 0) },
		"bad mode":         func() { initializer.HeUniformMode(0, "fan_avg", "relu").New(tensor.Float32, 2, 2) },
		"bad truncation":   func() { initializer.TruncatedNormalRange(1, 0, 1, -1) },
		"he of a bias":     func() { initializer.HeUniform(0).New(tensor.Float32, 4) },
		"xavier of a bias": func() { initializer.XavierNormal(1).New(tensor.Float32, 4) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

func TestGain(t *testing.T) {
	for _, tt := range []struct {
		nl   string
		a    float64
		want float64
	}{{"linear", 0, 1}, {"relu", 0, math.Sqrt2}, {"tanh", 0, 5.0 / 3}, {"leaky_relu", math.Sqrt(5), math.Sqrt(1.0 / 3)}, {"selu", 0, 0.75}} {
		if g := initializer.Gain(tt.nl, tt.a); math.Abs(g-tt.want) > 1e-15 {
			t.Errorf("Gain(%s, %v) = %v, want %v", tt.nl, tt.a, g, tt.want)
		}
	}
}

func Example() {
	spore.SetSeed(1)
	w := initializer.HeUniform(math.Sqrt(5)).New(tensor.Float32, 512, 784)
	_, _, lo, hi := stats(w)
	bound := 1 / math.Sqrt(784)
	fmt.Println(w.Shape(), "within ±1/√fan_in:", lo >= -bound && hi <= bound)
	// Output: [512 784] within ±1/√fan_in: true
}
