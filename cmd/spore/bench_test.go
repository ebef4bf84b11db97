package main

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"
)

// TestBenchSweep checks that a batch list gives one JSON object per batch,
// in order, for each network bench knows, with every timing measured.
func TestBenchSweep(t *testing.T) {
	for _, model := range []string{"mlp", "lenet"} {
		t.Run(model, func(t *testing.T) {
			out, errOut, code := runCLI(t, "bench", "--json", "--iters", "2", "--model", model, "--batch", "1,3")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var got []int
			sc := bufio.NewScanner(strings.NewReader(out))
			for sc.Scan() {
				var r benchResult
				if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
					t.Fatalf("line %q is not a JSON object: %v", sc.Text(), err)
				}
				if r.Model != model {
					t.Errorf("model = %q, want %q", r.Model, model)
				}
				for name, v := range map[string]float64{"pynative_infer_us": r.PyNativeInferUS, "graph_infer_us": r.GraphInferUS,
					"pynative_train_us": r.PyNativeTrainUS, "graph_train_us": r.GraphTrainUS, "graph_infer_gflops": r.GFLOPSGraphInfer} {
					if !(v > 0) {
						t.Errorf("batch %d: %s = %v, want > 0", r.Batch, name, v)
					}
				}
				got = append(got, r.Batch)
			}
			if len(got) != 2 || got[0] != 1 || got[1] != 3 {
				t.Errorf("batches %v, want [1 3]", got)
			}
		})
	}
}

// TestBenchTable checks the sweep's table: one row per batch.
func TestBenchTable(t *testing.T) {
	out, errOut, code := runCLI(t, "bench", "--iters", "1", "--batch", "2,5")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	rows := 0
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) > 2 && f[1] == "|" && (f[0] == "2" || f[0] == "5") {
			rows++
		}
	}
	if rows != 2 {
		t.Errorf("%d rows for batches 2 and 5, want 2:\n%s", rows, out)
	}
}

// TestBenchBadFlags checks that bad --batch, --model and --iters values
// are usage errors naming the flag and the value.
func TestBenchBadFlags(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--batch", "1,,4"}, `"" is not a whole number`},
		{[]string{"--batch", "16,x"}, `"x" is not a whole number`},
		{[]string{"--batch", "0"}, "batch size 0 must be positive"},
		{[]string{"--batch", "1,-3"}, "batch size -3 must be positive"},
		{[]string{"--batch", "100000000"}, "at most 65536"},
		{[]string{"--model", "vgg"}, `unknown --model "vgg" for bench`},
		{[]string{"--iters", "-2"}, "--iters must be positive"},
	}
	for _, c := range cases {
		_, errOut, code := runCLI(t, append([]string{"bench"}, c.args...)...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("spore bench %v: exit %d, stderr %q; want exit 2 mentioning %q", c.args, code, errOut, c.want)
		}
	}
}
