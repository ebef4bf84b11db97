package checkpoint

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sporeml/spore/tensor"
)

func TestLoadInto(t *testing.T) {
	// The destination: three parameters initialised to zeros.
	newDst := func() Params {
		return FromTensors(
			tensor.NewParameter("dense.weight", tensor.Zeros(tensor.Float32, 2, 3)),
			tensor.NewParameter("dense.bias", tensor.Zeros(tensor.Float32, 2)),
			tensor.NewParameter("bn.count", tensor.Zeros(tensor.Int64)),
		)
	}
	w := Param{"dense.weight", tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3)}
	b := Param{"dense.bias", tensor.FromSlice([]float32{7, 8})}
	c := Param{"bn.count", tensor.Scalar(int64(9))}
	wT := Param{"dense.weight", tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6}, 3, 2)}
	b64 := Param{"dense.bias", tensor.FromSlice([]float64{7, 8})}
	extra := Param{"head.weight", tensor.FromSlice([]float32{1})}

	tests := []struct {
		name                          string
		src                           []Param
		strict                        bool
		missing, unexpected, mismatch []string
		wantErr                       []string // fragments; nil for no error
		loaded                        []string // names whose values must have changed
	}{
		{name: "exact strict", src: []Param{c, b, w}, strict: true, loaded: []string{"dense.weight", "dense.bias", "bn.count"}},
		{name: "exact lenient", src: []Param{w, b, c}, loaded: []string{"dense.weight", "dense.bias", "bn.count"}},
		{name: "missing lenient", src: []Param{w}, missing: []string{"dense.bias", "bn.count"}, loaded: []string{"dense.weight"}},
		{name: "unexpected lenient", src: []Param{w, b, c, extra}, unexpected: []string{"head.weight"}, loaded: []string{"dense.weight", "dense.bias", "bn.count"}},
		{name: "shape mismatch lenient", src: []Param{wT, b, c}, mismatch: []string{"dense.weight"}, loaded: []string{"dense.bias", "bn.count"}},
		{name: "dtype mismatch lenient", src: []Param{w, b64, c}, mismatch: []string{"dense.bias"}, loaded: []string{"dense.weight", "bn.count"}},
		{
			name: "everything wrong lenient", src: []Param{extra, wT, b64},
			missing: []string{"bn.count"}, unexpected: []string{"head.weight"}, mismatch: []string{"dense.weight", "dense.bias"},
		},
		{
			name: "missing strict", src: []Param{w, b}, strict: true, missing: []string{"bn.count"},
			wantErr: []string{"no parameter was changed", "1 missing", "bn.count"},
		},
		{
			name: "unexpected strict", src: []Param{w, b, c, extra}, strict: true, unexpected: []string{"head.weight"},
			wantErr: []string{"unexpected", "head.weight"},
		},
		{
			name: "everything wrong strict", src: []Param{extra, wT, b64}, strict: true,
			missing: []string{"bn.count"}, unexpected: []string{"head.weight"}, mismatch: []string{"dense.weight", "dense.bias"},
			wantErr: []string{"1 missing from the checkpoint (bn.count)", "1 unexpected in the checkpoint (head.weight)", "2 mismatched",
				"dense.weight: checkpoint [3 2] Float32, parameter [2 3] Float32", "dense.bias: checkpoint [2] Float64, parameter [2] Float32"},
		},
		{name: "duplicate source", src: []Param{w, w}, wantErr: []string{`"dense.weight" appears twice in the source`}},
		{name: "nil source", src: []Param{{Name: "x"}}, strict: true, wantErr: []string{"nil"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dst := newDst()
			before := make(map[string][]float64)
			for _, p := range dst {
				before[p.Name] = p.Tensor.Float64s()
			}
			missing, unexpected, mismatch, err := LoadInto(dst, tc.src, tc.strict)
			if tc.wantErr == nil && err != nil {
				t.Fatal(err)
			}
			if tc.wantErr != nil {
				if err == nil {
					t.Fatal("no error")
				}
				for _, f := range tc.wantErr {
					if !strings.Contains(err.Error(), f) {
						t.Errorf("error %q does not mention %q", err, f)
					}
				}
			}
			if !slices.Equal(missing, tc.missing) || !slices.Equal(unexpected, tc.unexpected) || !slices.Equal(mismatch, tc.mismatch) {
				t.Errorf("got missing %q unexpected %q mismatched %q, want %q %q %q", missing, unexpected, mismatch, tc.missing, tc.unexpected, tc.mismatch)
			}
			var le *LoadError
			if errors.As(err, &le) && (!slices.Equal(le.Missing, tc.missing) || !slices.Equal(le.Unexpected, tc.unexpected) || !slices.Equal(le.Mismatched, tc.mismatch)) {
				t.Errorf("LoadError lists %+v", le)
			}
			src := map[string]*tensor.Tensor{}
			for _, p := range tc.src {
				src[p.Name] = p.Tensor
			}
			for _, p := range dst {
				changed := !slices.Equal(p.Tensor.Float64s(), before[p.Name])
				want := slices.Contains(tc.loaded, p.Name)
				if changed != want {
					t.Errorf("%s: changed=%v, want %v", p.Name, changed, want)
				}
				if want && !slices.Equal(p.Tensor.Float64s(), src[p.Name].Float64s()) {
					t.Errorf("%s = %v, want %v", p.Name, p.Tensor.Float64s(), src[p.Name].Float64s())
				}
			}
		})
	}
}

