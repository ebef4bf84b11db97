package testkit_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/sporeml/spore/internal/testkit"
)

var sink []byte

func TestAllocatedBy(t *testing.T) {
	if testkit.AllocatedBy(func() {}, 0) > 1<<10 {
		t.Error("an empty function allocated more than 1 KiB")
	}
	if got := testkit.AllocatedBy(func() { sink = make([]byte, 1<<20) }, 0); got < 1<<20 {
		t.Errorf("a 1 MiB allocation measured %d bytes", got)
	}
}

func TestSources(t *testing.T) {
	_, files := testkit.Sources(t, ".")
	all, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, f := range all {
		if !strings.HasSuffix(f, "_test.go") {
			want++
		}
	}
	if len(files) != want || want < 2 {
		t.Errorf("read %d files; want this package's %d source files (every build variant), not its tests", len(files), want)
	}
	for _, f := range files {
		if f.Name.Name != "testkit" {
			t.Errorf("read a file of package %s", f.Name.Name)
		}
	}
}
