package serve

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// This file is the contract between the server's front ends (HTTP/REST in
// http.go, gRPC in grpc.go) and its core (repository, batching, metrics):
// both front ends decode a request into an InferRequest, hand it to
// Server.Infer, and encode the InferResponse; every other endpoint is one
// Server method. The wire helpers at the end convert the protocol's raw
// little-endian tensor contents, which HTTP's binary-data extension and
// gRPC's raw_input_contents share.

// Error is an error the protocol reports to a client: the HTTP status it
// is answered with (gRPC maps it to a status code, see GRPCCode) and a
// message naming what was wrong. It never carries a Go panic.
type Error struct {
	// Status is the HTTP status code: 400 for a bad request, 404 for an
	// unknown model or version, 429 when a model's queue is full, 503 when
	// the server or model is not ready, 504 when a deadline passed, 500 for
	// a failure inside the model.
	Status int
	// Msg says what was wrong and where.
	Msg string
}

func (e *Error) Error() string { return e.Msg }

// errorf returns an *Error with the status and a formatted message.
func errorf(status int, format string, args ...any) *Error {
	return &Error{Status: status, Msg: fmt.Sprintf(format, args...)}
}

// InferInput is one input tensor of a request, decoded and checked: its
// shape and datatype agree with its data.
type InferInput struct {
	Name     string
	Datatype string
	Shape    []int64
	// Tensor holds the data, with Shape and the dtype Datatype names.
	Tensor *tensor.Tensor
	// Parameters are the input's protocol parameters, if any.
	Parameters map[string]any
}

// RequestedOutput names one output a request asks for.
type RequestedOutput struct {
	Name string
	// Binary asks for the output as binary data (HTTP's binary-data
	// extension); the gRPC front end ignores it.
	Binary     bool
	Parameters map[string]any
}

// InferRequest is a decoded inference request.
type InferRequest struct {
	ID string
	// Model and Version name what to run; an empty Version means the
	// version the model's policy serves (the highest, unless its config
	// says otherwise).
	Model, Version string
	Inputs         []InferInput
	// Outputs lists the outputs to return; empty means all of them.
	Outputs    []RequestedOutput
	Parameters map[string]any
	// Arrived, if set, is the withdrawal Backend.Expect returned for this
	// request: Infer calls it once the request is queued (or refused), so
	// that a batch being formed stops waiting for it.
	Arrived func()
}

// InferOutput is one output tensor of a response.
type InferOutput struct {
	Name     string
	Datatype string
	Shape    []int64
	Tensor   *tensor.Tensor
	// Binary says the client asked for this output as binary data.
	Binary bool
}

// InferResponse is the result of an inference request.
type InferResponse struct {
	ModelName, ModelVersion, ID string
	Outputs                     []InferOutput
}

// TensorMetadata describes one input or output of a model; a variable
// dimension is -1.
type TensorMetadata struct {
	Name     string  `json:"name"`
	Datatype string  `json:"datatype"`
	Shape    []int64 `json:"shape"`
}

// ModelMetadata is the protocol's model metadata response.
type ModelMetadata struct {
	Name     string           `json:"name"`
	Versions []string         `json:"versions,omitempty"`
	Platform string           `json:"platform"`
	Inputs   []TensorMetadata `json:"inputs"`
	Outputs  []TensorMetadata `json:"outputs"`
}

// ServerMetadata is the protocol's server metadata response.
type ServerMetadata struct {
	Name       string   `json:"name"`
	Version    string   `json:"version"`
	Extensions []string `json:"extensions"`
}

// IndexEntry is one model version in the repository index (the
// protocol's repository extension).
type IndexEntry struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	State   string `json:"state,omitempty"` // "READY", "UNAVAILABLE", "LOADING", "UNLOADING"
	Reason  string `json:"reason,omitempty"`
}

