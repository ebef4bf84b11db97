package summary_test

import (
	"encoding/json"
	"encoding/xml"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/summary"
)

func TestReadLogdirInput(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "a-file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(root, "empty")
	foreign := filepath.Join(root, "foreign")
	for _, d := range []string{empty, foreign} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Files that are not event files are ignored; one named as an event
	// file that is not one is reported.
	os.WriteFile(filepath.Join(foreign, "notes.txt"), []byte("hello"), 0o644)
	os.WriteFile(filepath.Join(foreign, "events.out.tfevents.123.host"), []byte("this is not a TFRecord file, it is text"), 0o644)

	cases := []struct {
		name     string
		dir      string
		wantErr  string
		runs     int
		warnings []string
	}{
		{"missing", filepath.Join(root, "nope"), "log dir " + filepath.Join(root, "nope") + " does not exist", 0, nil},
		{"a file", file, "is not a directory", 0, nil},
		{"empty", empty, "", 0, nil},
		{"foreign files", foreign, "", 1, []string{"events.out.tfevents.123.host: not an event file"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			runs, err := summary.ReadLogdir(c.dir)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err %v, want one saying %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(runs) != c.runs {
				t.Fatalf("%d runs, want %d", len(runs), c.runs)
			}
			for i, w := range c.warnings {
				if len(runs[0].Warnings) <= i || !strings.Contains(runs[0].Warnings[i], w) {
					t.Errorf("warnings %q, want %q", runs[0].Warnings, c.warnings)
				}
			}
		})
	}
}

// Runs are found at any depth, the log dir itself included, and series
// from two event files of one run merge in step order.
func TestReadLogdirRuns(t *testing.T) {
	root := t.TempDir()
	write := func(dir string, steps ...int64) {
		w, err := summary.NewWriter(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range steps {
			w.AddScalar("loss", s, float64(s))
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	write(root, 1)
	write(filepath.Join(root, "b", "run2"), 5, 6)
	write(filepath.Join(root, "a"), 3, 4)
	write(filepath.Join(root, "a"), 1, 2) // a second file, earlier steps
	runs, err := summary.ReadLogdir(root)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range runs {
		names = append(names, r.Name)
	}
	if strings.Join(names, " ") != ". a b/run2" {
		t.Fatalf("runs %q, want . a b/run2", names)
	}
	var steps []int64
	for _, s := range runs[1].Scalars["loss"] {
		steps = append(steps, s.Step)
	}
	if len(steps) != 4 || steps[0] != 1 || steps[3] != 4 {
		t.Errorf("run a's steps %v, want 1 2 3 4", steps)
	}
}

// ReadRun reads one directory as ReadLogdir reads each run, and gives
// nil for a directory that is no run or is gone; only a log dir that
// cannot be read is an error.
func TestReadRun(t *testing.T) {
	root := t.TempDir()
	for _, dir := range []string{root, filepath.Join(root, "a", "b")} {
		w, err := summary.NewWriter(dir)
		if err != nil {
			t.Fatal(err)
		}
		w.AddScalar("loss", 2, 2)
		w.AddScalar("loss", 1, 1)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "c", summary.GraphDir), 0o755); err != nil {
		t.Fatal(err)
	}
	runs, err := summary.ReadLogdir(root)
	if err != nil || len(runs) != 2 {
		t.Fatalf("ReadLogdir = %d runs, %v; want 2", len(runs), err)
	}
	for _, want := range runs {
		got, err := summary.ReadRun(root, want.Dir)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("ReadRun(%q) = %+v, %v; ReadLogdir reads %+v", want.Name, got, err, want)
		}
	}
	for _, dir := range []string{"a", "c", "gone"} { // no event files, no graph records, no directory
		if got, err := summary.ReadRun(root, filepath.Join(root, dir)); got != nil || err != nil {
			t.Errorf("ReadRun(%q) = %+v, %v; want nil, nil", dir, got, err)
		}
	}
	gone := filepath.Join(root, "gone")
	if _, err := summary.ReadRun(gone, gone); err == nil || !strings.Contains(err.Error(), "log dir "+gone) {
		t.Errorf("ReadRun of a log dir that is not there = %v, want an error naming it", err)
	}
}

// A reader that reads while the writer appends sees a growing prefix of
// the series, never a value out of place.
func TestReadWhileWriting(t *testing.T) {
	dir := t.TempDir()
	w, err := summary.NewWriter(dir)
	if err != nil {
		t.Fatal(err)
	}
	const steps = 3000
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for s := 1; s <= steps; s++ {
			w.AddScalar("loss", int64(s), float64(s))
			if s%97 == 0 {
				w.Flush()
			}
		}
		w.Close()
	}()
	last, reads := 0, 0
	for last < steps {
		runs, err := summary.ReadLogdir(dir)
		if err != nil {
			t.Fatal(err)
		}
		reads++
		if len(runs) == 0 {
			continue
		}
		loss := runs[0].Scalars["loss"]
		for i, s := range loss {
			if s.Step != int64(i+1) || s.Value != float64(i+1) {
				t.Fatalf("read %d: point %d is step %d value %v", reads, i, s.Step, s.Value)
			}
		}
		if len(loss) < last {
			t.Fatalf("read %d: %d points after %d", reads, len(loss), last)
		}
		last = len(loss)
		if reads > 100000 {
			t.Fatalf("the reader never saw all %d steps (last %d)", steps, last)
		}
	}
	wg.Wait()
}

