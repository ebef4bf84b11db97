package serve

import (
	"bytes"
	"encoding/json"
	"io"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/sporeml/spore/tensor"
)

// httpMNISTBody returns a 1×784 FP32 request as a Python client writes it:
// pixel values in [0, 1], float32 values that numpy's tolist widens to
// float64, written with float64's digits (0.32941177487373352).
func httpMNISTBody() []byte {
	r := rand.New(rand.NewSource(1))
	b := []byte(`{"id":"bench","inputs":[{"name":"x","shape":[1,784],"datatype":"FP32","data":[`)
	for i := 0; i < 784; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		v := float32(0)
		if r.Intn(4) > 0 { // MNIST is mostly background
			v = float32(r.Intn(256)) / 255
		}
		b = strconv.AppendFloat(b, float64(v), 'g', -1, 64)
	}
	return append(b, "]}]}"...)
}

// BenchmarkDecodeJSON1x784FP32 decodes a 1×784 FP32 request with the
// front end's decoder.
func BenchmarkDecodeJSON1x784FP32(b *testing.B) {
	body := httpMNISTBody()
	lim := Limits{}.WithDefaults()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := decodeInferRequest(body, -1, "m", "", lim); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeJSON1x784FP32Stdlib decodes the same request with
// encoding/json into typed structs, the reference the hand-written
// decoder is measured against (and which does less: no shape check, no
// tensor).
func BenchmarkDecodeJSON1x784FP32Stdlib(b *testing.B) {
	body := httpMNISTBody()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var req struct {
			ID     string `json:"id"`
			Inputs []struct {
				Name     string    `json:"name"`
				Shape    []int64   `json:"shape"`
				Datatype string    `json:"datatype"`
				Data     []float32 `json:"data"`
			} `json:"inputs"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			b.Fatal(err)
		}
	}
}

// httpBenchResponse is a response with one FP32 output of n elements.
func httpBenchResponse(n int) (*InferResponse, *InferRequest) {
	r := rand.New(rand.NewSource(2))
	v := make([]float32, n)
	for i := range v {
		v[i] = r.Float32()*20 - 10
	}
	resp := &InferResponse{ModelName: "m", ModelVersion: "1", ID: "bench", Outputs: []InferOutput{
		{Name: "y", Datatype: "FP32", Shape: []int64{1, int64(n)}, Tensor: tensor.FromSlice(v, 1, n)},
	}}
	return resp, &InferRequest{}
}

// BenchmarkEncodeJSON1x784FP32 encodes a response with a 1×784 FP32
// output into a reused buffer.
func BenchmarkEncodeJSON1x784FP32(b *testing.B) {
	resp, req := httpBenchResponse(784)
	buf, _, _, _ := appendInferResponse(nil, resp, req, httpOptions{})
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf, _, _, _ = appendInferResponse(buf[:0], resp, req, httpOptions{})
	}
}

// BenchmarkEncodeJSON1x784FP32Stdlib encodes the same output with
// encoding/json, for reference.
func BenchmarkEncodeJSON1x784FP32Stdlib(b *testing.B) {
	resp, _ := httpBenchResponse(784)
	type out struct {
		Name     string    `json:"name"`
		Datatype string    `json:"datatype"`
		Shape    []int64   `json:"shape"`
		Data     []float32 `json:"data"`
	}
	v := struct {
		ModelName    string `json:"model_name"`
		ModelVersion string `json:"model_version"`
		ID           string `json:"id"`
		Outputs      []out  `json:"outputs"`
	}{"m", "1", "bench", []out{{"y", "FP32", []int64{1, 784}, resp.Outputs[0].Tensor.Data().([]float32)}}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHTTPInfer1x784FP32 runs the whole handler, without a network,
// on a 1×784 request to the fake backend's "double" model (which answers
// 784 outputs).
func BenchmarkHTTPInfer1x784FP32(b *testing.B) {
	h := NewHTTPHandler(newHTTPFake(), Limits{})
	body := httpMNISTBody()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	w := &httpDiscardWriter{h: http.Header{}}
	for b.Loop() {
		r := httptest.NewRequest("POST", "/v2/models/double/infer", bytes.NewReader(body))
		w.status = 0
		h.ServeHTTP(w, r)
		if w.status != 200 {
			b.Fatalf("status %d", w.status)
		}
	}
}

// httpDiscardWriter is a ResponseWriter that keeps only the status.
type httpDiscardWriter struct {
	h      http.Header
	status int
}

func (w *httpDiscardWriter) Header() http.Header         { return w.h }
func (w *httpDiscardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *httpDiscardWriter) WriteHeader(s int)           { w.status = s }

// BenchmarkHTTPInferLoopback1x784FP32 sends 1×784 requests over loopback
// TCP from parallel clients (GOMAXPROCS × 8 of them) to the handler on an
// httptest.Server, with the fake "double" backend: the cost of the HTTP
// front end and net/http together, without a model.
func BenchmarkHTTPInferLoopback1x784FP32(b *testing.B) {
	srv := httptest.NewServer(NewHTTPHandler(newHTTPFake(), Limits{}))
	defer srv.Close()
	tr := &http.Transport{MaxIdleConnsPerHost: 256}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	body := httpMNISTBody()
	b.SetBytes(int64(len(body)))
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := client.Post(srv.URL+"/v2/models/double/infer", "application/json", bytes.NewReader(body))
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
	})
}
