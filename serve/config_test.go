package serve

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseModelConfig(t *testing.T) {
	cases := []struct {
		name, json string
		want       string // "" for valid
	}{
		{"empty", `{}`, ""},
		{"full", `{"max_batch_size": 8, "max_queue_delay_microseconds": 100, "max_queue_size": 10, "instances": 2, "threads": 1,
			"input": [{"name": "x", "data_type": "TYPE_FP32", "dims": [3, -1]}], "output": [{"name": "y"}], "version_policy": {"specific": {"versions": [1, 3]}}}`, ""},
		{"triton form", `{"name": "m", "platform": "onnxruntime_onnx", "max_batch_size": 8, "dynamic_batching": {"max_queue_delay_microseconds": 100,
			"default_queue_policy": {"max_queue_size": 64}}, "instance_group": [{"count": 1, "kind": "KIND_CPU"}, {"count": 2}]}`, ""},
		{"delay twice", `{"max_queue_delay_microseconds": 1, "dynamic_batching": {"max_queue_delay_microseconds": 2}}`, "given twice"},
		{"queue twice", `{"max_queue_size": 1, "dynamic_batching": {"default_queue_policy": {"max_queue_size": 2}}}`, "given twice"},
		{"instances twice", `{"instances": 1, "instance_group": [{"count": 2}]}`, "given twice"},
		{"gpu", `{"instance_group": [{"count": 1, "kind": "KIND_GPU"}]}`, "runs on the CPU"},
		{"too many instances", `{"instance_group": [{"count": 60}, {"count": 60}]}`, "instances 120 is outside"},
		{"platform", `{"platform": "tensorrt_plan"}`, "serves ONNX models"},
		{"backend", `{"backend": "python"}`, "serves ONNX models"},
		{"data_type", `{"input": [{"name": "x", "data_type": "TYPE_STRING"}]}`, `data_type "TYPE_STRING"`},
		{"dims", `{"input": [{"name": "x", "dims": [3, 0]}]}`, "a dimension is positive, or -1"},
		{"unknown field", `{"max_batch": 8}`, `unknown field "max_batch"`},
		{"not json", `max_batch_size: 8`, "invalid character"},
		{"trailing", `{} {}`, "data after the JSON object"},
		{"wrong type", `{"max_batch_size": "8"}`, "cannot unmarshal string"},
		{"negative batch", `{"max_batch_size": -1}`, "max_batch_size -1 is outside"},
		{"huge batch", `{"max_batch_size": 100000}`, "max_batch_size 100000 is outside"},
		{"negative delay", `{"max_queue_delay_microseconds": -5}`, "max_queue_delay_microseconds -5"},
		{"instances", `{"instances": 1000}`, "instances 1000 is outside"},
		{"threads", `{"threads": 100000}`, "threads 100000 is outside"},
		{"unnamed input", `{"input": [{}]}`, "without a name"},
		{"twice", `{"output": [{"name": "y"}, {"name": "y"}]}`, `"y" is listed twice`},
		{"two policies", `{"version_policy": {"all": {}, "latest": {"num_versions": 2}}}`, "exactly one of"},
		{"no policy", `{"version_policy": {}}`, "exactly one of"},
		{"latest 0", `{"version_policy": {"latest": {"num_versions": 0}}}`, "want at least 1"},
		{"specific 0", `{"version_policy": {"specific": {"versions": [0]}}}`, "not a positive integer"},
		{"specific none", `{"version_policy": {"specific": {"versions": []}}}`, "lists no versions"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var mc ModelConfig
			err := parseModelConfig([]byte(c.json), &mc)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("got %v, want an error with %q", err, c.want)
			}
		})
	}
}

func TestSelectVersions(t *testing.T) {
	present := []int64{1, 2, 5, 10}
	cases := []struct {
		policy string
		want   string
	}{
		{`{}`, "[10]"},
		{`{"version_policy": {"latest": {"num_versions": 2}}}`, "[10 5]"},
		{`{"version_policy": {"latest": {"num_versions": 9}}}`, "[10 5 2 1]"},
		{`{"version_policy": {"all": {}}}`, "[10 5 2 1]"},
		{`{"version_policy": {"specific": {"versions": [2, 7, 1]}}}`, "[2 1]"},
		{`{"version_policy": {"specific": {"versions": [7]}}}`, "[]"},
	}
	for _, c := range cases {
		var mc ModelConfig
		if err := parseModelConfig([]byte(c.policy), &mc); err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(mc.selectVersions(present)); got != c.want {
			t.Errorf("%s: %s, want %s", c.policy, got, c.want)
		}
	}
}

func TestModelNames(t *testing.T) {
	cases := []struct {
		name string
		ok   bool
	}{
		{"resnet50", true}, {"my-model_v2.onnx", true}, {"A", true},
		{"", false}, {".", false}, {"..", false}, {".hidden", false}, {"../x", false}, {"a/b", false},
		{`a\b`, false}, {"a\x00b", false}, {"a b", false}, {"é", false}, {"%2e%2e", false},
		{strings.Repeat("a", maxNameLen), true}, {strings.Repeat("a", maxNameLen+1), false},
	}
	for _, c := range cases {
		err := checkModelName(c.name)
		if (err == nil) != c.ok {
			t.Errorf("checkModelName(%q) = %v, want ok=%v", c.name, err, c.ok)
		}
		if err != nil && StatusOf(err) != 400 {
			t.Errorf("checkModelName(%q): status %d, want 400", c.name, StatusOf(err))
		}
	}
}

func TestParseVersion(t *testing.T) {
	cases := []struct {
		s  string
		v  int64
		ok bool
	}{
		{"1", 1, true}, {"42", 42, true}, {"0", 0, false}, {"01", 0, false}, {"-1", 0, false},
		{"+1", 0, false}, {"1a", 0, false}, {"", 0, false}, {"9999999999999999999", 0, false},
	}
	for _, c := range cases {
		v, ok := parseVersion(c.s)
		if v != c.v || ok != c.ok {
			t.Errorf("parseVersion(%q) = %d, %v; want %d, %v", c.s, v, ok, c.v, c.ok)
		}
	}
}
