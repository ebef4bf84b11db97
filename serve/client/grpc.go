package client

import (
	"context"
	"fmt"
	"math"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/sporeml/spore/serve"
	"github.com/sporeml/spore/serve/internal/pb"
	"github.com/sporeml/spore/tensor"
)

// NewGRPC returns a Client for the gRPC server at target ("HOST:PORT", or
// any target grpc.NewClient takes). It connects lazily, on the first
// call, so a server that is down shows as that call's error. It sends
// plaintext unless WithDialOptions gives credentials.
func NewGRPC(target string, opts ...Option) (*Client, error) {
	if target == "" {
		return nil, fmt.Errorf("client: NewGRPC: the target is empty; want HOST:PORT")
	}
	o := buildOptions(opts)
	dial := append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(int(min(o.maxResponse, math.MaxInt32)))),
	}, o.dial...)
	conn, err := grpc.NewClient(target, dial...)
	if err != nil {
		return nil, fmt.Errorf("client: NewGRPC %s: %v", target, err)
	}
	return &Client{tr: &grpcTransport{conn: conn, c: pb.NewGRPCInferenceServiceClient(conn), maxElems: o.maxResponse}}, nil
}

type grpcTransport struct {
	conn *grpc.ClientConn
	c    pb.GRPCInferenceServiceClient
	// maxElems bounds an output's declared elements, so that a typed
	// response's shape is checked before its tensor is allocated.
	maxElems int64
}

// grpcErr is a call's error as an *Error carrying its status. gRPC gives
// a server it could not reach the same Unavailable code a server answers
// with; the message tells them apart, so that a refused connection does
// not read as "server answered 503".
func grpcErr(err error) error {
	s, ok := status.FromError(err)
	if !ok {
		return err
	}
	if s.Code() == codes.Unavailable && (strings.HasPrefix(s.Message(), "connection error") || strings.Contains(s.Message(), "name resolver")) {
		return fmt.Errorf("client: cannot reach the gRPC server: %s", s.Message())
	}
	return &Error{Status: statusOfCode(s.Code()), Code: s.Code(), Msg: s.Message()}
}

func (g *grpcTransport) close() error { return g.conn.Close() }

func (g *grpcTransport) live(ctx context.Context) (bool, error) {
	r, err := g.c.ServerLive(ctx, &pb.ServerLiveRequest{})
	if err != nil {
		return false, grpcErr(err)
	}
	return r.GetLive(), nil
}

func (g *grpcTransport) ready(ctx context.Context) (bool, error) {
	r, err := g.c.ServerReady(ctx, &pb.ServerReadyRequest{})
	if err != nil {
		return false, grpcErr(err)
	}
	return r.GetReady(), nil
}

func (g *grpcTransport) modelReady(ctx context.Context, model, version string) (bool, error) {
	r, err := g.c.ModelReady(ctx, &pb.ModelReadyRequest{Name: model, Version: version})
	if err != nil {
		return false, grpcErr(err)
	}
	return r.GetReady(), nil
}

func (g *grpcTransport) serverMetadata(ctx context.Context) (serve.ServerMetadata, error) {
	r, err := g.c.ServerMetadata(ctx, &pb.ServerMetadataRequest{})
	if err != nil {
		return serve.ServerMetadata{}, grpcErr(err)
	}
	return serve.ServerMetadata{Name: r.GetName(), Version: r.GetVersion(), Extensions: r.GetExtensions()}, nil
}

func (g *grpcTransport) modelMetadata(ctx context.Context, model, version string) (serve.ModelMetadata, error) {
	r, err := g.c.ModelMetadata(ctx, &pb.ModelMetadataRequest{Name: model, Version: version})
	if err != nil {
		return serve.ModelMetadata{}, grpcErr(err)
	}
	conv := func(ts []*pb.ModelMetadataResponse_TensorMetadata) []serve.TensorMetadata {
		out := make([]serve.TensorMetadata, len(ts))
		for i, t := range ts {
			out[i] = serve.TensorMetadata{Name: t.GetName(), Datatype: t.GetDatatype(), Shape: t.GetShape()}
		}
		return out
	}
	return serve.ModelMetadata{
		Name: r.GetName(), Versions: r.GetVersions(), Platform: r.GetPlatform(),
		Inputs: conv(r.GetInputs()), Outputs: conv(r.GetOutputs()),
	}, nil
}

