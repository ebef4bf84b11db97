package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return o.String(), e.String(), code
}

// The CI smoke test: a few hundred steps of the seed network in each mode
// reach accuracy well above chance (10%), and the checkpoint it saves
// evaluates to the same accuracy.
func TestTrainSmokeBothModes(t *testing.T) {
	dir := t.TempDir()
	accRe := regexp.MustCompile(`test accuracy ([\d.]+)%`)
	for _, mode := range []string{"graph", "pynative"} {
		ckpt := filepath.Join(dir, mode+".safetensors")
		out, errOut, code := runCLI(t, "train", "--mode", mode, "--epochs", "1", "--steps", "300", "--save", ckpt)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s\n%s", mode, code, errOut, out)
		}
		m := accRe.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("%s: no accuracy in output:\n%s", mode, out)
		}
		acc, _ := strconv.ParseFloat(m[1], 64)
		if acc < 85 {
			t.Fatalf("%s: accuracy %.2f%% after 300 steps, want well above chance:\n%s", mode, acc, out)
		}
		for _, want := range []string{"samples/s", "epoch 1/1"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: output lacks %q:\n%s", mode, want, out)
			}
		}
		evalOut, errOut, code := runCLI(t, "eval", "--ckpt", ckpt)
		if code != 0 || !strings.Contains(evalOut, m[1]+"%") {
			t.Fatalf("%s: eval of the saved checkpoint: exit %d %s, %q (trained: %s%%)", mode, code, errOut, evalOut, m[1])
		}
	}
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "bad.safetensors")
	os.WriteFile(garbage, []byte("not a checkpoint"), 0o644)
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{}, 2, "usage"},
		{[]string{"fly"}, 2, "unknown command"},
		{[]string{"train", "--bogus"}, 2, "flag provided but not defined"},
		{[]string{"train", "--mode", "fast"}, 2, `unknown --mode "fast"`},
		{[]string{"train", "--model", "vgg"}, 2, `unknown --model "vgg"`},
		{[]string{"train", "--epochs", "-1"}, 2, "--epochs -1 must not be negative"},
		{[]string{"train", "--optimizer", "rmsprop"}, 2, "unknown --optimizer"},
		{[]string{"train", "--data", dir}, 1, "no train-images-idx3-ubyte"},
		{[]string{"eval"}, 2, "--ckpt is required"},
		{[]string{"eval", "--ckpt", filepath.Join(dir, "missing.ckpt")}, 1, "missing.ckpt"},
		{[]string{"eval", "--ckpt", garbage}, 1, "bad.safetensors"},
		{[]string{"bench", "--batch", "-1"}, 2, "must be positive"},
		{[]string{"graph", "--level", "O9"}, 2, "unknown --level"},
	}
	for _, c := range cases {
		out, errOut, code := runCLI(t, c.args...)
		if code != c.code || !strings.Contains(out+errOut, c.want) {
			t.Errorf("spore %v: exit %d, output %q %q; want exit %d mentioning %q", c.args, code, out, errOut, c.code, c.want)
		}
		if c.code != 0 && strings.Count(strings.TrimSpace(errOut), "\n") > 0 && len(c.args) > 0 {
			t.Errorf("spore %v: error is not one line: %q", c.args, errOut)
		}
	}
}

func TestHelpOnEveryCommand(t *testing.T) {
	for _, cmd := range []string{"train", "eval", "bench", "graph"} {
		out, _, code := runCLI(t, cmd, "--help")
		if code != 0 || !strings.Contains(out, "usage: spore "+cmd) || !strings.Contains(out, "flags:") {
			t.Errorf("spore %s --help: exit %d\n%s", cmd, code, out)
		}
	}
}

func TestBenchJSON(t *testing.T) {
	out, errOut, code := runCLI(t, "bench", "--json", "--iters", "3", "--batch", "8")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, out)
	}
	for _, k := range []string{"pynative_infer_us", "graph_infer_us", "pynative_train_us", "graph_train_us", "compile_ms"} {
		if v, ok := r[k].(float64); !ok || !(v > 0) {
			t.Errorf("key %s = %v, %v", k, v, ok)
		}
	}
}

func TestGraphDumps(t *testing.T) {
	dir := t.TempDir()
	out, errOut, code := runCLI(t, "graph", "--out", dir, "--batch", "8")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, pattern := range []string{"00_input.ir", "*_anchor.ir", "*_fuse.dot", "*_final.dot"} {
		if m, _ := filepath.Glob(filepath.Join(dir, "train_step", pattern)); len(m) == 0 {
			t.Errorf("no %s in %s", pattern, dir)
		}
	}
	if !strings.Contains(out, "Anchor(") || !strings.Contains(out, "assign") {
		t.Errorf("final IR lacks the fused GEMM or the parameter updates:\n%s", out)
	}
}

// TestLossLog checks --loss-log against the run's own report: one line
// per step, numbered, whose mean is the epoch's mean loss.
func TestLossLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "loss.tsv")
	out, errOut, code := runCLI(t, "train", "--epochs", "2", "--steps", "15", "--loss-log", path)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errOut, out)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 31 || lines[0] != "# step\tloss" {
		t.Fatalf("%d lines, want a header and 30 steps:\n%s", len(lines), b)
	}
	var sums [2]float64
	for i, line := range lines[1:] {
		step, loss, _ := strings.Cut(line, "\t")
		l, err := strconv.ParseFloat(loss, 64)
		if step != strconv.Itoa(i+1) || err != nil {
			t.Fatalf("line %d: %q, want step %d and a loss", i+2, line, i+1)
		}
		sums[i/15] += l
	}
	for e, sum := range sums {
		want := fmt.Sprintf("epoch %d/2: mean loss %.4f", e+1, sum/15)
		if !strings.Contains(out, want) {
			t.Errorf("the log's epoch %d mean does not match the report: want %q in\n%s", e+1, want, out)
		}
	}
	if !strings.Contains(out, "wrote 30 losses to "+path) {
		t.Errorf("the report does not name the log:\n%s", out)
	}
}
