package jit

import (
	"strings"
	"testing"
)

// SPORE_JIT accepts MindSpore's MS_JIT values (0, 1) and the usual boolean
// spellings; anything else is an error that lists what it takes, and leaves
// compilation on.
func TestParseJitEnv(t *testing.T) {
	cases := []struct {
		v       string
		disable bool
		bad     bool
	}{
		{"", false, false},
		{"1", false, false},
		{"0", true, false},
		{"true", false, false},
		{"FALSE", true, false},
		{" off ", true, false},
		{"on", false, false},
		{"no", true, false},
		{"yes", false, false},
		{"banana", false, true},
		{"2", false, true},
		{"00", false, true},
	}
	for _, c := range cases {
		disable, err := parseJitEnv(c.v)
		if disable != c.disable || (err != nil) != c.bad {
			t.Errorf("parseJitEnv(%q) = %v, %v; want disable %v, error %v", c.v, disable, err, c.disable, c.bad)
		}
		if err != nil && !(strings.Contains(err.Error(), "SPORE_JIT") && strings.Contains(err.Error(), c.v) && strings.Contains(err.Error(), "want 0")) {
			t.Errorf("parseJitEnv(%q): error %q does not name the variable, the value and the accepted values", c.v, err)
		}
	}
}
