package spore_test

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// notCode are the code blocks of package docs that are not Go (tables,
// formulas, messages), keyed by file and first line, with why.
var notCode = map[string]string{
	"compile/doc.go: constfold      evaluate pure ops on constants at compile time":                                      "the pass table",
	"doc.go: cmd/spore, examples, bench          the command line, examples, peer benchmarks":                            "the package layers",
	"nn/initializer/doc.go: b = √(6 / ((1 + a²)·fan_in))":                                                                "a formula",
	"ops/doc.go: spore: MatMul: inner dimensions differ: [64 784] x [512 10] (at main.go:31)":                            "an error message",
	"internal/kernels/gemm/doc.go: for jc over n in steps of nc:            B block kc×nc (L2/L3)":                       "pseudo-code of the loop nest",
	"internal/kernels/gemm/doc.go: go test -bench . ./internal/kernels/gemm":                                             "a shell command",
	"internal/kernels/gemm/doc.go: go test -run '^$' -bench TransA -count 3 ./internal/kernels/gemm":                     "a shell command",
	"internal/kernels/vec/doc.go: kernel       64×512 asm / Go      1M asm / Go":                                         "a table of timings",
	"dataset/mnist/doc.go: 440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609  train-images-idx3-ubyte.gz": "checksums",
	"dashboard/doc.go: /api/runs                       the log dir's status and runs":                                    "the endpoint table",
	"summary/doc.go: events.out.tfevents.<unix seconds>.<hostname>.<pid>.spore":                                          "file names",
}

// notChecked are directories whose docs this test does not read.
var notChecked = []string{}

// TestDocCodeBlocks checks that every Go code block of a package doc
// (doc.go) and every ```go block of README.md is compiled: each of its
// paragraphs appears line for line, indentation aside, in an
// example_test.go file, where go vet and go test build it.
func TestDocCodeBlocks(t *testing.T) {
	examples := map[string][]string{} // file → trimmed lines
	var docs []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case strings.HasSuffix(path, "example_test.go"):
			examples[path] = trimmedLines(t, path)
		case d.Name() == "doc.go":
			docs = append(docs, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	var blocks []block
	for _, path := range docs {
		if skipped(path) {
			continue
		}
		for _, b := range docBlocks(t, path) {
			if _, ok := notCode[path+": "+b.lines[0]]; !ok {
				blocks = append(blocks, b)
			}
		}
	}
	blocks = append(blocks, readmeBlocks(t, "README.md")...)
	if len(blocks) < 10 {
		t.Fatalf("found only %d code blocks; is the extraction broken?", len(blocks))
	}
	for _, b := range blocks {
		for _, para := range paragraphs(b.lines) {
			if !foundIn(examples, para) {
				t.Errorf("%s:%d: this code is in no example_test.go file; copy it from a compiled Example:\n\t%s",
					b.file, b.line, strings.Join(para, "\n\t"))
			}
		}
	}
}

// block is one code block of a doc: its trimmed lines, and where it starts.
type block struct {
	file  string
	line  int
	lines []string
}

func skipped(path string) bool {
	for _, d := range notChecked {
		if strings.HasPrefix(filepath.ToSlash(path), d+"/") {
			return true
		}
	}
	return false
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		lines = append(lines, s.Text())
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

func trimmedLines(t *testing.T, path string) []string {
	lines := readLines(t, path)
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l)
	}
	return lines
}

// docBlocks returns the code blocks of a Go doc comment: runs of "//\t"
// lines, with "//" lines between them.
func docBlocks(t *testing.T, path string) []block {
	var out []block
	var cur *block
	for i, l := range readLines(t, path) {
		switch {
		case strings.HasPrefix(l, "//\t"):
			if cur == nil {
				out = append(out, block{file: path, line: i + 1})
				cur = &out[len(out)-1]
			}
			cur.lines = append(cur.lines, strings.TrimSpace(l[2:]))
		case l == "//" && cur != nil:
			cur.lines = append(cur.lines, "")
		default:
			cur = nil
		}
	}
	return out
}

// readmeBlocks returns the ```go blocks of a Markdown file.
func readmeBlocks(t *testing.T, path string) []block {
	var out []block
	var cur *block
	for i, l := range readLines(t, path) {
		switch {
		case cur == nil && strings.TrimSpace(l) == "```go":
			out = append(out, block{file: path, line: i + 2})
			cur = &out[len(out)-1]
		case cur != nil && strings.TrimSpace(l) == "```":
			cur = nil
		case cur != nil:
			cur.lines = append(cur.lines, strings.TrimSpace(l))
		}
	}
	return out
}

// paragraphs splits lines at blank lines, dropping empty paragraphs.
func paragraphs(lines []string) [][]string {
	var out [][]string
	start := 0
	for i := 0; i <= len(lines); i++ {
		if i == len(lines) || lines[i] == "" {
			if i > start {
				out = append(out, lines[start:i])
			}
			start = i + 1
		}
	}
	return out
}

// foundIn reports whether para is a run of consecutive lines of one file.
func foundIn(files map[string][]string, para []string) bool {
	for _, lines := range files {
	next:
		for i := 0; i+len(para) <= len(lines); i++ {
			for j, p := range para {
				if lines[i+j] != p {
					continue next
				}
			}
			return true
		}
	}
	return false
}

// TestBenchStaysInRepository: the peer benchmarks run from a fresh clone,
// so bench/ names no path above the repository and every script it runs
// is in the repository: in bench/ itself, or named by its path from the
// repository's root.
func TestBenchStaysInRepository(t *testing.T) {
	entries, err := os.ReadDir("bench")
	if err != nil {
		t.Fatal(err)
	}
	outside := regexp.MustCompile(`\.\./|/shared/|\$HOME|~/`)
	script := regexp.MustCompile(`[\w./$"{}-]*?([\w-]+\.(?:py|js|sh))\b`)
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		src, err := os.ReadFile(filepath.Join("bench", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(src), "\n") {
			if outside.MatchString(line) {
				t.Errorf("bench/%s:%d reaches outside the repository: %s", e.Name(), i+1, strings.TrimSpace(line))
			}
			if strings.HasPrefix(strings.TrimSpace(line), "#") || strings.HasPrefix(strings.TrimSpace(line), "//") {
				continue
			}
			for _, m := range script.FindAllStringSubmatch(line, -1) {
				// A script in bench/, or one named by its path from the
				// repository's root (the ONNX tests' ONNX Runtime runner).
				_, inBench := os.Stat(filepath.Join("bench", m[1]))
				_, inRepo := os.Stat(m[0])
				if inBench != nil && (inRepo != nil || !strings.Contains(m[0], "/")) {
					t.Errorf("bench/%s:%d runs %s, which is not in the repository", e.Name(), i+1, m[0])
				}
			}
		}
	}
}
