package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sporeml/spore"
)

// spore graph --json writes the compile record beside the dumps: the same
// stages, the same texts, and the fused GEMM naming its pass.
func TestGraphJSON(t *testing.T) {
	dir := t.TempDir()
	out, errOut, code := runCLI(t, "graph", "--out", dir, "--batch", "8", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	path := filepath.Join(dir, "train_step.json")
	if !strings.Contains(out, "JSON: "+path) {
		t.Errorf("output does not name %s:\n%s", path, out)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rec spore.CompileRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Name != "train_step" || rec.Signature != "(float32[8,1,28,28], int32[8])" || rec.Level != "O1" {
		t.Errorf("record header %q %q %q", rec.Name, rec.Signature, rec.Level)
	}
	var stages []string
	for _, p := range rec.Passes {
		stages = append(stages, p.Pass)
	}
	for _, s := range []string{"trace", "anchor", "fuse", "dce"} {
		if !slices.Contains(stages, s) {
			t.Errorf("stages %v lack %s", stages, s)
		}
	}
	last := rec.Passes[len(rec.Passes)-1]
	dumps, _ := filepath.Glob(filepath.Join(dir, "train_step", "*_dce.ir"))
	if len(dumps) != 1 {
		t.Fatalf("%d dce dumps", len(dumps))
	}
	if text, _ := os.ReadFile(dumps[0]); string(text) != last.Text {
		t.Errorf("the record's last text differs from %s", dumps[0])
	}
	found := false
	for _, n := range last.Graph.Nodes {
		found = found || (n.Op == "Anchor" && n.Kind == "fused" && n.Pass == "anchor" && slices.Contains(n.Fused, "MatMul"))
	}
	if !found {
		t.Error("no Anchor node fused by the anchor pass in the record")
	}
}
