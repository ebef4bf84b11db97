package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

func cmdVersion(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("version", "Prints spore's module version, the VCS revision it was built from, and the Go\n"+
		"toolchain and platform, as the binary records them (runtime/debug.ReadBuildInfo).", stdout)
	if err := parse(fs, args); err != nil {
		return err
	}
	info, ok := debug.ReadBuildInfo()
	fmt.Fprintln(stdout, versionLine(info, ok))
	return nil
}

// versionLine describes a build for spore version: the module and its
// version ("devel" for a build from a checkout, which Go records as
// "(devel)"), the VCS revision with its time and whether the tree had
// uncommitted changes, and the toolchain and platform. Missing pieces
// (no build info, a build without VCS stamping) are said to be unknown.
func versionLine(info *debug.BuildInfo, ok bool) string {
	platform := runtime.GOOS + "/" + runtime.GOARCH
	if !ok || info == nil {
		return fmt.Sprintf("spore version unknown (no build information in the binary), revision unknown, %s %s", runtime.Version(), platform)
	}
	version := info.Main.Version
	switch version {
	case "", "(devel)":
		version = "devel"
	}
	module := info.Main.Path
	if module == "" {
		module = "github.com/sporeml/spore"
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	rev := "revision unknown (built without VCS information)"
	if r := settings["vcs.revision"]; r != "" {
		var notes []string
		if t := settings["vcs.time"]; t != "" {
			notes = append(notes, t)
		}
		if settings["vcs.modified"] == "true" {
			notes = append(notes, "with uncommitted changes")
		}
		rev = settings["vcs"] + " revision " + r
		if settings["vcs"] == "" {
			rev = "revision " + r
		}
		if len(notes) > 0 {
			rev += " (" + strings.Join(notes, ", ") + ")"
		}
	}
	goVersion := info.GoVersion
	if goVersion == "" {
		goVersion = runtime.Version()
	}
	return fmt.Sprintf("spore %s (%s), %s, %s %s", version, module, rev, goVersion, platform)
}
