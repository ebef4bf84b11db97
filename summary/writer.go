package summary

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	"github.com/sporeml/spore/internal/atomicfile"
	"github.com/sporeml/spore/internal/jit"
	"github.com/sporeml/spore/summary/internal/eventpb"
)

// FlushInterval is how often a Writer writes what it has buffered: often
// enough for a live dashboard to follow a run, rarely enough that the
// writes cost nothing next to training.
const FlushInterval = time.Second

// flushSize is how many buffered bytes make a Writer write at once
// rather than wait for the next tick.
const flushSize = 256 << 10

// GraphDir is the directory of a run that holds its compiled graphs, one
// JSON file per compilation.
const GraphDir = "graphs"

// Writer appends summaries to a new event file in a run directory and
// writes compiled graphs beside it. It is safe for concurrent use.
//
// Records are buffered and written whole, in one write per flush, once a
// second (FlushInterval), when the buffer grows large, on Flush and on
// Close: a reader of the growing file sees whole records and at most one
// torn record at the end, which ReadEvents and ReadLogdir skip.
//
// The Add methods do not return errors, so that logging never interrupts
// training; the first error (a full disk, say) is kept and returned by
// Flush, Close and Err, and the Add methods do nothing after it.
type Writer struct {
	dir, path string

	mu     sync.Mutex
	f      *os.File
	buf    []byte
	err    error
	closed bool
	graphs map[string]int // next number per sanitised graph name

	// scratch holds the messages AddScalars fills and marshals, reused
	// under mu so that per-step logging allocates nothing.
	scratch struct {
		ev     eventpb.Event
		what   eventpb.Event_Summary
		sum    eventpb.Summary
		vals   []*eventpb.Summary_Value
		simple []*eventpb.Summary_Value_SimpleValue
		data   []byte
	}

	stop chan struct{}
	done chan struct{}
}

// NewWriter creates runDir (and its parents) if needed and a new event
// file in it, events.out.tfevents.<unix seconds>.<hostname>.<pid>.spore,
// whose first record names the format version. Close the writer when
// done: it flushes the last records and stops the goroutine that flushes
// once a second.
func NewWriter(runDir string) (*Writer, error) {
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return nil, fmt.Errorf("summary: run directory %s: %w", runDir, unwrapPath(err))
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	host = sanitize(host)
	now := time.Now()
	var f *os.File
	var path string
	// Two writers started in the same second by one process would pick
	// the same name; the later one takes the next free second.
	for i := int64(0); ; i++ {
		path = filepath.Join(runDir, fmt.Sprintf("events.out.tfevents.%d.%s.%d.spore", now.Unix()+i, host, os.Getpid()))
		f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o644)
		if err == nil {
			break
		}
		if !errors.Is(err, os.ErrExist) || i == 1000 {
			return nil, fmt.Errorf("summary: creating an event file in %s: %w", runDir, unwrapPath(err))
		}
	}
	w := &Writer{dir: runDir, path: path, f: f, graphs: map[string]int{}, stop: make(chan struct{}), done: make(chan struct{})}
	w.buf = appendRecord(w.buf, encodeEvent(&eventpb.Event{
		WallTime: wallTime(now),
		What:     &eventpb.Event_FileVersion{FileVersion: FileVersion},
	}))
	// The first record goes out at once: a reader that finds the file
	// knows from it what the file is.
	if err := w.Flush(); err != nil {
		f.Close()
		os.Remove(path)
		return nil, err
	}
	go w.flusher()
	return w, nil
}

// Path returns the event file's path.
func (w *Writer) Path() string { return w.path }

// Dir returns the run directory.
func (w *Writer) Dir() string { return w.dir }

func (w *Writer) flusher() {
	defer close(w.done)
	t := time.NewTicker(FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			w.Flush()
		}
	}
}

