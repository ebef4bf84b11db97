package main

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sporeml/spore/optim"
)

// --model vit trains with its own defaults (AdamW, warmup and cosine
// decay, batch 64) unless flags say otherwise, in both modes, and eval
// and resume take its checkpoints; bad schedule and optimizer names are
// refused before any training.
func TestTrainViT(t *testing.T) {
	data := mnistDir(t, split{20, 28, digits}, split{20, 28, digits})
	ckpt := filepath.Join(t.TempDir(), "vit.safetensors")
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"defaults", []string{"train", "--model", "vit", "--data", data, "--epochs", "1", "--steps", "1"}, 2,
			"--batch 64 is larger than the --data " + data + " training set (20 images)"},
		{"graph", []string{"train", "--model", "vit", "--data", data, "--batch", "5", "--epochs", "1", "--steps", "2", "--save", ckpt}, 0,
			"batch 5, adamw lr 0.002 (cosine), graph mode"},
		{"pynative", []string{"train", "--model", "vit", "--data", data, "--batch", "5", "--epochs", "1", "--steps", "2", "--mode", "pynative"}, 0,
			"training: 2 steps"},
		{"flags override", []string{"train", "--model", "vit", "--data", data, "--batch", "5", "--epochs", "1", "--steps", "1", "--optimizer", "momentum", "--lr", "0.05", "--schedule", "constant"}, 0,
			"momentum lr 0.05 (constant)"},
		{"mlp keeps its defaults", []string{"train", "--data", data, "--batch", "5", "--epochs", "1", "--steps", "1"}, 0,
			"momentum lr 0.01 (constant)"},
		{"eval", []string{"eval", "--model", "vit", "--data", data, "--ckpt", ckpt}, 0, "test accuracy"},
		{"resume", []string{"train", "--model", "vit", "--data", data, "--batch", "5", "--epochs", "1", "--steps", "1", "--resume", ckpt}, 0,
			"resumed from " + ckpt + " at step 2"},
		{"bad schedule", []string{"train", "--model", "vit", "--schedule", "step"}, 2, `unknown --schedule "step" (want constant or cosine)`},
		{"bad optimizer", []string{"train", "--model", "vit", "--optimizer", "lamb"}, 2, `unknown --optimizer "lamb"`},
		{"bad model", []string{"train", "--model", "vgg"}, 2, `unknown --model "vgg" (want mlp, lenet or vit)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, errOut, code := runChild(t, nil, c.args...)
			if code != c.code {
				t.Fatalf("spore %v: exit %d, want %d: %s\n%s", c.args, code, c.code, errOut, out)
			}
			if !strings.Contains(out+errOut, c.want) {
				t.Errorf("spore %v: output lacks %q:\n%s%s", c.args, c.want, out, errOut)
			}
		})
	}
}

// The cosine schedule warms up from 0, peaks after 5% of the run, ends at
// 0, and, for a resumed run, starts over from the step it resumes at.
func TestCosineSchedule(t *testing.T) {
	s, startAt := newSchedule("cosine", 0.01, 105) // 5 steps of warmup, 100 of decay
	for _, c := range []struct {
		step int
		want float64
	}{{0, 0}, {5, 0.01}, {55, 0.005}, {105, 0}} {
		if got := optim.Eval(s, c.step); math.Abs(got-c.want) > 1e-6 {
			t.Errorf("step %d: lr %v, want %v", c.step, got, c.want)
		}
	}
	startAt(40)
	for _, c := range []struct {
		step int
		want float64
	}{{40, 0}, {45, 0.01}, {95, 0.005}, {145, 0}} {
		if got := optim.Eval(s, c.step); math.Abs(got-c.want) > 1e-6 {
			t.Errorf("resumed at 40, step %d: lr %v, want %v", c.step, got, c.want)
		}
	}
	if c, _ := newSchedule("constant", 0.01, 100); optim.Eval(c, 77) != 0.01 {
		t.Errorf("constant schedule at step 77: %v", optim.Eval(c, 77))
	}
}
