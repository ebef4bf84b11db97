package summary_test

// An event-file reader written from the format's documentation alone
// (TFRecord: uint64 length LE, masked CRC-32C of the length, data, masked
// CRC-32C of the data; Event, Summary and HistogramProto by field number,
// decoded with protowire), sharing no code with package summary. The
// tests hold the writer's files to it, intact and damaged.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/sporeml/spore/summary"
)

// tfRecord is one record as the documentation frames it.
type tfRecord struct {
	offset int
	data   []byte
	ok     bool   // both CRCs match
	why    string // what is wrong, when not ok
}

// docMask is the masked CRC-32C of TFRecord's documentation.
func docMask(b []byte) uint32 {
	c := crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli))
	return ((c >> 15) | (c << 17)) + 0xa282ead8
}

// splitRecords frames data from offset 0, stopping at the first record
// whose length cannot be trusted or that runs past the end.
func splitRecords(data []byte) (recs []tfRecord, tail int) {
	off := 0
	for off < len(data) {
		if len(data)-off < 12 {
			return recs, off
		}
		n := binary.LittleEndian.Uint64(data[off:])
		if binary.LittleEndian.Uint32(data[off+8:]) != docMask(data[off:off+8]) {
			recs = append(recs, tfRecord{offset: off, why: "length crc"})
			return recs, off
		}
		if n > uint64(len(data)-off-16) {
			return recs, off
		}
		body := data[off+12 : off+12+int(n)]
		ok := binary.LittleEndian.Uint32(data[off+12+int(n):]) == docMask(body)
		recs = append(recs, tfRecord{offset: off, data: body, ok: ok, why: map[bool]string{false: "data crc"}[ok]})
		off += 16 + int(n)
	}
	return recs, off
}

// docEvent is an Event decoded by field number.
type docEvent struct {
	wallTime    float64
	step        int64
	fileVersion string
	scalars     map[string]float32
	histos      map[string]docHisto
}

type docHisto struct {
	min, max, num, sum, sumSquares float64
	limits, buckets                []float64
}

func decodeDocEvent(t *testing.T, b []byte) docEvent {
	t.Helper()
	ev := docEvent{scalars: map[string]float32{}, histos: map[string]docHisto{}}
	fields(t, b, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) {
		switch num {
		case 1:
			ev.wallTime = math.Float64frombits(x)
		case 2:
			ev.step = int64(x)
		case 3:
			ev.fileVersion = string(v)
		case 5: // Summary
			fields(t, v, func(num protowire.Number, _ protowire.Type, v []byte, _ uint64) {
				if num != 1 {
					return
				}
				var tag string
				var simple *float32
				var histo *docHisto
				fields(t, v, func(num protowire.Number, _ protowire.Type, v []byte, x uint64) {
					switch num {
					case 1:
						tag = string(v)
					case 2:
						f := math.Float32frombits(uint32(x))
						simple = &f
					case 5:
						h := decodeDocHisto(t, v)
						histo = &h
					}
				})
				if simple != nil {
					ev.scalars[tag] = *simple
				}
				if histo != nil {
					ev.histos[tag] = *histo
				}
			})
		}
	})
	return ev
}

func decodeDocHisto(t *testing.T, b []byte) docHisto {
	var h docHisto
	fields(t, b, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) {
		f := math.Float64frombits(x)
		switch num {
		case 1:
			h.min = f
		case 2:
			h.max = f
		case 3:
			h.num = f
		case 4:
			h.sum = f
		case 5:
			h.sumSquares = f
		case 6, 7:
			if typ != protowire.BytesType {
				t.Fatalf("histogram field %d is not packed", num)
			}
			var vals []float64
			for len(v) > 0 {
				u, n := protowire.ConsumeFixed64(v)
				if n < 0 {
					t.Fatalf("histogram field %d: bad packed double", num)
				}
				vals = append(vals, math.Float64frombits(u))
				v = v[n:]
			}
			if num == 6 {
				h.limits = vals
			} else {
				h.buckets = vals
			}
		}
	})
	return h
}

// fields walks a message's fields: bytes fields come in v, numeric ones
// in x.
func fields(t *testing.T, b []byte, f func(protowire.Number, protowire.Type, []byte, uint64)) {
	t.Helper()
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			t.Fatalf("bad tag: %v", protowire.ParseError(n))
		}
		b = b[n:]
		var v []byte
		var x uint64
		switch typ {
		case protowire.VarintType:
			x, n = protowire.ConsumeVarint(b)
		case protowire.Fixed64Type:
			x, n = protowire.ConsumeFixed64(b)
		case protowire.Fixed32Type:
			var y uint32
			y, n = protowire.ConsumeFixed32(b)
			x = uint64(y)
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			t.Fatalf("field %d: %v", num, protowire.ParseError(n))
		}
		f(num, typ, v, x)
		b = b[n:]
	}
}

