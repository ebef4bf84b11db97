package main

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sporeml/spore/tensor"
)

// testSource is a small directory of real Go source: the strings package
// of the Go installation running the test.
func testSource(t *testing.T) string {
	t.Helper()
	src, err := goSource()
	if err != nil {
		t.Skip(err)
	}
	dir := filepath.Join(src, "strings")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("no Go source at %s", dir)
	}
	return dir
}

func TestEncodeDecode(t *testing.T) {
	in := "func f() {\n\treturn \"é\"\n}"
	got := decode(toInts(encode(in)))
	if want := "func f() {\n\treturn \"??\"\n}"; got != want {
		t.Fatalf("decode(encode(%q)) = %q, want %q (é is two unknown bytes)", in, got, want)
	}
	if vocab != 98 {
		t.Fatalf("vocab %d, want newline, tab, 95 printable and unknown", vocab)
	}
}

func toInts(b []byte) []int {
	out := make([]int, len(b))
	for i, v := range b {
		out[i] = int(v)
	}
	return out
}

// The split is deterministic and keeps whole files apart.
func TestLoadCorpus(t *testing.T) {
	dir := testSource(t)
	a, err := loadCorpus(dir, 10)
	if err != nil {
		t.Fatal(err)
	}
	b, err := loadCorpus(dir, 10)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.train, b.train) || !bytes.Equal(a.val, b.val) {
		t.Fatal("two reads of the same directory differ")
	}
	if a.trainFiles == 0 || a.valFiles == 0 || len(a.val) >= len(a.train) {
		t.Fatalf("%d training files (%d chars), %d validation files (%d chars)", a.trainFiles, len(a.train), a.valFiles, len(a.val))
	}
	empty := t.TempDir()
	if _, err := loadCorpus(empty, 10); err == nil || !strings.Contains(err.Error(), "0 training and 0 validation .go files") {
		t.Fatalf("empty directory: err %v", err)
	}
	if _, err := loadCorpus(filepath.Join(empty, "nope"), 10); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("missing directory: err %v", err)
	}
}

// nextToken never leaves the top k, follows the temperature, and is
// reproducible under a seed.
func TestNextToken(t *testing.T) {
	logits := tensor.FromSlice([]float32{0.1, 2, -1, 1.5, 3, 0, 1.9, -2}, 8)
	top3 := map[int]bool{4: true, 1: true, 6: true}
	for _, c := range []struct {
		name    string
		temp    float64
		k       int
		allowed map[int]bool
	}{
		{"top-3", 1, 3, top3},
		{"top-3, hot", 5, 3, top3},
		{"top-1", 1, 1, map[int]bool{4: true}},
		{"greedy", 0, 0, map[int]bool{4: true}},
		{"all", 1, 0, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			draw := func(seed uint64) []int {
				rng := rand.New(rand.NewPCG(seed, 2))
				var out []int
				for range 300 {
					out = append(out, nextToken(logits, c.temp, c.k, rng))
				}
				return out
			}
			a, b := draw(7), draw(7)
			seen := map[int]int{}
			for i, v := range a {
				if v != b[i] {
					t.Fatalf("draw %d differs under the same seed: %d vs %d", i, v, b[i])
				}
				if c.allowed != nil && !c.allowed[v] {
					t.Fatalf("drew %d, outside %v", v, c.allowed)
				}
				seen[v]++
			}
			if c.allowed != nil && c.temp > 0 && len(c.allowed) > 1 && len(seen) < 2 {
				t.Fatalf("300 draws among %v at temperature %v all gave %v", c.allowed, c.temp, seen)
			}
			if c.k == 0 && c.temp > 0 && len(seen) < 5 {
				t.Fatalf("300 draws from all 8 tokens saw only %v", seen)
			}
		})
	}
	// Hotter means flatter: the likeliest token's share falls.
	share := func(temp float64) float64 {
		rng := rand.New(rand.NewPCG(1, 2))
		n := 0
		for range 2000 {
			if nextToken(logits, temp, 3, rng) == 4 {
				n++
			}
		}
		return float64(n) / 2000
	}
	if cold, hot := share(0.3), share(3); !(cold > 0.8 && hot < 0.5) {
		t.Fatalf("share of the likeliest token: %.2f at temperature 0.3, %.2f at 3", cold, hot)
	}
}

