package serve

import (
	"context"
	"errors"
	"fmt"
	"log"
	"math"
	"net/http"
	"runtime/debug"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"

	"github.com/sporeml/spore/serve/internal/pb"
	"github.com/sporeml/spore/tensor"
)

// This file is the gRPC front end: the protocol's GRPCInferenceService
// (serve/internal/pb, generated from grpc_predict_v2.proto) served from a
// Backend. A request is decoded and checked here, as the HTTP front end
// does, so that the core sees the same InferRequest whichever transport
// it came by.

// GRPCServerOptions returns the options a grpc.Server serving the
// protocol should be made with:
//
//   - a maximum received message of lim.MaxBodyBytes, the gRPC form of the
//     HTTP front end's body limit (gRPC's own default is 4 MiB, too small
//     for a batch of images and not what the operator configured);
//   - interceptors that turn a panic in any handler into an Internal
//     status, for services registered beside this one (RegisterGRPC's own
//     handlers recover by themselves);
//   - a stats handler that counts, through b.Reject, the ModelInfer calls
//     gRPC refused before they reached the handler: a message over the
//     limit, or one that does not parse.
//
// Use it as grpc.NewServer(serve.GRPCServerOptions(b, lim)...), then
// RegisterGRPC.
func GRPCServerOptions(b Backend, lim Limits) []grpc.ServerOption {
	lim = lim.WithDefaults()
	return []grpc.ServerOption{
		grpc.MaxRecvMsgSize(grpcMsgLimit(lim)),
		grpc.ChainUnaryInterceptor(recoverUnary),
		grpc.ChainStreamInterceptor(recoverStream),
		grpc.StatsHandler(&refusalCounter{b: b}),
	}
}

// grpcMsgLimit is lim.MaxBodyBytes as gRPC's int limit.
func grpcMsgLimit(lim Limits) int {
	return int(min(lim.MaxBodyBytes, math.MaxInt32))
}

// RegisterGRPC registers the protocol's GRPCInferenceService on s, served
// from b: the health, metadata and inference calls, and the repository
// extension's index, load and unload. Make s with GRPCServerOptions so that
// lim.MaxBodyBytes holds; the other limits hold either way.
//
// ModelInfer takes its inputs as typed contents or as raw_input_contents,
// checks every declared shape against lim.MaxElements and against its data
// before anything is allocated, and answers in raw_output_contents. Its
// deadline is a "timeout" request parameter (microseconds, as Triton takes
// it) or else lim.DefaultTimeout, as over HTTP, and the call's own gRPC
// deadline when that is sooner (a call with a deadline and no timeout
// parameter has its deadline alone). Errors come back as gRPC statuses: see GRPCCode.
func RegisterGRPC(s *grpc.Server, b Backend, lim Limits) {
	pb.RegisterGRPCInferenceServiceServer(s, &grpcService{b: b, lim: lim.WithDefaults()})
}

// GRPCCode returns the gRPC status code an error is answered with: the
// code for an *Error's HTTP status (400 InvalidArgument, 404 NotFound, 413
// and 429 ResourceExhausted, 499 Canceled, 501 Unimplemented, 503
// Unavailable, 504 DeadlineExceeded, any other Internal), DeadlineExceeded
// and Canceled for the context errors, OK for nil.
func GRPCCode(err error) codes.Code {
	var e *Error
	switch {
	case err == nil:
		return codes.OK
	case errors.As(err, &e):
		return codeOfStatus(e.Status)
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	}
	if s, ok := status.FromError(err); ok {
		return s.Code()
	}
	return codes.Internal
}

// codeOfStatus maps an HTTP status to a gRPC code, as GRPCCode documents.
func codeOfStatus(st int) codes.Code {
	switch st {
	case http.StatusBadRequest:
		return codes.InvalidArgument
	case http.StatusNotFound:
		return codes.NotFound
	case http.StatusRequestEntityTooLarge, http.StatusTooManyRequests:
		return codes.ResourceExhausted
	case StatusClientClosedRequest:
		return codes.Canceled
	case http.StatusNotImplemented:
		return codes.Unimplemented
	case http.StatusServiceUnavailable:
		return codes.Unavailable
	case http.StatusGatewayTimeout:
		return codes.DeadlineExceeded
	}
	return codes.Internal
}

