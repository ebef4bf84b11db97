package dashboard

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sporeml/spore/summary"
)

// MaxRunDepth is how deep below the log dir the server looks for runs: a
// run directory is at most MaxRunDepth levels below it (the log dir
// itself is level 0, "exp/seed1/run" is level 3); deeper directories are
// not read at all. TensorBoard looks without limit, so that a log dir
// given as / or a home directory is walked whole, every time the page
// polls; five levels hold any layout of runs met in practice.
const MaxRunDepth = 5

// maxWatchedDirs is how many directories of a walk, beyond the log dir,
// the runs' own and their graphs directories, the server stats on each
// request to notice at once that a run was added under one. A bigger
// tree (a log dir of /) is rewalked only when its cached walk expires.
const maxWatchedDirs = 512

// scanTTL is how long a walk of the log dir is trusted when none of its
// watched directories changed: after it, runs that appeared under a
// directory too many to watch show up.
const scanTTL = 5 * time.Second

// walkShare bounds the time spent walking: a walk that took d is not
// redone, however its directories change, until walkShare×d has passed
// since it began (a tenth of a core at most), so that a busy tree such
// as /tmp is not rewalked on every request.
const walkShare = 10

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

// scan is one walk of the log dir, bounded by MaxRunDepth: where the
// runs are and what else is there.
type scan struct {
	at   time.Time     // when the walk began
	took time.Duration // how long it took
	err  error         // the log dir could not be read (nothing is cached then)

	runs    []runFiles           // the run directories, in walk order
	watch   map[string]time.Time // directories and their modification times when walked
	others  int                  // regular files that make no run
	example string               // one of them, relative to the log dir
	deeper  bool                 // there are directories below MaxRunDepth, not read
}

// runFiles is a run directory and the files whose change means that the
// run must be read again: its event files and graph records.
type runFiles struct {
	dir   string
	files []string
}

// walkLogdir walks logdir down to MaxRunDepth, noting each directory that
// is a run (it holds event files, or a graphs directory of records, as
// summary.ReadLogdir says) and, for the page's status line, the other
// files. It stats every directory it reads before reading it, so that a
// file added during the walk changes a watched directory's time.
func walkLogdir(logdir string, maxWatch int) *scan {
	sc := &scan{watch: map[string]time.Time{}}
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		fi, err := os.Stat(dir)
		if err != nil {
			if depth == 0 {
				sc.err = err
			}
			return
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			if depth == 0 {
				sc.err = err
			}
			return // an unreadable subdirectory hides its runs but not others'
		}
		run := runFiles{dir: dir}
		for _, e := range entries {
			switch {
			case e.Type().IsRegular() && summary.IsEventFile(e.Name()):
				run.files = append(run.files, filepath.Join(dir, e.Name()))
			case e.IsDir() && e.Name() == summary.GraphDir:
				gdir := filepath.Join(dir, e.Name())
				gfi, err := os.Stat(gdir)
				if err != nil {
					break
				}
				// Watched whatever it holds: a record added to it makes
				// a run of its directory.
				sc.watch[gdir] = gfi.ModTime()
				for _, g := range graphFiles(gdir) {
					run.files = append(run.files, filepath.Join(gdir, g))
				}
			case e.Type().IsRegular():
				if sc.others == 0 {
					sc.example, _ = filepath.Rel(logdir, filepath.Join(dir, e.Name()))
				}
				sc.others++
			}
		}
		if len(run.files) > 0 {
			sc.runs = append(sc.runs, run)
		}
		if depth == 0 || len(run.files) > 0 || len(sc.watch) < maxWatch {
			sc.watch[dir] = fi.ModTime()
		}
		if depth == MaxRunDepth {
			for _, e := range entries {
				sc.deeper = sc.deeper || e.IsDir()
			}
			return
		}
		for _, e := range entries {
			if e.IsDir() { // symbolic links are not followed, as by ReadLogdir
				walk(filepath.Join(dir, e.Name()), depth+1)
			}
		}
	}
	walk(logdir, 0)
	return sc
}

// graphFiles lists the graph records of a graphs directory, by name;
// temporary files of a record being written start with '.'.
func graphFiles(gdir string) []string {
	entries, _ := os.ReadDir(gdir)
	var out []string
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".json") && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	return out
}

