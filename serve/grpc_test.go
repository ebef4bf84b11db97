package serve_test

import (
	"context"
	"encoding/binary"
	"math"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/sporeml/spore/internal/fakebackend"
	"github.com/sporeml/spore/serve"
	"github.com/sporeml/spore/serve/internal/pb"
	"github.com/sporeml/spore/tensor"
)

// startGRPC serves the fake over an in-memory listener and returns the
// generated client for it.
func startGRPC(t *testing.T, lim serve.Limits) (pb.GRPCInferenceServiceClient, *fakebackend.Backend) {
	t.Helper()
	fake := fakebackend.New()
	s := grpc.NewServer(serve.GRPCServerOptions(fake, lim)...)
	serve.RegisterGRPC(s, fake, lim)
	lis := bufconn.Listen(1 << 20)
	go s.Serve(lis)
	t.Cleanup(s.Stop)
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return pb.NewGRPCInferenceServiceClient(conn), fake
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// wantStatus fails unless err is a status with the code and a message
// containing every one of the substrings.
func wantStatus(t *testing.T, err error, code codes.Code, substrs ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %v", code)
	}
	s := status.Convert(err)
	if s.Code() != code {
		t.Fatalf("got %v (%q), want %v", s.Code(), s.Message(), code)
	}
	for _, sub := range substrs {
		if !strings.Contains(s.Message(), sub) {
			t.Errorf("message %q does not say %q", s.Message(), sub)
		}
	}
}

func TestGRPCHealthAndMetadata(t *testing.T) {
	c, _ := startGRPC(t, serve.Limits{})
	ctx := testCtx(t)

	live, err := c.ServerLive(ctx, &pb.ServerLiveRequest{})
	if err != nil || !live.Live {
		t.Fatalf("ServerLive = %v, %v", live, err)
	}
	ready, err := c.ServerReady(ctx, &pb.ServerReadyRequest{})
	if err != nil || !ready.Ready {
		t.Fatalf("ServerReady = %v, %v", ready, err)
	}
	md, err := c.ServerMetadata(ctx, &pb.ServerMetadataRequest{})
	if err != nil || md.Name != "fake" || md.Version != "0.1" || !slices.Contains(md.Extensions, "model_repository") {
		t.Fatalf("ServerMetadata = %v, %v", md, err)
	}

	for _, tc := range []struct {
		name, version string
		ready         bool
		code          codes.Code
	}{
		{"double", "", true, codes.OK},
		{"double", "1", true, codes.OK},
		{"loading", "", false, codes.OK},
		{"nosuch", "", false, codes.NotFound},
		{"double", "7", false, codes.NotFound},
		{"", "", false, codes.InvalidArgument},
		{"a/b", "", false, codes.InvalidArgument},
		{"double", "../1", false, codes.InvalidArgument},
	} {
		r, err := c.ModelReady(ctx, &pb.ModelReadyRequest{Name: tc.name, Version: tc.version})
		if status.Code(err) != tc.code {
			t.Errorf("ModelReady(%q, %q): code %v (%v), want %v", tc.name, tc.version, status.Code(err), err, tc.code)
			continue
		}
		if err == nil && r.Ready != tc.ready {
			t.Errorf("ModelReady(%q, %q) = %v, want %v", tc.name, tc.version, r.Ready, tc.ready)
		}
	}

	m, err := c.ModelMetadata(ctx, &pb.ModelMetadataRequest{Name: "double"})
	if err != nil {
		t.Fatal(err)
	}
	if m.Name != "double" || m.Platform != "fake" || !slices.Equal(m.Versions, []string{"1"}) ||
		len(m.Inputs) != 1 || m.Inputs[0].Name != "x" || m.Inputs[0].Datatype != "FP32" || !slices.Equal(m.Inputs[0].Shape, []int64{-1, 3}) ||
		len(m.Outputs) != 1 || m.Outputs[0].Name != "y" {
		t.Errorf("ModelMetadata(double) = %v", m)
	}
	_, err = c.ModelMetadata(ctx, &pb.ModelMetadataRequest{Name: "nosuch"})
	wantStatus(t, err, codes.NotFound, `unknown model "nosuch"`)
	_, err = c.ModelMetadata(ctx, &pb.ModelMetadataRequest{})
	wantStatus(t, err, codes.InvalidArgument, "name is empty")
	_, err = c.ModelMetadata(ctx, &pb.ModelMetadataRequest{Name: ".."})
	wantStatus(t, err, codes.InvalidArgument, `model name ".." is not valid`)
}

