package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/sporeml/spore/npy"
	"github.com/sporeml/spore/tensor"
)

// fixtures is where make_fixtures.py writes the PyTorch models.
var fixtures = filepath.Join("..", "..", "onnx", "testdata", "torch")

func fixture(name string) string { return filepath.Join(fixtures, name) }

// manifest is fixtures/manifest.json: the cases, each a model with its
// inputs and PyTorch's outputs, by ONNX name.
type manifest struct {
	Cases []struct {
		Name, Model string
		Inputs      map[string]string
		Outputs     map[string]string
	}
}

// maxRelDiff is max |got - want| / max |want|.
func maxRelDiff(t *testing.T, got, want *tensor.Tensor) float64 {
	t.Helper()
	if !reflect.DeepEqual(got.Shape(), want.Shape()) {
		t.Fatalf("shape %v, want %v", got.Shape(), want.Shape())
	}
	g, w := got.Float64s(), want.Float64s()
	diff, scale := 0.0, 0.0
	for i := range g {
		diff = math.Max(diff, math.Abs(g[i]-w[i]))
		scale = math.Max(scale, math.Abs(w[i]))
	}
	if math.IsNaN(diff) {
		return math.Inf(1)
	}
	return diff / math.Max(scale, 1e-30)
}

// TestRunFixtures runs every PyTorch fixture through spore run, in both
// modes, writing the outputs to an .npz archive, and compares them with
// PyTorch's to 1e-4 relative.
func TestRunFixtures(t *testing.T) {
	raw, err := os.ReadFile(fixture("manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var man manifest
	if err := json.Unmarshal(raw, &man); err != nil {
		t.Fatal(err)
	}
	if len(man.Cases) < 6 {
		t.Fatalf("manifest lists %d cases", len(man.Cases))
	}
	dir := t.TempDir()
	for _, c := range man.Cases {
		for _, mode := range []string{"graph", "pynative"} {
			t.Run(c.Name+"/"+mode, func(t *testing.T) {
				out := filepath.Join(dir, c.Name+"_"+mode+".npz")
				args := []string{"run", fixture(c.Model), "--mode", mode, "--output", out, "--json"}
				for name, f := range c.Inputs {
					args = append(args, "--input", name+"="+fixture(f))
				}
				stdout, stderr, code := runCLI(t, args...)
				if code != 0 {
					t.Fatalf("exit %d: %s", code, stderr)
				}
				var res runResult
				if err := json.Unmarshal([]byte(stdout), &res); err != nil {
					t.Fatalf("output is not one JSON object: %v\n%s", err, stdout)
				}
				names, got, err := npy.ReadNPZ(out)
				if err != nil {
					t.Fatal(err)
				}
				wantNames := make([]string, 0, len(c.Outputs))
				for n := range c.Outputs {
					wantNames = append(wantNames, n)
				}
				sort.Strings(wantNames)
				if s := append([]string{}, names...); !reflect.DeepEqual(sortStrings(s), wantNames) {
					t.Fatalf("outputs %v, want %v", names, wantNames)
				}
				for i, n := range names {
					want, err := npy.ReadFile(fixture(c.Outputs[n]))
					if err != nil {
						t.Fatal(err)
					}
					if d := maxRelDiff(t, got[i], want); d > 1e-4 {
						t.Errorf("output %s differs from PyTorch's by %.3g relative", n, d)
					}
					if res.Outputs[i].Name != n || res.Outputs[i].File != out {
						t.Errorf("JSON output %d is %+v", i, res.Outputs[i])
					}
				}
			})
		}
	}
}

func sortStrings(s []string) []string { sort.Strings(s); return s }

// TestRunFlags covers the ways of giving inputs and taking outputs.
func TestRunFlags(t *testing.T) {
	dir := t.TempDir()
	cnnOut, err := npy.ReadFile(fixture("cnn_out.npy"))
	if err != nil {
		t.Fatal(err)
	}
	cnnIn, err := npy.ReadFile(fixture("cnn_in.npy"))
	if err != nil {
		t.Fatal(err)
	}
	npz := filepath.Join(dir, "in.npz")
	if err := npy.WriteNPZ(npz, []string{"x"}, []*tensor.Tensor{cnnIn}); err != nil {
		t.Fatal(err)
	}
	f64 := filepath.Join(dir, "in64.npy")
	if err := npy.WriteFile(f64, tensor.FromSlice(cnnIn.Float64s(), cnnIn.Shape()...)); err != nil {
		t.Fatal(err)
	}
	// rows checks the output's first rows against PyTorch's, cyclically.
	rows := func(n int) func(t *testing.T, y *tensor.Tensor) {
		return func(t *testing.T, y *tensor.Tensor) {
			if y.Dim(0) != n {
				t.Fatalf("batch %d, want %d", y.Dim(0), n)
			}
			g, w := y.Float32s(), cnnOut.Float32s()
			for i := range g {
				if d := math.Abs(float64(g[i] - w[i%len(w)])); d > 1e-4 {
					t.Fatalf("value %d is %g, PyTorch's %g", i, g[i], w[i%len(w)])
				}
			}
		}
	}
	tests := []struct {
		name  string
		args  []string
		want  string // in stdout
		check func(t *testing.T, y *tensor.Tensor)
	}{
		{"positional", []string{"run", fixture("cnn.onnx"), "--input", fixture("cnn_in.npy")}, "logits", rows(2)},
		{"flags first", []string{"run", "--input", fixture("cnn_in.npy"), fixture("cnn.onnx")}, "logits", rows(2)},
		{"by name", []string{"run", fixture("cnn.onnx"), "--input", "x=" + fixture("cnn_in.npy")}, "logits", rows(2)},
		{"npz", []string{"run", fixture("cnn.onnx"), "--input", npz}, "in.npz:x", rows(2)},
		{"tiled", []string{"run", fixture("cnn.onnx"), "--input", fixture("cnn_in.npy"), "--batch", "5"}, "tiled to 5 rows", rows(5)},
		{"made up", []string{"run", fixture("cnn.onnx"), "--batch", "3"}, "made up", func(t *testing.T, y *tensor.Tensor) {
			if !reflect.DeepEqual([]int(y.Shape()), []int{3, 10}) {
				t.Fatalf("shape %v", y.Shape())
			}
		}},
		{"pynative", []string{"run", fixture("cnn.onnx"), "--input", fixture("cnn_in.npy"), "--mode", "pynative"}, "pynative mode", rows(2)},
		{"bench", []string{"run", fixture("cnn.onnx"), "--batch", "2", "--bench", "3", "--rounds", "2"}, "µs per call at batch 2 (best of 2 rounds of 3 calls, after 2 warm-up calls)", nil},
		{"float64", []string{"run", fixture("cnn.onnx"), "--input", f64}, "(Float64 converted to Float32)", rows(2)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, tc.name+".npy")
			stdout, stderr, code := runCLI(t, append(tc.args, "--output", out)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if !strings.Contains(stdout, tc.want) || !strings.Contains(stdout, "wrote "+out) {
				t.Fatalf("output lacks %q or the file written:\n%s", tc.want, stdout)
			}
			y, err := npy.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if tc.check != nil {
				tc.check(t, y)
			}
		})
	}
}

// TestRunBenchJSON checks the --bench --json object's fields.
func TestRunBenchJSON(t *testing.T) {
	stdout, stderr, code := runCLI(t, "run", fixture("mlp.onnx"), "--input", fixture("mlp_in.npy"), "--bench", "4", "--rounds", "2", "--warmup", "1", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res runResult
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&res); err != nil || dec.More() {
		t.Fatalf("want one JSON object, got %v:\n%s", err, stdout)
	}
	b := res.Bench
	if b == nil || b.Calls != 4 || b.Rounds != 2 || b.Warmup != 1 || b.Batch != 4 || !(b.USPerCall > 0) {
		t.Fatalf("bench %+v", b)
	}
	if res.Mode != "graph" || len(res.Inputs) != 1 || res.Inputs[0].Name != "x" || len(res.Outputs) != 1 ||
		!reflect.DeepEqual(res.Outputs[0].Shape, []int{4, 10}) || len(res.Outputs[0].First) != 5 {
		t.Fatalf("result %+v", res)
	}
}

// TestRunBadInput checks that every mistake is one line on stderr and
// the right exit status, never a panic.
func TestRunBadInput(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.onnx")
	os.WriteFile(junk, []byte("\x08\x07 this is not a model \xff\xff\xff"), 0o644)
	badNpy := filepath.Join(dir, "bad.npy")
	os.WriteFile(badNpy, []byte("\x93NUMPY\x01\x00\x10\x00{'descr': '<f4'"), 0o644)
	wrongDtype := filepath.Join(dir, "i64.npy")
	npy.WriteFile(wrongDtype, tensor.Zeros(tensor.Int64, 4, 20))
	strayNPZ := filepath.Join(dir, "stray.npz")
	npy.WriteNPZ(strayNPZ, []string{"z"}, []*tensor.Tensor{tensor.Zeros(tensor.Float32, 4, 20)})
	mlp, mlpIn, cnnIn := fixture("mlp.onnx"), fixture("mlp_in.npy"), fixture("cnn_in.npy")
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no model", []string{"run"}, 2, "no model given"},
		{"two models", []string{"run", mlp, mlp}, 2, "one model per run"},
		{"missing model", []string{"run", filepath.Join(dir, "nope.onnx"), "--batch", "1"}, 1, "nope.onnx"},
		{"not a model", []string{"run", junk, "--batch", "1"}, 1, "junk.onnx"},
		{"unsupported ops", []string{"run", filepath.Join("testdata", "unsupported.onnx"), "--batch", "2"}, 1, `StringNormalizer (domain ai.onnx, 2 node(s), first "normalizer_1")`},
		{"no input", []string{"run", mlp}, 2, "input x [4 20] Float32 is not given"},
		{"input twice", []string{"run", mlp, "--input", mlpIn, "--input", "x=" + mlpIn}, 2, `input "x" is given twice`},
		{"too many inputs", []string{"run", mlp, "--input", mlpIn, "--input", mlpIn}, 2, "the model takes 1 input, all already given"},
		{"unknown name", []string{"run", mlp, "--input", "y=" + mlpIn}, 2, `the model has no input "y" (its inputs: x)`},
		{"stray npz key", []string{"run", mlp, "--input", strayNPZ}, 2, `array "z" is not an input`},
		{"missing input file", []string{"run", mlp, "--input", filepath.Join(dir, "none.npy")}, 1, "none.npy"},
		{"bad npy", []string{"run", mlp, "--input", badNpy}, 1, "bad.npy"},
		{"wrong shape", []string{"run", mlp, "--input", cnnIn}, 1, `input "x" has shape [2 1 28 28], the model wants x [4 20] Float32`},
		{"wrong dtype", []string{"run", mlp, "--input", wrongDtype}, 1, "Int64"},
		{"fixed batch", []string{"run", mlp, "--batch", "3"}, 2, "fixed batch of 4"},
		{"bad mode", []string{"run", mlp, "--input", mlpIn, "--mode", "fast"}, 2, `unknown --mode "fast"`},
		{"negative bench", []string{"run", mlp, "--bench", "-1"}, 2, "--bench -1 must not be negative"},
		{"negative warmup", []string{"run", mlp, "--bench", "3", "--warmup", "-5"}, 2, "--warmup -5 must not be negative"},
		{"zero batch", []string{"run", mlp, "--batch", "0"}, 2, "--batch 0 must be positive (leave it out to run the inputs as given)"},
		{"negative batch", []string{"run", mlp, "--batch", "-2"}, 2, "--batch -2 must be positive"},
		{"zero rounds", []string{"run", mlp, "--rounds", "0"}, 2, "--rounds must be positive"},
		{"bad output ext", []string{"run", mlp, "--input", mlpIn, "--output", filepath.Join(dir, "y.txt")}, 2, "want a .npy or .npz file"},
		{"output dir missing", []string{"run", mlp, "--input", mlpIn, "--output", filepath.Join(dir, "no", "y.npy")}, 1, "does not exist"},
		{"output count", []string{"run", mlp, "--input", mlpIn, "--output", filepath.Join(dir, "a.npy"), "--output", filepath.Join(dir, "b.npy")}, 2, "the model has 1 output and 2 --outputs given"},
		{"bad flag", []string{"run", mlp, "--bogus"}, 2, "flag provided but not defined"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runCLI(t, tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want exit %d mentioning %q", code, stderr, tc.code, tc.want)
			}
			if strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "spore run: ") || strings.Contains(stderr, "goroutine") {
				t.Fatalf("want one line starting 'spore run: ', got %q", stderr)
			}
			if stdout != "" {
				t.Fatalf("a failed run printed %q", stdout)
			}
		})
	}
}

// TestRunHelp checks that --help prints the synopsis and the flags.
func TestRunHelp(t *testing.T) {
	stdout, _, code := runCLI(t, "help", "run")
	if code != 0 || !strings.Contains(stdout, "spore run MODEL.onnx") || !strings.Contains(stdout, "-bench") {
		t.Fatalf("exit %d, help %q", code, stdout)
	}
}

// TestTile checks that tiling repeats rows cyclically.
func TestTile(t *testing.T) {
	tests := []struct {
		in   *tensor.Tensor
		n    int
		want any
	}{
		{tensor.FromSlice([]float32{1, 2, 3, 4}, 2, 2), 3, []float32{1, 2, 3, 4, 1, 2}},
		{tensor.FromSlice([]int64{1, 2, 3}, 3, 1), 2, []int64{1, 2}},
		{tensor.FromSlice([]bool{true}, 1), 3, []bool{true, true, true}},
	}
	for _, tc := range tests {
		got := tile(tc.in, tc.n)
		if got.Dim(0) != tc.n || !reflect.DeepEqual(got.Data(), tc.want) {
			t.Errorf("tile(%v, %d) = %v, want %v", tc.in, tc.n, got.Data(), tc.want)
		}
	}
}