func TestLoadIntoRejectsBadDestination(t *testing.T) {
	p := tensor.NewParameter("a", tensor.Zeros(tensor.Float32, 1))
	src := []Param{{"a", tensor.Zeros(tensor.Float32, 1)}}
	for _, tc := range []struct {
		name string
		dst  Params
		want string
	}{
		{"not a parameter", Params{{"a", tensor.Zeros(tensor.Float32, 1)}}, "not a parameter"},
		{"duplicate", Params{{"a", p}, {"a", p}}, "twice in the destination"},
		{"nil", Params{{"a", nil}}, "nil"},
	} {
		if _, _, _, err := LoadInto(tc.dst, src, false); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one mentioning %q", tc.name, err, tc.want)
		}
	}
}

func TestPrefixes(t *testing.T) {
	m := sampleTensor(tensor.Float32, 2)
	params := []Param{{"dense.weight", m}, {"dense.bias", m}}
	all := append(append([]Param{}, params...), WithPrefix("adam.m", params)...)
	all = append(all, Param{"adam.step", tensor.Scalar(int64(3))})
	if got := strings.Join(Names(all), ","); got != "dense.weight,dense.bias,adam.m.dense.weight,adam.m.dense.bias,adam.step" {
		t.Fatalf("names %s", got)
	}
	state, rest := SplitPrefix(all, "adam.m")
	if got := strings.Join(Names(state), ","); got != "dense.weight,dense.bias" {
		t.Errorf("state %s", got)
	}
	if got := strings.Join(Names(rest), ","); got != "dense.weight,dense.bias,adam.step" {
		t.Errorf("rest %s", got)
	}
}