// dirsChanged reports whether a watched directory's modification time
// changed (an entry was added, removed or renamed) or it went away.
func (sc *scan) dirsChanged() bool {
	for dir, mt := range sc.watch {
		fi, err := os.Stat(dir)
		if err != nil || !fi.ModTime().Equal(mt) {
			return true
		}
	}
	return false
}

// fingerprint summarises the runs' files as they are now (name, size and
// modification time), and what the walk found besides; "" when the log
// dir could not be read, so that nothing is cached then.
func (sc *scan) fingerprint() string {
	if sc.err != nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "log dir: %d other file(s) such as %q, deeper %v\n", sc.others, sc.example, sc.deeper)
	for _, r := range sc.runs {
		fmt.Fprintf(&b, "run %s\n", r.dir)
		for _, f := range r.files {
			fi, err := os.Stat(f)
			if err != nil {
				fmt.Fprintf(&b, "%s\x00gone\n", f)
				continue
			}
			fmt.Fprintf(&b, "%s\x00%d\x00%d\n", f, fi.Size(), fi.ModTime().UnixNano())
		}
	}
	return b.String()
}

// runDirs are the scan's run directories.
func (sc *scan) runDirs() []string {
	dirs := make([]string, len(sc.runs))
	for i, r := range sc.runs {
		dirs[i] = r.dir
	}
	return dirs
}

// readRuns reads the given run directories of logdir as
// summary.ReadLogdir reads the runs it finds. It reads them itself
// because ReadLogdir walks the whole tree under the log dir, without the
// bound of MaxRunDepth.
func readRuns(logdir string, dirs []string) ([]logRun, error) {
	var runs []logRun
	for _, dir := range dirs {
		r, err := readRun(logdir, dir)
		if err != nil {
			return nil, err
		}
		if r != nil {
			runs = append(runs, *r)
		}
	}
	return runs, nil
}

// readRun reads dir as a run, or returns nil when it holds no event
// files and no graphs (any more).
func readRun(logdir, dir string) (*logRun, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if dir == logdir {
			return nil, fmt.Errorf("log dir %s: %w", logdir, unwrapPath(err))
		}
		return nil, nil // gone since the walk, or unreadable: it hides itself only
	}
	var events []string
	var graphs []string
	for _, e := range entries {
		switch {
		case e.Type().IsRegular() && summary.IsEventFile(e.Name()):
			events = append(events, e.Name())
		case e.IsDir() && e.Name() == summary.GraphDir:
			for _, g := range graphFiles(filepath.Join(dir, e.Name())) {
				graphs = append(graphs, summary.GraphDir+"/"+g)
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
	run := &logRun{Name: filepath.ToSlash(name), Dir: dir, Scalars: map[string][]scalarPoint{}, Histograms: map[string][]histogram{}, Graphs: graphs}
	for _, name := range events {
		run.readEventFile(filepath.Join(dir, name))
	}
	for _, s := range run.Scalars {
		slices.SortStableFunc(s, func(a, b scalarPoint) int {
			return cmp.Or(cmp.Compare(a.Step, b.Step), cmp.Compare(a.WallTime, b.WallTime))
		})
	}
	for _, h := range run.Histograms {
		slices.SortStableFunc(h, func(a, b histogram) int {
			return cmp.Or(cmp.Compare(a.Step, b.Step), cmp.Compare(a.WallTime, b.WallTime))
		})
	}
	return run, nil
}

// readEventFile adds one event file's series to the run, naming what it
// skipped in the run's warnings as summary.ReadLogdir does.
func (r *logRun) readEventFile(path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		r.Warnings = append(r.Warnings, fmt.Sprintf("%s: %v", path, unwrapPath(err)))
		return
	}
	if len(data) == 0 {
		return // a writer has created the file and not yet written to it
	}
	events, skipped, _ := summary.ReadEvents(data)
	if len(events) == 0 && (len(skipped) != 1 || !errors.Is(skipped[0], summary.ErrTornRecord)) {
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
			case summary.ScalarValue:
				r.Scalars[v.Tag] = append(r.Scalars[v.Tag], scalarPoint{Step: ev.Step, WallTime: ev.WallTime, Value: v.Scalar})
			case summary.HistogramValue:
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

// unwrapPath drops an *os.PathError's path and operation: the messages
// name the file themselves.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
