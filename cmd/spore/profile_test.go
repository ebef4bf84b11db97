package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sporeml/spore/profile"
)

// checkTable: out holds a profile table with rows and its totals line.
func checkTable(t *testing.T, out string) {
	t.Helper()
	i := strings.Index(out, "profile:\n")
	if i < 0 {
		t.Fatalf("no profile in the output:\n%s", out)
	}
	lines := strings.Split(out[i:], "\n")
	if len(lines) < 4 || !strings.Contains(lines[1], "GFLOP/s") || !strings.Contains(out[i:], "steps: ") {
		t.Fatalf("the profile is no table:\n%s", out[i:])
	}
}

func TestRunProfile(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "trace.json")
	out, errOut, code := runCLI(t, "run", fixture("cnn.onnx"), "--batch", "2", "--profile", "--profile-calls", "3", "--profile-top", "4", "--trace", trace)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	checkTable(t, out)
	if !strings.Contains(out, " 3 run(s) of 1 compiled function(s)") {
		t.Errorf("want 3 profiled runs:\n%s", out)
	}
	tr, err := profile.ReadTrace(trace)
	if err != nil {
		t.Fatal(err)
	}
	runs := 0
	for _, e := range tr.TraceEvents {
		if e.Ph == "X" && e.Cat == "run" {
			runs++
		}
	}
	if runs != 3 {
		t.Errorf("the trace has %d runs, want 3", runs)
	}

	// --json: the rows, at most --profile-top of them.
	out, errOut, code = runCLI(t, "run", fixture("cnn.onnx"), "--batch", "2", "--profile", "--profile-top", "2", "--json")
	if code != 0 {
		t.Fatalf("--json: exit %d: %s", code, errOut)
	}
	var res runResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if res.Profile == nil || len(res.Profile.Rows) != 2 || res.Profile.StepMS <= 0 || res.Profile.Rows[0].Calls != 10 {
		t.Fatalf("--json profile: %+v", res.Profile)
	}
}

func TestProfileFlagErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"run", fixture("cnn.onnx"), "--batch", "2", "--profile", "--mode", "pynative"}, "use --mode graph"},
		{[]string{"run", fixture("cnn.onnx"), "--batch", "2", "--profile-top", "-1"}, "--profile-top -1 must not be negative"},
		{[]string{"run", fixture("cnn.onnx"), "--batch", "2", "--profile", "--profile-calls", "-2"}, "--profile-calls -2 must not be negative"},
		{[]string{"bench", "--trace", filepath.Join(t.TempDir(), "no", "such", "t.json")}, "does not exist"},
	}
	for _, c := range cases {
		_, errOut, code := runCLI(t, c.args...)
		if code != 2 && code != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, %q; want an error saying %q", c.args, code, errOut, c.want)
		}
	}
}

// TestTrainProfile: spore train --profile prints the table and, with
// --summary-dir, saves the functions' profiles beside their graphs.
func TestTrainProfile(t *testing.T) {
	data := mnistDir(t, split{64, 28, digits}, split{20, 28, digits})
	dir := filepath.Join(t.TempDir(), "run")
	out, errOut, code := runCLI(t, "train", "--data", data, "--epochs", "1", "--batch", "16", "--steps", "3", "--profile", "--summary-dir", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errOut, out)
	}
	checkTable(t, out)
	recs, err := profile.ReadRecords(dir)
	if err != nil {
		t.Fatal(err)
	}
	graphs, _ := os.ReadDir(filepath.Join(dir, "graphs"))
	if len(recs) == 0 || len(recs) != len(graphs) {
		t.Fatalf("%d profiles for %d graphs", len(recs), len(graphs))
	}
	steps := 0
	for _, r := range recs {
		steps += r.Runs
	}
	if steps != 3 {
		t.Errorf("the profiles count %d training steps, want 3", steps)
	}
}

func TestBenchProfile(t *testing.T) {
	out, errOut, code := runCLI(t, "bench", "--batch", "4", "--iters", "10", "--profile", "--profile-top", "3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	checkTable(t, out)
}
