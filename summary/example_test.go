package summary_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/sporeml/spore/summary"
)

// Write a loss curve and a histogram to a run, then read the log dir
// back as a dashboard would.
func Example() {
	logdir, err := os.MkdirTemp("", "summary-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(logdir)

	w, err := summary.NewWriter(filepath.Join(logdir, "run1"))
	if err != nil {
		fmt.Println(err)
		return
	}
	for step := int64(1); step <= 3; step++ {
		w.AddScalar("loss", step, 2/float64(step))
	}
	w.AddHistogram("param/dense.weight", 3, []float32{-1, 0, 0.5, 1})
	if err := w.Close(); err != nil {
		fmt.Println(err)
		return
	}

	runs, err := summary.ReadLogdir(logdir)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range runs {
		fmt.Println("run", r.Name)
		for _, s := range r.Scalars["loss"] {
			fmt.Printf("loss at step %d: %.3f\n", s.Step, s.Value)
		}
		h := r.Histograms["param/dense.weight"][0]
		fmt.Printf("histogram at step %d: %v values in [%v, %v]\n", h.Step, h.Num, h.Min, h.Max)
	}
	// Output:
	// run run1
	// loss at step 1: 2.000
	// loss at step 2: 1.000
	// loss at step 3: 0.667
	// histogram at step 3: 4 values in [-1, 1]
}
