package checkpoint

import (
	"bytes"
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/tensor"
)

// The fuzz targets below run over their seeds and testdata/fuzz/<name> in
// every plain `go test`; `go test -fuzz '^FuzzLoadCkpt$' ./checkpoint`
// explores further.

// allocBound is the most a parse may allocate for an n-byte file. Loading
// keeps the file's tensors (no more bytes than the file) and, per entry, a
// name, a shape and a tensor header, which a minimal entry of a dozen bytes
// can make several times its size; fixed costs stay under 1 MiB.
func allocBound(n int) uint64 { return 64*uint64(n) + 1<<20 }

// fuzzSeeds adds real files written by marshal (no tensors, a few, one of
// every dtype and shape, a scalar) and broken variants of each: cut at
// several places, with a byte flipped in the middle, with trailing bytes.
func fuzzSeeds(f *testing.F, marshal func([]Param, map[string]string) ([]byte, error)) {
	for _, ps := range [][]Param{nil, sampleParams()[:4], sampleParams(), {{"s", tensor.Scalar(true)}}} {
		b, err := marshal(ps, map[string]string{"k": "v"})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		if len(b) > 20 {
			f.Add(b[:len(b)-5])
			f.Add(b[:len(b)/2])
			flipped := bytes.Clone(b)
			flipped[len(b)/2] ^= 0x40
			f.Add(flipped)
		}
		f.Add(b[:min(len(b), 12)])
		f.Add(append(bytes.Clone(b), 0))
	}
}

// checkFormatError checks the properties of every parse error: a
// *FormatError of the right format with a message, which names the file
// once LoadSafetensors or LoadCkpt attaches it, on one line.
func checkFormatError(t *testing.T, err error, format string) {
	t.Helper()
	var fe *FormatError
	if !errors.As(err, &fe) {
		t.Fatalf("error %v (%T) is not a *FormatError", err, err)
	}
	if fe.Format != format || fe.Msg == "" {
		t.Fatalf("error %#v: want format %q and a message", fe, format)
	}
	named := withFile(err, "fuzz."+format).Error()
	if !strings.HasPrefix(named, "checkpoint: fuzz."+format+": "+format+": ") || strings.Contains(named, "\n") {
		t.Fatalf("error %q does not name the file on one line", named)
	}
}

// checkParse is the body of both fuzz targets: whatever the input, the
// parse allocates within allocBound; an error has the properties
// checkFormatError checks; a file that loads writes back (when spore can
// write what it holds), and what is written is a fixed point: it loads as
// the same tensors and metadata and writes back as the same bytes.
func checkParse(t *testing.T, data []byte, format string,
	unmarshal func([]byte) ([]Param, map[string]string, error),
	marshal func([]Param, map[string]string) ([]byte, error),
	order func([]Param) []Param) {
	var ps []Param
	var md map[string]string
	var err error
	bound := allocBound(len(data))
	if got := testkit.AllocatedBy(func() { ps, md, err = unmarshal(data) }, bound); got > bound {
		t.Fatalf("allocated %d bytes for a %d-byte file; bound %d", got, len(data), bound)
	}
	if err != nil {
		checkFormatError(t, err, format)
		return
	}
	b, err := marshal(ps, md)
	if err != nil {
		return // e.g. an empty name: readable, but not writable
	}
	ps2, md2, err := unmarshal(b)
	if err != nil {
		t.Fatalf("re-encoded file does not load: %v", err)
	}
	checkSameParams(t, ps2, order(ps))
	if !maps.Equal(md, md2) {
		t.Fatalf("metadata %q came back as %q", md, md2)
	}
	b2, err := marshal(ps2, md2)
	if err != nil || !bytes.Equal(b, b2) {
		t.Fatalf("writing back what was written and loaded: %v; same bytes: %v", err, bytes.Equal(b, b2))
	}
}

// FuzzLoadSafetensors checks UnmarshalSafetensors (the parser behind
// LoadSafetensors) on arbitrary bytes; see checkParse.
func FuzzLoadSafetensors(f *testing.F) {
	fuzzSeeds(f, MarshalSafetensors)
	f.Fuzz(func(t *testing.T, data []byte) {
		checkParse(t, data, "safetensors", UnmarshalSafetensors, MarshalSafetensors, stOrder)
	})
}

// FuzzLoadCkpt checks UnmarshalCkpt (the parser behind LoadCkpt) on
// arbitrary bytes; see checkParse.
func FuzzLoadCkpt(f *testing.F) {
	marshal := func(ps []Param, md map[string]string) ([]byte, error) { return MarshalCkpt(ps, md, nil) }
	fuzzSeeds(f, marshal)
	f.Add(pbValue("p", append(pbLen(1, pbVarint(2), pbVarint(3)), pbTensor("Float32", make([]byte, 24))...)))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkParse(t, data, "ckpt", UnmarshalCkpt, marshal, func(ps []Param) []Param { return ps })
	})
}
