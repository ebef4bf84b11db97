package serve

import (
	"errors"
	"net/http"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/sporeml/spore/serve/internal/pb"
)

// FuzzGRPCInferRequest feeds arbitrary bytes, as a ModelInferRequest
// message, to the gRPC front end's decoder: it must never panic, must
// refuse with a 400 *Error, and what it accepts must be consistent (each
// tensor holds exactly the elements its declared shape has, with its
// declared datatype), and must encode back to the same raw bytes.
func FuzzGRPCInferRequest(f *testing.F) {
	seeds := []*pb.ModelInferRequest{
		{ModelName: "m", Inputs: []*pb.ModelInferRequest_InferInputTensor{{Name: "x", Datatype: "FP32", Shape: []int64{2}}}, RawInputContents: [][]byte{make([]byte, 8)}},
		{ModelName: "m", Inputs: []*pb.ModelInferRequest_InferInputTensor{{Name: "x", Datatype: "INT64", Shape: []int64{1, 2}, Contents: &pb.InferTensorContents{Int64Contents: []int64{1, 2}}}}},
		{ModelName: "m", Inputs: []*pb.ModelInferRequest_InferInputTensor{{Name: "b", Datatype: "BOOL", Shape: []int64{3}, Contents: &pb.InferTensorContents{BoolContents: []bool{true, false, true}}}}},
		{ModelName: "m", Inputs: []*pb.ModelInferRequest_InferInputTensor{{Name: "u", Datatype: "UINT8", Shape: []int64{2}, Contents: &pb.InferTensorContents{UintContents: []uint32{1, 300}}}}},
		{ModelName: "m", ModelVersion: "2", Id: "r", Parameters: map[string]*pb.InferParameter{"timeout": {ParameterChoice: &pb.InferParameter_Int64Param{Int64Param: 10}}},
			Inputs:           []*pb.ModelInferRequest_InferInputTensor{{Name: "h", Datatype: "FP16", Shape: []int64{1}}},
			Outputs:          []*pb.ModelInferRequest_InferRequestedOutputTensor{{Name: "y"}},
			RawInputContents: [][]byte{{0, 60}}},
	}
	for _, s := range seeds {
		b, err := proto.Marshal(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	lim := Limits{MaxElements: 1 << 16}.WithDefaults()
	f.Fuzz(func(t *testing.T, data []byte) {
		var r pb.ModelInferRequest
		if proto.Unmarshal(data, &r) != nil {
			return
		}
		req, _, err := decodeGRPCInfer(&r, lim)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Status != http.StatusBadRequest {
				t.Fatalf("refused with %v (%T), want a 400 *Error", err, err)
			}
			return
		}
		res := &InferResponse{ModelName: req.Model}
		for _, in := range req.Inputs {
			n, err := Elements(in.Name, in.Shape, lim.MaxElements)
			if err != nil || n != in.Tensor.Size() || Datatype(in.Tensor.DType()) != in.Datatype {
				t.Fatalf("input %q: declared %s%v, holds %v%v", in.Name, in.Datatype, in.Shape, in.Tensor.DType(), in.Tensor.Shape())
			}
			res.Outputs = append(res.Outputs, InferOutput{Name: in.Name, Datatype: in.Datatype, Shape: in.Shape, Tensor: in.Tensor})
		}
		out, err := encodeGRPCInfer(res)
		if err != nil {
			t.Fatalf("encoding the inputs back: %v", err)
		}
		for i, in := range r.GetInputs() {
			if raw := r.GetRawInputContents(); len(raw) > 0 && !slices.Equal(out.RawOutputContents[i], raw[i]) {
				t.Fatalf("input %q: raw bytes %v came back as %v", in.GetName(), raw[i], out.RawOutputContents[i])
			}
		}
	})
}
