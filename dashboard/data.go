package dashboard

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
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

// readRuns reads the run directories a walk found with summary.ReadRun,
// which reads each as summary.ReadLogdir does; ReadLogdir itself walks
// the whole tree under the log dir, without the bound of MaxRunDepth. A
// directory that is no run any more is left out.
func readRuns(logdir string, dirs []string) ([]*summary.Run, error) {
	var runs []*summary.Run
	for _, dir := range dirs {
		r, err := summary.ReadRun(logdir, dir)
		if err != nil {
			// The page and the console say where a message comes
			// from: it needs no package prefix.
			return nil, errors.New(strings.TrimPrefix(err.Error(), "summary: "))
		}
		if r != nil {
			runs = append(runs, r)
		}
	}
	return runs, nil
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
