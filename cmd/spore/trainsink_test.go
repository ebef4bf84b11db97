package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// spore train --sink-size N trains as step-by-step training does: the
// same loss at every step, in both modes, with sink sizes that divide
// the epoch and one that does not; bad sizes are refused before
// training.
func TestTrainSinkSize(t *testing.T) {
	data := mnistDir(t, split{60, 28, digits}, split{20, 28, digits})
	dir := t.TempDir()
	for _, mode := range []string{"graph", "pynative"} {
		logOf := func(sink string) string {
			path := filepath.Join(dir, mode+sink+".log")
			out, errOut, code := runCLI(t, "train", "--mode", mode, "--data", data, "--batch", "4", "--epochs", "2", "--sink-size", sink, "--loss-log", path)
			if code != 0 {
				t.Fatalf("%s --sink-size %s: exit %d: %s\n%s", mode, sink, code, errOut, out)
			}
			if sink != "0" && mode == "graph" && !strings.Contains(out, "graph: data sink of "+sink+" steps per call") {
				t.Errorf("%s --sink-size %s: output lacks the sink's statistics:\n%s", mode, sink, out)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
		want := logOf("0")
		if n := strings.Count(want, "\n") - 1; n != 30 { // and a header line
			t.Fatalf("%s: %d losses logged, want 2 epochs of 15", mode, n)
		}
		for _, sink := range []string{"5", "4"} {
			if got := logOf(sink); got != want {
				t.Errorf("%s --sink-size %s: losses\n%s\nstep by step:\n%s", mode, sink, got, want)
			}
		}
	}
	out, errOut, code := runCLI(t, "train", "--data", data, "--sink-size", "-3")
	if code != 2 || !strings.Contains(out+errOut, "--sink-size -3 is negative") {
		t.Errorf("--sink-size -3: exit %d, %q %q", code, out, errOut)
	}
}
