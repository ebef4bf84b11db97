package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/sporeml/spore/checkpoint"
	"github.com/sporeml/spore/tensor"
)

// spore eval without --model takes the model whose parameter names the
// checkpoint holds, with or without optimizer state beside them, and
// refuses, naming the file, a checkpoint of none; --model still decides
// when given.
func TestEvalInfersModel(t *testing.T) {
	data := mnistDir(t, split{10, 28, digits}, split{20, 28, digits})
	dir := t.TempDir()
	ckpt := map[string]string{}
	for _, c := range []struct{ model, optimizer, ext string }{
		{"mlp", "", ".safetensors"}, {"lenet", "momentum", ".ckpt"}, {"vit", "adamw", ".safetensors"},
	} {
		ckpt[c.model] = filepath.Join(dir, c.model+c.ext)
		saveModel(t, ckpt[c.model], c.model, c.optimizer)
	}
	stranger := filepath.Join(dir, "stranger.safetensors")
	if err := checkpoint.Save(stranger, checkpoint.Params{{Name: "w", Tensor: tensor.Zeros(tensor.Float32, 2, 2)}}, nil); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		want string // in stdout, or in stderr when code != 0
	}{
		{"mlp", []string{"--ckpt", ckpt["mlp"]}, 0, "on 20 images (mlp, " + ckpt["mlp"] + ")"},
		{"lenet", []string{"--ckpt", ckpt["lenet"]}, 0, "on 20 images (lenet, " + ckpt["lenet"] + ")"},
		{"vit", []string{"--ckpt", ckpt["vit"], "--mode", "pynative"}, 0, "on 20 images (vit, " + ckpt["vit"] + ")"},
		{"none fits", []string{"--ckpt", stranger}, 1, stranger + " holds the parameters of none of spore's models"},
		{"explicit --model wins", []string{"--ckpt", ckpt["lenet"], "--model", "mlp"}, 1, "does not fit --model mlp"},
		{"unknown --model", []string{"--ckpt", ckpt["mlp"], "--model", "vgg"}, 2, `unknown --model "vgg"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := runCLI(t, append([]string{"eval", "--data", data}, tc.args...)...)
			got := out
			if tc.code != 0 {
				got = errOut
			}
			if code != tc.code || !strings.Contains(got, tc.want) {
				t.Fatalf("spore eval %v: exit %d, %q %q; want exit %d and %q", tc.args, code, out, errOut, tc.code, tc.want)
			}
		})
	}
}
