package serve

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// httpFake is the Backend the HTTP tests serve. Its models:
//
//   - "double" (versions "1" and "2"): every input x comes back as output
//     x+"_2x" holding 2·x (BOOL unchanged), in x's datatype and shape;
//   - "sleepy": known but not ready (503);
//   - "slow": Infer waits for its context, and reports how it ended;
//   - "full": Infer refuses with 429, as a full queue does;
//   - "boom": Infer panics;
//   - "fail": Infer returns an error that is not an *Error.
type httpFake struct {
	mu          sync.Mutex
	live, ready bool
	rejects     []httpFakeReject
	loaded      map[string]bool
	// deadline is how far away the last Infer's deadline was.
	deadline time.Duration
	// slowDone receives the context error that ended a "slow" Infer.
	slowDone chan error
}

type httpFakeReject struct {
	model, version string
	status         int
}

func newHTTPFake() *httpFake {
	return &httpFake{live: true, ready: true, loaded: map[string]bool{"double": true}, slowDone: make(chan error, 16)}
}

func (f *httpFake) Live() bool  { return f.live }
func (f *httpFake) Ready() bool { return f.ready }

func (f *httpFake) known(name, version string) error {
	switch name {
	case "double":
		if version == "" || version == "1" || version == "2" {
			return nil
		}
		return errorf(http.StatusNotFound, "model %q has no version %q", name, version)
	case "sleepy", "slow", "full", "boom", "fail":
		if version == "" || version == "1" {
			return nil
		}
	}
	return errorf(http.StatusNotFound, "unknown model %q", name)
}

func (f *httpFake) ModelReady(name, version string) error {
	if err := f.known(name, version); err != nil {
		return err
	}
	if name == "sleepy" {
		return errorf(http.StatusServiceUnavailable, "model %q is not ready", name)
	}
	return nil
}

func (f *httpFake) ServerMetadata() ServerMetadata {
	return ServerMetadata{Name: "fake", Version: "0.0.1", Extensions: []string{"binary_tensor_data", "model_repository"}}
}

func (f *httpFake) ModelMetadata(name, version string) (ModelMetadata, error) {
	if err := f.known(name, version); err != nil {
		return ModelMetadata{}, err
	}
	return ModelMetadata{
		Name: name, Versions: []string{"1", "2"}, Platform: "spore",
		Inputs:  []TensorMetadata{{Name: "x", Datatype: "FP32", Shape: []int64{-1, 4}}},
		Outputs: []TensorMetadata{{Name: "x_2x", Datatype: "FP32", Shape: []int64{-1, 4}}},
	}, nil
}

func (f *httpFake) Infer(ctx context.Context, req *InferRequest) (*InferResponse, error) {
	if dl, ok := ctx.Deadline(); ok {
		f.mu.Lock()
		f.deadline = time.Until(dl)
		f.mu.Unlock()
	}
	if err := f.known(req.Model, req.Version); err != nil {
		return nil, err
	}
	switch req.Model {
	case "sleepy":
		return nil, errorf(http.StatusServiceUnavailable, "model %q is not ready", req.Model)
	case "slow":
		<-ctx.Done()
		f.slowDone <- ctx.Err()
		return nil, ctx.Err()
	case "full":
		return nil, errorf(http.StatusTooManyRequests, "model %q: the queue is full", req.Model)
	case "boom":
		panic("index out of range in a kernel")
	case "fail":
		return nil, errors.New("kernel failed")
	}
	resp := &InferResponse{ModelName: req.Model, ModelVersion: req.Version, ID: req.ID}
	if resp.ModelVersion == "" {
		resp.ModelVersion = "2"
	}
	want := map[string]bool{}
	for _, o := range req.Outputs {
		want[o.Name] = o.Binary
	}
	for _, in := range req.Inputs {
		name := in.Name + "_2x"
		bin, asked := want[name]
		if len(want) > 0 && !asked {
			continue
		}
		delete(want, name)
		resp.Outputs = append(resp.Outputs, InferOutput{Name: name, Datatype: in.Datatype, Shape: in.Shape, Tensor: httpDoubled(in.Tensor), Binary: bin})
	}
	for name := range want {
		return nil, errorf(http.StatusBadRequest, "model %q has no output %q", req.Model, name)
	}
	return resp, nil
}

// httpDoubled returns 2·t in t's dtype (t itself for BOOL).
func httpDoubled(t *tensor.Tensor) *tensor.Tensor {
	out := tensor.New(t.DType(), t.Shape()...)
	switch d := out.Data().(type) {
	case []float32:
		for i, v := range t.Data().([]float32) {
			d[i] = 2 * v
		}
	case []float64:
		for i, v := range t.Data().([]float64) {
			d[i] = 2 * v
		}
	case []int32:
		for i, v := range t.Data().([]int32) {
			d[i] = 2 * v
		}
	case []int64:
		for i, v := range t.Data().([]int64) {
			d[i] = 2 * v
		}
	case []uint8:
		for i, v := range t.Data().([]uint8) {
			d[i] = 2 * v
		}
	case []bool:
		copy(d, t.Data().([]bool))
	case []core.F16:
		for i, v := range t.Data().([]core.F16) {
			d[i] = core.F16From(2 * v.Float32())
		}
	case []core.BF16:
		for i, v := range t.Data().([]core.BF16) {
			d[i] = core.BF16From(2 * v.Float32())
		}
	}
	return out
}

func (f *httpFake) Index(readyOnly bool) []IndexEntry {
	f.mu.Lock()
	defer f.mu.Unlock()
	var idx []IndexEntry
	for _, name := range []string{"double", "sleepy"} {
		state := "UNAVAILABLE"
		if f.loaded[name] {
			state = "READY"
		}
		if readyOnly && state != "READY" {
			continue
		}
		idx = append(idx, IndexEntry{Name: name, Version: "1", State: state})
	}
	return idx
}

func (f *httpFake) Load(name string) error {
	if err := f.known(name, ""); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.loaded[name] = true
	return nil
}

func (f *httpFake) Unload(name string) error {
	if err := f.known(name, ""); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.loaded, name)
	return nil
}

// Expect announces nothing a test checks.
func (f *httpFake) Expect(model, version string) func() { return func() {} }

func (f *httpFake) Reject(model, version string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rejects = append(f.rejects, httpFakeReject{model, version, StatusOf(err)})
}

// takeRejects returns and clears the rejects recorded so far.
func (f *httpFake) takeRejects() []httpFakeReject {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.rejects
	f.rejects = nil
	return r
}