// Backend is what the front ends serve: the server core implements it
// (Server), and a front end's tests may use a fake. Each method returns an
// *Error (possibly wrapped) on failure.
type Backend interface {
	// Live and Ready are the server's health.
	Live() bool
	Ready() bool
	// ModelReady returns nil when the model version is ready, a 404 *Error
	// for an unknown one, a 503 for one that is not ready.
	ModelReady(name, version string) error
	ServerMetadata() ServerMetadata
	ModelMetadata(name, version string) (ModelMetadata, error)
	// Infer runs a request, batched with others as the model's config
	// says. It returns when the response is ready, when ctx is done (its
	// deadline passed, or the client went away: the request is then
	// dropped from the queue), or at once with a 429 *Error when the
	// model's queue is full.
	Infer(ctx context.Context, req *InferRequest) (*InferResponse, error)
	// Expect announces a request for the model that a front end has
	// begun to receive and decode, so that a batch being formed for that
	// model waits for it (up to max_queue_delay) rather than leaving
	// without it, and leaves at once when nothing is on its way. The
	// returned function withdraws the announcement; the front end sets it
	// as the request's Arrived and also calls it when it refuses the
	// request itself. It may be called more than once.
	Expect(model, version string) (withdraw func())
	// Index, Load and Unload are the protocol's repository extension.
	Index(readyOnly bool) []IndexEntry
	Load(name string) error
	Unload(name string) error
	// Reject counts a request a front end refused before it reached Infer
	// (a body that does not parse, a shape that does not fit its data) in
	// the failure metrics, by model and reason (the error's status).
	Reject(model, version string, err error)
}

// Limits bound what a front end accepts, so that a client cannot make the
// server allocate out of proportion to what it sent.
type Limits struct {
	// MaxBodyBytes bounds a request body (HTTP) or message (gRPC); 0
	// means 64 MiB.
	MaxBodyBytes int64
	// MaxElements bounds the elements of one declared tensor; 0 means
	// 1<<26.
	MaxElements int64
	// MaxJSONDepth bounds the nesting of a JSON body; 0 means 64.
	MaxJSONDepth int
	// DefaultTimeout is a request's deadline when it names none (a
	// "timeout" request parameter in microseconds, as Triton takes, or
	// gRPC's own deadline); 0 means 60 s.
	DefaultTimeout time.Duration
}

// WithDefaults returns l with its zero fields set to their defaults.
func (l Limits) WithDefaults() Limits {
	if l.MaxBodyBytes <= 0 {
		l.MaxBodyBytes = 64 << 20
	}
	if l.MaxElements <= 0 {
		l.MaxElements = 1 << 26
	}
	if l.MaxJSONDepth <= 0 {
		l.MaxJSONDepth = 64
	}
	if l.DefaultTimeout <= 0 {
		l.DefaultTimeout = 60 * time.Second
	}
	return l
}

var _ Backend = (*Server)(nil)

// StatusOf returns the HTTP status an error is answered with: its own for
// an *Error, 500 otherwise.
func StatusOf(err error) int {
	var e *Error
	if asError(err, &e) {
		return e.Status
	}
	return http.StatusInternalServerError
}

// DTypeOf returns the spore dtype of a protocol datatype name ("FP32",
// "INT64", ...), or a 400 *Error naming it when spore has no such dtype.
func DTypeOf(datatype string) (tensor.DType, error) {
	switch datatype {
	case "BOOL":
		return tensor.Bool, nil
	case "UINT8":
		return tensor.Uint8, nil
	case "INT32":
		return tensor.Int32, nil
	case "INT64":
		return tensor.Int64, nil
	case "FP16":
		return tensor.Float16, nil
	case "BF16":
		return tensor.BFloat16, nil
	case "FP32":
		return tensor.Float32, nil
	case "FP64":
		return tensor.Float64, nil
	case "INT8", "INT16", "UINT16", "UINT32", "UINT64", "BYTES":
		return tensor.Invalid, errorf(http.StatusBadRequest, "datatype %s is not supported by this server (it takes BOOL, UINT8, INT32, INT64, FP16, BF16, FP32, FP64)", datatype)
	}
	return tensor.Invalid, errorf(http.StatusBadRequest, "unknown datatype %q", datatype)
}

// Datatype returns the protocol's name for a spore dtype.
func Datatype(dt tensor.DType) string {
	switch dt {
	case tensor.Bool:
		return "BOOL"
	case tensor.Uint8:
		return "UINT8"
	case tensor.Int32:
		return "INT32"
	case tensor.Int64:
		return "INT64"
	case tensor.Float16:
		return "FP16"
	case tensor.BFloat16:
		return "BF16"
	case tensor.Float32:
		return "FP32"
	case tensor.Float64:
		return "FP64"
	}
	return dt.String()
}

