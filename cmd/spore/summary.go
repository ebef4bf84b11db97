package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/sporeml/spore/summary"
	"github.com/sporeml/spore/train"
)

// checkSummaryDir refuses a --summary-dir that could not be written:
// one under a file, a file itself, or a directory without write access.
// It creates the directory, as the collector would.
func checkSummaryDir(dir string) error {
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return fmt.Errorf("--summary-dir %s: is not a directory", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--summary-dir %s: %v", dir, unwrapPathErr(err))
	}
	if err := checkWritable(dir); err != nil {
		return fmt.Errorf("--summary-dir %s: %v", dir, err)
	}
	return nil
}

// checkPlotPath refuses a --plot path that the plot could not be written
// to after the whole run: another extension than .svg, a directory, or a
// directory that does not exist or cannot be written.
func checkPlotPath(path string) error {
	if summary.CheckPlotPath(path) != nil {
		return usagef("--plot %s: want a .svg file", path)
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("--plot %s: is a directory", path)
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("--plot %s: directory %s does not exist", path, dir)
	}
	if !st.IsDir() {
		return fmt.Errorf("--plot %s: %s is not a directory", path, dir)
	}
	if err := checkWritable(dir); err != nil {
		return fmt.Errorf("--plot %s: %v", path, err)
	}
	return nil
}

// unwrapPathErr keeps the cause of a path error; the caller names the
// path.
func unwrapPathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// lossCurve keeps every step's loss for --plot.
type lossCurve struct {
	train.BaseCallback
	points []summary.Scalar
}

func (l *lossCurve) OnStepEnd(ctx *train.RunContext) {
	l.points = append(l.points, summary.Scalar{Step: int64(ctx.GlobalStep), Value: ctx.Loss})
}

// writePlot draws the loss curve to path.
func (l *lossCurve) writePlot(path, model, mode string, stdout io.Writer) error {
	p := summary.Plot{Title: fmt.Sprintf("training loss, %s (%s)", model, mode), XLabel: "step", YLabel: "loss"}
	if err := p.WriteSVG(path, l.points); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "plotted %s\n", path)
	return nil
}
