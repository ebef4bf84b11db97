package mnist

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sporeml/spore/dataset"
	"github.com/sporeml/spore/tensor"
)

func TestChecksums(t *testing.T) {
	want := map[string]string{
		TrainImagesFile: "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609",
		TrainLabelsFile: "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c",
		TestImagesFile:  "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6",
		TestLabelsFile:  "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6",
	}
	for name, sum := range want {
		b, err := files.ReadFile("data/" + name)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.Sum256(b)
		if got := hex.EncodeToString(h[:]); got != sum {
			t.Errorf("%s: sha256 %s, want %s", name, got, sum)
		}
	}
}

func TestSplits(t *testing.T) {
	tests := []struct {
		name  string
		get   func(...Option) (*tensor.Tensor, *tensor.Tensor, error)
		n     int
		first []int32 // the first labels, as published
	}{
		{"train", TrainTensors, 60000, []int32{5, 0, 4, 1, 9, 2, 1, 3, 1, 4}},
		{"test", TestTensors, 10000, []int32{7, 2, 1, 0, 4, 1, 4, 9, 5, 9}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			x, y, err := tc.get(Raw())
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("decode+convert %v", time.Since(start))
			if !x.Shape().Equal(tensor.Shape{tc.n, 1, 28, 28}) || x.DType() != tensor.Uint8 {
				t.Fatalf("images %v %v", x.DType(), x.Shape())
			}
			if !y.Shape().Equal(tensor.Shape{tc.n}) || y.DType() != tensor.Int32 {
				t.Fatalf("labels %v %v", y.DType(), y.Shape())
			}
			var count [10]int
			for i, l := range y.Data().([]int32) {
				if l < 0 || l > 9 {
					t.Fatalf("label %d = %d out of range", i, l)
				}
				count[l]++
			}
			for d, c := range count {
				if c < tc.n/20 {
					t.Errorf("digit %d occurs only %d times", d, c)
				}
			}
			for i, l := range tc.first {
				if got := y.Data().([]int32)[i]; got != l {
					t.Errorf("label %d = %d, want %d", i, got, l)
				}
			}
			var lo, hi, sum = 255, 0, 0
			for _, v := range x.Data().([]uint8) {
				lo, hi, sum = min(lo, int(v)), max(hi, int(v)), sum+int(v)
			}
			mean := float64(sum) / 255 / float64(x.Size())
			if lo != 0 || hi != 255 || math.Abs(mean-Mean) > 0.005 {
				t.Errorf("pixels in [%v, %v], mean %.4f; want [0, 255], mean near %v", lo, hi, mean, Mean)
			}
		})
	}
}

func TestOptions(t *testing.T) {
	raw, _, err := TestTensors(Raw())
	if err != nil {
		t.Fatal(err)
	}
	norm, _, err := TestTensors(Normalize())
	if err != nil {
		t.Fatal(err)
	}
	plain, _, err := TestTensors()
	if err != nil {
		t.Fatal(err)
	}
	if raw.DType() != tensor.Uint8 || !raw.Shape().Equal(tensor.Shape{10000, 1, 28, 28}) {
		t.Fatalf("raw %v %v", raw.DType(), raw.Shape())
	}
	r, p, q := raw.Data().([]uint8), plain.Data().([]float32), norm.Data().([]float32)
	for _, i := range []int{0, 150, 200, 300, 7000 * 784} {
		if want := float32(r[i]) / 255; p[i] != want {
			t.Errorf("pixel %d: %v, want %v", i, p[i], want)
		}
		if want := (float64(r[i])/255 - Mean) / Std; math.Abs(float64(q[i])-want) > 1e-6 {
			t.Errorf("normalised pixel %d: %v, want %v", i, q[i], want)
		}
	}
	if _, _, err := TestTensors(NormalizeWith(0, 0)); err == nil {
		t.Error("std 0 accepted")
	}
}