func TestSaveLoadByExtension(t *testing.T) {
	dir := t.TempDir()
	params := sampleParams()
	for _, name := range []string{"m.safetensors", "m.ckpt", "M.CKPT"} {
		path := filepath.Join(dir, name)
		if err := Save(path, params, map[string]string{"a": "b"}); err != nil {
			t.Fatal(err)
		}
		got, md, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		want := params
		if strings.HasSuffix(name, ".safetensors") {
			want = stOrder(params)
		}
		checkSameParams(t, got, want)
		if md["a"] != "b" {
			t.Errorf("%s: metadata %v", name, md)
		}
	}
	// The formats are told apart by extension, not sniffed.
	if err := os.Rename(filepath.Join(dir, "m.ckpt"), filepath.Join(dir, "m2.safetensors")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Load(filepath.Join(dir, "m2.safetensors")); err == nil {
		t.Error("a .ckpt file loaded as safetensors")
	}
	for _, bad := range []string{"m.pt", "m"} {
		if err := Save(filepath.Join(dir, bad), params, nil); err == nil || !strings.Contains(err.Error(), "extension") {
			t.Errorf("Save(%s): %v", bad, err)
		}
		if _, _, err := Load(filepath.Join(dir, bad)); err == nil || !strings.Contains(err.Error(), "extension") {
			t.Errorf("Load(%s): %v", bad, err)
		}
	}
	if _, _, err := Load(filepath.Join(dir, "absent.ckpt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// failAfter is a writer that accepts n bytes and then fails.
type failAfter struct {
	w io.Writer
	n int
}

var errInjected = errors.New("injected write error")

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		k, _ := f.w.Write(p[:f.n])
		f.n = 0
		return k, errInjected
	}
	f.n -= len(p)
	return f.w.Write(p)
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

func TestAtomicWriteFailure(t *testing.T) {
	params := sampleParams()
	for _, name := range []string{"m.safetensors", "m.ckpt"} {
		for _, n := range []int{0, 1, 100, 1000} {
			dir := t.TempDir()
			path := filepath.Join(dir, name)
			old := []Param{{"old", tensor.FromSlice([]float32{1, 2, 3})}}
			if err := Save(path, old, nil); err != nil {
				t.Fatal(err)
			}
			oldBytes, _ := os.ReadFile(path)

			testHookWriter = func(w io.Writer) io.Writer { return &failAfter{w: w, n: n} }
			err := Save(path, params, nil)
			testHookWriter = nil
			if !errors.Is(err, errInjected) {
				t.Fatalf("%s after %d bytes: error %v, want the injected one", name, n, err)
			}
			if !strings.Contains(err.Error(), "not changed") {
				t.Errorf("error %q does not say the file was left alone", err)
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, oldBytes) {
				t.Fatalf("%s after %d bytes: the old checkpoint was clobbered", name, n)
			}
			if names := dirNames(t, dir); !slices.Equal(names, []string{name}) {
				t.Fatalf("%s after %d bytes: directory holds %v, want only %s", name, n, names, name)
			}
			if got, _, err := Load(path); err != nil || got[0].Name != "old" {
				t.Fatalf("old checkpoint no longer loads: %v", err)
			}
		}
	}
}

func TestAtomicWriteBadPlaces(t *testing.T) {
	dir := t.TempDir()
	params := sampleParams()[:3]

	// A directory that does not exist.
	if err := Save(filepath.Join(dir, "nope", "m.ckpt"), params, nil); err == nil {
		t.Error("saved into a missing directory")
	}
	// A destination that is a directory.
	sub := filepath.Join(dir, "d.safetensors")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Save(sub, params, nil); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Errorf("saving over a directory: %v", err)
	}
	if fi, err := os.Stat(sub); err != nil || !fi.IsDir() {
		t.Error("the directory was replaced")
	}
	if names := dirNames(t, dir); !slices.Equal(names, []string{"d.safetensors"}) {
		t.Errorf("directory holds %v", names)
	}

	// An unwritable directory (permissions do not stop root).
	ro := filepath.Join(dir, "ro")
	if err := os.Mkdir(ro, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(ro, "m.ckpt")
	if err := Save(path, params, nil); err != nil {
		t.Fatal(err)
	}
	oldBytes, _ := os.ReadFile(path)
	if err := os.Chmod(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(ro, 0o755)
	if os.Geteuid() == 0 {
		t.Log("running as root: skipping the unwritable-directory case")
		return
	}
	if err := Save(path, sampleParams(), nil); err == nil {
		t.Fatal("saved into an unwritable directory")
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, oldBytes) {
		t.Fatal("the old checkpoint was clobbered")
	}
	if names := dirNames(t, ro); !slices.Equal(names, []string{"m.ckpt"}) {
		t.Errorf("directory holds %v", names)
	}
}

func TestAtomicWriteReplaces(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.safetensors")
	for i := range 3 {
		ps := []Param{{"x", tensor.Full(tensor.Float32, float64(i), 4)}}
		if err := Save(path, ps, nil); err != nil {
			t.Fatal(err)
		}
		got, _, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		checkSameParams(t, got, ps)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", fi.Mode().Perm())
	}
}
