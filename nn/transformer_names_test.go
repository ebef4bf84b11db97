package nn_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sporeml/spore/checkpoint"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/tensor"
)

// torchNamesCases are cells whose PyTorch state dict names their layer
// norms' parameters weight and bias, where spore says gamma and beta.
func torchNamesCases() []struct {
	name  string
	cell  func() nn.Module
	torch []string // names in the PyTorch state dict that spore spells otherwise
} {
	layer := func() *nn.TransformerEncoderLayer {
		return nn.NewTransformerEncoderLayer(8, 2, nn.TransformerLayerConfig{DimFeedforward: 16})
	}
	return []struct {
		name  string
		cell  func() nn.Module
		torch []string
	}{
		{"encoder layer", func() nn.Module { return layer() }, []string{"norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias"}},
		{"encoder with final norm", func() nn.Module { return nn.NewTransformerEncoder(layer(), 2, nn.NewLayerNorm([]int{8})) },
			[]string{"layers.0.norm1.weight", "layers.1.norm2.bias", "norm.weight", "norm.bias"}},
		{"decoder layer", func() nn.Module {
			return nn.NewTransformerDecoderLayer(8, 2, nn.TransformerLayerConfig{DimFeedforward: 16})
		}, []string{"norm1.weight", "norm2.bias", "norm3.weight", "norm3.bias"}},
		{"layer norm", func() nn.Module { return nn.NewLayerNorm([]int{8}) }, []string{"weight", "bias"}},
	}
}

// stateDict returns a PyTorch-style dict for cell: its parameters under
// PyTorch's names (or spore's, with torch false), each a fresh tensor of
// distinct values.
func stateDict(cell nn.Module, torch bool) []checkpoint.Param {
	ps := nn.TorchParams(cell)
	if !torch {
		ps = nil
		for _, p := range cell.Base().NamedParameters() {
			ps = append(ps, checkpoint.Param{Name: p.Name, Tensor: p.Tensor})
		}
	}
	out := make([]checkpoint.Param, len(ps))
	for i, p := range ps {
		out[i] = checkpoint.Param{Name: p.Name, Tensor: randT(uint64(i+1), -1, 1, p.Tensor.Shape()...)}
		if p.Tensor.DType() != tensor.Float64 {
			out[i].Tensor = tensor.FromSlice(out[i].Tensor.Float32s(), p.Tensor.Shape()...)
		}
	}
	return out
}

// assertLoaded checks that every parameter of cell holds the value that
// dict gives it under the parameter's PyTorch name.
func assertLoaded(t *testing.T, cell nn.Module, dict []checkpoint.Param) {
	t.Helper()
	byName := map[string]*tensor.Tensor{}
	for _, p := range dict {
		byName[p.Name] = p.Tensor
		if s, ok := strings.CutSuffix(p.Name, "gamma"); ok {
			byName[s+"weight"] = p.Tensor
		} else if s, ok := strings.CutSuffix(p.Name, "beta"); ok {
			byName[s+"bias"] = p.Tensor
		}
	}
	for _, p := range nn.TorchParams(cell) {
		sameValues(t, p.Name, p.Tensor, byName[p.Name], 0)
	}
}

// TestTorchNamesLoadStrictly loads PyTorch-named state dicts into the
// transformer cells strictly: through TorchParams, and through
// FromTorchNames with the dict keyed PyTorch's way, spore's way, or
// half and half. A dict naming one parameter both ways is refused.
func TestTorchNamesLoadStrictly(t *testing.T) {
	for _, c := range torchNamesCases() {
		t.Run(c.name, func(t *testing.T) {
			cell := c.cell()
			names := nn.TorchParams(cell)
			var torch []string
			for _, p := range names {
				torch = append(torch, p.Name)
			}
			for _, n := range c.torch {
				if !slices.Contains(torch, n) {
					t.Errorf("TorchParams lacks %q: %v", n, torch)
				}
			}
			for _, n := range torch {
				if strings.HasSuffix(n, "gamma") || strings.HasSuffix(n, "beta") {
					t.Errorf("TorchParams still names %q spore's way", n)
				}
			}
			own := cellParams(cell)
			// The bug: spore's own names refuse a PyTorch dict.
			if _, _, _, err := checkpoint.LoadInto(own, stateDict(cell, true), true); err == nil {
				t.Fatal("a strict load of a PyTorch dict under spore's names succeeded; the test proves nothing")
			}
			dict := stateDict(cell, true)
			if _, _, _, err := checkpoint.LoadInto(nn.TorchParams(cell), dict, true); err != nil {
				t.Fatalf("TorchParams: %v", err)
			}
			assertLoaded(t, cell, dict)
			mixed := stateDict(cell, false)
			for i := range mixed {
				if i%2 == 0 {
					mixed[i].Name = names[i].Name
				}
			}
			for _, k := range []struct {
				name string
				dict []checkpoint.Param
			}{{"PyTorch's names", stateDict(cell, true)}, {"spore's names", stateDict(cell, false)}, {"mixed", mixed}} {
				before := slices.Clone(k.dict)
				if _, _, _, err := checkpoint.LoadInto(own, nn.FromTorchNames(cell, k.dict), true); err != nil {
					t.Fatalf("FromTorchNames, %s: %v", k.name, err)
				}
				assertLoaded(t, cell, k.dict)
				if !slices.Equal(before, k.dict) {
					t.Errorf("FromTorchNames, %s: modified its argument", k.name)
				}
			}
			both := append(stateDict(cell, false), stateDict(cell, true)...)
			if _, _, _, err := checkpoint.LoadInto(own, nn.FromTorchNames(cell, both), true); err == nil || !strings.Contains(err.Error(), "appears twice") {
				t.Errorf("a dict naming parameters both ways: %v, want a duplicate-name error", err)
			}
		})
	}
}

// TestTorchNamesSave saves a layer under PyTorch's names and loads the
// file into a fresh layer: the file's names are PyTorch's, and the values
// come back.
func TestTorchNamesSave(t *testing.T) {
	for _, c := range torchNamesCases() {
		t.Run(c.name, func(t *testing.T) {
			src, dst := c.cell(), c.cell()
			if _, _, _, err := checkpoint.LoadInto(nn.TorchParams(src), stateDict(src, true), true); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "torch.safetensors")
			if err := checkpoint.Save(path, nn.TorchParams(src), nil); err != nil {
				t.Fatal(err)
			}
			saved, _, err := checkpoint.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range c.torch {
				if !slices.ContainsFunc(saved, func(p checkpoint.Param) bool { return p.Name == n }) {
					t.Errorf("the file lacks %q", n)
				}
			}
			if _, _, _, err := checkpoint.LoadInto(cellParams(dst), nn.FromTorchNames(dst, saved), true); err != nil {
				t.Fatal(err)
			}
			assertLoaded(t, dst, saved)
		})
	}
}

// cellParams lists a cell's parameters under spore's names, as the
// checkpoint package takes them.
func cellParams(cell nn.Module) checkpoint.Params {
	var ps checkpoint.Params
	for _, p := range cell.Base().NamedParameters() {
		ps = append(ps, checkpoint.Param{Name: p.Name, Tensor: p.Tensor})
	}
	return ps
}
