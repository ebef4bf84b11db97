package serve_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/sporeml/spore/serve"
)

// echoModel is a Backend with one model, "echo", that returns its inputs as
// its outputs. A real program serves a *serve.Server instead.
type echoModel struct{}

func (echoModel) Live() bool  { return true }
func (echoModel) Ready() bool { return true }
func (echoModel) ModelReady(name, version string) error {
	if name != "echo" {
		return &serve.Error{Status: http.StatusNotFound, Msg: fmt.Sprintf("unknown model %q", name)}
	}
	return nil
}
func (echoModel) ServerMetadata() serve.ServerMetadata { return serve.ServerMetadata{Name: "example"} }
func (e echoModel) ModelMetadata(name, version string) (serve.ModelMetadata, error) {
	return serve.ModelMetadata{Name: name}, e.ModelReady(name, version)
}
func (e echoModel) Infer(ctx context.Context, req *serve.InferRequest) (*serve.InferResponse, error) {
	if err := e.ModelReady(req.Model, req.Version); err != nil {
		return nil, err
	}
	resp := &serve.InferResponse{ModelName: req.Model, ModelVersion: "1", ID: req.ID}
	for _, in := range req.Inputs {
		resp.Outputs = append(resp.Outputs, serve.InferOutput{Name: in.Name, Shape: in.Shape, Tensor: in.Tensor})
	}
	return resp, nil
}
func (echoModel) Index(bool) []serve.IndexEntry         { return nil }
func (echoModel) Load(string) error                     { return nil }
func (echoModel) Unload(string) error                   { return nil }
func (echoModel) Reject(model, version string, e error) {}
func (echoModel) Expect(model, version string) func()   { return func() {} }

// ExampleNewHTTPHandler serves a backend over the Open Inference
// Protocol's REST API and sends it one request, with nested data, and one
// that names an unknown model.
func ExampleNewHTTPHandler() {
	srv := httptest.NewServer(serve.NewHTTPHandler(echoModel{}, serve.Limits{}))
	defer srv.Close()

	post := func(path, body string) {
		resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			fmt.Println(err)
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		fmt.Println(resp.StatusCode, string(b))
	}
	post("/v2/models/echo/infer", `{"id":"1","inputs":[{"name":"x","shape":[2,2],"datatype":"FP32","data":[[1,2],[3,0.5]]}]}`)
	post("/v2/models/nope/infer", `{"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[1]}]}`)
	// Output:
	// 200 {"model_name":"echo","model_version":"1","id":"1","outputs":[{"name":"x","datatype":"FP32","shape":[2,2],"data":[1,2,3,0.5]}]}
	// 404 {"error":"unknown model \"nope\""}
}