func TestAddGraph(t *testing.T) {
	dir := t.TempDir()
	w, err := summary.NewWriter(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	rec := spore.CompileRecord{Name: "main.(*net).step/fn", Signature: "(float32[2,3])", Level: "O1",
		Passes: []spore.PassDump{{Pass: "trace", Text: "%1 = Add(%0, %0)"}}}
	for range 2 {
		if err := w.AddGraph(rec); err != nil {
			t.Fatal(err)
		}
	}
	// A second writer in the same run numbers on from the files there.
	w2, err := summary.NewWriter(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	if err := w2.AddGraph(rec); err != nil {
		t.Fatal(err)
	}
	runs, err := summary.ReadLogdir(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"graphs/main.__net_.step_fn-1.json", "graphs/main.__net_.step_fn-2.json", "graphs/main.__net_.step_fn-3.json"}
	if strings.Join(runs[0].Graphs, " ") != strings.Join(want, " ") {
		t.Fatalf("graphs %q, want %q", runs[0].Graphs, want)
	}
	data, err := os.ReadFile(filepath.Join(dir, want[0]))
	if err != nil {
		t.Fatal(err)
	}
	var back spore.CompileRecord
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if back.Name != rec.Name || back.Signature != rec.Signature || len(back.Passes) != 1 || back.Passes[0].Text != rec.Passes[0].Text {
		t.Errorf("read back %+v, want %+v", back, rec)
	}
	if !strings.Contains(string(data), `"pass":"trace"`) {
		t.Errorf("graph JSON lacks the contract's field names: %s", data)
	}
}

func TestNewHistogram(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	cases := []struct {
		name           string
		values         []float32
		num, min, max  float64
		nonFinite      int
		buckets        int
		firstBucketCnt float64
	}{
		{"empty", nil, 0, 0, 0, 0, 0, 0},
		{"constant", []float32{2, 2, 2}, 3, 2, 2, 0, 1, 3},
		{"ramp", []float32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30}, 31, 0, 30, 0, 30, 2},
		{"non-finite left out", []float32{nan, -1, inf, 1}, 2, -1, 1, 2, 30, 1},
		{"only NaN", []float32{nan}, 0, 0, 0, 1, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, nf := summary.NewHistogram(c.values)
			if h.Num != c.num || h.Min != c.min || h.Max != c.max || nf != c.nonFinite || len(h.Bucket) != c.buckets {
				t.Fatalf("num %v min %v max %v nonfinite %d buckets %d; want %v %v %v %d %d", h.Num, h.Min, h.Max, nf, len(h.Bucket), c.num, c.min, c.max, c.nonFinite, c.buckets)
			}
			if c.buckets == 0 {
				return
			}
			total := 0.0
			for _, b := range h.Bucket {
				total += b
			}
			if total != c.num || h.Bucket[0] != c.firstBucketCnt {
				t.Errorf("buckets %v (total %v), want total %v and %v in the first", h.Bucket, total, c.num, c.firstBucketCnt)
			}
			// Each value lies in its bucket: (limit[i-1], limit[i]].
			for _, v := range c.values {
				f := float64(v)
				if math.IsNaN(f) || math.IsInf(f, 0) {
					continue
				}
				if f > h.BucketLimit[len(h.BucketLimit)-1] {
					t.Errorf("%v is above the last limit", f)
				}
			}
		})
	}
}

func TestPlotSVG(t *testing.T) {
	pts := []summary.Scalar{{Step: 1, Value: 2.3}, {Step: 2, Value: math.NaN()}, {Step: 3, Value: 1.1}, {Step: 4, Value: 0.4}}
	p := summary.Plot{Title: "loss <per step>", XLabel: "step", YLabel: "loss"}
	path := filepath.Join(t.TempDir(), "loss.svg")
	if err := p.WriteSVG(path, pts); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		XMLName  xml.Name `xml:"svg"`
		Texts    []string `xml:"text"`
		Polyline []struct {
			Points string `xml:"points,attr"`
		} `xml:"polyline"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("not XML: %v\n%s", err, data)
	}
	if len(doc.Polyline) != 1 || len(strings.Fields(doc.Polyline[0].Points)) != 3 {
		t.Fatalf("want one line of the 3 finite points, got %+v", doc.Polyline)
	}
	texts := strings.Join(doc.Texts, "|")
	for _, want := range []string{"loss <per step>", "|step|", "|loss", "|0.5|", "|2|"} {
		if !strings.Contains("|"+texts+"|", want) {
			t.Errorf("texts %q lack %q", texts, want)
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("temporary files left beside the plot: %v", entries)
	}
	if err := p.WriteSVG(filepath.Join(t.TempDir(), "loss.png"), pts); err == nil || !strings.Contains(err.Error(), "want a .svg file") {
		t.Errorf("a .png path: %v", err)
	}
}

// FuzzReadEvents: no input makes the reader fail or panic, and what it
// reports stays within the input.
func FuzzReadEvents(f *testing.F) {
	dir := f.TempDir()
	w, err := summary.NewWriter(dir)
	if err != nil {
		f.Fatal(err)
	}
	w.AddScalar("loss", 1, 0.5)
	w.AddHistogram("param/w", 1, []float32{1, 2, 3})
	w.Close()
	data, err := os.ReadFile(w.Path())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add(data[:len(data)-3])
	f.Add([]byte{})
	f.Add([]byte("events"))
	f.Fuzz(func(t *testing.T, data []byte) {
		events, skipped, end := summary.ReadEvents(data)
		if end < 0 || end > int64(len(data)) {
			t.Fatalf("end %d outside the %d bytes", end, len(data))
		}
		prev := int64(-1)
		for _, s := range skipped {
			if s.Offset < prev || s.Offset > int64(len(data)) {
				t.Fatalf("skipped offsets out of order or range: %v", skipped)
			}
			prev = s.Offset
		}
		// Each record is at least 16 bytes.
		if 16*len(events) > len(data) {
			t.Fatalf("%d events from %d bytes", len(events), len(data))
		}
	})
}