func wallTime(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// AddScalar records value under tag at step. TensorBoard stores scalars
// as float32, so the value is rounded to float32.
func (w *Writer) AddScalar(tag string, step int64, value float64) {
	w.AddScalars(step, []string{tag}, []float64{value})
}

// AddScalars records several scalars at one step as one event (one
// record): values[i] under tags[i]. It is AddScalar for a training loop
// that logs a few values every step, at a fraction of the cost: it
// allocates nothing once warm.
func (w *Writer) AddScalars(step int64, tags []string, values []float64) {
	if len(tags) != len(values) {
		panic(fmt.Sprintf("summary: AddScalars: %d tags for %d values", len(tags), len(values)))
	}
	now := wallTime(time.Now())
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.err != nil {
		return
	}
	sc := &w.scratch
	for len(sc.vals) < len(tags) {
		sc.vals = append(sc.vals, &eventpb.Summary_Value{})
		sc.simple = append(sc.simple, &eventpb.Summary_Value_SimpleValue{})
	}
	for i, tag := range tags {
		sc.simple[i].SimpleValue = float32(values[i])
		sc.vals[i].Tag = validTag(tag)
		sc.vals[i].Value = sc.simple[i]
	}
	sc.sum.Value = sc.vals[:len(tags)]
	sc.what.Summary = &sc.sum
	sc.ev.WallTime, sc.ev.Step, sc.ev.What = now, step, &sc.what
	var err error
	sc.data, err = proto.MarshalOptions{}.MarshalAppend(sc.data[:0], &sc.ev)
	if err != nil {
		panic(fmt.Sprintf("summary: marshalling an event: %v", err))
	}
	w.buf = appendRecord(w.buf, sc.data)
	if len(w.buf) >= flushSize {
		w.flushLocked()
	}
}

// AddHistogram records a histogram of values under tag at step (see
// NewHistogram; non-finite values are left out). A histogram of no
// finite values is not recorded.
func (w *Writer) AddHistogram(tag string, step int64, values []float32) {
	h, _ := NewHistogram(values)
	if h.Num == 0 {
		return
	}
	w.AddHistogramSummary(tag, step, h)
}

// AddHistogramSummary records a histogram already summarised; its Step and
// WallTime fields are ignored in favour of step and the current time.
func (w *Writer) AddHistogramSummary(tag string, step int64, h Histogram) {
	w.add(&eventpb.Event{
		WallTime: wallTime(time.Now()),
		Step:     step,
		What: &eventpb.Event_Summary{Summary: &eventpb.Summary{Value: []*eventpb.Summary_Value{{
			Tag: validTag(tag),
			Value: &eventpb.Summary_Value_Histo{Histo: &eventpb.HistogramProto{
				Min: h.Min, Max: h.Max, Num: h.Num, Sum: h.Sum, SumSquares: h.SumSquares,
				BucketLimit: h.BucketLimit, Bucket: h.Bucket,
			}},
		}}}},
	})
}

// validTag makes a tag valid UTF-8, which protobuf strings must be.
func validTag(tag string) string {
	if utf8.ValidString(tag) {
		return tag
	}
	return strings.ToValidUTF8(tag, "\uFFFD")
}

func (w *Writer) add(ev *eventpb.Event) {
	data := encodeEvent(ev)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.err != nil {
		return
	}
	w.buf = appendRecord(w.buf, data)
	if len(w.buf) >= flushSize {
		w.flushLocked()
	}
}

// Flush writes the buffered records to the event file.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flushLocked()
	return w.err
}

func (w *Writer) flushLocked() {
	if w.err != nil || len(w.buf) == 0 || w.f == nil {
		return
	}
	// One write of whole records: on a crash the file ends at a record
	// boundary or inside the last record written, never elsewhere.
	if _, err := w.f.Write(w.buf); err != nil {
		w.err = fmt.Errorf("summary: writing %s: %w", w.path, unwrapPath(err))
	}
	w.buf = w.buf[:0]
}

// Err returns the first error the writer met, or nil.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Close flushes, syncs and closes the event file. Later calls do nothing
// and return the same error.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return w.Err()
	}
	w.closed = true
	w.mu.Unlock()
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flushLocked()
	if err := w.f.Sync(); err != nil && w.err == nil {
		w.err = fmt.Errorf("summary: syncing %s: %w", w.path, unwrapPath(err))
	}
	if err := w.f.Close(); err != nil && w.err == nil {
		w.err = fmt.Errorf("summary: closing %s: %w", w.path, unwrapPath(err))
	}
	w.f = nil
	return w.err
}

// AddGraph writes a compilation's record as JSON to
// graphs/<name>-<n>.json in the run directory, atomically (a temporary
// file renamed into place), where name is the record's name made safe for
// a file name and n counts that name's compilations from 1, skipping
// numbers already taken by files of an earlier run in the directory. The
// record is what spore.WatchCompiles delivers (spore.CompileRecord).
func (w *Writer) AddGraph(rec jit.CompileRecord) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("summary: graph %s: %w", rec.Name, err)
	}
	dir := filepath.Join(w.dir, GraphDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("summary: graph directory %s: %w", dir, unwrapPath(err))
	}
	name := sanitize(rec.Name)
	if name == "" {
		name = "graph"
	}
	w.mu.Lock()
	var path string
	for {
		w.graphs[name]++
		path = filepath.Join(dir, name+"-"+strconv.Itoa(w.graphs[name])+".json")
		if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
			break
		}
	}
	w.mu.Unlock()
	return writeAtomic(path, data)
}

// writeAtomic writes data to path whole or not at all (atomicfile), so
// that a reader sees the whole file or none.
func writeAtomic(path string, data []byte) error {
	if err := atomicfile.WriteFile(path, data); err != nil {
		return fmt.Errorf("summary: writing %s: %w", path, unwrapPath(err))
	}
	return nil
}

// writeFile is writeAtomic that refuses to replace a directory.
func writeFile(path string, data []byte) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("summary: %s is a directory", path)
	}
	return writeAtomic(path, data)
}

// sanitize keeps letters, digits, '.', '_' and '-' of s and turns every
// other rune into '_', so that s can be part of a file name; it is cut to
// 100 bytes.
func sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= 100 {
			break
		}
	}
	return strings.Trim(b.String(), ".")
}

// unwrapPath drops an *os.PathError's operation and path when the caller
// names the path itself.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
