package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/sporeml/spore/serve"
	"github.com/sporeml/spore/tensor"
)

// Client talks to an Open Inference Protocol server over one transport,
// HTTP/REST or gRPC. Its methods are safe to call from many goroutines.
type Client struct {
	tr transport
}

// transport is one protocol binding.
type transport interface {
	live(ctx context.Context) (bool, error)
	ready(ctx context.Context) (bool, error)
	modelReady(ctx context.Context, model, version string) (bool, error)
	serverMetadata(ctx context.Context) (serve.ServerMetadata, error)
	modelMetadata(ctx context.Context, model, version string) (serve.ModelMetadata, error)
	infer(ctx context.Context, model, version string, inputs []Input, outputs []string) (*Result, error)
	index(ctx context.Context, readyOnly bool) ([]serve.IndexEntry, error)
	load(ctx context.Context, model string) error
	unload(ctx context.Context, model string) error
	close() error
}

// Option configures a Client. An option that concerns the other transport
// only (WithJSON for a gRPC client, WithDialOptions for an HTTP one) is
// ignored.
type Option func(*options)

type options struct {
	httpClient  *http.Client
	json        bool
	dial        []grpc.DialOption
	maxResponse int64
}

// defaultMaxResponse bounds a response the client reads unless
// WithMaxResponseBytes says otherwise: large enough for any batch a
// server would send, small enough that a confused server cannot exhaust
// the client's memory.
const defaultMaxResponse = 1 << 30

// WithHTTPClient makes an HTTP Client send its requests through c (for
// its timeouts, transport or TLS settings) instead of
// http.DefaultClient.
func WithHTTPClient(c *http.Client) Option { return func(o *options) { o.httpClient = c } }

// WithJSON makes an HTTP Client send and ask for tensors as JSON "data"
// instead of Triton's binary-data extension. Binary is the default: it
// is smaller and faster to encode and decode, and exact for every
// datatype. JSON is for servers without the extension. FP16 and BF16
// tensors go as JSON numbers, which spore's server reads but the protocol
// leaves undefined (Triton refuses them in JSON).
func WithJSON() Option { return func(o *options) { o.json = true } }

// WithDialOptions adds options to a gRPC Client's connection, after the
// defaults (plaintext credentials, responses up to the maximum response
// size), so that they override them: grpc.WithTransportCredentials for
// TLS, say.
func WithDialOptions(opts ...grpc.DialOption) Option {
	return func(o *options) { o.dial = append(o.dial, opts...) }
}

// WithMaxResponseBytes bounds the size of a response the client accepts
// (1 GiB unless set).
func WithMaxResponseBytes(n int64) Option { return func(o *options) { o.maxResponse = n } }

func buildOptions(opts []Option) options {
	o := options{httpClient: http.DefaultClient, maxResponse: defaultMaxResponse}
	for _, f := range opts {
		f(&o)
	}
	if o.httpClient == nil {
		o.httpClient = http.DefaultClient
	}
	if o.maxResponse <= 0 {
		o.maxResponse = defaultMaxResponse
	}
	return o
}

// Input is one input tensor of a request.
type Input struct {
	Name   string
	Tensor *tensor.Tensor
}

// Output is one output tensor of a response.
type Output struct {
	Name string
	// Datatype and Shape are as the server declared them; Tensor holds
	// the data with that shape and the dtype Datatype names.
	Datatype string
	Shape    []int64
	Tensor   *tensor.Tensor
}

// Result is an inference response.
type Result struct {
	// Model and Version name what ran; ID is the request's identifier,
	// if the server returned one.
	Model, Version, ID string
	Outputs            []Output
}

// Output returns the output named name, or nil when the response has
// none.
func (r *Result) Output(name string) *tensor.Tensor {
	for _, o := range r.Outputs {
		if o.Name == name {
			return o.Tensor
		}
	}
	return nil
}

// Error is an error the server answered with: its HTTP status (for a
// gRPC server, the status its code stands for), its gRPC code (for an
// HTTP server, the code its status stands for, as serve.GRPCCode maps
// them) and its message.
type Error struct {
	Status int
	Code   codes.Code
	Msg    string
}

// Error says what the server answered: "server answered 404 Not Found:
// unknown model ...".
func (e *Error) Error() string {
	return fmt.Sprintf("server answered %d %s: %s", e.Status, http.StatusText(e.Status), e.Msg)
}

// StatusOf returns the HTTP status of an error the server answered with,
// or 0 for any other error (the server could not be reached, the request
// was not sent).
func StatusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// httpError is the Error for an HTTP status and message.
func httpError(st int, msg string) *Error {
	return &Error{Status: st, Code: serve.GRPCCode(&serve.Error{Status: st}), Msg: msg}
}

