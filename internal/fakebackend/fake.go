// Package fakebackend is a serve.Backend for the front ends' and the
// client's tests: a few models with fixed behaviour, no repository, no
// batching, and a record of what the front end reported.
//
// The models:
//
//   - "echo" returns every input as the output of the same name (all of
//     them, or those the request names), so a test can round-trip every
//     datatype;
//   - "double" takes one FP32 input "x" and returns "y" = 2x, refusing any
//     other datatype with 400 as the core does;
//   - "slow" waits until the request's context is done and returns 504
//     (recording that it saw the context end, and whether it had a
//     deadline);
//   - "full" refuses with 429, as a full queue does;
//   - "panic" panics inside Infer;
//   - "loading" exists but is not ready (ModelReady 503);
//   - every other name is unknown (404).
package fakebackend

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sporeml/spore/serve"
	"github.com/sporeml/spore/tensor"
)

// Rejection is one Reject call.
type Rejection struct {
	Model, Version string
	Status         int
	Msg            string
}

// Backend is the fake. The zero value is not ready; use New.
type Backend struct {
	mu         sync.Mutex
	rejections []Rejection
	loads      []string
	unloads    []string
	// SlowEnded receives one value per "slow" request when its context
	// ends: whether it had a deadline.
	SlowEnded chan bool
	// lastDeadline is the deadline the last Infer call's context had
	// (zero without one).
	lastDeadline time.Time
	// outstanding counts Expect announcements not yet withdrawn.
	outstanding atomic.Int64
}

// New returns a live, ready fake.
func New() *Backend { return &Backend{SlowEnded: make(chan bool, 16)} }

// Live is always true.
func (b *Backend) Live() bool { return true }

// Ready is always true.
func (b *Backend) Ready() bool { return true }

func known(name string) bool {
	switch name {
	case "echo", "double", "slow", "full", "panic", "loading":
		return true
	}
	return false
}

func notFound(name, version string) error {
	if version != "" {
		return &serve.Error{Status: http.StatusNotFound, Msg: fmt.Sprintf("unknown model %q version %q", name, version)}
	}
	return &serve.Error{Status: http.StatusNotFound, Msg: fmt.Sprintf("unknown model %q", name)}
}

// ModelReady is nil for the models but "loading" (503) and unknown
// names (404); only version "" and "1" exist.
func (b *Backend) ModelReady(name, version string) error {
	switch {
	case !known(name) || (version != "" && version != "1"):
		return notFound(name, version)
	case name == "loading":
		return &serve.Error{Status: http.StatusServiceUnavailable, Msg: fmt.Sprintf("model %q is loading", name)}
	}
	return nil
}

// ServerMetadata names the fake.
func (b *Backend) ServerMetadata() serve.ServerMetadata {
	return serve.ServerMetadata{Name: "fake", Version: "0.1", Extensions: []string{"model_repository", "binary_tensor_data"}}
}

// ModelMetadata describes "double" exactly and the others loosely.
func (b *Backend) ModelMetadata(name, version string) (serve.ModelMetadata, error) {
	if !known(name) || (version != "" && version != "1") {
		return serve.ModelMetadata{}, notFound(name, version)
	}
	m := serve.ModelMetadata{Name: name, Versions: []string{"1"}, Platform: "fake"}
	if name == "double" {
		m.Inputs = []serve.TensorMetadata{{Name: "x", Datatype: "FP32", Shape: []int64{-1, 3}}}
		m.Outputs = []serve.TensorMetadata{{Name: "y", Datatype: "FP32", Shape: []int64{-1, 3}}}
	}
	return m, nil
}

// Deadline returns the deadline of the last Infer call's context.
func (b *Backend) Deadline() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lastDeadline
}