// infer sends every input as raw_input_contents: the one form every
// datatype has, and the cheapest to encode.
func (g *grpcTransport) infer(ctx context.Context, model, version string, inputs []Input, outputs []string) (*Result, error) {
	req := &pb.ModelInferRequest{ModelName: model, ModelVersion: version}
	req.Inputs = make([]*pb.ModelInferRequest_InferInputTensor, len(inputs))
	req.RawInputContents = make([][]byte, len(inputs))
	for i, in := range inputs {
		t := in.Tensor
		req.Inputs[i] = &pb.ModelInferRequest_InferInputTensor{Name: in.Name, Datatype: serve.Datatype(t.DType()), Shape: shapeOf(t)}
		req.RawInputContents[i] = serve.AppendRaw(make([]byte, 0, t.Size()*t.DType().Size()), t)
	}
	for _, name := range outputs {
		req.Outputs = append(req.Outputs, &pb.ModelInferRequest_InferRequestedOutputTensor{Name: name})
	}
	r, err := g.c.ModelInfer(ctx, req)
	if err != nil {
		return nil, grpcErr(err)
	}
	res := &Result{Model: r.GetModelName(), Version: r.GetModelVersion(), ID: r.GetId()}
	raw := r.GetRawOutputContents()
	if len(raw) > 0 && len(raw) != len(r.GetOutputs()) {
		return nil, fmt.Errorf("client: the server's response has %d raw_output_contents for %d outputs", len(raw), len(r.GetOutputs()))
	}
	for i, o := range r.GetOutputs() {
		what := fmt.Sprintf("output %q of the response", o.GetName())
		var t *tensor.Tensor
		if len(raw) > 0 {
			t, err = serve.FromRaw(what, o.GetDatatype(), o.GetShape(), raw[i], g.maxElems)
		} else {
			t, err = fromContents(what, o.GetDatatype(), o.GetShape(), o.GetContents(), g.maxElems)
		}
		if err != nil {
			return nil, fmt.Errorf("client: %v", err)
		}
		res.Outputs = append(res.Outputs, Output{Name: o.GetName(), Datatype: o.GetDatatype(), Shape: o.GetShape(), Tensor: t})
	}
	return res, nil
}

// fromContents decodes typed output contents, which spore's server and
// Triton never send but the protocol allows (KServe's Python server does).
func fromContents(what, datatype string, shape []int64, c *pb.InferTensorContents, limit int64) (*tensor.Tensor, error) {
	dt, err := serve.DTypeOf(datatype)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", what, err)
	}
	n, err := serve.Elements(what, shape, limit)
	if err != nil {
		return nil, err
	}
	dims := make([]int, len(shape))
	for i, d := range shape {
		dims[i] = int(d)
	}
	t := tensor.New(dt, dims...)
	var got int
	switch d := t.Data().(type) {
	case []bool:
		got = max(copy(d, c.GetBoolContents()), len(c.GetBoolContents()))
	case []uint8:
		u := c.GetUintContents()
		for i := range min(len(u), n) {
			if u[i] > math.MaxUint8 {
				return nil, fmt.Errorf("%s: element %d is %d, out of UINT8's range", what, i, u[i])
			}
			d[i] = uint8(u[i])
		}
		got = len(u)
	case []int32:
		got = max(copy(d, c.GetIntContents()), len(c.GetIntContents()))
	case []int64:
		got = max(copy(d, c.GetInt64Contents()), len(c.GetInt64Contents()))
	case []float32:
		got = max(copy(d, c.GetFp32Contents()), len(c.GetFp32Contents()))
	case []float64:
		got = max(copy(d, c.GetFp64Contents()), len(c.GetFp64Contents()))
	default:
		return nil, fmt.Errorf("%s: datatype %s came without raw_output_contents, and it has no typed form", what, datatype)
	}
	if got != n {
		return nil, fmt.Errorf("%s: %s%v needs %d elements, the contents have %d", what, datatype, shape, n, got)
	}
	return t, nil
}

func (g *grpcTransport) index(ctx context.Context, readyOnly bool) ([]serve.IndexEntry, error) {
	r, err := g.c.RepositoryIndex(ctx, &pb.RepositoryIndexRequest{Ready: readyOnly})
	if err != nil {
		return nil, grpcErr(err)
	}
	out := make([]serve.IndexEntry, len(r.GetModels()))
	for i, m := range r.GetModels() {
		out[i] = serve.IndexEntry{Name: m.GetName(), Version: m.GetVersion(), State: m.GetState(), Reason: m.GetReason()}
	}
	return out, nil
}

func (g *grpcTransport) load(ctx context.Context, model string) error {
	_, err := g.c.RepositoryModelLoad(ctx, &pb.RepositoryModelLoadRequest{ModelName: model})
	if err != nil {
		return grpcErr(err)
	}
	return nil
}

func (g *grpcTransport) unload(ctx context.Context, model string) error {
	_, err := g.c.RepositoryModelUnload(ctx, &pb.RepositoryModelUnloadRequest{ModelName: model})
	if err != nil {
		return grpcErr(err)
	}
	return nil
}
