package main

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// spore version prints the module version and VCS revision as the build
// recorded them, and says which are unknown.
func TestVersionLine(t *testing.T) {
	vcs := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	main := debug.Module{Path: "github.com/sporeml/spore", Version: "(devel)"}
	platform := runtime.GOOS + "/" + runtime.GOARCH
	tests := []struct {
		name string
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{"release with vcs", &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Path: "github.com/sporeml/spore", Version: "v0.4.0"},
			Settings: vcs("vcs", "git", "vcs.revision", "0123abcd", "vcs.time", "2026-12-01T20:00:00Z", "vcs.modified", "false")},
			true, "spore v0.4.0 (github.com/sporeml/spore), git revision 0123abcd (2026-12-01T20:00:00Z), go1.26.1 " + platform},
		{"devel, modified tree", &debug.BuildInfo{GoVersion: "go1.26.1", Main: main,
			Settings: vcs("vcs", "git", "vcs.revision", "0123abcd", "vcs.modified", "true")},
			true, "spore devel (github.com/sporeml/spore), git revision 0123abcd (with uncommitted changes), go1.26.1 " + platform},
		{"no vcs stamping", &debug.BuildInfo{GoVersion: "go1.26.1", Main: main, Settings: vcs("-buildvcs", "false")},
			true, "spore devel (github.com/sporeml/spore), revision unknown (built without VCS information), go1.26.1 " + platform},
		{"no build info", nil, false, "spore version unknown (no build information in the binary), revision unknown, " + runtime.Version() + " " + platform},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := versionLine(tc.info, tc.ok); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
	out, errOut, code := runCLI(t, "version")
	if code != 0 || errOut != "" || !strings.HasPrefix(out, "spore ") || strings.Count(out, "\n") != 1 || !strings.Contains(out, runtime.Version()) {
		t.Errorf("spore version: exit %d, %q %q; want one line", code, out, errOut)
	}
	if help, _, _ := runCLI(t, "help"); !strings.Contains(help, "  version ") {
		t.Errorf("the help does not list version:\n%s", help)
	}
	if _, errOut, code := runCLI(t, "version", "extra"); code != 2 || !strings.Contains(errOut, `unexpected argument "extra"`) {
		t.Errorf("spore version extra: exit %d, %q", code, errOut)
	}
}
