package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/sporeml/spore/npy"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

const fixtures = "../onnx/testdata/torch"

// affine is a Go model: y = 2x + 1 over rows of 3, and s = the row sums.
func affine(maxBatch int, delay time.Duration) Model {
	return Model{
		Inputs:  []TensorMetadata{{Name: "x", Datatype: "FP32", Shape: []int64{3}}},
		Outputs: []TensorMetadata{{Name: "y", Datatype: "FP32", Shape: []int64{3}}, {Name: "s", Datatype: "FP32", Shape: []int64{}}},
		Fn: func(xs ...*tensor.Tensor) []*tensor.Tensor {
			y := ops.AddScalar(ops.MulScalar(xs[0], 2), 1)
			return []*tensor.Tensor{y, ops.Sum(xs[0], -1)}
		},
		MaxBatchSize:  maxBatch,
		MaxQueueDelay: delay,
	}
}

func rowsOf(rows int, base float32) *tensor.Tensor {
	d := make([]float32, rows*3)
	for i := range d {
		d[i] = base + float32(i)
	}
	return tensor.FromSlice(d, rows, 3)
}

func inferX(s *Server, model string, x *tensor.Tensor) (*InferResponse, error) {
	return s.Infer(context.Background(), &InferRequest{Model: model, Inputs: []InferInput{{Name: "x", Datatype: Datatype(x.DType()), Tensor: x}}})
}

func newGoServer(t *testing.T, m Model) *Server {
	t.Helper()
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AddModel("affine", m); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	return s
}

