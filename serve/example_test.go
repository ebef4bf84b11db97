package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/serve"
	"github.com/sporeml/spore/tensor"
)

// A Go program serving a spore cell over the Open Inference Protocol,
// with dynamic batching. A repository of ONNX models is one more field:
// serve.Config{Repository: "models"}.
func Example() {
	tensor.SetSeed(0)
	net := nn.NewSequentialCell(nn.NewDense(4, 8), nn.NewReLU(), nn.NewDense(8, 2))

	s, err := serve.New(serve.Config{})
	if err != nil {
		panic(err)
	}
	defer s.Shutdown(context.Background())
	err = s.AddModel("tiny", serve.Model{
		Inputs:       []serve.TensorMetadata{{Name: "x", Datatype: "FP32", Shape: []int64{4}}},
		Outputs:      []serve.TensorMetadata{{Name: "y", Datatype: "FP32", Shape: []int64{2}}},
		Fn:           serve.One(net.Call),
		MaxBatchSize: 16,
	})
	if err != nil {
		panic(err)
	}

	// A program listens with http.ListenAndServe("127.0.0.1:8000", s.Handler()).
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	body := `{"inputs": [{"name": "x", "datatype": "FP32", "shape": [2, 4], "data": [1, 2, 3, 4, 5, 6, 7, 8]}]}`
	resp, err := http.Post(srv.URL+"/v2/models/tiny/infer", "application/json", strings.NewReader(body))
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	var out struct {
		ModelName string `json:"model_name"`
		Outputs   []struct {
			Name  string
			Shape []int
			Data  []float32
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		panic(err)
	}
	fmt.Println(resp.Status, out.ModelName, out.Outputs[0].Name, out.Outputs[0].Shape)

	// The served values are the cell's own.
	want := net.Call(tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6, 7, 8}, 2, 4)).Float32s()
	same := len(want) == len(out.Outputs[0].Data)
	for i := range want {
		same = same && math.Abs(float64(want[i]-out.Outputs[0].Data[i])) < 1e-5
	}
	fmt.Println("same as net.Call:", same)
	// Output:
	// 200 OK tiny y [2 2]
	// same as net.Call: true
}