func TestDatasets(t *testing.T) {
	tests := []struct {
		name string
		get  func(...Option) (*dataset.Dataset, error)
		n    int
	}{{"train", Train, 60000}, {"test", Test, 10000}}
	for _, tc := range tests {
		ds, err := tc.get()
		if err != nil {
			t.Fatal(err)
		}
		if ds.Len() != tc.n {
			t.Errorf("%s: Len %d, want %d", tc.name, ds.Len(), tc.n)
		}
		b := ds.Batch(64, false)
		if want := (tc.n + 63) / 64; b.Len() != want {
			t.Errorf("%s: %d batches, want %d", tc.name, b.Len(), want)
		}
		for batch, err := range b.All() {
			if err != nil {
				t.Fatal(err)
			}
			if !batch[0].Shape().Equal(tensor.Shape{64, 1, 28, 28}) || !batch[1].Shape().Equal(tensor.Shape{64}) {
				t.Errorf("%s: batch shapes %v %v", tc.name, batch[0].Shape(), batch[1].Shape())
			}
			break
		}
	}
}

func TestDatasetMatchesTensors(t *testing.T) {
	for _, opts := range [][]Option{nil, {Normalize()}, {Raw()}} {
		x, y, err := TestTensors(opts...)
		if err != nil {
			t.Fatal(err)
		}
		ds, err := Test(opts...)
		if err != nil {
			t.Fatal(err)
		}
		b, ok := ds.Batch(10000, false).Iter().Next()
		if !ok {
			t.Fatal("no batch")
		}
		if !b[0].Shape().Equal(x.Shape()) || b[0].DType() != x.DType() || !sameData(b[0], x) || !sameData(b[1], y) {
			t.Errorf("opts %d: dataset differs from TestTensors", len(opts))
		}
	}
}

func sameData(a, b *tensor.Tensor) bool {
	switch x := a.Data().(type) {
	case []float32:
		return slices.Equal(x, b.Data().([]float32))
	case []uint8:
		return slices.Equal(x, b.Data().([]uint8))
	case []int32:
		return slices.Equal(x, b.Data().([]int32))
	}
	return false
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	// Write the embedded test split back out, one file gzipped and one not.
	xb, _ := files.ReadFile("data/" + TestImagesFile)
	yb, _ := files.ReadFile("data/" + TestLabelsFile)
	xp := filepath.Join(dir, "images.gz")
	yp := filepath.Join(dir, "labels")
	if err := os.WriteFile(xp, xb, 0o644); err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(yb))
	if err != nil {
		t.Fatal(err)
	}
	var ybuf bytes.Buffer
	if _, err := ybuf.ReadFrom(zr); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(yp, ybuf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	ds, err := Load(xp, yp, Normalize())
	if err != nil {
		t.Fatal(err)
	}
	if ds.Len() != 10000 {
		t.Errorf("Len %d", ds.Len())
	}

	// Errors name the file at fault.
	short := filepath.Join(dir, "short")
	if err := os.WriteFile(short, ybuf.Bytes()[:100], 0o644); err != nil {
		t.Fatal(err)
	}
	bad := []struct {
		name, images, labels, want string
	}{
		{"missing", filepath.Join(dir, "nope"), yp, "nope"},
		{"truncated labels", xp, short, "short: truncated data"},
		{"swapped", yp, xp, "want ubyte images"},
		{"count mismatch", xp, filepath.Join(dir, "few"), "10000 images but"},
	}
	few := filepath.Join(dir, "few")
	if err := dataset.WriteIDXFile(few, tensor.FromSlice([]uint8{1, 2, 3})); err != nil {
		t.Fatal(err)
	}
	for _, tc := range bad {
		_, err := Load(tc.images, tc.labels)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

// BenchmarkDecodeTrain measures decoding the embedded training files (the
// cost of the first Train call).
func BenchmarkDecodeTrain(b *testing.B) {
	for b.Loop() {
		var r raw
		if _, _, err := r.load(TrainImagesFile, TrainLabelsFile); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEpoch measures one epoch of the training pipeline's data side:
// shuffle, per-sample conversion, batches of 64.
func BenchmarkEpoch(b *testing.B) {
	ds, err := Train(Normalize())
	if err != nil {
		b.Fatal(err)
	}
	ds = ds.Shuffle(60000).Batch(64, true)
	for b.Loop() {
		for _, err := range ds.All() {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
}