// Infer runs the fake models.
func (b *Backend) Infer(ctx context.Context, req *serve.InferRequest) (*serve.InferResponse, error) {
	d, _ := ctx.Deadline()
	b.mu.Lock()
	b.lastDeadline = d
	b.mu.Unlock()
	if err := b.ModelReady(req.Model, req.Version); err != nil {
		return nil, err
	}
	res := &serve.InferResponse{ModelName: req.Model, ModelVersion: "1", ID: req.ID}
	switch req.Model {
	case "echo":
		want, missing := map[string]bool{}, map[string]bool{}
		for _, o := range req.Outputs {
			want[o.Name], missing[o.Name] = true, true
		}
		for _, in := range req.Inputs {
			if len(want) > 0 && !want[in.Name] {
				continue
			}
			delete(missing, in.Name)
			res.Outputs = append(res.Outputs, serve.InferOutput{Name: in.Name, Datatype: in.Datatype, Shape: in.Shape, Tensor: in.Tensor})
		}
		for name := range missing {
			return nil, &serve.Error{Status: http.StatusBadRequest, Msg: fmt.Sprintf("model echo has no output %q", name)}
		}
	case "double":
		if len(req.Inputs) != 1 || req.Inputs[0].Name != "x" {
			return nil, &serve.Error{Status: http.StatusBadRequest, Msg: "model double takes one input, x"}
		}
		x := req.Inputs[0]
		if x.Datatype != "FP32" {
			return nil, &serve.Error{Status: http.StatusBadRequest, Msg: fmt.Sprintf("model double: input x is FP32, got %s", x.Datatype)}
		}
		if len(x.Shape) != 2 || x.Shape[1] != 3 {
			return nil, &serve.Error{Status: http.StatusBadRequest, Msg: fmt.Sprintf("model double: input x has shape [-1 3], got %v", x.Shape)}
		}
		xs := x.Tensor.Float32s()
		for i := range xs {
			xs[i] *= 2
		}
		y := tensor.FromSlice(xs, x.Tensor.Shape()...)
		res.Outputs = []serve.InferOutput{{Name: "y", Datatype: "FP32", Shape: x.Shape, Tensor: y}}
	case "slow":
		<-ctx.Done()
		b.SlowEnded <- !d.IsZero()
		return nil, &serve.Error{Status: http.StatusGatewayTimeout, Msg: fmt.Sprintf("model slow: %v", ctx.Err())}
	case "full":
		return nil, &serve.Error{Status: http.StatusTooManyRequests, Msg: "model full: the queue is full"}
	case "panic":
		var m map[string]int
		m["boom"]++ // a nil-map write: a runtime panic, as a bug would be
	}
	return res, nil
}

// Index lists the models.
func (b *Backend) Index(readyOnly bool) []serve.IndexEntry {
	out := []serve.IndexEntry{{Name: "double", Version: "1", State: "READY"}, {Name: "echo", Version: "1", State: "READY"}}
	if !readyOnly {
		out = append(out, serve.IndexEntry{Name: "loading", Version: "1", State: "LOADING", Reason: "warming up"})
	}
	return out
}

// Load records the call; an unknown model is 404.
func (b *Backend) Load(name string) error {
	if !known(name) {
		return notFound(name, "")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.loads = append(b.loads, name)
	return nil
}

// Unload records the call; an unknown model is 404.
func (b *Backend) Unload(name string) error {
	if !known(name) {
		return notFound(name, "")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.unloads = append(b.unloads, name)
	return nil
}

// Expect counts an announced request until its withdrawal is called
// (Outstanding).
func (b *Backend) Expect(model, version string) func() {
	b.outstanding.Add(1)
	var done atomic.Bool
	return func() {
		if done.CompareAndSwap(false, true) {
			b.outstanding.Add(-1)
		}
	}
}

// Outstanding is the number of Expect announcements not yet withdrawn:
// zero once every request a front end took has been answered or refused.
func (b *Backend) Outstanding() int64 { return b.outstanding.Load() }

// Reject records the call.
func (b *Backend) Reject(model, version string, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.rejections = append(b.rejections, Rejection{Model: model, Version: version, Status: serve.StatusOf(err), Msg: err.Error()})
}

// Rejections returns the Reject calls so far.
func (b *Backend) Rejections() []Rejection {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Rejection(nil), b.rejections...)
}

// Loads and Unloads return the model names loaded and unloaded so far.
func (b *Backend) Loads() (loads, unloads []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.loads...), append([]string(nil), b.unloads...)
}
