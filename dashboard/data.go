package dashboard

import (
	"errors"
	"strings"

	"github.com/sporeml/spore/summary"
)

// logRun is one run of a log dir as the server uses it: the summary
// reader's Run by value, so that a test can hand the server runs of its
// own making.
type logRun struct {
	Name       string
	Dir        string
	Scalars    map[string][]scalarPoint
	Histograms map[string][]histogram
	Graphs     []string
	Warnings   []string
}

type (
	scalarPoint = summary.Scalar
	histogram   = summary.Histogram
)

// readSummaries reads the runs of a log dir with the summary reader.
func readSummaries(logdir string) ([]logRun, error) {
	runs, err := summary.ReadLogdir(logdir)
	if err != nil {
		return nil, unprefix(err)
	}
	out := make([]logRun, len(runs))
	for i, r := range runs {
		out[i] = logRun{Name: r.Name, Dir: r.Dir, Scalars: r.Scalars, Histograms: r.Histograms, Graphs: r.Graphs, Warnings: r.Warnings}
	}
	return out, nil
}

// unprefix drops the reader's package prefix: the page and the console
// say where a message comes from.
func unprefix(err error) error {
	return errors.New(strings.TrimPrefix(err.Error(), "summary: "))
}
