package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestAmpFlags checks --amp-level and --precision: what spore does not
// build is a usage error naming the flag, and the valid values run.
func TestAmpFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"train", "--amp-level", "O1"}, "--amp-level: amp level O1 is not supported"},
		{[]string{"train", "--amp-level", "fp16"}, `--amp-level: unknown amp level "fp16": want O0, O2 or O3`},
		{[]string{"bench", "--precision", "fp16"}, `unknown --precision "fp16" (want fp32 or bf16)`},
	} {
		_, errOut, code := runCLI(t, c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("spore %s: exit %d, stderr %q; want exit 2 and %q", strings.Join(c.args, " "), code, errOut, c.want)
		}
	}
	out, errOut, code := runCLI(t, "bench", "--json", "--iters", "2", "--precision", "bf16", "--batch", "2")
	if code != 0 {
		t.Fatalf("bench --precision bf16: exit %d: %s", code, errOut)
	}
	var r benchResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%q is not a JSON object: %v", out, err)
	}
	if r.Precision != "bf16" || r.BF16Kernel == "" || !(r.GraphInferUS > 0) || !(r.GraphTrainUS > 0) {
		t.Errorf("bench --precision bf16: %+v", r)
	}
	out, errOut, code = runCLI(t, "train", "--amp-level", "O2", "--epochs", "1", "--steps", "3", "--batch", "8")
	if code != 0 || !strings.Contains(out, "mixed precision: amp level O2") || !strings.Contains(out, "test accuracy") {
		t.Errorf("train --amp-level O2: exit %d\n%s\n%s", code, out, errOut)
	}
}