// Elements checks a declared shape and returns its element count: every
// dimension non-negative and the count at most limit. It is called before
// anything is allocated for the tensor, so that a request declaring a huge
// shape is refused rather than served out of memory.
func Elements(what string, shape []int64, limit int64) (int, error) {
	n := int64(1)
	for _, d := range shape {
		if d < 0 {
			return 0, errorf(http.StatusBadRequest, "%s: shape %v has a negative dimension", what, shape)
		}
		if d != 0 && n > limit/d {
			return 0, errorf(http.StatusBadRequest, "%s: shape %v has more than %d elements", what, shape, limit)
		}
		n *= d
	}
	if n > limit {
		return 0, errorf(http.StatusBadRequest, "%s: shape %v has more than %d elements", what, shape, limit)
	}
	return int(n), nil
}

// Declared checks a tensor's declared datatype and shape before anything
// is allocated for it, and returns its dtype and element count (see
// Elements); an error is a 400 *Error naming what.
func Declared(what, datatype string, shape []int64, limit int64) (tensor.DType, int, error) {
	dt, err := DTypeOf(datatype)
	if err != nil {
		return tensor.Invalid, 0, errorf(http.StatusBadRequest, "%s: %v", what, err)
	}
	n, err := Elements(what, shape, limit)
	if err != nil {
		return tensor.Invalid, 0, err
	}
	return dt, n, nil
}

// FromRaw decodes a tensor from the protocol's raw contents: the elements
// in row-major order, little-endian, one byte per BOOL. The length of raw
// must be exactly what the shape and datatype need.
func FromRaw(what, datatype string, shape []int64, raw []byte, limit int64) (*tensor.Tensor, error) {
	dt, n, err := Declared(what, datatype, shape, limit)
	if err != nil {
		return nil, err
	}
	if want := n * dt.Size(); len(raw) != want {
		return nil, errorf(http.StatusBadRequest, "%s: %s%v needs %d bytes of data, got %d", what, datatype, shape, want, len(raw))
	}
	dims := make([]int, len(shape))
	for i, d := range shape {
		dims[i] = int(d)
	}
	t := tensor.New(dt, dims...)
	le := binary.LittleEndian
	switch d := t.Data().(type) {
	case []float32:
		for i := range d {
			d[i] = math.Float32frombits(le.Uint32(raw[4*i:]))
		}
	case []float64:
		for i := range d {
			d[i] = math.Float64frombits(le.Uint64(raw[8*i:]))
		}
	case []int32:
		for i := range d {
			d[i] = int32(le.Uint32(raw[4*i:]))
		}
	case []int64:
		for i := range d {
			d[i] = int64(le.Uint64(raw[8*i:]))
		}
	case []uint8:
		copy(d, raw)
	case []bool:
		for i := range d {
			switch raw[i] {
			case 0:
			case 1:
				d[i] = true
			default:
				return nil, errorf(http.StatusBadRequest, "%s: BOOL element %d is byte %d, not 0 or 1", what, i, raw[i])
			}
		}
	case []core.BF16:
		for i := range d {
			d[i] = core.BF16(le.Uint16(raw[2*i:]))
		}
	case []core.F16:
		for i := range d {
			d[i] = core.F16(le.Uint16(raw[2*i:]))
		}
	default:
		return nil, errorf(http.StatusBadRequest, "%s: datatype %s has no raw form here", what, datatype)
	}
	return t, nil
}

// AppendRaw appends t's elements to buf in the protocol's raw form (see
// FromRaw) and returns the extended buffer.
func AppendRaw(buf []byte, t *tensor.Tensor) []byte {
	le := binary.LittleEndian
	switch d := t.Data().(type) {
	case []float32:
		for _, v := range d {
			buf = le.AppendUint32(buf, math.Float32bits(v))
		}
	case []float64:
		for _, v := range d {
			buf = le.AppendUint64(buf, math.Float64bits(v))
		}
	case []int32:
		for _, v := range d {
			buf = le.AppendUint32(buf, uint32(v))
		}
	case []int64:
		for _, v := range d {
			buf = le.AppendUint64(buf, uint64(v))
		}
	case []uint8:
		buf = append(buf, d...)
	case []bool:
		for _, v := range d {
			b := byte(0)
			if v {
				b = 1
			}
			buf = append(buf, b)
		}
	case []core.BF16:
		for _, v := range d {
			buf = le.AppendUint16(buf, uint16(v))
		}
	case []core.F16:
		for _, v := range d {
			buf = le.AppendUint16(buf, uint16(v))
		}
	}
	return buf
}