// grpcError is err as the status a handler returns.
func grpcError(err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if !errors.As(err, &e) {
		if s, ok := status.FromError(err); ok {
			return s.Err()
		}
	}
	return status.Error(GRPCCode(err), err.Error())
}

// grpcService implements the generated service interface over a Backend.
type grpcService struct {
	pb.UnimplementedGRPCInferenceServiceServer
	b   Backend
	lim Limits
}

// recovered turns a panic in a handler into an Internal status in *err.
// The client sees that the server failed, not the panic; the stack goes to
// the log for whoever fixes it.
func recovered(err *error, method string) {
	r := recover()
	if r == nil {
		return
	}
	log.Printf("serve: panic in gRPC %s: %v\n%s", method, r, debug.Stack())
	*err = status.Errorf(codes.Internal, "serve: internal error in %s (a bug in the server; it is in the server's log)", method)
}

func recoverUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
	defer recovered(&err, info.FullMethod)
	return h(ctx, req)
}

func recoverStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) (err error) {
	defer recovered(&err, info.FullMethod)
	return h(srv, ss)
}

// ServerLive answers whether the server is live.
func (g *grpcService) ServerLive(ctx context.Context, _ *pb.ServerLiveRequest) (_ *pb.ServerLiveResponse, err error) {
	defer recovered(&err, "ServerLive")
	return &pb.ServerLiveResponse{Live: g.b.Live()}, nil
}

// ServerReady answers whether the server is ready.
func (g *grpcService) ServerReady(ctx context.Context, _ *pb.ServerReadyRequest) (_ *pb.ServerReadyResponse, err error) {
	defer recovered(&err, "ServerReady")
	return &pb.ServerReadyResponse{Ready: g.b.Ready()}, nil
}

// ModelReady answers ready false for a model that is known but not ready
// (the Backend's 503), and NotFound for an unknown one, so that a client
// polling a misspelt name learns so instead of waiting for ever.
func (g *grpcService) ModelReady(ctx context.Context, r *pb.ModelReadyRequest) (_ *pb.ModelReadyResponse, err error) {
	defer recovered(&err, "ModelReady")
	if err := checkModelVersion("ModelReady", r.GetName(), r.GetVersion()); err != nil {
		return nil, grpcError(err)
	}
	switch err := g.b.ModelReady(r.GetName(), r.GetVersion()); {
	case err == nil:
		return &pb.ModelReadyResponse{Ready: true}, nil
	case StatusOf(err) == http.StatusServiceUnavailable:
		return &pb.ModelReadyResponse{Ready: false}, nil
	default:
		return nil, grpcError(err)
	}
}

// ServerMetadata describes the server.
func (g *grpcService) ServerMetadata(ctx context.Context, _ *pb.ServerMetadataRequest) (_ *pb.ServerMetadataResponse, err error) {
	defer recovered(&err, "ServerMetadata")
	m := g.b.ServerMetadata()
	return &pb.ServerMetadataResponse{Name: m.Name, Version: m.Version, Extensions: m.Extensions}, nil
}

// ModelMetadata describes a model version.
func (g *grpcService) ModelMetadata(ctx context.Context, r *pb.ModelMetadataRequest) (_ *pb.ModelMetadataResponse, err error) {
	defer recovered(&err, "ModelMetadata")
	if err := checkModelVersion("ModelMetadata", r.GetName(), r.GetVersion()); err != nil {
		return nil, grpcError(err)
	}
	m, err := g.b.ModelMetadata(r.GetName(), r.GetVersion())
	if err != nil {
		return nil, grpcError(err)
	}
	return &pb.ModelMetadataResponse{
		Name:     m.Name,
		Versions: m.Versions,
		Platform: m.Platform,
		Inputs:   tensorMetadataPB(m.Inputs),
		Outputs:  tensorMetadataPB(m.Outputs),
	}, nil
}

func tensorMetadataPB(ts []TensorMetadata) []*pb.ModelMetadataResponse_TensorMetadata {
	out := make([]*pb.ModelMetadataResponse_TensorMetadata, len(ts))
	for i, t := range ts {
		out[i] = &pb.ModelMetadataResponse_TensorMetadata{Name: t.Name, Datatype: t.Datatype, Shape: t.Shape}
	}
	return out
}