// A short run of a tiny model on real Go source: the loss falls, and the
// sample is reproducible under a seed and starts with the prompt.
func TestTrainAndSample(t *testing.T) {
	dir := testSource(t)
	c, err := loadCorpus(dir, 10)
	if err != nil {
		t.Fatal(err)
	}
	o, err := parseFlags([]string{"-steps", "100", "-batch", "8", "-ctx", "32", "-dim", "32", "-layers", "1", "-heads", "2",
		"-lr", "1e-2", "-eval-every", "25", "-val-batches", "2"}, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	m, err := train(o, c, &log)
	if err != nil {
		t.Fatal(err)
	}
	// The table's rows: step, training loss, validation loss, time.
	var rows [][2]float64
	for _, line := range strings.Split(log.String(), "\n") {
		var step int
		var tl, vl float64
		if n, _ := fmt.Sscanf(line, "%d %f %f", &step, &tl, &vl); n == 3 {
			rows = append(rows, [2]float64{tl, vl})
		}
	}
	if len(rows) != 4 {
		t.Fatalf("%d loss rows, want 4:\n%s", len(rows), log.String())
	}
	first, last := rows[0], rows[len(rows)-1]
	if uniform := math.Log(float64(vocab)); !(last[0] < first[0]-0.3 && last[1] < first[1]-0.2 && last[1] < uniform-0.5) {
		t.Fatalf("losses (training, validation) went from %.3f to %.3f in 100 steps (uniform guess: %.3f); want them to fall\n%s", first, last, uniform, log.String())
	}
	s1 := sample(m, "func ", 40, o.gpt.ctx, 0.8, 5, rand.New(rand.NewPCG(3, 2)))
	s2 := sample(m, "func ", 40, o.gpt.ctx, 0.8, 5, rand.New(rand.NewPCG(3, 2)))
	if s1 != s2 || !strings.HasPrefix(s1, "func ") || len(s1) != 45 {
		t.Fatalf("samples %q and %q: want the same 45 characters starting with the prompt", s1, s2)
	}
}

func TestBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-steps", "0"}, "-steps must be positive, got 0"},
		{[]string{"-dim", "30", "-heads", "4"}, "-heads 4 does not divide -dim 30"},
		{[]string{"-lr", "NaN"}, "-lr must be a positive finite number"},
		{[]string{"-temp", "-1"}, "-temp must be a finite number ≥ 0, got -1"},
		{[]string{"-top-k", "99"}, "-top-k must be in [0, 98], got 99"},
		{[]string{"-prompt", ""}, "-prompt must not be empty"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"-src", filepath.Join(t.TempDir(), "none")}, "reading the corpus"},
	} {
		err := run(c.args, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("charlm %v: err %v, want %q", c.args, err, c.want)
		}
	}
}

// The progress rows come at most every -progress, and not at all with 0.
func TestTicker(t *testing.T) {
	t0 := time.Unix(1000, 0)
	for _, c := range []struct {
		every time.Duration
		at    []time.Duration // after t0
		want  []bool
	}{
		{time.Second, []time.Duration{100 * time.Millisecond, time.Second, 1500 * time.Millisecond, 2 * time.Second, 5 * time.Second}, []bool{false, true, false, true, true}},
		{0, []time.Duration{time.Second, time.Hour}, []bool{false, false}},
	} {
		tk := ticker{every: c.every, last: t0}
		for i, d := range c.at {
			if got := tk.due(t0.Add(d)); got != c.want[i] {
				t.Errorf("every %v, at %v: due %v, want %v", c.every, d, got, c.want[i])
			}
		}
	}
}

// A run longer than -progress shows rows between the validation losses,
// with the step, the training loss and the time left.
func TestTrainProgress(t *testing.T) {
	dir := testSource(t)
	c, err := loadCorpus(dir, 10)
	if err != nil {
		t.Fatal(err)
	}
	o, err := parseFlags([]string{"-steps", "6", "-batch", "2", "-ctx", "16", "-dim", "16", "-layers", "1", "-heads", "2",
		"-eval-every", "100", "-val-batches", "1", "-progress", "1ns"}, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	if _, err := train(o, c, &log); err != nil {
		t.Fatal(err)
	}
	// Steps 1 to 5 get a progress row; step 6, the last, the full one.
	for i := 1; i <= 5; i++ {
		if !strings.Contains(log.String(), fmt.Sprintf("(step %d/6, ETA ", i)) {
			t.Errorf("no progress row for step %d:\n%s", i, log.String())
		}
	}
	if _, err := parseFlags([]string{"-progress", "-1s"}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "-progress must not be negative") {
		t.Errorf("-progress -1s: err %v", err)
	}
}
