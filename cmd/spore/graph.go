package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/internal/atomicfile"
	"github.com/sporeml/spore/models"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/tensor"
)

func cmdGraph(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("graph", "Compiles the seed network's training step (forward, cross-entropy, backward,\n"+
		"SGD update) and dumps its IR before and after every optimisation pass: text files\n"+
		"and DOT files, numbered in pass order, plus an SVG of the final graph when Graphviz's\n"+
		"dot is installed. The final IR is also printed. With --json, the same stages go to\n"+
		"train_step.json as data: each node with the pass that made or fused it.", stdout)
	out := fs.String("out", "spore-graphs", "directory for the dumps")
	model := fs.String("model", "mlp", "model: mlp, lenet or vit")
	batch := fs.Int("batch", 64, "batch size")
	level := fs.String("level", "O1", "optimisation level: O0, O1 or O2")
	asJSON := fs.Bool("json", false, "also write the compile record (every stage's IR as text and as a graph) to DIR/train_step.json")
	if err := parse(fs, args); err != nil {
		return err
	}
	lv, ok := map[string]spore.Level{"O0": spore.O0, "O1": spore.O1, "O2": spore.O2}[*level]
	if !ok {
		return usagef("unknown --level %q (want O0, O1 or O2)", *level)
	}
	if *batch <= 0 {
		return usagef("--batch must be positive")
	}
	// SPORE_SAVE_GRAPHS does not matter here: --out replaces it.
	if err := spore.CheckEnv(); err != nil {
		return err
	}
	if spore.GetContext().DisableJit {
		return errors.New("SPORE_JIT=0 turns compilation off, so there is no graph to dump; unset it")
	}
	dir, err := filepath.Abs(*out)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	spore.SetSeed(1)
	net, err := newModel(*model)
	if err != nil {
		return err
	}
	step := sgdStep(net, nn.TrainOneStepConfig{Mode: nn.StepCompiled, Jit: spore.JitConfig{Level: lv, Name: "train_step"}})
	var (
		recMu sync.Mutex
		rec   *spore.CompileRecord
	)
	if *asJSON {
		stop := spore.WatchCompiles(func(r spore.CompileRecord) {
			recMu.Lock()
			defer recMu.Unlock()
			if r.Name == "train_step" && rec == nil {
				rec = &r
			}
		})
		defer stop()
	}
	spore.SetContext(spore.WithSaveGraphs(dir))
	labels := make([]int32, *batch)
	y := tensor.FromSlice(labels, *batch)
	step.Step(models.Ones(*batch), y)
	spore.SetContext(spore.WithSaveGraphs(""))
	if *asJSON {
		recMu.Lock()
		r := rec
		recMu.Unlock()
		if r == nil {
			return errors.New("the training step's compilation was not recorded")
		}
		path := filepath.Join(dir, "train_step.json")
		if err := writeJSONAtomic(path, r); err != nil {
			return err
		}
		defer fmt.Fprintf(stdout, "JSON: %s (%d stages)\n", path, len(r.Passes))
	}

	files, _ := filepath.Glob(filepath.Join(dir, "train_step", "*.ir"))
	if len(files) == 0 {
		return fmt.Errorf("no IR dumps were written to %s", dir)
	}
	sort.Strings(files)
	fmt.Fprintf(stdout, "%d IR dumps in %s:\n", len(files), filepath.Join(dir, "train_step"))
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "  %-28s %4d values\n", filepath.Base(f), strings.Count(string(text), "\n  %"))
	}
	final := files[len(files)-1]
	text, _ := os.ReadFile(final)
	fmt.Fprintf(stdout, "\n%s", text)
	dot := strings.TrimSuffix(final, ".ir") + ".dot"
	fmt.Fprintf(stdout, "\nDOT: %s\n", dot)
	if path, err := exec.LookPath("dot"); err == nil {
		svg := strings.TrimSuffix(dot, ".dot") + ".svg"
		if out, err := exec.Command(path, "-Tsvg", "-o", svg, dot).CombinedOutput(); err != nil {
			return fmt.Errorf("dot: %v: %s", err, out)
		}
		fmt.Fprintf(stdout, "SVG: %s\n", svg)
	} else {
		fmt.Fprintln(stdout, "(install Graphviz's dot for an SVG)")
	}
	return nil
}

// writeJSONAtomic writes v as indented JSON, whole or not at all
// (atomicfile), so that path is never seen half written.
func writeJSONAtomic(path string, v any) error {
	data, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, append(data, '\n')); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
