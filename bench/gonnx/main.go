// Command gonnx times github.com/advancedclimatesystems/gonnx, the
// pure-Go ONNX runtime, on a model and an input, for bench/onnx.sh. It
// lives in its own module so that gonnx and its dependencies never enter
// spore's go.mod.
//
//	go run . -model M.onnx -input X.npy [-name x] [-calls 200] [-rounds 5]
//
// It prints one JSON object: infer_us is the best, over the rounds, of the
// mean time per Run after a warm-up of a tenth of the calls; threads is
// GOMAXPROCS. gonnx can take seconds per call on a CNN, so the calls per
// round are cut to what fits in -budget, judged from the first call (the
// number used is printed as calls). When gonnx cannot load or run the model (v1.1.0 implements
// opset 13 only, without pooling or normalisation ops), the object has
// an "error" field with gonnx's message instead, and the exit status is 1.
package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/advancedclimatesystems/gonnx"
	"gorgonia.org/tensor"
)

// version is the gonnx release go.mod pins.
const version = "v1.1.0"

type result struct {
	Gonnx   string  `json:"gonnx"`
	Threads int     `json:"threads"`
	Batch   int     `json:"batch,omitempty"`
	Calls   int     `json:"calls,omitempty"`
	InferUS float64 `json:"infer_us,omitempty"`
	Error   string  `json:"error,omitempty"`
}

func main() {
	model := flag.String("model", "", "ONNX model (required)")
	input := flag.String("input", "", "float32 .npy input, C order (required)")
	name := flag.String("name", "", "the model's input name (default: its first input)")
	calls := flag.Int("calls", 200, "calls per timing round")
	rounds := flag.Int("rounds", 5, "timing rounds; the best is reported")
	budget := flag.Duration("budget", time.Second, "longest a timing round should take")
	flag.Parse()
	res := result{Gonnx: version, Threads: runtime.GOMAXPROCS(0)}
	if err := run(*model, *input, *name, *calls, *rounds, *budget, &res); err != nil {
		res.Error = err.Error()
		json.NewEncoder(os.Stdout).Encode(res)
		os.Exit(1)
	}
	json.NewEncoder(os.Stdout).Encode(res)
}

func run(modelPath, inputPath, name string, calls, rounds int, budget time.Duration, res *result) error {
	if modelPath == "" || inputPath == "" || calls <= 0 || rounds <= 0 {
		return fmt.Errorf("usage: gonnx -model M.onnx -input X.npy [-name x] [-calls N] [-rounds R]")
	}
	shape, data, err := readNpyF32(inputPath)
	if err != nil {
		return fmt.Errorf("%s: %v", inputPath, err)
	}
	m, err := gonnx.NewModelFromFile(modelPath)
	if err != nil {
		return fmt.Errorf("loading %s: %v", modelPath, err)
	}
	if name == "" {
		names := m.InputNames()
		if len(names) == 0 {
			return fmt.Errorf("%s has no inputs", modelPath)
		}
		name = names[0]
	}
	x := tensor.New(tensor.WithShape(shape...), tensor.WithBacking(data))
	in := gonnx.Tensors{name: x}
	start := time.Now()
	if _, err := m.Run(in); err != nil {
		return fmt.Errorf("running %s: %v", modelPath, err)
	}
	calls = max(1, min(calls, int(budget/max(time.Since(start), 1))))
	for range max(calls/10, 1) {
		m.Run(in)
	}
	best := time.Duration(math.MaxInt64)
	for range rounds {
		start := time.Now()
		for range calls {
			m.Run(in)
		}
		best = min(best, time.Since(start))
	}
	res.Batch, res.Calls = shape[0], calls
	res.InferUS = math.Round(float64(best.Nanoseconds())/float64(calls)/100) / 10
	return nil
}

// readNpyF32 reads a little-endian float32 .npy file in C order, the only
// kind bench/onnx.sh writes.
func readNpyF32(path string) ([]int, []float32, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	var pre [10]byte
	if _, err := io.ReadFull(r, pre[:]); err != nil || string(pre[:6]) != "\x93NUMPY" || pre[6] != 1 {
		return nil, nil, fmt.Errorf("not a version 1.0 .npy file")
	}
	hdr := make([]byte, binary.LittleEndian.Uint16(pre[8:]))
	if _, err := io.ReadFull(r, hdr); err != nil {
		return nil, nil, fmt.Errorf("truncated header")
	}
	h := string(hdr)
	if !strings.Contains(h, "'descr': '<f4'") || !strings.Contains(h, "'fortran_order': False") {
		return nil, nil, fmt.Errorf("want float32 in C order, header %q", h)
	}
	m := regexp.MustCompile(`'shape': \(([\d, ]*)\)`).FindStringSubmatch(h)
	if m == nil {
		return nil, nil, fmt.Errorf("no shape in header %q", h)
	}
	var shape []int
	n := 1
	for _, s := range strings.Split(m[1], ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		d, err := strconv.Atoi(s)
		if err != nil || d <= 0 || d > 1<<24 {
			return nil, nil, fmt.Errorf("bad extent %q", s)
		}
		shape = append(shape, d)
		n *= d
	}
	if len(shape) == 0 || n > 1<<28 {
		return nil, nil, fmt.Errorf("shape %v not supported", shape)
	}
	raw := make([]byte, 4*n)
	if _, err := io.ReadFull(r, raw); err != nil {
		return nil, nil, fmt.Errorf("truncated data")
	}
	data := make([]float32, n)
	for i := range data {
		data[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return shape, data, nil
}
