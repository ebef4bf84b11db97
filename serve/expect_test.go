package serve

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestBatchWaitsOnlyForAnnouncedRequests: a batch that is not full waits
// for a request a front end has announced (Expect) and leaves with it,
// while a lone request with nothing announced is answered without waiting
// out max_queue_delay.
func TestBatchWaitsOnlyForAnnouncedRequests(t *testing.T) {
	const delay = 2 * time.Second
	s := newGoServer(t, affine(8, delay))

	start := time.Now()
	if _, err := inferX(s, "affine", rowsOf(1, 0)); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > delay/2 {
		t.Errorf("a lone request took %v: it waited for a batch with nothing on its way (delay %v)", d, delay)
	}

	withdraw := s.Expect("affine", "")
	first := make(chan error, 1)
	start = time.Now()
	go func() {
		_, err := inferX(s, "affine", rowsOf(1, 10))
		first <- err
	}()
	select {
	case err := <-first:
		t.Fatalf("the first request was answered (%v) while another was announced", err)
	case <-time.After(50 * time.Millisecond):
	}
	x := rowsOf(2, 20)
	req := &InferRequest{Model: "affine", Inputs: []InferInput{{Name: "x", Datatype: "FP32", Tensor: x}}, Arrived: withdraw}
	resp, err := s.Infer(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > delay/2 {
		t.Errorf("the batch took %v: it did not leave once the announced request arrived", d)
	}
	if got := resp.Outputs[0].Tensor.Float32s()[0]; got != 41 {
		t.Errorf("y[0] = %v, want 41", got)
	}
	if got := metricText(t, s); !strings.Contains(got, `nv_inference_exec_count{model="affine",version="1"} 2`) ||
		!strings.Contains(got, `nv_inference_count{model="affine",version="1"} 4`) {
		t.Errorf("want 2 executions of 4 rows (the lone one, then the two together):\n%s", grep(got, "count"))
	}
}

// TestFrontEndsWithdrawTheirAnnouncements: every request the HTTP front
// end takes, answered or refused, leaves no announcement behind (one left
// would make every later batch wait out max_queue_delay).
func TestFrontEndsWithdrawTheirAnnouncements(t *testing.T) {
	s := newGoServer(t, affine(8, time.Millisecond))
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	bodies := []struct {
		body string
		want int
	}{
		{`{"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 3], "data": [1, 2, 3]}]}`, 200},
		{`{"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 4], "data": [1, 2, 3, 4]}]}`, 400},
		{`{"inputs": [{"name": "x", "datatype": "INT32", "shape": [1, 3], "data": [1, 2, 3]}]}`, 400},
		{`{"inputs": [`, 400},
		{`{"inputs": [{"name": "x", "datatype": "FP32", "shape": [9, 3], "data": [` + strings.Repeat("1, ", 26) + `1]}]}`, 400},
	}
	for _, b := range bodies {
		resp, err := http.Post(srv.URL+"/v2/models/affine/infer", "application/json", bytes.NewBufferString(b.body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != b.want {
			t.Errorf("%s: status %d, want %d", b.body, resp.StatusCode, b.want)
		}
	}
	v, err := s.resolve("affine", "")
	if err != nil {
		t.Fatal(err)
	}
	if n := v.b.arriving.Load(); n != 0 {
		t.Errorf("%d announcements left after every request was answered", n)
	}
}
