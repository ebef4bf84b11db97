package summary

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Run is what ReadLogdir or ReadRun found in one run directory.
type Run struct {
	// Name is the run's path relative to the log dir, with slashes ("."
	// for the log dir itself).
	Name string
	// Dir is the run directory's path.
	Dir string
	// Scalars holds each scalar series by tag, in step order.
	Scalars map[string][]Scalar
	// Histograms holds each histogram series by tag, in step order.
	Histograms map[string][]Histogram
	// Graphs lists the compiled graphs' JSON files, relative to Dir
	// ("graphs/TrainOneStepCell-1.json"), in name order.
	Graphs []string
	// Warnings lists what was skipped: damaged or torn records and files
	// named as event files that are not, each naming the file and offset.
	Warnings []string
}

// IsEventFile reports whether a file name is an event file's by
// TensorBoard's rule: it contains "tfevents".
func IsEventFile(name string) bool { return strings.Contains(name, "tfevents") }

// ReadLogdir reads every run under logdir: each directory (logdir itself
// included) that holds event files, or a graphs directory of JSON files,
// is a run. Runs come in name order; within a run, series from several
// event files (a run resumed into the same directory) are merged in step
// order.
//
// It fails only when logdir is missing, not a directory or unreadable; a
// log dir with no event files gives no runs and no error. Damaged records,
// a torn final record (a writer still appending, or killed), and files
// named as event files that are not, are skipped and named in the run's
// Warnings. Reading while a Writer appends is safe.
func ReadLogdir(logdir string) ([]*Run, error) {
	st, err := os.Stat(logdir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("summary: log dir %s does not exist", logdir)
		}
		return nil, fmt.Errorf("summary: log dir %s: %w", logdir, unwrapPath(err))
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("summary: log dir %s is not a directory", logdir)
	}
	var runs []*Run
	err = filepath.WalkDir(logdir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == logdir {
				return fmt.Errorf("summary: log dir %s: %w", logdir, unwrapPath(err))
			}
			// An unreadable subdirectory hides its runs but not others'.
			return fs.SkipDir
		}
		if !d.IsDir() {
			return nil
		}
		run, err := ReadRun(logdir, path)
		if err != nil {
			return err
		}
		if run != nil {
			runs = append(runs, run)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(runs, func(a, b *Run) int { return cmp.Compare(a.Name, b.Name) })
	return runs, nil
}

// ReadRun reads one directory of logdir as ReadLogdir reads each run it
// finds: the directory's event files, merged in step order, and the JSON
// records of its graphs directory, with the run named by dir's path
// relative to logdir. It serves a caller that finds the run directories
// itself, as one that looks only so deep below the log dir.
//
// It returns nil and no error when dir holds no event files and no graph
// records, and when dir is not logdir and cannot be read (removed since
// it was found, or unreadable: it hides itself only, as under
// ReadLogdir); it fails only when dir is logdir and cannot be read.
// What it skips in a run is named in the run's Warnings, as by
// ReadLogdir.
func ReadRun(logdir, dir string) (*Run, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if filepath.Clean(dir) == filepath.Clean(logdir) {
			return nil, fmt.Errorf("summary: log dir %s: %w", logdir, unwrapPath(err))
		}
		return nil, nil
	}
	var events []string
	hasGraphs := false
	for _, e := range entries {
		switch {
		case e.Type().IsRegular() && IsEventFile(e.Name()):
			events = append(events, e.Name())
		case e.IsDir() && e.Name() == GraphDir:
			hasGraphs = true
		}
	}
	var graphs []string
	if hasGraphs {
		ge, _ := os.ReadDir(filepath.Join(dir, GraphDir))
		for _, e := range ge {
			// Temporary files of a graph being written start with '.'.
			if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".json") && !strings.HasPrefix(e.Name(), ".") {
				graphs = append(graphs, GraphDir+"/"+e.Name())
			}
		}
	}
	if len(events) == 0 && len(graphs) == 0 {
		return nil, nil
	}
	name, err := filepath.Rel(logdir, dir)
	if err != nil {
		name = dir
	}
	run := &Run{Name: filepath.ToSlash(name), Dir: dir, Scalars: map[string][]Scalar{}, Histograms: map[string][]Histogram{}, Graphs: graphs}
	for _, name := range events {
		run.readEventFile(filepath.Join(dir, name))
	}
	for _, s := range run.Scalars {
		slices.SortStableFunc(s, func(a, b Scalar) int { return cmp.Or(cmp.Compare(a.Step, b.Step), cmp.Compare(a.WallTime, b.WallTime)) })
	}
	for _, h := range run.Histograms {
		slices.SortStableFunc(h, func(a, b Histogram) int {
			return cmp.Or(cmp.Compare(a.Step, b.Step), cmp.Compare(a.WallTime, b.WallTime))
		})
	}
	return run, nil
}

// readEventFile adds one event file's series to the run.
func (r *Run) readEventFile(path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		r.Warnings = append(r.Warnings, fmt.Sprintf("%s: %v", path, unwrapPath(err)))
		return
	}
	if len(data) == 0 {
		// A writer has created the file and not yet written to it.
		return
	}
	events, skipped, _ := ReadEvents(data)
	if len(events) == 0 && (len(skipped) != 1 || !errors.Is(skipped[0], ErrTornRecord)) {
		// Not one whole record: a foreign file with "tfevents" in its
		// name, or one damaged throughout.
		first := "none"
		if len(skipped) > 0 {
			first = skipped[0].Error()
		}
		r.Warnings = append(r.Warnings, fmt.Sprintf("%s: not an event file (no valid record; first problem at %s); skipped", path, first))
		return
	}
	if len(events) > 0 && events[0].FileVersion == "" {
		r.Warnings = append(r.Warnings, fmt.Sprintf("%s: the first record has no file_version; read anyway", path))
	}
	for _, s := range skipped {
		r.Warnings = append(r.Warnings, fmt.Sprintf("%s: %v; skipped", path, s))
	}
	other := 0
	for _, ev := range events {
		for _, v := range ev.Values {
			switch v.Kind {
			case ScalarValue:
				r.Scalars[v.Tag] = append(r.Scalars[v.Tag], Scalar{Step: ev.Step, WallTime: ev.WallTime, Value: v.Scalar})
			case HistogramValue:
				if v.Histogram != nil {
					r.Histograms[v.Tag] = append(r.Histograms[v.Tag], *v.Histogram)
				}
			default:
				other++
			}
		}
	}
	if other > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("%s: %d values of kinds spore does not read (images, audio, tensors); skipped", path, other))
	}
}