// TestBatchedRequestsGetTheirOwnRows sends concurrent requests of several
// batch sizes to a batching Go model and checks each gets its own rows
// back, and that the executions were fewer than the requests.
func TestBatchedRequestsGetTheirOwnRows(t *testing.T) {
	s := newGoServer(t, affine(8, 50*time.Millisecond))
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rows := 1 + i%3
			x := rowsOf(rows, float32(100*i))
			resp, err := inferX(s, "affine", x)
			if err != nil {
				errs <- err
				return
			}
			y, sum := resp.Outputs[0].Tensor.Float32s(), resp.Outputs[1].Tensor.Float32s()
			xs := x.Float32s()
			if len(y) != len(xs) || len(sum) != rows {
				errs <- fmt.Errorf("request %d: got %d and %d values for %d rows", i, len(y), len(sum), rows)
				return
			}
			for k := range xs {
				if y[k] != 2*xs[k]+1 {
					errs <- fmt.Errorf("request %d: y[%d] = %v, want %v", i, k, y[k], 2*xs[k]+1)
					return
				}
			}
			for r := range rows {
				if want := xs[3*r] + xs[3*r+1] + xs[3*r+2]; sum[r] != want {
					errs <- fmt.Errorf("request %d: s[%d] = %v, want %v", i, r, sum[r], want)
					return
				}
			}
			if got := resp.Outputs[0].Shape; len(got) != 2 || got[0] != int64(rows) || got[1] != 3 {
				errs <- fmt.Errorf("request %d: y's shape %v", i, got)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	v, _ := s.resolve("affine", "")
	count, exec := counterValue(t, v.vm.count), counterValue(t, v.vm.exec)
	// 16 requests of 1..3 rows (31 rows) in batches of at most 8.
	if count != 31 || exec >= 16 || exec < 4 {
		t.Errorf("nv_inference_count %v, nv_inference_exec_count %v: want 31 inferences in 4..15 executions", count, exec)
	}
}

// TestInferRefuses is every way a request can be wrong, with the status
// and what the message must name.
func TestInferRefuses(t *testing.T) {
	s := newGoServer(t, affine(4, 0))
	x := rowsOf(2, 0)
	in := func(name, dt string, t *tensor.Tensor) InferInput {
		return InferInput{Name: name, Datatype: dt, Tensor: t}
	}
	cases := []struct {
		name   string
		req    InferRequest
		status int
		want   string
	}{
		{"unknown model", InferRequest{Model: "nope", Inputs: []InferInput{in("x", "FP32", x)}}, 404, `unknown model "nope"`},
		{"unknown version", InferRequest{Model: "affine", Version: "7", Inputs: []InferInput{in("x", "FP32", x)}}, 404, `no version "7"`},
		{"missing input", InferRequest{Model: "affine"}, 400, `input "x" is missing`},
		{"unknown input", InferRequest{Model: "affine", Inputs: []InferInput{in("x", "FP32", x), in("z", "FP32", x)}}, 400, `no input "z"`},
		{"twice", InferRequest{Model: "affine", Inputs: []InferInput{in("x", "FP32", x), in("x", "FP32", x)}}, 400, "given twice"},
		{"datatype", InferRequest{Model: "affine", Inputs: []InferInput{in("x", "FP64", tensor.Zeros(tensor.Float64, 2, 3))}}, 400, "datatype FP64, the model wants FP32"},
		{"shape", InferRequest{Model: "affine", Inputs: []InferInput{in("x", "FP32", tensor.Zeros(tensor.Float32, 2, 4))}}, 400, "shape [2 4], the model wants [-1 3]"},
		{"rank", InferRequest{Model: "affine", Inputs: []InferInput{in("x", "FP32", tensor.Zeros(tensor.Float32, 3))}}, 400, "the model wants [-1 3]"},
		{"batch too big", InferRequest{Model: "affine", Inputs: []InferInput{in("x", "FP32", rowsOf(5, 0))}}, 400, "batch size 5, more than the model's max_batch_size 4"},
		{"empty batch", InferRequest{Model: "affine", Inputs: []InferInput{in("x", "FP32", tensor.Zeros(tensor.Float32, 0, 3))}}, 400, "batch size 0"},
		{"no data", InferRequest{Model: "affine", Inputs: []InferInput{{Name: "x", Datatype: "FP32"}}}, 400, "no data"},
		{"unknown output", InferRequest{Model: "affine", Inputs: []InferInput{in("x", "FP32", x)}, Outputs: []RequestedOutput{{Name: "w"}}}, 400, `no output "w"`},
		{"output twice", InferRequest{Model: "affine", Inputs: []InferInput{in("x", "FP32", x)}, Outputs: []RequestedOutput{{Name: "y"}, {Name: "y"}}}, 400, "requested twice"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := s.Infer(context.Background(), &c.req)
			if err == nil {
				t.Fatal("no error")
			}
			if StatusOf(err) != c.status || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %d %q, want %d and a message with %q", StatusOf(err), err, c.status, c.want)
			}
		})
	}
	// The requested outputs come back in the order asked, with Binary.
	resp, err := s.Infer(context.Background(), &InferRequest{Model: "affine", Inputs: []InferInput{in("x", "FP32", x)},
		Outputs: []RequestedOutput{{Name: "s", Binary: true}, {Name: "y"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Outputs) != 2 || resp.Outputs[0].Name != "s" || !resp.Outputs[0].Binary || resp.Outputs[1].Name != "y" || resp.Outputs[1].Binary {
		t.Errorf("outputs %+v", resp.Outputs)
	}
	if got := metricText(t, s); !strings.Contains(got, `nv_inference_request_failure{model="",reason="NOT_FOUND",version=""} 1`) ||
		!strings.Contains(got, `nv_inference_request_failure{model="affine",reason="BAD_REQUEST",version="1"} 11`) {
		t.Errorf("failure metrics:\n%s", grep(got, "nv_inference_request_failure"))
	}
}

// blockingServer serves a model whose instance blocks until release is
// closed, with a queue of queueSize.
func blockingServer(t *testing.T, queueSize int) (s *Server, v *version, started chan struct{}, release chan struct{}) {
	t.Helper()
	s = newGoServer(t, affine(0, 0))
	v, _ = s.resolve("affine", "")
	// Replace the version's batcher with one whose instance blocks.
	sp := *v.sp
	sp.queueSize = queueSize
	started, release = make(chan struct{}, 100), make(chan struct{})
	in := &instance{sp: &sp, call: func(xs ...*tensor.Tensor) []*tensor.Tensor {
		started <- struct{}{}
		<-release
		return []*tensor.Tensor{xs[0], ops.Sum(xs[0], 0)}
	}}
	old := v.b
	v.b = newBatcher(&sp, v.vm, []*instance{in})
	old.close()
	old.wait()
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	return s, v, started, release
}

// TestQueueBoundsAndDeadlines: a full queue refuses at once with 429, a
// queued request whose deadline passes or whose client goes away gets 504
// or 499 and leaves the queue.
func TestQueueBoundsAndDeadlines(t *testing.T) {
	s, v, started, release := blockingServer(t, 2)
	x := tensor.Zeros(tensor.Float32, 3)
	go inferX(s, "affine", x) // runs, and blocks the instance
	<-started
	results := make(chan error, 2)
	for range 2 {
		go func() { _, err := inferX(s, "affine", x); results <- err }()
	}
	waitFor(t, func() bool { return queued(v.b) == 2 })
	start := time.Now()
	_, err := inferX(s, "affine", x)
	if StatusOf(err) != http.StatusTooManyRequests || time.Since(start) > time.Second {
		t.Errorf("full queue: %v (status %d) after %v, want 429 at once", err, StatusOf(err), time.Since(start))
	}
	close(release)
	for range 2 {
		if err := <-results; err != nil {
			t.Error(err)
		}
	}

	// Deadlines and cancellation, with the instance blocked again.
	s2, v2, started2, release2 := blockingServer(t, 4)
	go inferX(s2, "affine", x)
	<-started2
	dctx, dcancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer dcancel()
	_, err = s2.Infer(dctx, &InferRequest{Model: "affine", Inputs: []InferInput{{Name: "x", Datatype: "FP32", Tensor: x}}})
	if StatusOf(err) != http.StatusGatewayTimeout {
		t.Errorf("deadline: %v (status %d), want 504", err, StatusOf(err))
	}
	cctx, ccancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := s2.Infer(cctx, &InferRequest{Model: "affine", Inputs: []InferInput{{Name: "x", Datatype: "FP32", Tensor: x}}})
		done <- err
	}()
	waitFor(t, func() bool { return queued(v2.b) == 1 })
	ccancel()
	if err := <-done; StatusOf(err) != StatusClientClosedRequest {
		t.Errorf("cancelled: %v (status %d), want %d", err, StatusOf(err), StatusClientClosedRequest)
	}
	if n := queued(v2.b); n != 0 {
		t.Errorf("%d requests left in the queue after their clients went", n)
	}
	if g := gaugeValue(t, v2.vm.pending); g != 0 {
		t.Errorf("nv_inference_pending_request_count %v, want 0", g)
	}
	close(release2)
	got := metricText(t, s2)
	for _, want := range []string{`reason="TIMEOUT"`, `reason="CANCELED"`} {
		if !strings.Contains(got, want) {
			t.Errorf("metrics lack %s:\n%s", want, grep(got, "failure"))
		}
	}
}

func queued(b *batcher) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue)
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestShutdownDrains: what is queued when Shutdown starts is answered;
// what comes after is refused with 503.
func TestShutdownDrains(t *testing.T) {
	s, v, started, release := blockingServer(t, 16)
	x := tensor.Zeros(tensor.Float32, 3)
	results := make(chan error, 8)
	go func() { _, err := inferX(s, "affine", x); results <- err }()
	<-started
	for range 7 {
		go func() { _, err := inferX(s, "affine", x); results <- err }()
	}
	waitFor(t, func() bool { return queued(v.b) == 7 })
	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(context.Background()) }()
	waitFor(t, func() bool { return !s.Ready() })
	if _, err := inferX(s, "affine", x); StatusOf(err) != http.StatusServiceUnavailable {
		t.Errorf("after Shutdown began: %v, want 503", err)
	}
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned (%v) with requests still held", err)
	case <-time.After(20 * time.Millisecond):
	}
	go func() {
		for range started {
		}
	}()
	close(release)
	if err := <-shut; err != nil {
		t.Fatal(err)
	}
	if s.Live() {
		t.Error("live after Shutdown finished")
	}
	for range 8 {
		if err := <-results; err != nil {
			t.Errorf("a request held at shutdown failed: %v", err)
		}
	}
	// A Shutdown whose context ends first says so.
	s2, _, started2, _ := blockingServer(t, 4)
	go inferX(s2, "affine", x)
	<-started2
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := s2.Shutdown(ctx); err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown with a request stuck: %v, want the deadline", err)
	}
}