// writeRun writes a run of steps scalars "loss" (value 1/step) and "lr",
// and a histogram every 3 steps, and returns the event file's bytes.
func writeRun(t *testing.T, dir string, steps int) (path string, data []byte) {
	t.Helper()
	w, err := summary.NewWriter(dir)
	if err != nil {
		t.Fatal(err)
	}
	for s := 1; s <= steps; s++ {
		w.AddScalar("loss", int64(s), 1/float64(s))
		w.AddScalar("lr", int64(s), 0.01)
		if s%3 == 0 {
			vals := make([]float32, 100)
			for i := range vals {
				vals[i] = float32(i-50) * float32(s) / 100
			}
			w.AddHistogram("param/w", int64(s), vals)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	data, err = os.ReadFile(w.Path())
	if err != nil {
		t.Fatal(err)
	}
	return w.Path(), data
}

// The writer's files, read by the documentation's rules: every record
// framed and checksummed, the first one the file version, the values
// what was written.
func TestEventFileByTheFormat(t *testing.T) {
	dir := t.TempDir()
	path, data := writeRun(t, dir, 9)
	if ok, _ := filepath.Match("events.out.tfevents.*.*.*.spore", filepath.Base(path)); !ok {
		t.Errorf("file name %s does not follow events.out.tfevents.<secs>.<host>.<pid>.spore", filepath.Base(path))
	}
	recs, tail := splitRecords(data)
	if tail != len(data) {
		t.Fatalf("framing stops at %d of %d bytes", tail, len(data))
	}
	// 1 version record, 9×2 scalars, 3 histograms.
	if len(recs) != 1+18+3 {
		t.Fatalf("%d records, want 22", len(recs))
	}
	var loss []float32
	var histos []docHisto
	for i, r := range recs {
		if !r.ok {
			t.Fatalf("record %d at %d: %s", i, r.offset, r.why)
		}
		ev := decodeDocEvent(t, r.data)
		if i == 0 {
			if ev.fileVersion != "brain.Event:2" {
				t.Errorf("first record's file_version is %q", ev.fileVersion)
			}
			continue
		}
		if ev.wallTime < 1e9 {
			t.Errorf("record %d: wall_time %v is not a Unix time", i, ev.wallTime)
		}
		if v, ok := ev.scalars["loss"]; ok {
			loss = append(loss, v)
			if ev.step != int64(len(loss)) {
				t.Errorf("loss %d has step %d", len(loss), ev.step)
			}
		}
		if h, ok := ev.histos["param/w"]; ok {
			histos = append(histos, h)
		}
	}
	for i, v := range loss {
		if want := float32(1 / float64(i+1)); v != want {
			t.Errorf("loss[%d] = %v, want %v", i, v, want)
		}
	}
	if len(loss) != 9 || len(histos) != 3 {
		t.Fatalf("%d losses and %d histograms, want 9 and 3", len(loss), len(histos))
	}
	for i, h := range histos {
		s := float64(3 * (i + 1))
		total := 0.0
		for _, c := range h.buckets {
			total += c
		}
		if h.num != 100 || total != 100 || len(h.limits) != len(h.buckets) {
			t.Errorf("histogram %d: num %v, bucket total %v, %d limits for %d buckets", i, h.num, total, len(h.limits), len(h.buckets))
		}
		if h.min != float64(float32(-50*s/100)) || h.max != float64(float32(49*s/100)) || h.limits[len(h.limits)-1] != h.max {
			t.Errorf("histogram %d: min %v max %v last limit %v", i, h.min, h.max, h.limits[len(h.limits)-1])
		}
		if !slices.IsSorted(h.limits) {
			t.Errorf("histogram %d: limits not increasing: %v", i, h.limits)
		}
	}
}

// Damaged files: the documentation's reader finds the damage, and
// package summary skips exactly the damaged records, reporting each at
// its offset, and keeps every other one.
func TestDamagedRecordsSkipped(t *testing.T) {
	_, clean := writeRun(t, t.TempDir(), 6)
	recs, _ := splitRecords(clean)
	n := len(recs)
	rec := func(i int) tfRecord { return recs[i] }
	end := func(i int) int { return rec(i).offset + 16 + len(rec(i).data) }
	type damage struct {
		name    string
		mutate  func([]byte) []byte
		lost    []int // records summary must drop
		skipAt  []int // offsets summary must report
		docSees string
	}
	flip := func(at int) func([]byte) []byte {
		return func(b []byte) []byte { b[at] ^= 0x40; return b }
	}
	cases := []damage{
		{"data byte", flip(rec(3).offset + 14), []int{3}, []int{rec(3).offset}, "data crc"},
		{"data crc", flip(end(4) - 1), []int{4}, []int{rec(4).offset}, "data crc"},
		{"length crc", flip(rec(2).offset + 9), []int{2}, []int{rec(2).offset}, "length crc"},
		{"length", flip(rec(5).offset), []int{5}, []int{rec(5).offset}, "length crc"},
		{"torn last record", func(b []byte) []byte { return b[:end(n-1)-5] }, []int{n - 1}, []int{rec(n - 1).offset}, "torn"},
		{"torn header", func(b []byte) []byte { return b[:rec(n-1).offset+7] }, []int{n - 1}, []int{rec(n - 1).offset}, "torn"},
		{"garbage between records", func(b []byte) []byte {
			return slices.Concat(b[:rec(2).offset], []byte("not a record at all"), b[rec(2).offset:])
		}, nil, []int{rec(2).offset}, "length crc"},
		{"garbage appended", func(b []byte) []byte { return append(b, 0xff, 0xfe, 0xfd) }, nil, []int{len(clean)}, "torn"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := c.mutate(slices.Clone(clean))
			// The documentation's reader sees the damage.
			got, tail := splitRecords(data)
			switch c.docSees {
			case "torn":
				if tail == len(data) {
					t.Errorf("the documentation's reader read the torn file to its end")
				}
			default:
				bad := slices.IndexFunc(got, func(r tfRecord) bool { return !r.ok })
				if bad < 0 || got[bad].why != c.docSees {
					t.Errorf("the documentation's reader did not see a %s", c.docSees)
				}
			}
			events, skipped, _ := summary.ReadEvents(data)
			var want []int // steps kept: every record but the lost ones
			for i := range recs {
				if !slices.Contains(c.lost, i) {
					want = append(want, i)
				}
			}
			if len(events) != len(want) {
				t.Fatalf("%d events, want %d (skipped %v)", len(events), len(want), skipped)
			}
			for k, i := range want {
				ev := decodeDocEvent(t, recs[i].data)
				if events[k].Step != ev.step || events[k].FileVersion != ev.fileVersion || len(events[k].Values) != len(ev.scalars)+len(ev.histos) {
					t.Errorf("event %d is not record %d", k, i)
				}
			}
			var offs []int
			for _, s := range skipped {
				offs = append(offs, int(s.Offset))
			}
			if !slices.Equal(offs, c.skipAt) {
				t.Errorf("skipped at %v, want %v: %v", offs, c.skipAt, skipped)
			}
		})
	}
}

// A file cut at every byte offset (a writer killed at any moment) reads
// as its whole records, with at most the cut one reported, and ReadLogdir
// names the file and offset.
func TestTornAtEveryOffset(t *testing.T) {
	_, clean := writeRun(t, t.TempDir(), 4)
	recs, _ := splitRecords(clean)
	dir := t.TempDir()
	path := filepath.Join(dir, "events.out.tfevents.1.test")
	for cut := 0; cut <= len(clean); cut++ {
		events, skipped, end := summary.ReadEvents(clean[:cut])
		whole := 0
		for _, r := range recs {
			if r.offset+16+len(r.data) <= cut {
				whole++
			}
		}
		if len(events) != whole {
			t.Fatalf("cut at %d: %d events, want %d", cut, len(events), whole)
		}
		wantSkips := 0
		if whole < len(recs) && cut > recs[whole].offset {
			wantSkips = 1
		}
		if len(skipped) != wantSkips || (wantSkips == 1 && (end != int64(recs[whole].offset) || !errors.Is(skipped[0], summary.ErrTornRecord))) {
			t.Fatalf("cut at %d: skipped %v, end %d", cut, skipped, end)
		}
		if cut == recs[len(recs)-1].offset+3 {
			if err := os.WriteFile(path, clean[:cut], 0o644); err != nil {
				t.Fatal(err)
			}
			runs, err := summary.ReadLogdir(dir)
			if err != nil || len(runs) != 1 {
				t.Fatalf("ReadLogdir: %v, %d runs", err, len(runs))
			}
			want := fmt.Sprintf("%s: offset %d: record cut short", path, recs[len(recs)-1].offset)
			if len(runs[0].Warnings) != 1 || !strings.Contains(runs[0].Warnings[0], want) {
				t.Errorf("warnings %q, want one saying %q", runs[0].Warnings, want)
			}
		}
	}
}