// statusOfCode maps a gRPC code to the HTTP status it stands for, the
// inverse of serve.GRPCCode where that is one-to-one.
func statusOfCode(c codes.Code) int {
	switch c {
	case codes.OK:
		return http.StatusOK
	case codes.InvalidArgument, codes.FailedPrecondition, codes.OutOfRange:
		return http.StatusBadRequest
	case codes.Unauthenticated:
		return http.StatusUnauthorized
	case codes.PermissionDenied:
		return http.StatusForbidden
	case codes.NotFound:
		return http.StatusNotFound
	case codes.AlreadyExists, codes.Aborted:
		return http.StatusConflict
	case codes.ResourceExhausted:
		return http.StatusTooManyRequests
	case codes.Canceled:
		return serve.StatusClientClosedRequest
	case codes.Unimplemented:
		return http.StatusNotImplemented
	case codes.Unavailable:
		return http.StatusServiceUnavailable
	case codes.DeadlineExceeded:
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}

// Close releases the client's connections.
func (c *Client) Close() error { return c.tr.close() }

// Live reports whether the server is live.
func (c *Client) Live(ctx context.Context) (bool, error) { return c.tr.live(ctx) }

// Ready reports whether the server is ready for inference.
func (c *Client) Ready(ctx context.Context) (bool, error) { return c.tr.ready(ctx) }

// ModelReady reports whether a model version (empty: the one the
// server's policy serves) is ready. An unknown model is an *Error with
// status 404, not false.
func (c *Client) ModelReady(ctx context.Context, model, version string) (bool, error) {
	if model == "" {
		return false, errors.New("client: ModelReady: the model name is empty")
	}
	return c.tr.modelReady(ctx, model, version)
}

// ServerMetadata describes the server.
func (c *Client) ServerMetadata(ctx context.Context) (serve.ServerMetadata, error) {
	return c.tr.serverMetadata(ctx)
}

// ModelMetadata describes a model version (empty: the one the server's
// policy serves).
func (c *Client) ModelMetadata(ctx context.Context, model, version string) (serve.ModelMetadata, error) {
	if model == "" {
		return serve.ModelMetadata{}, errors.New("client: ModelMetadata: the model name is empty")
	}
	return c.tr.modelMetadata(ctx, model, version)
}

// Infer runs model (version: empty for the one the server's policy
// serves) on the inputs and returns the outputs named, or all of them
// when none are. The context's deadline is the request's: gRPC carries it
// to the server, and over HTTP it is sent as the "timeout" parameter, so
// that the server drops a request its client has given up on.
func (c *Client) Infer(ctx context.Context, model, version string, inputs []Input, outputs ...string) (*Result, error) {
	if model == "" {
		return nil, errors.New("client: Infer: the model name is empty")
	}
	seen := make(map[string]bool, len(inputs))
	for i, in := range inputs {
		switch {
		case in.Name == "":
			return nil, fmt.Errorf("client: Infer: input %d has no name", i)
		case in.Tensor == nil:
			return nil, fmt.Errorf("client: Infer: input %q has no tensor", in.Name)
		case in.Tensor.IsSymbolic():
			return nil, fmt.Errorf("client: Infer: input %q is a symbolic tensor of a traced function; send a concrete one", in.Name)
		case seen[in.Name]:
			return nil, fmt.Errorf("client: Infer: input %q is given twice", in.Name)
		}
		seen[in.Name] = true
		if _, err := serve.DTypeOf(serve.Datatype(in.Tensor.DType())); err != nil {
			return nil, fmt.Errorf("client: Infer: input %q: the protocol has no datatype for %v", in.Name, in.Tensor.DType())
		}
	}
	return c.tr.infer(ctx, model, version, inputs, outputs)
}

// Index lists the server's models (only those ready for inference, with
// readyOnly), through the protocol's repository extension.
func (c *Client) Index(ctx context.Context, readyOnly bool) ([]serve.IndexEntry, error) {
	return c.tr.index(ctx, readyOnly)
}

// Load asks the server to load a model from its repository, or reload
// it.
func (c *Client) Load(ctx context.Context, model string) error {
	if model == "" {
		return errors.New("client: Load: the model name is empty")
	}
	return c.tr.load(ctx, model)
}

// Unload asks the server to stop serving a model.
func (c *Client) Unload(ctx context.Context, model string) error {
	if model == "" {
		return errors.New("client: Unload: the model name is empty")
	}
	return c.tr.unload(ctx, model)
}

// shapeOf is t's shape in the protocol's form.
func shapeOf(t *tensor.Tensor) []int64 {
	s := make([]int64, t.Rank())
	for i, d := range t.Shape() {
		s[i] = int64(d)
	}
	return s
}
