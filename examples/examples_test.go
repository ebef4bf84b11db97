package examples_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The five execution-mode programs build the same network from the same
// seed and must print the same (64, 10) output.
func TestExamplesAgree(t *testing.T) {
	if testing.Short() {
		t.Skip("builds five programs")
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+string(filepath.Separator), "./pynative_context", "./graph_context", "./jit_decorator", "./jit_transform", "./jit_cell")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var first string
	for _, name := range []string{"pynative_context", "graph_context", "jit_decorator", "jit_transform", "jit_cell"} {
		out, err := exec.Command(filepath.Join(bin, name)).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
		text := string(out)
		if rows := strings.Count(text, "\n ["); rows != 63 || !strings.HasPrefix(text, "[[") {
			t.Fatalf("%s: output is not a (64, 10) tensor:\n%s", name, text)
		}
		if first == "" {
			first = text
			continue
		}
		if text != first {
			t.Errorf("%s prints a different output from pynative_context:\n%s\nvs\n%s", name, text, first)
		}
	}
}
