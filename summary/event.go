package summary

import (
	"fmt"
	"io"
	"math"

	"google.golang.org/protobuf/proto"

	"github.com/sporeml/spore/summary/internal/eventpb"
)

// FileVersion is what the first record of every event file says it is:
// TensorBoard's current format version.
const FileVersion = "brain.Event:2"

// Scalar is one point of a scalar series.
type Scalar struct {
	// Step is the training step; WallTime the time it was recorded, in
	// seconds since the Unix epoch; Value the value.
	Step            int64
	WallTime, Value float64
}

// Histogram is one histogram of a series, TensorBoard's HistogramProto:
// Bucket[i] counts the values in (BucketLimit[i-1], BucketLimit[i]], the
// first bucket starting at Min.
type Histogram struct {
	// Step and WallTime are as in Scalar.
	Step     int64
	WallTime float64
	// Min, Max, Num, Sum and SumSquares summarise the values.
	Min, Max, Num, Sum, SumSquares float64
	// BucketLimit holds each bucket's right edge, Bucket its count.
	BucketLimit, Bucket []float64
}

// ValueKind says what a Value holds.
type ValueKind int

const (
	// OtherValue is a kind spore does not read (images, audio, tensors).
	OtherValue ValueKind = iota
	// ScalarValue is a scalar, in Value.Scalar.
	ScalarValue
	// HistogramValue is a histogram, in Value.Histogram.
	HistogramValue
)

// Value is one tagged value of an event.
type Value struct {
	// Tag names the series ("loss", "param/dense.weight").
	Tag string
	// Kind says which of Scalar and Histogram is set.
	Kind ValueKind
	// Scalar is the value of a scalar.
	Scalar float64
	// Histogram is the histogram, with the event's step and wall time.
	Histogram *Histogram
}

// Event is one decoded record of an event file.
type Event struct {
	// WallTime is in seconds since the Unix epoch; Step the training step.
	WallTime float64
	Step     int64
	// FileVersion is set on a file's first record ("brain.Event:2").
	FileVersion string
	// Values are the summary values recorded at this step.
	Values []Value
}

// ReadEvents decodes the events of one event file's contents. Records
// that are damaged (a CRC mismatch, a length beyond MaxRecordSize, bytes
// that are not an Event protobuf) or cut short at the end (a writer still
// appending, or killed mid-write) are skipped and reported in skipped, by
// offset; ReadEvents never fails or panics on any input. end is the
// offset just past the last whole record, where a reader following a
// growing file resumes.
func ReadEvents(data []byte) (events []Event, skipped []*RecordError, end int64) {
	r := NewRecordReader(data)
	var bad []*RecordError
	for {
		rec, off, err := r.Next()
		if err == io.EOF {
			break
		}
		ev, derr := decodeEvent(rec)
		if derr != nil {
			bad = append(bad, &RecordError{Offset: off, Msg: derr.Error()})
			continue
		}
		events = append(events, ev)
	}
	return events, mergeByOffset(r.Skipped, bad), r.End()
}

// mergeByOffset merges two lists sorted by offset.
func mergeByOffset(a, b []*RecordError) []*RecordError {
	if len(b) == 0 {
		return a
	}
	out := make([]*RecordError, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if a[0].Offset <= b[0].Offset {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return append(append(out, a...), b...)
}

// decodeEvent unmarshals one record's data as an Event.
func decodeEvent(data []byte) (Event, error) {
	var pb eventpb.Event
	if err := proto.Unmarshal(data, &pb); err != nil {
		return Event{}, fmt.Errorf("not an Event protobuf: %v", err)
	}
	ev := Event{WallTime: pb.GetWallTime(), Step: pb.GetStep(), FileVersion: pb.GetFileVersion()}
	for _, v := range pb.GetSummary().GetValue() {
		val := Value{Tag: v.GetTag()}
		switch x := v.GetValue().(type) {
		case *eventpb.Summary_Value_SimpleValue:
			val.Kind, val.Scalar = ScalarValue, float64(x.SimpleValue)
		case *eventpb.Summary_Value_Histo:
			h := x.Histo
			if len(h.GetBucket()) != len(h.GetBucketLimit()) {
				return Event{}, fmt.Errorf("histogram %q has %d buckets but %d bucket limits", v.GetTag(), len(h.GetBucket()), len(h.GetBucketLimit()))
			}
			val.Kind = HistogramValue
			val.Histogram = &Histogram{
				Step: ev.Step, WallTime: ev.WallTime,
				Min: h.GetMin(), Max: h.GetMax(), Num: h.GetNum(), Sum: h.GetSum(), SumSquares: h.GetSumSquares(),
				BucketLimit: h.GetBucketLimit(), Bucket: h.GetBucket(),
			}
		}
		ev.Values = append(ev.Values, val)
	}
	return ev, nil
}

// encodeEvent marshals an event with the given values.
func encodeEvent(pb *eventpb.Event) []byte {
	b, err := proto.Marshal(pb)
	if err != nil {
		// Marshal fails only on invalid UTF-8 in a string field; tags are
		// checked before they get here.
		panic(fmt.Sprintf("summary: marshalling an event: %v", err))
	}
	return b
}

// histogramBuckets is how many equal-width buckets a histogram of values
// gets: TensorBoard redraws any histogram into 30 buckets, so more would
// only cost time.
const histogramBuckets = 30

// NewHistogram summarises values into a Histogram of equal-width buckets
// between their minimum and maximum. Non-finite values (NaN, ±Inf) are
// left out, since one would make every statistic meaningless; nonFinite
// counts them.
func NewHistogram(values []float32) (h Histogram, nonFinite int) {
	lo, hi := math.Inf(1), math.Inf(-1)
	var sum, sq, n float64
	for _, v := range values {
		f := float64(v)
		if f-f != 0 { // NaN or ±Inf
			nonFinite++
			continue
		}
		// Plain comparisons: the builtins' care for NaN and -0 costs
		// several times more, and NaN is already out.
		if f < lo {
			lo = f
		}
		if f > hi {
			hi = f
		}
		sum += f
		sq += f * f
		n++
	}
	if n == 0 {
		return Histogram{}, nonFinite
	}
	h = Histogram{Min: lo, Max: hi, Num: n, Sum: sum, SumSquares: sq}
	if lo == hi {
		h.BucketLimit, h.Bucket = []float64{hi}, []float64{n}
		return h, nonFinite
	}
	k := histogramBuckets
	width := (hi - lo) / float64(k)
	inv := 1 / width
	limits := make([]float64, k)
	for i := range k - 1 {
		limits[i] = lo + float64(i+1)*width
	}
	limits[k-1] = hi
	counts := make([]float64, k)
	for _, v := range values {
		f := float64(v)
		if !(f >= lo && f <= hi) { // NaN or ±Inf
			continue
		}
		// Buckets are closed on the right, (limit[i-1], limit[i]]: a
		// value on an edge belongs to the bucket below it. The estimate
		// can land a bucket off at an edge, or by rounding; the limits
		// themselves decide.
		i := min(int((f-lo)*inv), k-1)
		for i > 0 && f <= limits[i-1] {
			i--
		}
		for i < k-1 && f > limits[i] {
			i++
		}
		counts[i]++
	}
	h.BucketLimit, h.Bucket = limits, counts
	return h, nonFinite
}
