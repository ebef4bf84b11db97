package compile

import (
	"os"
	"regexp"
	"slices"
	"testing"
)

// TestDocListsEveryPass keeps the package documentation's pass list in
// step with the pass table: the list in doc.go's Pipeline section names,
// in order, every pass that runs at O1 (O2's are described after it), so
// a pass added to Passes and not to the documentation fails here.
func TestDocListsEveryPass(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	// A list entry is a tab-indented comment line that starts with a
	// lower-case name followed by at least two spaces; its continuation
	// lines start with spaces.
	entry := regexp.MustCompile(`(?m)^//\t([a-z0-9]+)  +\S`)
	var documented []string
	for _, m := range entry.FindAllSubmatch(src, -1) {
		documented = append(documented, string(m[1]))
	}
	var want []string
	for _, p := range Passes {
		if p.Required || p.MinLevel <= O1 {
			want = append(want, p.Name)
		}
	}
	if !slices.Equal(documented, want) {
		t.Errorf("doc.go lists the passes\n\t%v\nPasses runs at O1\n\t%v", documented, want)
	}
}
