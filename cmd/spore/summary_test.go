package main

import (
	"encoding/xml"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sporeml/spore/summary"
)

// spore train --summary-dir and --plot, in both modes: the event file
// holds a loss point per step and the test accuracy, the plot draws every
// step's loss, and the two modes record the same curve.
func TestTrainSummaryAndPlot(t *testing.T) {
	data := mnistDir(t, split{20, 28, digits}, split{20, 28, digits})
	curves := map[string][]summary.Scalar{}
	for _, mode := range []string{"graph", "pynative"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			logdir, plot := filepath.Join(dir, "logs", "run1"), filepath.Join(dir, "loss.svg")
			out, errOut, code := runChild(t, nil, "train", "--data", data, "--batch", "5", "--epochs", "2", "--mode", mode,
				"--summary-dir", logdir, "--plot", plot, "--histogram-freq", "3")
			if code != 0 {
				t.Fatalf("exit %d: %s\n%s", code, errOut, out)
			}
			for _, want := range []string{"summaries in " + logdir, "plotted " + plot} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			runs, err := summary.ReadLogdir(filepath.Dir(logdir))
			if err != nil || len(runs) != 1 || runs[0].Name != "run1" {
				t.Fatalf("ReadLogdir: %v, %d runs", err, len(runs))
			}
			r := runs[0]
			curves[mode] = r.Scalars["loss"]
			if len(r.Scalars["loss"]) != 8 || len(r.Scalars["eval/accuracy"]) != 1 || r.Scalars["eval/accuracy"][0].Step != 8 {
				t.Errorf("%d loss points and eval/accuracy %v; want 8 and one at step 8", len(r.Scalars["loss"]), r.Scalars["eval/accuracy"])
			}
			// At the first step and every third: 1, 3 and 6.
			for _, tag := range []string{"param/dense_relu_sequential.0.weight", "grad/dense_relu_sequential.0.weight"} {
				if h := r.Histograms[tag]; len(h) != 3 || h[0].Step != 1 || h[1].Step != 3 || h[2].Step != 6 {
					t.Errorf("%s: %d histograms; want them at steps 1, 3 and 6 (tags: %v)", tag, len(h), keys(r.Histograms))
				}
			}
			if mode == "graph" && !strings.Contains(strings.Join(r.Graphs, " "), "graphs/TrainOneStepCell-1.json") {
				t.Errorf("graphs %q lack the training step", r.Graphs)
			}
			svg, err := os.ReadFile(plot)
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Polyline struct {
					Points string `xml:"points,attr"`
				} `xml:"polyline"`
			}
			if err := xml.Unmarshal(svg, &doc); err != nil {
				t.Fatal(err)
			}
			if n := len(strings.Fields(doc.Polyline.Points)); n != 8 {
				t.Errorf("the plot draws %d points, want 8", n)
			}
		})
	}
	g, p := curves["graph"], curves["pynative"]
	if len(g) != len(p) {
		t.Fatalf("graph mode logged %d losses, pynative %d", len(g), len(p))
	}
	for i := range g {
		if d := g[i].Value - p[i].Value; d > 1e-4 || d < -1e-4 {
			t.Errorf("step %d: graph loss %v, pynative %v", g[i].Step, g[i].Value, p[i].Value)
		}
	}
}

func keys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