// ModelInfer decodes and checks a request, runs it through the Backend
// under the request's deadline and encodes the response.
func (g *grpcService) ModelInfer(ctx context.Context, r *pb.ModelInferRequest) (_ *pb.ModelInferResponse, err error) {
	defer recovered(&err, "ModelInfer")
	markReached(ctx)
	withdraw := g.b.Expect(r.GetModelName(), r.GetModelVersion())
	defer withdraw()
	req, timeout, err := decodeGRPCInfer(r, g.lim)
	if err != nil {
		g.b.Reject(r.GetModelName(), r.GetModelVersion(), err)
		return nil, grpcError(err)
	}
	// A timeout parameter stands in for the default, as over HTTP; the
	// call's own gRPC deadline stands over both when it is sooner.
	if timeout <= 0 {
		timeout = g.lim.DefaultTimeout
		if _, ok := ctx.Deadline(); ok {
			timeout = 0 // the call's deadline alone
		}
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	req.Arrived = withdraw
	res, err := g.b.Infer(ctx, req)
	if err != nil {
		return nil, grpcError(err)
	}
	out, err := encodeGRPCInfer(res)
	if err != nil {
		return nil, grpcError(err)
	}
	return out, nil
}

// decodeGRPCInfer turns a ModelInferRequest into an InferRequest, checking
// everything a client controls, and returns the "timeout" parameter (0
// when there is none).
func decodeGRPCInfer(r *pb.ModelInferRequest, lim Limits) (*InferRequest, time.Duration, error) {
	if err := checkModelVersion("ModelInfer", r.GetModelName(), r.GetModelVersion()); err != nil {
		return nil, 0, err
	}
	params, err := inferParams("request", r.GetParameters())
	if err != nil {
		return nil, 0, err
	}
	timeout, err := timeoutParam(params)
	if err != nil {
		return nil, 0, err
	}
	req := &InferRequest{ID: r.GetId(), Model: r.GetModelName(), Version: r.GetModelVersion(), Parameters: params}
	raw := r.GetRawInputContents()
	if len(raw) > 0 && len(raw) != len(r.GetInputs()) {
		return nil, 0, errorf(http.StatusBadRequest, "raw_input_contents has %d entries for %d inputs: it needs one per input, in order", len(raw), len(r.GetInputs()))
	}
	seen := make(map[string]bool, len(r.GetInputs()))
	req.Inputs = make([]InferInput, 0, len(r.GetInputs()))
	for i, in := range r.GetInputs() {
		if in.GetName() == "" {
			return nil, 0, errorf(http.StatusBadRequest, "input %d has no name", i)
		}
		what := fmt.Sprintf("input %q", in.GetName())
		if seen[in.GetName()] {
			return nil, 0, errorf(http.StatusBadRequest, "%s is given twice", what)
		}
		seen[in.GetName()] = true
		p, err := inferParams(what, in.GetParameters())
		if err != nil {
			return nil, 0, err
		}
		var t *tensor.Tensor
		if len(raw) > 0 {
			if in.GetContents() != nil {
				return nil, 0, errorf(http.StatusBadRequest, "%s has contents, but the request carries raw_input_contents: the protocol takes one or the other", what)
			}
			t, err = FromRaw(what, in.GetDatatype(), in.GetShape(), raw[i], lim.MaxElements)
		} else {
			t, err = fromContents(what, in.GetDatatype(), in.GetShape(), in.GetContents(), lim.MaxElements)
		}
		if err != nil {
			return nil, 0, err
		}
		req.Inputs = append(req.Inputs, InferInput{Name: in.GetName(), Datatype: in.GetDatatype(), Shape: in.GetShape(), Tensor: t, Parameters: p})
	}
	outSeen := make(map[string]bool, len(r.GetOutputs()))
	for i, o := range r.GetOutputs() {
		if o.GetName() == "" {
			return nil, 0, errorf(http.StatusBadRequest, "requested output %d has no name", i)
		}
		if outSeen[o.GetName()] {
			return nil, 0, errorf(http.StatusBadRequest, "output %q is requested twice", o.GetName())
		}
		outSeen[o.GetName()] = true
		p, err := inferParams(fmt.Sprintf("output %q", o.GetName()), o.GetParameters())
		if err != nil {
			return nil, 0, err
		}
		req.Outputs = append(req.Outputs, RequestedOutput{Name: o.GetName(), Parameters: p})
	}
	return req, timeout, nil
}

// inferParams converts the protocol's parameters to the plain Go values
// the core reads: bool, int64, string, float64 or uint64.
func inferParams(what string, ps map[string]*pb.InferParameter) (map[string]any, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	out := make(map[string]any, len(ps))
	for k, p := range ps {
		switch v := p.GetParameterChoice().(type) {
		case *pb.InferParameter_BoolParam:
			out[k] = v.BoolParam
		case *pb.InferParameter_Int64Param:
			out[k] = v.Int64Param
		case *pb.InferParameter_StringParam:
			out[k] = v.StringParam
		case *pb.InferParameter_DoubleParam:
			out[k] = v.DoubleParam
		case *pb.InferParameter_Uint64Param:
			out[k] = v.Uint64Param
		default:
			return nil, errorf(http.StatusBadRequest, "%s: parameter %q has no value", what, k)
		}
	}
	return out, nil
}

// timeoutParam reads the "timeout" parameter, in microseconds.
func timeoutParam(params map[string]any) (time.Duration, error) {
	v, ok := params["timeout"]
	if !ok {
		return 0, nil
	}
	var us int64
	switch v := v.(type) {
	case int64:
		us = v
	case uint64:
		if v > math.MaxInt64/uint64(time.Microsecond) {
			return 0, errorf(http.StatusBadRequest, "parameter \"timeout\" %d µs is too long", v)
		}
		us = int64(v)
	case float64:
		if v != math.Trunc(v) || v > math.MaxInt64/float64(time.Microsecond) || v < math.MinInt64 {
			return 0, errorf(http.StatusBadRequest, "parameter \"timeout\" is %v; it takes a whole number of microseconds", v)
		}
		us = int64(v)
	default:
		return 0, errorf(http.StatusBadRequest, "parameter \"timeout\" is a %T; it takes an integer count of microseconds", v)
	}
	if us <= 0 {
		return 0, errorf(http.StatusBadRequest, "parameter \"timeout\" is %d µs; it must be positive", us)
	}
	if us > math.MaxInt64/int64(time.Microsecond) {
		return 0, errorf(http.StatusBadRequest, "parameter \"timeout\" %d µs is too long", us)
	}
	return time.Duration(us) * time.Microsecond, nil
}

// fromContents builds a tensor from typed contents, after checking that
// the one field the datatype takes holds exactly the elements the shape
// declares and that no other field holds any.
func fromContents(what, datatype string, shape []int64, c *pb.InferTensorContents, limit int64) (*tensor.Tensor, error) {
	dt, n, err := Declared(what, datatype, shape, limit)
	if err != nil {
		return nil, err
	}
	fields := []struct {
		name string
		n    int
	}{
		{"bool_contents", len(c.GetBoolContents())},
		{"int_contents", len(c.GetIntContents())},
		{"int64_contents", len(c.GetInt64Contents())},
		{"uint_contents", len(c.GetUintContents())},
		{"uint64_contents", len(c.GetUint64Contents())},
		{"fp32_contents", len(c.GetFp32Contents())},
		{"fp64_contents", len(c.GetFp64Contents())},
		{"bytes_contents", len(c.GetBytesContents())},
	}
	var want string
	switch dt {
	case tensor.Bool:
		want = "bool_contents"
	case tensor.Uint8:
		want = "uint_contents"
	case tensor.Int32:
		want = "int_contents"
	case tensor.Int64:
		want = "int64_contents"
	case tensor.Float32:
		want = "fp32_contents"
	case tensor.Float64:
		want = "fp64_contents"
	default: // FP16, BF16
		if n > 0 {
			return nil, errorf(http.StatusBadRequest, "%s: datatype %s has no typed contents in the protocol; send it in raw_input_contents", what, datatype)
		}
	}
	got := 0
	for _, f := range fields {
		switch {
		case f.name == want:
			got = f.n
		case f.n > 0:
			if want == "" {
				return nil, errorf(http.StatusBadRequest, "%s: datatype %s has no typed contents, but the request has %s", what, datatype, f.name)
			}
			return nil, errorf(http.StatusBadRequest, "%s: datatype %s takes %s, but the request has %s", what, datatype, want, f.name)
		}
	}
	if got != n {
		if c == nil && n > 0 {
			return nil, errorf(http.StatusBadRequest, "%s has no data: neither contents nor raw_input_contents", what)
		}
		return nil, errorf(http.StatusBadRequest, "%s: %s%v needs %d elements, %s has %d", what, datatype, shape, n, want, got)
	}
	dims := make([]int, len(shape))
	for i, d := range shape {
		dims[i] = int(d)
	}
	t := tensor.New(dt, dims...)
	switch d := t.Data().(type) {
	case []bool:
		copy(d, c.GetBoolContents())
	case []uint8:
		for i, v := range c.GetUintContents() {
			if v > math.MaxUint8 {
				return nil, errorf(http.StatusBadRequest, "%s: element %d is %d, out of UINT8's range", what, i, v)
			}
			d[i] = uint8(v)
		}
	case []int32:
		copy(d, c.GetIntContents())
	case []int64:
		copy(d, c.GetInt64Contents())
	case []float32:
		copy(d, c.GetFp32Contents())
	case []float64:
		copy(d, c.GetFp64Contents())
	}
	return t, nil
}

// encodeGRPCInfer encodes a response with every output in
// raw_output_contents, the protocol's compact form and the only one FP16
// and BF16 have.
func encodeGRPCInfer(res *InferResponse) (*pb.ModelInferResponse, error) {
	out := &pb.ModelInferResponse{ModelName: res.ModelName, ModelVersion: res.ModelVersion, Id: res.ID}
	out.Outputs = make([]*pb.ModelInferResponse_InferOutputTensor, len(res.Outputs))
	out.RawOutputContents = make([][]byte, len(res.Outputs))
	for i, o := range res.Outputs {
		if o.Tensor == nil {
			return nil, errorf(http.StatusInternalServerError, "serve: output %q of model %s has no tensor", o.Name, res.ModelName)
		}
		dt := Datatype(o.Tensor.DType())
		if o.Datatype != "" && o.Datatype != dt {
			return nil, errorf(http.StatusInternalServerError, "serve: output %q of model %s says datatype %s but holds %s", o.Name, res.ModelName, o.Datatype, dt)
		}
		shape := o.Shape
		if shape == nil {
			shape = make([]int64, o.Tensor.Rank())
			for j, d := range o.Tensor.Shape() {
				shape[j] = int64(d)
			}
		} else if n, err := Elements(o.Name, shape, math.MaxInt64); err != nil || n != o.Tensor.Size() {
			return nil, errorf(http.StatusInternalServerError, "serve: output %q of model %s says shape %v but holds %v", o.Name, res.ModelName, shape, o.Tensor.Shape())
		}
		out.Outputs[i] = &pb.ModelInferResponse_InferOutputTensor{Name: o.Name, Datatype: dt, Shape: shape}
		out.RawOutputContents[i] = AppendRaw(make([]byte, 0, o.Tensor.Size()*o.Tensor.DType().Size()), o.Tensor)
	}
	return out, nil
}

// RepositoryIndex lists the repository's models. The server has one
// repository, so repository_name is not consulted.
func (g *grpcService) RepositoryIndex(ctx context.Context, r *pb.RepositoryIndexRequest) (_ *pb.RepositoryIndexResponse, err error) {
	defer recovered(&err, "RepositoryIndex")
	idx := g.b.Index(r.GetReady())
	out := &pb.RepositoryIndexResponse{Models: make([]*pb.RepositoryIndexResponse_ModelIndex, len(idx))}
	for i, e := range idx {
		out.Models[i] = &pb.RepositoryIndexResponse_ModelIndex{Name: e.Name, Version: e.Version, State: e.State, Reason: e.Reason}
	}
	return out, nil
}

// RepositoryModelLoad loads or reloads a model from the repository.
func (g *grpcService) RepositoryModelLoad(ctx context.Context, r *pb.RepositoryModelLoadRequest) (_ *pb.RepositoryModelLoadResponse, err error) {
	defer recovered(&err, "RepositoryModelLoad")
	if err := checkRepoCall("RepositoryModelLoad", r.GetModelName(), r.GetParameters()); err != nil {
		return nil, grpcError(err)
	}
	if err := g.b.Load(r.GetModelName()); err != nil {
		return nil, grpcError(err)
	}
	return &pb.RepositoryModelLoadResponse{}, nil
}

// RepositoryModelUnload stops serving a model.
func (g *grpcService) RepositoryModelUnload(ctx context.Context, r *pb.RepositoryModelUnloadRequest) (_ *pb.RepositoryModelUnloadResponse, err error) {
	defer recovered(&err, "RepositoryModelUnload")
	if err := checkRepoCall("RepositoryModelUnload", r.GetModelName(), r.GetParameters()); err != nil {
		return nil, grpcError(err)
	}
	if err := g.b.Unload(r.GetModelName()); err != nil {
		return nil, grpcError(err)
	}
	return &pb.RepositoryModelUnloadResponse{}, nil
}

// checkModelVersion refuses an empty model name, and a model name or
// version that could not name a directory of the repository, with the
// HTTP front end's checkName: the same names are refused at both doors.
func checkModelVersion(call, model, version string) error {
	if model == "" {
		return errorf(http.StatusBadRequest, "%s: the model name is empty", call)
	}
	err := checkPathName("model", model)
	if err == nil && version != "" {
		err = checkPathName("version", version)
	}
	if err != nil {
		return errorf(http.StatusBadRequest, "%s: %v", call, err)
	}
	return nil
}

// checkRepoCall refuses a repository call without a model name, or with
// parameters: Triton's "config" and "file:" parameters load a model from
// the request, which this server does not do, and silently ignoring them
// would load something other than what the client sent.
func checkRepoCall(call, model string, params map[string]*pb.ModelRepositoryParameter) error {
	if model == "" {
		return errorf(http.StatusBadRequest, "%s: model_name is empty", call)
	}
	if err := checkPathName("model", model); err != nil {
		return errorf(http.StatusBadRequest, "%s: %v", call, err)
	}
	for k := range params {
		return errorf(http.StatusBadRequest, "%s: parameter %q is not supported (models load only from the server's repository)", call, k)
	}
	return nil
}

// refusalCounter is the stats handler that counts the ModelInfer calls
// gRPC refused before the handler ran (a message over MaxRecvMsgSize, one
// that does not parse): no handler code sees those, so without it they
// would be missing from the failure metrics.
type refusalCounter struct{ b Backend }

type reachedKey struct{}

// rpcTag is what TagRPC attaches to a ModelInfer call's context.
type rpcTag struct {
	reached atomic.Bool
}

// markReached records that a call's handler ran.
func markReached(ctx context.Context) {
	if t, ok := ctx.Value(reachedKey{}).(*rpcTag); ok {
		t.reached.Store(true)
	}
}

// TagRPC marks the ModelInfer calls.
func (c *refusalCounter) TagRPC(ctx context.Context, info *stats.RPCTagInfo) context.Context {
	if info.FullMethodName != pb.GRPCInferenceService_ModelInfer_FullMethodName {
		return ctx
	}
	return context.WithValue(ctx, reachedKey{}, &rpcTag{})
}

// HandleRPC counts a ModelInfer call that ended in an error before its
// handler ran.
func (c *refusalCounter) HandleRPC(ctx context.Context, s stats.RPCStats) {
	end, ok := s.(*stats.End)
	if !ok || end.Error == nil {
		return
	}
	t, ok := ctx.Value(reachedKey{}).(*rpcTag)
	if !ok || t.reached.Load() {
		return
	}
	st := http.StatusBadRequest
	if status.Code(end.Error) == codes.ResourceExhausted {
		st = http.StatusRequestEntityTooLarge
	}
	if status.Code(end.Error) == codes.Canceled || status.Code(end.Error) == codes.DeadlineExceeded {
		return // the client went away before sending its request; nothing was refused
	}
	c.b.Reject("", "", &Error{Status: st, Msg: status.Convert(end.Error).Message()})
}

// TagConn is part of stats.Handler; connections are not counted.
func (c *refusalCounter) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}

// HandleConn is part of stats.Handler; connections are not counted.
func (c *refusalCounter) HandleConn(context.Context, stats.ConnStats) {}