// writeRepo makes a repository: files maps a path under it to the file
// to copy (a path under the fixtures) or, for config.json, its text.
func writeRepo(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for path, src := range files {
		dst := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		var data []byte
		if strings.HasSuffix(path, ".json") || !strings.HasSuffix(src, ".onnx") {
			data = []byte(src)
		} else {
			var err error
			if data, err = os.ReadFile(filepath.Join(fixtures, src)); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRepository serves ONNX models from a repository: the highest
// version, metadata with -1 for the batch, values as the fixture's, a
// request batched with others, and the failures Index reports.
func TestRepository(t *testing.T) {
	dir := t.TempDir()
	writeRepo(t, dir, map[string]string{
		"dyn/1/model.onnx":       "dynbatch.onnx",
		"dyn/3/model.onnx":       "dynbatch.onnx",
		"dyn/config.json":        `{"max_batch_size": 6, "max_queue_delay_microseconds": 2000}`,
		"fixed/1/model.onnx":     "mlp.onnx",
		"badcfg/1/model.onnx":    "mlp.onnx",
		"badcfg/config.json":     `{"max_batch_sise": 4}`,
		"forced/1/model.onnx":    "mlp.onnx",
		"forced/config.json":     `{"max_batch_size": 4}`,
		"garbage/1/model.onnx":   "not a model",
		"noversion/x/model.onnx": "mlp.onnx",
		"triton/1/model.onnx":    "dynbatch.onnx",
		"triton/config.json": `{"name": "triton", "platform": "onnxruntime_onnx", "max_batch_size": 3,
			"input": [{"name": "x", "data_type": "TYPE_FP32", "dims": [3, 8, 8]}], "output": [{"name": "y", "dims": [5]}],
			"instance_group": [{"count": 2, "kind": "KIND_CPU"}], "dynamic_batching": {"max_queue_delay_microseconds": 100}}`,
		"fixdims/1/model.onnx":    "cnn.onnx",
		"fixdims/config.json":     `{"max_batch_size": 0, "input": [{"name": "x", "dims": [2, 1, 28, 28]}]}`,
		"wrongdims/1/model.onnx":  "dynbatch.onnx",
		"wrongdims/config.json":   `{"input": [{"name": "x", "dims": [3, 8, 9]}]}`,
		"wrongtype/1/model.onnx":  "dynbatch.onnx",
		"wrongtype/config.json":   `{"input": [{"name": "x", "data_type": "TYPE_INT64"}]}`,
		"wrongname/1/model.onnx":  "dynbatch.onnx",
		"wrongname/config.json":   `{"name": "other"}`,
		"wronginput/1/model.onnx": "dynbatch.onnx",
		"wronginput/config.json":  `{"input": [{"name": "z"}]}`,
	})
	s, err := New(Config{Repository: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	md, err := s.ModelMetadata("dyn", "")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(md.Versions) != "[3]" || fmt.Sprint(md.Inputs[0].Shape) != "[-1 3 8 8]" || fmt.Sprint(md.Outputs[0].Shape) != "[-1 5]" {
		t.Errorf("metadata %+v", md)
	}
	if md, err := s.ModelMetadata("fixed", "1"); err != nil || fmt.Sprint(md.Inputs[0].Shape) != "[4 20]" {
		t.Errorf("fixed metadata %+v, %v", md, err)
	}
	if err := s.ModelReady("dyn", "1"); StatusOf(err) != http.StatusNotFound {
		t.Errorf("version 1 (not served by the policy): %v", err)
	}
	if s.Ready() {
		t.Error("Ready with models that failed to load")
	}
	// Values: the fixture's batch of 5, alone and next to other requests.
	x, err := npy.ReadFile(filepath.Join(fixtures, "dynbatch_b5_in.npy"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := npy.ReadFile(filepath.Join(fixtures, "dynbatch_b5_out.npy"))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := x
			if i > 0 {
				in = tensor.Zeros(tensor.Float32, 1, 3, 8, 8)
			}
			resp, err := inferX(s, "dyn", in)
			if err != nil {
				t.Error(err)
				return
			}
			if i == 0 {
				assertClose(t, resp.Outputs[0].Tensor, want)
			}
		}()
	}
	wg.Wait()

	idx := map[string]IndexEntry{}
	for _, e := range s.Index(false) {
		idx[e.Name+"/"+e.Version] = e
	}
	checks := []struct{ key, state, reason string }{
		{"dyn/3", "READY", ""},
		{"fixed/1", "READY", ""},
		{"badcfg/", "UNAVAILABLE", `unknown field "max_batch_sise"`},
		{"forced/1", "UNAVAILABLE", "no dynamic first dimension"},
		{"garbage/1", "UNAVAILABLE", "onnx"},
		{"noversion/", "UNAVAILABLE", "no version to serve"},
		{"triton/1", "READY", ""},
		{"fixdims/1", "READY", ""},
		{"wrongdims/1", "UNAVAILABLE", `dims [3 8 9], the model's are [3 8 8]`},
		{"wrongtype/1", "UNAVAILABLE", "data_type TYPE_INT64, the model's is FP32"},
		{"wrongname/1", "UNAVAILABLE", `names the model "other"`},
		{"wronginput/1", "UNAVAILABLE", `lists input "z"`},
	}
	for _, c := range checks {
		e, ok := idx[c.key]
		if !ok || e.State != c.state || !strings.Contains(e.Reason, c.reason) {
			t.Errorf("index %s: %+v, want %s with a reason containing %q (index %+v)", c.key, e, c.state, c.reason, s.Index(false))
		}
	}
	if n := len(s.Index(true)); n != 4 {
		t.Errorf("ready index has %d entries, want 4: %+v", n, s.Index(true))
	}
	// Triton's spellings configure the model; dims fix what the file
	// leaves dynamic, so it compiles ahead.
	tv, _ := s.resolve("triton", "")
	if tv.sp.maxBatch != 3 || len(tv.insts) != 2 || tv.sp.delay != 100*time.Microsecond || fmt.Sprint(tv.sp.md.Outputs[0].Shape) != "[-1 5]" {
		t.Errorf("triton config: max batch %d, %d instances, delay %v, outputs %+v", tv.sp.maxBatch, len(tv.insts), tv.sp.delay, tv.sp.md.Outputs)
	}
	fv, _ := s.resolve("fixdims", "")
	if fmt.Sprint(fv.sp.md.Inputs[0].Shape) != "[2 1 28 28]" || fv.insts[0].f.Stats().Compiles != 1 {
		t.Errorf("fixed dims: metadata %v, %d compiles at load (want 1)", fv.sp.md.Inputs[0].Shape, fv.insts[0].f.Stats().Compiles)
	}
	if _, err := inferX(s, "fixdims", tensor.Zeros(tensor.Float32, 3, 1, 28, 28)); StatusOf(err) != http.StatusBadRequest {
		t.Errorf("a shape the config fixed otherwise: %v, want 400", err)
	}
	// A name that would leave the repository is refused before any file
	// is touched.
	for _, name := range []string{"../dyn", "dyn/3", "..", ".", "", "a\\b", "a\x00b"} {
		if err := s.Load(name); StatusOf(err) != http.StatusBadRequest {
			t.Errorf("Load(%q): %v, want 400", name, err)
		}
	}
	if err := s.Load("absent"); StatusOf(err) != http.StatusNotFound {
		t.Errorf("Load(absent): %v, want 404", err)
	}
}

func assertClose(t *testing.T, got, want *tensor.Tensor) {
	t.Helper()
	g, w := got.Float32s(), want.Float32s()
	if fmt.Sprint(got.Shape()) != fmt.Sprint(want.Shape()) {
		t.Fatalf("shape %v, want %v", got.Shape(), want.Shape())
	}
	for i := range g {
		if math.Abs(float64(g[i]-w[i])) > 1e-4*(1+math.Abs(float64(w[i]))) {
			t.Fatalf("element %d: %v, want %v", i, g[i], w[i])
		}
	}
}

// TestPollReloads: a new version serves once loaded, a broken one keeps
// the old serving and is reported, an unloaded model stays unloaded, and
// a removed directory unloads.
func TestPollReloads(t *testing.T) {
	dir := t.TempDir()
	writeRepo(t, dir, map[string]string{"m/1/model.onnx": "mlp.onnx"})
	s, err := New(Config{Repository: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	x := tensor.Zeros(tensor.Float32, 4, 20)
	serves := func() string {
		resp, err := inferX(s, "m", x)
		if err != nil {
			return err.Error()
		}
		return resp.ModelVersion
	}
	if v := serves(); v != "1" {
		t.Fatalf("serves %s", v)
	}
	steps := []struct {
		name  string
		files map[string]string
		want  string // the version served after the poll
		index string // an Index entry: name/version=STATE
	}{
		{"new version", map[string]string{"m/2/model.onnx": "mlp.onnx"}, "2", "m/2=READY"},
		{"broken version", map[string]string{"m/3/model.onnx": "broken"}, "2", "m/3=UNAVAILABLE"},
		{"fixed version", map[string]string{"m/3/model.onnx": "mlp.onnx"}, "3", "m/3=READY"},
		{"broken reload", map[string]string{"m/3/model.onnx": "broken again"}, "3", "m/3=READY"},
		{"new model", map[string]string{"n/1/model.onnx": "mlp.onnx"}, "3", "n/1=READY"},
	}
	for _, st := range steps {
		time.Sleep(10 * time.Millisecond) // a new modification time
		writeRepo(t, dir, st.files)
		s.poll(false)
		if v := serves(); v != st.want {
			t.Errorf("%s: serves %s, want %s", st.name, v, st.want)
		}
		if !hasEntry(s.Index(false), st.index) {
			t.Errorf("%s: index %+v has no %s", st.name, s.Index(false), st.index)
		}
	}
	if e := entryOf(s.Index(false), "m", "3"); !strings.Contains(e.Reason, "reload failed, the previous load keeps serving") {
		t.Errorf("a failed reload is reported as %+v", e)
	}
	// A config.json that does not parse keeps the served version serving,
	// and Index says why.
	writeRepo(t, dir, map[string]string{"m/config.json": `{"max_batch_size": `})
	s.poll(false)
	if v := serves(); v != "3" {
		t.Errorf("broken config: serves %s, want 3", v)
	}
	if e := entryOf(s.Index(false), "m", "3"); e.State != "READY" || !strings.Contains(e.Reason, "the latest load failed, this version keeps serving") || !strings.Contains(e.Reason, "config.json") {
		t.Errorf("a broken config.json is reported as %+v", e)
	}
	if !s.Ready() {
		t.Error("not ready while every model serves")
	}
	if err := s.Unload("m"); err != nil {
		t.Fatal(err)
	}
	s.poll(false)
	if _, err := inferX(s, "m", x); StatusOf(err) != http.StatusServiceUnavailable {
		t.Errorf("unloaded model: %v, want 503", err)
	}
	if err := s.Load("m"); StatusOf(err) != http.StatusBadRequest {
		t.Errorf("Load of a model whose highest version is broken: %v, want 400", err)
	}
	os.RemoveAll(filepath.Join(dir, "n"))
	s.poll(false)
	if _, err := inferX(s, "n", x); StatusOf(err) != http.StatusNotFound {
		t.Errorf("removed model: %v, want 404", err)
	}
}

func entryOf(idx []IndexEntry, name, version string) IndexEntry {
	for _, e := range idx {
		if e.Name == name && e.Version == version {
			return e
		}
	}
	return IndexEntry{}
}

func hasEntry(idx []IndexEntry, want string) bool {
	for _, e := range idx {
		if e.Name+"/"+e.Version+"="+e.State == want {
			return true
		}
	}
	return false
}

// TestReloadsDoNotLeak reloads a model 100 times and checks the live heap
// after a GC stays flat: retired versions, their plans and their metric
// series are all let go.
func TestReloadsDoNotLeak(t *testing.T) {
	cases := []struct {
		name, file, config string
		x                  *tensor.Tensor
	}{
		{"unbatched", "mlp.onnx", `{}`, tensor.Zeros(tensor.Float32, 4, 20)},
		{"batching", "dynbatch.onnx", `{"max_batch_size": 4, "instances": 2}`, tensor.Zeros(tensor.Float32, 3, 3, 8, 8)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeRepo(t, dir, map[string]string{"m/1/model.onnx": c.file, "m/config.json": c.config})
			s, err := New(Config{Repository: dir})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Shutdown(context.Background())
			reload := func(n int) {
				for range n {
					if err := s.Load("m"); err != nil {
						t.Fatal(err)
					}
					if _, err := inferX(s, "m", c.x); err != nil {
						t.Fatal(err)
					}
				}
				s.draining.Wait()
			}
			live := func() uint64 {
				var ms runtime.MemStats
				for range 3 {
					runtime.GC()
				}
				runtime.ReadMemStats(&ms)
				return ms.HeapAlloc
			}
			reload(10) // warm: caches, pools, first series
			before := live()
			reload(100)
			after := live()
			t.Logf("live heap %d KiB before 100 reloads, %d KiB after", before>>10, after>>10)
			// A loaded version of these models is 100-300 KiB of plans and
			// weights: a leak of each reload would add 10 MiB or more.
			if after > before+before/5+(512<<10) {
				t.Errorf("the live heap grew from %d to %d bytes over 100 reloads", before, after)
			}
		})
	}
}

// TestMetricsEndpoint scrapes /metrics and finds every metric the issue
// names, labelled by model and version.
func TestMetricsEndpoint(t *testing.T) {
	s := newGoServer(t, affine(4, 0))
	if _, err := inferX(s, "affine", rowsOf(2, 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := inferX(s, "affine", rowsOf(5, 0)); err == nil {
		t.Fatal("a batch over max_batch_size was served")
	}
	got := metricText(t, s)
	for _, want := range []string{
		`nv_inference_request_success{model="affine",version="1"} 1`,
		`nv_inference_count{model="affine",version="1"} 2`,
		`nv_inference_exec_count{model="affine",version="1"} 1`,
		`nv_inference_request_duration_us{model="affine",version="1"}`,
		`nv_inference_queue_duration_us{model="affine",version="1"}`,
		`nv_inference_compute_infer_duration_us{model="affine",version="1"}`,
		`nv_inference_pending_request_count{model="affine",version="1"} 0`,
		`nv_inference_request_failure{model="affine",reason="BAD_REQUEST",version="1"} 1`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	// Two servers keep their metrics apart.
	s2 := newGoServer(t, affine(4, 0))
	if strings.Contains(metricText(t, s2), `nv_inference_request_success{model="affine",version="1"} 1`) {
		t.Error("a second server sees the first one's counts")
	}
}

func metricText(t *testing.T, s *Server) string {
	t.Helper()
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func grep(text, word string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, word) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestAddModelRefuses: what AddModel checks.
func TestAddModelRefuses(t *testing.T) {
	s := newGoServer(t, affine(2, 0))
	good := affine(2, 0)
	noFn := good
	noFn.Fn = nil
	badType := good
	badType.Inputs = []TensorMetadata{{Name: "x", Datatype: "FP8", Shape: []int64{3}}}
	wrongOut := good
	wrongOut.Outputs = []TensorMetadata{{Name: "y", Datatype: "INT64", Shape: []int64{3}}, {Name: "s", Datatype: "FP32"}}
	cases := []struct {
		name, model string
		m           Model
		want        string
	}{
		{"taken", "affine", good, "already served"},
		{"bad name", "a/b", good, "character '/'"},
		{"no fn", "f", noFn, "Fn is nil"},
		{"datatype", "f", badType, `unknown datatype "FP8"`},
		{"outputs disagree", "f", wrongOut, "output \"y\" is FP32, the model declares INT64"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := s.AddModel(c.model, c.m)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error with %q", err, c.want)
			}
		})
	}
	if err := s.ModelReady("f", ""); StatusOf(err) != http.StatusNotFound {
		t.Errorf("a refused model is known: %v", err)
	}
	// A Go model unloads, and loads again (compiled afresh).
	if err := s.Unload("affine"); err != nil {
		t.Fatal(err)
	}
	if _, err := inferX(s, "affine", rowsOf(1, 0)); StatusOf(err) != http.StatusServiceUnavailable {
		t.Errorf("unloaded Go model: %v, want 503", err)
	}
	if e := s.Index(false); len(e) != 1 || e[0].State != "UNAVAILABLE" || e[0].Reason != "unloaded" {
		t.Errorf("index of an unloaded Go model: %+v", e)
	}
	if !s.Ready() {
		t.Error("an unloaded model makes the server not ready")
	}
	if err := s.Load("affine"); err != nil {
		t.Fatal(err)
	}
	if _, err := inferX(s, "affine", rowsOf(1, 0)); err != nil {
		t.Errorf("reloaded Go model: %v", err)
	}
}

func counterValue(t testing.TB, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func gaugeValue(t testing.TB, g prometheus.Gauge) float64 {
	t.Helper()
	var m dto.Metric
	if err := g.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}

// TestNoCompileOnTheRequestPath: once a version serves, no batch size up
// to max_batch_size compiles anything, whether a request brings it or
// the batcher forms it.
func TestNoCompileOnTheRequestPath(t *testing.T) {
	dir := t.TempDir()
	writeRepo(t, dir, map[string]string{
		"dyn/1/model.onnx": "dynbatch.onnx",
		"dyn/config.json":  `{"max_batch_size": 5, "max_queue_delay_microseconds": 1000, "instances": 2}`,
	})
	s, err := New(Config{Repository: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	if err := s.AddModel("affine", affine(6, time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		model string
		x     func(rows int) *tensor.Tensor
		max   int
	}{
		{"dyn", func(rows int) *tensor.Tensor { return tensor.Zeros(tensor.Float32, rows, 3, 8, 8) }, 5},
		{"affine", func(rows int) *tensor.Tensor { return rowsOf(rows, 0) }, 6},
	}
	for _, c := range cases {
		v, err := s.resolve(c.model, "")
		if err != nil {
			t.Fatal(err)
		}
		compiles := func() (n int) {
			for _, in := range v.insts {
				n += in.f.Stats().Compiles
			}
			return n
		}
		before := compiles()
		t.Logf("%s: %s; %d compiles at load", c.model, v.describe(), before)
		if !v.insts[0].dynamic && before < c.max*len(v.insts) {
			t.Errorf("%s: %d compiles at load, want one per batch size and instance (%d)", c.model, before, c.max*len(v.insts))
		}
		var wg sync.WaitGroup
		for i := range 40 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := inferX(s, c.model, c.x(1+i%c.max)); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if after := compiles(); after != before {
			t.Errorf("%s: %d compiles on the request path", c.model, after-before)
		}
	}
}

// TestPollLoopAndShutdownLeaveNothing: with Config.Poll a new version
// is picked up on its own, and after Shutdown no goroutine of the server
// (poller, workers, drains) is left.
func TestPollLoopAndShutdownLeaveNothing(t *testing.T) {
	run := func(check bool) {
		dir := t.TempDir()
		writeRepo(t, dir, map[string]string{"m/1/model.onnx": "mlp.onnx", "m/config.json": `{"instances": 2}`})
		s, err := New(Config{Repository: dir, Poll: 5 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.AddModel("affine", affine(2, 0)); err != nil {
			t.Fatal(err)
		}
		x := tensor.Zeros(tensor.Float32, 4, 20)
		if check {
			time.Sleep(10 * time.Millisecond)
			writeRepo(t, dir, map[string]string{"m/2/model.onnx": "mlp.onnx"})
			waitFor(t, func() bool {
				resp, err := inferX(s, "m", x)
				return err == nil && resp.ModelVersion == "2"
			})
		}
		if err := s.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	run(false) // starts what lives for the process (the kernels' worker pool)
	before := runtime.NumGoroutine()
	run(true)
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines before, %d after Shutdown:\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}

// TestModelFailuresAnswer500: a model that fails at run time answers 500
// naming the model; a bug's runtime error goes to the log with its stack,
// not to the client.
func TestModelFailuresAnswer500(t *testing.T) {
	var logMu sync.Mutex
	var logged strings.Builder
	s, err := New(Config{Logf: func(format string, args ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		fmt.Fprintf(&logged, format+"\n", args...)
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	if err := s.AddModel("affine", affine(0, 0)); err != nil {
		t.Fatal(err)
	}
	v, _ := s.resolve("affine", "")
	cases := []struct {
		name    string
		call    func(xs ...*tensor.Tensor) []*tensor.Tensor
		want    string
		notWant string
	}{
		{"runtime error", func(xs ...*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{xs[3]} },
			"failed with an internal error", "index out of range"},
		{"op error", func(xs ...*tensor.Tensor) []*tensor.Tensor {
			return []*tensor.Tensor{ops.Add(xs[0], tensor.Zeros(tensor.Float32, 7))}
		}, "failed: ", "goroutine"},
		{"wrong results", func(xs ...*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{xs[0]} },
			"returned 1 results", "goroutine"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := &instance{sp: v.sp, call: c.call}
			old := v.b
			v.b = newBatcher(v.sp, v.vm, []*instance{in})
			v.b.logf = s.cfg.Logf
			old.close()
			old.wait()
			_, err := inferX(s, "affine", tensor.Zeros(tensor.Float32, 3))
			if StatusOf(err) != http.StatusInternalServerError || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), c.notWant) {
				t.Errorf("got %d %v; want 500 with %q and without %q", StatusOf(err), err, c.want, c.notWant)
			}
		})
	}
	logMu.Lock()
	defer logMu.Unlock()
	if !strings.Contains(logged.String(), "index out of range") || !strings.Contains(logged.String(), "goroutine") {
		t.Errorf("the log lacks the runtime error and its stack:\n%s", logged.String())
	}
	if got := metricText(t, s); !strings.Contains(got, `nv_inference_request_failure{model="affine",reason="BACKEND",version="1"} 3`) {
		t.Errorf("failures:\n%s", grep(got, "failure"))
	}
}

// TestPerShapeFallback: a model one dynamic plan cannot serve (its graph
// depends on the batch size other than through shapes and their
// reciprocals: here a scale of n+0.5) gets a plan per batch size, all
// compiled at load, and answers right at each size.
func TestPerShapeFallback(t *testing.T) {
	m := affine(4, 0)
	m.Fn = func(xs ...*tensor.Tensor) []*tensor.Tensor {
		x := xs[0]
		return []*tensor.Tensor{ops.MulScalar(x, float64(x.Dim(0))+0.5), ops.Sum(x, -1)}
	}
	s := newGoServer(t, m)
	v, _ := s.resolve("affine", "")
	in := v.insts[0]
	if in.dynamic || in.whyPerShape == "" {
		t.Fatalf("dynamic %v (why not: %q); want the per-shape fallback", in.dynamic, in.whyPerShape)
	}
	t.Logf("%s", v.describe())
	before := in.f.Stats().Compiles
	if before < 4 {
		t.Errorf("%d compiles at load, want at least 4 (one per batch size)", before)
	}
	for rows := 1; rows <= 4; rows++ {
		resp, err := inferX(s, "affine", rowsOf(rows, 1))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := resp.Outputs[0].Tensor.Float32s()[0], float32(rows)+0.5; math.Abs(float64(got-want)) > 1e-6 {
			t.Errorf("batch %d: y[0] = %v, want %v", rows, got, want)
		}
	}
	if after := in.f.Stats().Compiles; after != before {
		t.Errorf("%d compiles on the request path", after-before)
	}
}

// TestBatchesKeepShapesApart: requests batch only with requests of the
// same non-batch shapes, across every input.
func TestBatchesKeepShapesApart(t *testing.T) {
	m := Model{
		Inputs:  []TensorMetadata{{Name: "a", Datatype: "FP32", Shape: []int64{-1}}, {Name: "b", Datatype: "INT64", Shape: []int64{2}}},
		Outputs: []TensorMetadata{{Name: "y", Datatype: "FP32", Shape: []int64{-1}}, {Name: "n", Datatype: "INT64", Shape: []int64{2}}},
		Fn: func(xs ...*tensor.Tensor) []*tensor.Tensor {
			return []*tensor.Tensor{ops.MulScalar(xs[0], 2), ops.AddScalar(xs[1], 1)}
		},
		MaxBatchSize:  8,
		MaxQueueDelay: 30 * time.Millisecond,
	}
	s := newGoServer(t, m)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			width := 3 + 2*(i%2) // 3 or 5
			a := make([]float32, width)
			for k := range a {
				a[k] = float32(10*i + k)
			}
			req := &InferRequest{Model: "affine", Inputs: []InferInput{
				{Name: "b", Datatype: "INT64", Tensor: tensor.FromSlice([]int64{int64(i), -int64(i)}, 1, 2)},
				{Name: "a", Datatype: "FP32", Tensor: tensor.FromSlice(a, 1, width)},
			}}
			resp, err := s.Infer(context.Background(), req)
			if err != nil {
				t.Error(err)
				return
			}
			y, n := resp.Outputs[0].Tensor.Float32s(), resp.Outputs[1].Tensor.Int64s()
			if len(y) != width || y[width-1] != 2*a[width-1] || n[0] != int64(i)+1 || n[1] != 1-int64(i) {
				t.Errorf("request %d: y %v, n %v", i, y, n)
			}
		}()
	}
	wg.Wait()
	v, _ := s.resolve("affine", "")
	if exec := counterValue(t, v.vm.exec); exec < 2 || exec > 7 {
		t.Errorf("%v executions for 8 requests of two shapes within one delay, want 2..7", exec)
	}
}