func TestGRPCRepository(t *testing.T) {
	c, fake := startGRPC(t, serve.Limits{})
	ctx := testCtx(t)

	all, err := c.RepositoryIndex(ctx, &pb.RepositoryIndexRequest{})
	if err != nil || len(all.Models) != 3 || all.Models[2].Name != "loading" || all.Models[2].State != "LOADING" || all.Models[2].Reason != "warming up" {
		t.Fatalf("RepositoryIndex = %v, %v", all, err)
	}
	ready, err := c.RepositoryIndex(ctx, &pb.RepositoryIndexRequest{Ready: true})
	if err != nil || len(ready.Models) != 2 {
		t.Fatalf("RepositoryIndex(ready) = %v, %v", ready, err)
	}
	if _, err := c.RepositoryModelLoad(ctx, &pb.RepositoryModelLoadRequest{ModelName: "double"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RepositoryModelUnload(ctx, &pb.RepositoryModelUnloadRequest{ModelName: "echo"}); err != nil {
		t.Fatal(err)
	}
	_, err = c.RepositoryModelLoad(ctx, &pb.RepositoryModelLoadRequest{ModelName: "nosuch"})
	wantStatus(t, err, codes.NotFound, "nosuch")
	_, err = c.RepositoryModelUnload(ctx, &pb.RepositoryModelUnloadRequest{})
	wantStatus(t, err, codes.InvalidArgument, "model_name is empty")
	_, err = c.RepositoryModelLoad(ctx, &pb.RepositoryModelLoadRequest{ModelName: "../../x"})
	wantStatus(t, err, codes.InvalidArgument, `model name "../../x" is not valid`)
	_, err = c.RepositoryModelLoad(ctx, &pb.RepositoryModelLoadRequest{ModelName: "double", Parameters: map[string]*pb.ModelRepositoryParameter{
		"config": {ParameterChoice: &pb.ModelRepositoryParameter_StringParam{StringParam: "{}"}},
	}})
	wantStatus(t, err, codes.InvalidArgument, `parameter "config" is not supported`)
	loads, unloads := fake.Loads()
	if !slices.Equal(loads, []string{"double"}) || !slices.Equal(unloads, []string{"echo"}) {
		t.Errorf("the backend saw loads %v and unloads %v, want [double] and [echo]", loads, unloads)
	}
}

// rawOf is t's raw contents.
func rawOf(t *tensor.Tensor) []byte { return serve.AppendRaw(nil, t) }

func TestGRPCInferRoundTrip(t *testing.T) {
	c, _ := startGRPC(t, serve.Limits{})
	ctx := testCtx(t)

	for _, tc := range []struct {
		name     string
		datatype string
		tensor   *tensor.Tensor
		// contents is the typed form; nil for the datatypes that travel
		// only raw.
		contents *pb.InferTensorContents
	}{
		{"fp32", "FP32", tensor.FromSlice([]float32{1.5, -2, 3, float32(math.Inf(1)), 0, 7}, 2, 3),
			&pb.InferTensorContents{Fp32Contents: []float32{1.5, -2, 3, float32(math.Inf(1)), 0, 7}}},
		{"fp64", "FP64", tensor.FromSlice([]float64{1e300, -0.25}, 2),
			&pb.InferTensorContents{Fp64Contents: []float64{1e300, -0.25}}},
		{"int32", "INT32", tensor.FromSlice([]int32{-1 << 31, 5}, 1, 2),
			&pb.InferTensorContents{IntContents: []int32{-1 << 31, 5}}},
		{"int64", "INT64", tensor.FromSlice([]int64{1 << 62, -3, 4}, 3),
			&pb.InferTensorContents{Int64Contents: []int64{1 << 62, -3, 4}}},
		{"uint8", "UINT8", tensor.FromSlice([]uint8{0, 255, 7, 8}, 2, 2),
			&pb.InferTensorContents{UintContents: []uint32{0, 255, 7, 8}}},
		{"bool", "BOOL", tensor.FromSlice([]bool{true, false, true}, 3),
			&pb.InferTensorContents{BoolContents: []bool{true, false, true}}},
		{"scalar", "FP32", tensor.Scalar(float32(4)),
			&pb.InferTensorContents{Fp32Contents: []float32{4}}},
		{"empty", "FP32", tensor.New(tensor.Float32, 0, 3), &pb.InferTensorContents{}},
		{"fp16", "FP16", tensor.FromSlice([]tensor.F16{tensor.F16From(1.5), tensor.F16From(-2)}, 2), nil},
		{"bf16", "BF16", tensor.FromSlice([]tensor.BF16{tensor.BF16From(0.5), tensor.BF16From(3)}, 1, 2), nil},
	} {
		shape := make([]int64, tc.tensor.Rank())
		for i, d := range tc.tensor.Shape() {
			shape[i] = int64(d)
		}
		forms := map[string]*pb.ModelInferRequest{
			"raw": {
				ModelName:        "echo",
				Id:               "req-" + tc.name,
				Inputs:           []*pb.ModelInferRequest_InferInputTensor{{Name: tc.name, Datatype: tc.datatype, Shape: shape}},
				RawInputContents: [][]byte{rawOf(tc.tensor)},
			},
		}
		if tc.contents != nil {
			forms["typed"] = &pb.ModelInferRequest{
				ModelName: "echo",
				Id:        "req-" + tc.name,
				Inputs:    []*pb.ModelInferRequest_InferInputTensor{{Name: tc.name, Datatype: tc.datatype, Shape: shape, Contents: tc.contents}},
			}
		}
		for form, req := range forms {
			res, err := c.ModelInfer(ctx, req)
			if err != nil {
				t.Errorf("%s %s: %v", tc.name, form, err)
				continue
			}
			if res.ModelName != "echo" || res.ModelVersion != "1" || res.Id != "req-"+tc.name {
				t.Errorf("%s %s: response names model %q version %q id %q", tc.name, form, res.ModelName, res.ModelVersion, res.Id)
			}
			if len(res.Outputs) != 1 || len(res.RawOutputContents) != 1 {
				t.Fatalf("%s %s: %d outputs and %d raw contents, want 1 and 1", tc.name, form, len(res.Outputs), len(res.RawOutputContents))
			}
			o := res.Outputs[0]
			if o.Name != tc.name || o.Datatype != tc.datatype || !slices.Equal(o.Shape, shape) || o.Contents != nil {
				t.Errorf("%s %s: output %v, want %s %s%v in raw form", tc.name, form, o, tc.name, tc.datatype, shape)
			}
			if !slices.Equal(res.RawOutputContents[0], rawOf(tc.tensor)) {
				t.Errorf("%s %s: raw output %v, want %v", tc.name, form, res.RawOutputContents[0], rawOf(tc.tensor))
			}
		}
	}
}

func TestGRPCInferOutputsAndParameters(t *testing.T) {
	c, _ := startGRPC(t, serve.Limits{})
	ctx := testCtx(t)
	x := tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	res, err := c.ModelInfer(ctx, &pb.ModelInferRequest{
		ModelName: "double",
		Parameters: map[string]*pb.InferParameter{
			"priority": {ParameterChoice: &pb.InferParameter_Int64Param{Int64Param: 1}},
			"timeout":  {ParameterChoice: &pb.InferParameter_Uint64Param{Uint64Param: 5_000_000}},
		},
		Inputs:           []*pb.ModelInferRequest_InferInputTensor{{Name: "x", Datatype: "FP32", Shape: []int64{2, 3}}},
		Outputs:          []*pb.ModelInferRequest_InferRequestedOutputTensor{{Name: "y"}},
		RawInputContents: [][]byte{rawOf(x)},
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := serve.FromRaw("y", res.Outputs[0].Datatype, res.Outputs[0].Shape, res.RawOutputContents[0], 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if want := []float32{2, 4, 6, 8, 10, 12}; !slices.Equal(got.Float32s(), want) {
		t.Errorf("double(x) = %v, want %v", got.Float32s(), want)
	}

	// Requested outputs reach the backend: echo returns only those named.
	a, b := tensor.FromSlice([]int64{1}, 1), tensor.FromSlice([]int64{2, 3}, 2)
	res, err = c.ModelInfer(ctx, &pb.ModelInferRequest{
		ModelName: "echo",
		Inputs: []*pb.ModelInferRequest_InferInputTensor{
			{Name: "a", Datatype: "INT64", Shape: []int64{1}},
			{Name: "b", Datatype: "INT64", Shape: []int64{2}},
		},
		Outputs:          []*pb.ModelInferRequest_InferRequestedOutputTensor{{Name: "b"}},
		RawInputContents: [][]byte{rawOf(a), rawOf(b)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Outputs) != 1 || res.Outputs[0].Name != "b" || !slices.Equal(res.RawOutputContents[0], rawOf(b)) {
		t.Errorf("echo with output b requested answered %v", res.Outputs)
	}
}

func TestGRPCInferErrors(t *testing.T) {
	c, fake := startGRPC(t, serve.Limits{MaxElements: 1 << 20})
	ctx := testCtx(t)
	in := func(name, datatype string, shape ...int64) *pb.ModelInferRequest_InferInputTensor {
		return &pb.ModelInferRequest_InferInputTensor{Name: name, Datatype: datatype, Shape: shape}
	}
	withContents := func(t *pb.ModelInferRequest_InferInputTensor, c *pb.InferTensorContents) *pb.ModelInferRequest_InferInputTensor {
		t.Contents = c
		return t
	}
	fp32 := func(n int) []byte { return make([]byte, 4*n) }
	for _, tc := range []struct {
		name string
		req  *pb.ModelInferRequest
		code codes.Code
		msg  []string
		// rejected says the front end refused it (and must say so
		// through Reject); otherwise the backend answered.
		rejected bool
	}{
		{"unknown model", &pb.ModelInferRequest{ModelName: "nosuch", Inputs: []*pb.ModelInferRequest_InferInputTensor{in("x", "FP32", 1, 3)}, RawInputContents: [][]byte{fp32(3)}},
			codes.NotFound, []string{`unknown model "nosuch"`}, false},
		{"no model name", &pb.ModelInferRequest{},
			codes.InvalidArgument, []string{"model name is empty"}, true},
		{"model name outside the repository", &pb.ModelInferRequest{ModelName: "../etc"},
			codes.InvalidArgument, []string{`model name "../etc" is not valid`}, true},
		{"version outside the repository", &pb.ModelInferRequest{ModelName: "echo", ModelVersion: ".."},
			codes.InvalidArgument, []string{`version name ".." is not valid`}, true},
		{"wrong shape for the model", &pb.ModelInferRequest{ModelName: "double", Inputs: []*pb.ModelInferRequest_InferInputTensor{in("x", "FP32", 3, 1)}, RawInputContents: [][]byte{fp32(3)}},
			codes.InvalidArgument, []string{"[-1 3]", "[3 1]"}, false},
		{"wrong datatype for the model", &pb.ModelInferRequest{ModelName: "double", Inputs: []*pb.ModelInferRequest_InferInputTensor{in("x", "FP64", 1, 3)}, RawInputContents: [][]byte{make([]byte, 24)}},
			codes.InvalidArgument, []string{"FP32", "FP64"}, false},
		{"unknown datatype", &pb.ModelInferRequest{ModelName: "echo", Inputs: []*pb.ModelInferRequest_InferInputTensor{in("x", "FP8", 2)}, RawInputContents: [][]byte{{1, 2}}},
			codes.InvalidArgument, []string{`input "x"`, `unknown datatype "FP8"`}, true},
		{"unsupported datatype", &pb.ModelInferRequest{ModelName: "echo", Inputs: []*pb.ModelInferRequest_InferInputTensor{withContents(in("x", "INT8", 2), &pb.InferTensorContents{IntContents: []int32{1, 2}})}},
			codes.InvalidArgument, []string{`input "x"`, "INT8 is not supported"}, true},
		{"contents of another type", &pb.ModelInferRequest{ModelName: "echo", Inputs: []*pb.ModelInferRequest_InferInputTensor{withContents(in("x", "FP32", 2), &pb.InferTensorContents{Fp64Contents: []float64{1, 2}})}},
			codes.InvalidArgument, []string{`input "x"`, "FP32 takes fp32_contents", "fp64_contents"}, true},
		{"too few elements", &pb.ModelInferRequest{ModelName: "echo", Inputs: []*pb.ModelInferRequest_InferInputTensor{withContents(in("x", "FP32", 2, 2), &pb.InferTensorContents{Fp32Contents: []float32{1, 2, 3}})}},
			codes.InvalidArgument, []string{`input "x"`, "needs 4 elements", "has 3"}, true},
		{"no data", &pb.ModelInferRequest{ModelName: "echo", Inputs: []*pb.ModelInferRequest_InferInputTensor{in("x", "FP32", 2)}},
			codes.InvalidArgument, []string{`input "x" has no data`}, true},
		{"typed FP16", &pb.ModelInferRequest{ModelName: "echo", Inputs: []*pb.ModelInferRequest_InferInputTensor{withContents(in("x", "FP16", 1), &pb.InferTensorContents{Fp32Contents: []float32{1}})}},
			codes.InvalidArgument, []string{"FP16 has no typed contents"}, true},
		{"UINT8 out of range", &pb.ModelInferRequest{ModelName: "echo", Inputs: []*pb.ModelInferRequest_InferInputTensor{withContents(in("x", "UINT8", 2), &pb.InferTensorContents{UintContents: []uint32{1, 256}})}},
			codes.InvalidArgument, []string{"element 1 is 256"}, true},
		{"raw size mismatch", &pb.ModelInferRequest{ModelName: "echo", Inputs: []*pb.ModelInferRequest_InferInputTensor{in("x", "FP32", 2, 2)}, RawInputContents: [][]byte{fp32(3)}},
			codes.InvalidArgument, []string{`input "x"`, "needs 16 bytes", "got 12"}, true},
		{"raw entry count", &pb.ModelInferRequest{ModelName: "echo", Inputs: []*pb.ModelInferRequest_InferInputTensor{in("a", "FP32", 1), in("b", "FP32", 1)}, RawInputContents: [][]byte{fp32(1)}},
			codes.InvalidArgument, []string{"1 entries for 2 inputs"}, true},
		{"raw and contents", &pb.ModelInferRequest{ModelName: "echo", Inputs: []*pb.ModelInferRequest_InferInputTensor{withContents(in("x", "FP32", 1), &pb.InferTensorContents{Fp32Contents: []float32{1}})}, RawInputContents: [][]byte{fp32(1)}},
			codes.InvalidArgument, []string{"one or the other"}, true},
		{"bad BOOL byte", &pb.ModelInferRequest{ModelName: "echo", Inputs: []*pb.ModelInferRequest_InferInputTensor{in("x", "BOOL", 2)}, RawInputContents: [][]byte{{1, 2}}},
			codes.InvalidArgument, []string{"BOOL element 1 is byte 2"}, true},
		{"huge declared shape", &pb.ModelInferRequest{ModelName: "echo", Inputs: []*pb.ModelInferRequest_InferInputTensor{in("x", "FP32", 1<<40, 1<<40)}, RawInputContents: [][]byte{fp32(1)}},
			codes.InvalidArgument, []string{`input "x"`, "more than 1048576 elements"}, true},
		{"huge typed shape", &pb.ModelInferRequest{ModelName: "echo", Inputs: []*pb.ModelInferRequest_InferInputTensor{withContents(in("x", "FP32", 1<<21), &pb.InferTensorContents{Fp32Contents: []float32{1}})}},
			codes.InvalidArgument, []string{"more than 1048576 elements"}, true},
		{"negative dimension", &pb.ModelInferRequest{ModelName: "echo", Inputs: []*pb.ModelInferRequest_InferInputTensor{in("x", "FP32", -1, 3)}, RawInputContents: [][]byte{fp32(3)}},
			codes.InvalidArgument, []string{"negative dimension"}, true},
		{"input without a name", &pb.ModelInferRequest{ModelName: "echo", Inputs: []*pb.ModelInferRequest_InferInputTensor{in("", "FP32", 1)}, RawInputContents: [][]byte{fp32(1)}},
			codes.InvalidArgument, []string{"input 0 has no name"}, true},
		{"input twice", &pb.ModelInferRequest{ModelName: "echo", Inputs: []*pb.ModelInferRequest_InferInputTensor{in("x", "FP32", 1), in("x", "FP32", 1)}, RawInputContents: [][]byte{fp32(1), fp32(1)}},
			codes.InvalidArgument, []string{`input "x" is given twice`}, true},
		{"output twice", &pb.ModelInferRequest{ModelName: "echo", Outputs: []*pb.ModelInferRequest_InferRequestedOutputTensor{{Name: "y"}, {Name: "y"}}},
			codes.InvalidArgument, []string{`output "y" is requested twice`}, true},
		{"unknown output", &pb.ModelInferRequest{ModelName: "echo", Outputs: []*pb.ModelInferRequest_InferRequestedOutputTensor{{Name: "y"}}},
			codes.InvalidArgument, []string{`no output "y"`}, false},
		{"string timeout", &pb.ModelInferRequest{ModelName: "echo", Parameters: map[string]*pb.InferParameter{"timeout": {ParameterChoice: &pb.InferParameter_StringParam{StringParam: "1s"}}}},
			codes.InvalidArgument, []string{`"timeout" is a string`, "microseconds"}, true},
		{"fractional timeout", &pb.ModelInferRequest{ModelName: "echo", Parameters: map[string]*pb.InferParameter{"timeout": {ParameterChoice: &pb.InferParameter_DoubleParam{DoubleParam: 1.5}}}},
			codes.InvalidArgument, []string{`"timeout" is 1.5`}, true},
		{"negative timeout", &pb.ModelInferRequest{ModelName: "echo", Parameters: map[string]*pb.InferParameter{"timeout": {ParameterChoice: &pb.InferParameter_Int64Param{Int64Param: -5}}}},
			codes.InvalidArgument, []string{`"timeout" is -5`}, true},
		{"parameter without a value", &pb.ModelInferRequest{ModelName: "echo", Parameters: map[string]*pb.InferParameter{"p": {}}},
			codes.InvalidArgument, []string{`parameter "p" has no value`}, true},
		{"queue full", &pb.ModelInferRequest{ModelName: "full"},
			codes.ResourceExhausted, []string{"queue is full"}, false},
		{"model not ready", &pb.ModelInferRequest{ModelName: "loading"},
			codes.Unavailable, []string{"loading"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(fake.Rejections())
			_, err := c.ModelInfer(ctx, tc.req)
			wantStatus(t, err, tc.code, tc.msg...)
			rej := fake.Rejections()[before:]
			switch {
			case tc.rejected && (len(rej) != 1 || rej[0].Status != http.StatusBadRequest || rej[0].Model != tc.req.ModelName):
				t.Errorf("Reject calls %v, want one for model %q with status 400", rej, tc.req.ModelName)
			case !tc.rejected && len(rej) != 0:
				t.Errorf("Reject calls %v for a request the backend answered", rej)
			}
		})
	}
}

func TestGRPCPanicIsInternal(t *testing.T) {
	c, _ := startGRPC(t, serve.Limits{})
	_, err := c.ModelInfer(testCtx(t), &pb.ModelInferRequest{ModelName: "panic"})
	wantStatus(t, err, codes.Internal, "internal error in ModelInfer")
	for _, leak := range []string{"panic", "goroutine", "nil map", ".go:"} {
		if strings.Contains(status.Convert(err).Message(), leak) {
			t.Errorf("the client sees %q in %q", leak, status.Convert(err).Message())
		}
	}
	// The server is still up.
	if _, err := c.ServerLive(testCtx(t), &pb.ServerLiveRequest{}); err != nil {
		t.Fatal(err)
	}
}

func TestGRPCDeadlines(t *testing.T) {
	const short = 30 * time.Millisecond
	c, fake := startGRPC(t, serve.Limits{DefaultTimeout: short})
	us := func(d time.Duration) map[string]*pb.InferParameter {
		return map[string]*pb.InferParameter{"timeout": {ParameterChoice: &pb.InferParameter_Int64Param{Int64Param: d.Microseconds()}}}
	}
	for _, tc := range []struct {
		name     string
		deadline time.Duration // the call's gRPC deadline; 0 for none
		params   map[string]*pb.InferParameter
		code     codes.Code
	}{
		// The backend's 504, as its queue would answer.
		{"default timeout", 0, nil, codes.DeadlineExceeded},
		// gRPC's own deadline passes on the client side as well.
		{"grpc deadline", short, nil, codes.DeadlineExceeded},
		{"timeout parameter", 0, us(short), codes.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// No deadline of the test's own: the default must apply.
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.deadline)
				defer cancel()
			}
			start := time.Now()
			_, err := c.ModelInfer(ctx, &pb.ModelInferRequest{ModelName: "slow", Parameters: tc.params})
			wantStatus(t, err, tc.code)
			if el := time.Since(start); el > 5*time.Second {
				t.Errorf("took %v: the deadline did not reach the backend", el)
			}
			select {
			case hadDeadline := <-fake.SlowEnded:
				if !hadDeadline {
					t.Error("the backend's context had no deadline")
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the backend's context never ended")
			}
		})
	}

	// A long gRPC deadline stands over the short default, and a timeout
	// parameter shortens it; without a gRPC deadline the parameter stands
	// in for the default, longer or not.
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if _, err := c.ModelInfer(ctx, &pb.ModelInferRequest{ModelName: "echo"}); err != nil {
		t.Fatal(err)
	}
	if left := time.Until(fake.Deadline()); left < 50*time.Minute {
		t.Errorf("the backend's deadline is %v away; the call's own deadline is an hour", left)
	}
	if _, err := c.ModelInfer(ctx, &pb.ModelInferRequest{ModelName: "echo", Parameters: us(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if left := time.Until(fake.Deadline()); left > 2*time.Minute || left < 30*time.Second {
		t.Errorf("the backend's deadline is %v away; the timeout parameter asked for a minute", left)
	}
	if _, err := c.ModelInfer(context.Background(), &pb.ModelInferRequest{ModelName: "echo", Parameters: us(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if left := time.Until(fake.Deadline()); left > 2*time.Minute || left < 30*time.Second {
		t.Errorf("the backend's deadline is %v away; the timeout parameter asked for a minute over a default of %v", left, short)
	}
	if _, err := c.ModelInfer(context.Background(), &pb.ModelInferRequest{ModelName: "echo", Parameters: map[string]*pb.InferParameter{
		"timeout": {ParameterChoice: &pb.InferParameter_DoubleParam{DoubleParam: 2e6}},
	}}); err != nil {
		t.Fatal(err)
	}
	if left := time.Until(fake.Deadline()); left > 2*time.Second || left < time.Second {
		t.Errorf("the backend's deadline is %v away; the timeout parameter asked for 2e6 µs", left)
	}
}

func TestGRPCClientGoneCancelsInfer(t *testing.T) {
	c, fake := startGRPC(t, serve.Limits{})
	ctx, cancel := context.WithCancel(testCtx(t))
	done := make(chan error, 1)
	go func() {
		_, err := c.ModelInfer(ctx, &pb.ModelInferRequest{ModelName: "slow"})
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	cancel()
	select {
	case <-fake.SlowEnded:
	case <-time.After(5 * time.Second):
		t.Fatal("the backend's context did not end when the client went away")
	}
	if err := <-done; status.Code(err) != codes.Canceled {
		t.Errorf("the client got %v, want Canceled", err)
	}
}

func TestGRPCMessageLimit(t *testing.T) {
	c, fake := startGRPC(t, serve.Limits{MaxBodyBytes: 4096})
	ctx := testCtx(t)
	big := make([]byte, 8192)
	_, err := c.ModelInfer(ctx, &pb.ModelInferRequest{
		ModelName:        "echo",
		Inputs:           []*pb.ModelInferRequest_InferInputTensor{{Name: "x", Datatype: "UINT8", Shape: []int64{8192}}},
		RawInputContents: [][]byte{big},
	})
	wantStatus(t, err, codes.ResourceExhausted)
	// The refusal is counted, though no handler ran; the stats handler
	// sees the end of the call after the client does.
	deadline := time.Now().Add(5 * time.Second)
	for len(fake.Rejections()) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if rej := fake.Rejections(); len(rej) != 1 || rej[0].Status != http.StatusRequestEntityTooLarge {
		t.Errorf("Reject calls %v, want one with status 413", rej)
	}
	// Under the limit it goes through.
	small := make([]byte, 1024)
	binary.LittleEndian.PutUint32(small, 7)
	if _, err := c.ModelInfer(ctx, &pb.ModelInferRequest{
		ModelName:        "echo",
		Inputs:           []*pb.ModelInferRequest_InferInputTensor{{Name: "x", Datatype: "UINT8", Shape: []int64{1024}}},
		RawInputContents: [][]byte{small},
	}); err != nil {
		t.Fatal(err)
	}
}

func TestGRPCCode(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want codes.Code
	}{
		{nil, codes.OK},
		{&serve.Error{Status: 400}, codes.InvalidArgument},
		{&serve.Error{Status: 404}, codes.NotFound},
		{&serve.Error{Status: 413}, codes.ResourceExhausted},
		{&serve.Error{Status: 429}, codes.ResourceExhausted},
		{&serve.Error{Status: 501}, codes.Unimplemented},
		{&serve.Error{Status: 503}, codes.Unavailable},
		{&serve.Error{Status: 504}, codes.DeadlineExceeded},
		{&serve.Error{Status: 500}, codes.Internal},
		{&serve.Error{Status: 418}, codes.Internal},
		{context.DeadlineExceeded, codes.DeadlineExceeded},
		{context.Canceled, codes.Canceled},
		{status.Error(codes.Aborted, "x"), codes.Aborted},
		{errWrap{&serve.Error{Status: 404}}, codes.NotFound},
		{errWrap{context.DeadlineExceeded}, codes.DeadlineExceeded},
	} {
		if got := serve.GRPCCode(tc.err); got != tc.want {
			t.Errorf("GRPCCode(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

type errWrap struct{ err error }

func (e errWrap) Error() string { return "wrapped: " + e.err.Error() }
func (e errWrap) Unwrap() error { return e.err }
