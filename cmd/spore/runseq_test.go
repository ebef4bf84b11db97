package main

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sporeml/spore/npy"
	"github.com/sporeml/spore/tensor"
)

// TestRunSequences runs testdata/sequence.onnx (a sequence and an optional
// in; the sequence with x appended and its length plus the optional's sum
// out) with the sequence as an .npz of positions, in both modes, by name
// and in order, with the optional given and left out.
func TestRunSequences(t *testing.T) {
	dir := t.TempDir()
	e0 := tensor.FromSlice([]float32{1, 2, 3}, 3)
	e1 := tensor.FromSlice([]float32{4}, 1)
	x := tensor.FromSlice([]float32{5, 6}, 2)
	seq, xf, of := filepath.Join(dir, "seq.npz"), filepath.Join(dir, "x.npy"), filepath.Join(dir, "o.npy")
	if err := npy.WriteNPZ(seq, []string{"1", "0"}, []*tensor.Tensor{e1, e0}); err != nil {
		t.Fatal(err)
	}
	if err := npy.WriteFile(xf, x); err != nil {
		t.Fatal(err)
	}
	if err := npy.WriteFile(of, tensor.FromSlice([]float32{1, 1, 1, 1}, 2, 2)); err != nil {
		t.Fatal(err)
	}
	model := filepath.Join("testdata", "sequence.onnx")
	cases := []struct {
		name  string
		args  []string
		wantY float32
	}{
		{"by name", []string{"--input", "s=" + seq, "--input", "x=" + xf, "--input", "o=" + of}, 3 + 4},
		{"in order", []string{"--input", seq, "--input", xf, "--input", of}, 3 + 4},
		{"optional left out", []string{"--input", "s=" + seq, "--input", "x=" + xf}, 3},
	}
	for _, mode := range []string{"graph", "pynative"} {
		for _, c := range cases {
			t.Run(mode+"/"+c.name, func(t *testing.T) {
				out, y := filepath.Join(dir, "out.npz"), filepath.Join(dir, "y.npy")
				args := append([]string{"run", model, "--mode", mode, "--output", out, "--output", y}, c.args...)
				stdout, stderr, code := runCLI(t, args...)
				if code != 0 {
					t.Fatalf("exit %d: %s", code, stderr)
				}
				if !strings.Contains(stdout, "sequence") {
					t.Errorf("the report does not show the sequence:\n%s", stdout)
				}
				keys, elems, err := npy.ReadNPZ(out)
				if err != nil {
					t.Fatal(err)
				}
				got := map[string][]float64{}
				for i, k := range keys {
					got[k] = elems[i].Float64s()
				}
				want := map[string][]float64{"0": e0.Float64s(), "1": e1.Float64s(), "2": x.Float64s()}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("out.npz holds %v, want %v", got, want)
				}
				yt, err := npy.ReadFile(y)
				if err != nil {
					t.Fatal(err)
				}
				if v := yt.Float64s(); len(v) != 1 || v[0] != float64(c.wantY) {
					t.Errorf("y = %v, want %v", v, c.wantY)
				}
			})
		}
	}
	bad := []struct {
		name string
		args []string
		want string
	}{
		{"one archive for a sequence and a tensor", []string{"--input", "s=" + seq, "--input", "x=" + xf, "--output", filepath.Join(dir, "all.npz")}, "one --output per output"},
		{"sequence output to .npy", []string{"--input", "s=" + seq, "--input", "x=" + xf, "--output", filepath.Join(dir, "s.npy"), "--output", filepath.Join(dir, "y.npy")}, "written as an .npz"},
		{"sequence not given", []string{"--input", "x=" + xf}, "is a sequence and is not given"},
		{"archive not of positions", []string{"--input", "s=" + of, "--input", "x=" + xf}, "s=" + of},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			_, stderr, code := runCLI(t, append([]string{"run", model}, c.args...)...)
			if code == 0 || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want a failure naming %q", code, stderr, c.want)
			}
		})
	}
}
