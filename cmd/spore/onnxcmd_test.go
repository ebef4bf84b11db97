package main

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/checkpoint"
	"github.com/sporeml/spore/models"
	"github.com/sporeml/spore/onnx"
	"github.com/sporeml/spore/train"
)

func TestOnnxCheck(t *testing.T) {
	tests := []struct {
		name string
		file string
		code int
		want []string // in stdout
		err  string   // in stderr
	}{
		{"cnn", fixture("cnn.onnx"), 0, []string{"ai.onnx opset 17, producer pytorch", "input   x [batch 1 28 28] Float32", "BatchNormalization 1", "unsupported ops: none", "shapes: fit at the declared input shapes (dynamic dimensions as 1); outputs logits [1 10] Float32", "spore can load this model, and its shapes fit"}, ""},
		{"if", fixture("ifmodel.onnx"), 0, []string{"If 1", "spore can load this model"}, ""},
		{"unsupported", filepath.Join("testdata", "unsupported.onnx"), 1,
			[]string{"unsupported ops: 2 type(s)", `StringNormalizer (domain ai.onnx): 2 node(s), first "normalizer_1"`, `FusedGemm (domain com.microsoft): 1 node(s), first "fused"`},
			"spore onnx: check testdata/unsupported.onnx: spore cannot load it: 2 op types unsupported (StringNormalizer, FusedGemm)"},
		{"missing", filepath.Join("testdata", "none.onnx"), 1, nil, "none.onnx"},
		{"not onnx", fixture("cnn_in.npy"), 1, nil, "cnn_in.npy"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runCLI(t, "onnx", "check", tc.file)
			if code != tc.code || !strings.Contains(stderr, tc.err) || (tc.err != "" && strings.Count(stderr, "\n") != 1) {
				t.Fatalf("exit %d, stderr %q; want exit %d and %q", code, stderr, tc.code, tc.err)
			}
			for _, w := range tc.want {
				if !strings.Contains(stdout, w) {
					t.Errorf("report lacks %q:\n%s", w, stdout)
				}
			}
		})
	}
}

// TestOnnxExport exports both models, with and without a checkpoint, and
// runs each file back through spore run.
func TestOnnxExport(t *testing.T) {
	dir := t.TempDir()
	// A checkpoint of the MLP with other weights than export's seed 0.
	spore.SetSeed(7)
	trained := models.NewNetwork()
	ckpt := filepath.Join(dir, "mlp.safetensors")
	if err := checkpoint.Save(ckpt, train.NetParams(trained), nil); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		args  []string
		batch string // for spore run
	}{
		{"mlp", []string{"--model", "mlp"}, "1"},
		{"lenet dynamic", []string{"--model", "lenet", "--dynamic-batch"}, "3"},
		{"mlp ckpt", []string{"--model", "mlp", "--ckpt", ckpt, "--batch", "2", "--opset", "18"}, "2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".onnx")
			stdout, stderr, code := runCLI(t, append([]string{"onnx", "export", "--out", out}, tc.args...)...)
			if code != 0 || stderr != "" {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			if !strings.Contains(stdout, "wrote "+out) || !strings.Contains(stdout, "loaded back: outputs match") {
				t.Fatalf("output %q", stdout)
			}
			stdout, stderr, code = runCLI(t, "run", out, "--batch", tc.batch)
			if code != 0 || !strings.Contains(stdout, "logits       ["+tc.batch+" 10]") {
				t.Fatalf("spore run: exit %d %s\n%s", code, stderr, stdout)
			}
		})
	}
	// The checkpoint's weights, not seed 0's, are in the file.
	m, err := onnx.LoadFile(filepath.Join(dir, "mlp_ckpt.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	x := models.Ones(2)
	got, want := m.Construct(x).Float64s(), trained.Call(x).Float64s()
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-5 {
			t.Fatalf("logit %d is %g, the checkpoint's model gives %g", i, got[i], want[i])
		}
	}
	if m.Opset() != 18 {
		t.Fatalf("opset %d, want 18", m.Opset())
	}
}

func TestOnnxBadInput(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"onnx"}, 2, "want a subcommand"},
		{[]string{"onnx", "convert"}, 2, `unknown subcommand "convert"`},
		{[]string{"onnx", "check"}, 2, "want one model file"},
		{[]string{"onnx", "export", "--model", "vgg", "--out", filepath.Join(dir, "a.onnx")}, 2, `unknown --model "vgg"`},
		{[]string{"onnx", "export"}, 2, "--out is required"},
		{[]string{"onnx", "export", "--out", filepath.Join(dir, "a.txt")}, 2, "want a .onnx file"},
		{[]string{"onnx", "export", "--out", filepath.Join(dir, "no", "a.onnx")}, 1, "does not exist"},
		{[]string{"onnx", "export", "--out", filepath.Join(dir, "a.onnx"), "--opset", "13"}, 2, "opsets 17 to 21"},
		{[]string{"onnx", "export", "--out", filepath.Join(dir, "a.onnx"), "--batch", "0"}, 2, "--batch must be positive"},
		{[]string{"onnx", "export", "--out", filepath.Join(dir, "a.onnx"), "--ckpt", filepath.Join(dir, "none.ckpt")}, 1, "none.ckpt"},
		{[]string{"onnx", "export", "--model", "lenet", "--out", filepath.Join(dir, "a.onnx"), "--ckpt", filepath.Join(dir, "mlp.safetensors")}, 1, "mlp.safetensors"},
	}
	// A checkpoint of the wrong model.
	spore.SetSeed(1)
	if err := checkpoint.Save(filepath.Join(dir, "mlp.safetensors"), train.NetParams(models.NewNetwork()), nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		stdout, stderr, code := runCLI(t, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "spore onnx: ") {
			t.Errorf("spore %v: exit %d, stderr %q; want exit %d and one line mentioning %q", tc.args, code, stderr, tc.code, tc.want)
		}
		if stdout != "" {
			t.Errorf("spore %v printed %q", tc.args, stdout)
		}
	}
	// Nothing was written by the failures.
	if m, _ := filepath.Glob(filepath.Join(dir, "a.*")); len(m) != 0 {
		t.Errorf("failed exports left %v", m)
	}
}

func TestOnnxHelp(t *testing.T) {
	for _, args := range [][]string{{"help", "onnx"}, {"onnx", "export", "--help"}, {"onnx", "check", "--help"}} {
		stdout, stderr, code := runCLI(t, args...)
		if code != 0 || stderr != "" || !strings.Contains(stdout, "spore onnx") {
			t.Errorf("spore %v: exit %d, %q %q", args, code, stdout, stderr)
		}
	}
}
