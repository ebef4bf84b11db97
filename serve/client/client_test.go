package client_test

import (
	"context"
	"errors"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/test/bufconn"

	"github.com/sporeml/spore/internal/fakebackend"
	"github.com/sporeml/spore/serve"
	"github.com/sporeml/spore/serve/client"
	"github.com/sporeml/spore/tensor"
)

// transports are the ways a test reaches the fake: gRPC over an
// in-memory listener, and HTTP (binary and JSON) through the real HTTP
// front end on a loopback test server.
var transports = []struct {
	name  string
	start func(t testing.TB, b serve.Backend, lim serve.Limits) *client.Client
}{
	{"grpc", startGRPC},
	{"http", func(t testing.TB, b serve.Backend, lim serve.Limits) *client.Client { return startHTTP(t, b, lim) }},
	{"http-json", func(t testing.TB, b serve.Backend, lim serve.Limits) *client.Client {
		return startHTTP(t, b, lim, client.WithJSON())
	}},
}

func startGRPC(t testing.TB, b serve.Backend, lim serve.Limits) *client.Client {
	t.Helper()
	s := grpc.NewServer(serve.GRPCServerOptions(b, lim)...)
	serve.RegisterGRPC(s, b, lim)
	lis := bufconn.Listen(1 << 20)
	go s.Serve(lis)
	t.Cleanup(s.Stop)
	c, err := client.NewGRPC("passthrough:///bufnet", client.WithDialOptions(
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) })))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func startHTTP(t testing.TB, b serve.Backend, lim serve.Limits, opts ...client.Option) *client.Client {
	t.Helper()
	ts := httptest.NewServer(serve.NewHTTPHandler(b, lim))
	t.Cleanup(ts.Close)
	c, err := client.NewHTTP(ts.URL+"/", append([]client.Option{client.WithHTTPClient(ts.Client())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// wantError fails unless err is a *client.Error with the status, the gRPC
// code that goes with it, and a message saying every substring.
func wantError(t *testing.T, err error, st int, substrs ...string) {
	t.Helper()
	var e *client.Error
	if !errors.As(err, &e) {
		t.Fatalf("got %v (%T), want a *client.Error with status %d", err, err, st)
	}
	if e.Status != st || e.Code != serve.GRPCCode(&serve.Error{Status: st}) {
		t.Fatalf("got status %d code %v (%q), want %d", e.Status, e.Code, e.Msg, st)
	}
	for _, s := range substrs {
		if !strings.Contains(e.Msg, s) {
			t.Errorf("message %q does not say %q", e.Msg, s)
		}
	}
}

func TestHealthAndMetadata(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			c := tr.start(t, fakebackend.New(), serve.Limits{})
			ctx := testCtx(t)
			for name, f := range map[string]func(context.Context) (bool, error){"Live": c.Live, "Ready": c.Ready} {
				if ok, err := f(ctx); err != nil || !ok {
					t.Errorf("%s = %v, %v", name, ok, err)
				}
			}
			for _, tc := range []struct {
				model, version string
				ready          bool
				status         int // 0: no error
			}{
				{"double", "", true, 0},
				{"double", "1", true, 0},
				{"loading", "", false, 0},
				{"nosuch", "", false, http.StatusNotFound},
				{"double", "9", false, http.StatusNotFound},
			} {
				ok, err := c.ModelReady(ctx, tc.model, tc.version)
				if tc.status != 0 {
					wantError(t, err, tc.status, tc.model)
					continue
				}
				if err != nil || ok != tc.ready {
					t.Errorf("ModelReady(%q, %q) = %v, %v; want %v", tc.model, tc.version, ok, err, tc.ready)
				}
			}
			sm, err := c.ServerMetadata(ctx)
			if err != nil || sm.Name != "fake" || sm.Version != "0.1" || !slices.Contains(sm.Extensions, "binary_tensor_data") {
				t.Errorf("ServerMetadata = %+v, %v", sm, err)
			}
			mm, err := c.ModelMetadata(ctx, "double", "")
			if err != nil || mm.Name != "double" || len(mm.Inputs) != 1 || !slices.Equal(mm.Inputs[0].Shape, []int64{-1, 3}) || mm.Outputs[0].Name != "y" {
				t.Errorf("ModelMetadata = %+v, %v", mm, err)
			}
			_, err = c.ModelMetadata(ctx, "nosuch", "")
			wantError(t, err, http.StatusNotFound, `unknown model "nosuch"`)
		})
	}
}

func TestRepository(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			fake := fakebackend.New()
			c := tr.start(t, fake, serve.Limits{})
			ctx := testCtx(t)
			all, err := c.Index(ctx, false)
			if err != nil || len(all) != 3 || all[2] != (serve.IndexEntry{Name: "loading", Version: "1", State: "LOADING", Reason: "warming up"}) {
				t.Errorf("Index(false) = %+v, %v", all, err)
			}
			ready, err := c.Index(ctx, true)
			if err != nil || len(ready) != 2 {
				t.Errorf("Index(true) = %+v, %v", ready, err)
			}
			if err := c.Load(ctx, "echo"); err != nil {
				t.Error(err)
			}
			if err := c.Unload(ctx, "double"); err != nil {
				t.Error(err)
			}
			wantError(t, c.Load(ctx, "nosuch"), http.StatusNotFound, "nosuch")
			loads, unloads := fake.Loads()
			if !slices.Equal(loads, []string{"echo"}) || !slices.Equal(unloads, []string{"double"}) {
				t.Errorf("the server saw loads %v, unloads %v", loads, unloads)
			}
		})
	}
}

func TestInferRoundTrip(t *testing.T) {
	inputs := []client.Input{
		{"fp32", tensor.FromSlice([]float32{1.5, -2, float32(math.Inf(-1)), 0.1}, 2, 2)},
		{"fp64", tensor.FromSlice([]float64{1e-300, math.Pi}, 2)},
		{"fp16", tensor.FromSlice([]tensor.F16{tensor.F16From(0.1), tensor.F16From(-65504)}, 2, 1)},
		{"bf16", tensor.FromSlice([]tensor.BF16{tensor.BF16From(3.25)}, 1)},
		{"int32", tensor.FromSlice([]int32{math.MinInt32, 7}, 2)},
		{"int64", tensor.FromSlice([]int64{math.MaxInt64, -1}, 1, 2)},
		{"uint8", tensor.FromSlice([]uint8{0, 200, 255}, 3)},
		{"bool", tensor.FromSlice([]bool{true, false}, 2)},
		{"scalar", tensor.Scalar(int64(42))},
		{"empty", tensor.New(tensor.Float32, 0, 4)},
	}
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			c := tr.start(t, fakebackend.New(), serve.Limits{})
			res, err := c.Infer(testCtx(t), "echo", "", inputs)
			if err != nil {
				t.Fatal(err)
			}
			if res.Model != "echo" || res.Version != "1" {
				t.Errorf("the response names model %q version %q", res.Model, res.Version)
			}
			if len(res.Outputs) != len(inputs) {
				t.Fatalf("%d outputs for %d inputs", len(res.Outputs), len(inputs))
			}
			for _, in := range inputs {
				got := res.Output(in.Name)
				if got == nil {
					t.Errorf("no output %q", in.Name)
					continue
				}
				if !slices.Equal(got.Shape(), in.Tensor.Shape()) || got.DType() != in.Tensor.DType() {
					t.Errorf("%s: got %v%v, want %v%v", in.Name, got.DType(), got.Shape(), in.Tensor.DType(), in.Tensor.Shape())
				}
				// The bytes are the elements' bits: exact through JSON as
				// well, infinities and 16-bit floats included.
				if a, b := serve.AppendRaw(nil, got), serve.AppendRaw(nil, in.Tensor); !slices.Equal(a, b) {
					t.Errorf("%s: got bytes %v, want %v", in.Name, a, b)
				}
			}

			// Only the outputs asked for come back.
			res, err = c.Infer(testCtx(t), "echo", "1", inputs, "int32", "bool")
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Outputs) != 2 || res.Output("int32") == nil || res.Output("bool") == nil {
				t.Errorf("asked for int32 and bool, got %v", res.Outputs)
			}

			x := tensor.FromSlice([]float32{1, 2, 3}, 1, 3)
			res, err = c.Infer(testCtx(t), "double", "", []client.Input{{"x", x}})
			if err != nil {
				t.Fatal(err)
			}
			if y := res.Output("y"); y == nil || !slices.Equal(y.Float32s(), []float32{2, 4, 6}) {
				t.Errorf("double([1 2 3]) = %v", res.Outputs)
			}
		})
	}
}

func TestInferErrors(t *testing.T) {
	x := tensor.FromSlice([]float32{1, 2, 3}, 1, 3)
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			c := tr.start(t, fakebackend.New(), serve.Limits{MaxBodyBytes: 4096})
			ctx := testCtx(t)
			for _, tc := range []struct {
				name   string
				model  string
				inputs []client.Input
				status int
				msg    []string
			}{
				{"unknown model", "nosuch", []client.Input{{"x", x}}, http.StatusNotFound, []string{`unknown model "nosuch"`}},
				{"wrong shape", "double", []client.Input{{"x", tensor.FromSlice([]float32{1, 2}, 2, 1)}}, http.StatusBadRequest, []string{"[-1 3]"}},
				{"wrong datatype", "double", []client.Input{{"x", tensor.FromSlice([]int64{1, 2, 3}, 1, 3)}}, http.StatusBadRequest, []string{"FP32", "INT64"}},
				{"queue full", "full", []client.Input{{"x", x}}, http.StatusTooManyRequests, []string{"queue is full"}},
				{"not ready", "loading", []client.Input{{"x", x}}, http.StatusServiceUnavailable, []string{"loading"}},
				{"too large", "echo", []client.Input{{"big", tensor.New(tensor.Uint8, 8192)}}, http.StatusRequestEntityTooLarge, nil},
			} {
				t.Run(tc.name, func(t *testing.T) {
					_, err := c.Infer(ctx, tc.model, "", tc.inputs)
					st := tc.status
					if tc.name == "too large" && tr.name == "grpc" {
						// gRPC has one code for both; the client reads it
						// as the commoner 429.
						st = http.StatusTooManyRequests
					}
					wantError(t, err, st, tc.msg...)
				})
			}

			// Deadlines: the client's context is the request's, over both
			// transports (HTTP sends it as the timeout parameter).
			dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err := c.Infer(dctx, "slow", "", []client.Input{{"x", x}})
			if err == nil {
				t.Fatal("a request to the slow model past its deadline succeeded")
			}
			if el := time.Since(start); el > 5*time.Second {
				t.Errorf("the deadline took %v to end the request", el)
			}

			// Mistakes the client catches before sending.
			for _, in := range [][]client.Input{
				{{"", x}},
				{{"x", nil}},
				{{"x", x}, {"x", x}},
			} {
				_, err := c.Infer(ctx, "double", "", in)
				if err == nil || client.StatusOf(err) != 0 {
					t.Errorf("Infer with inputs %v: got %v, want a client-side error", in, err)
				}
			}
			if _, err := c.Infer(ctx, "", "", nil); err == nil || !strings.Contains(err.Error(), "model name is empty") {
				t.Errorf("Infer without a model: %v", err)
			}
		})
	}
}

// TestServerDeadlineFromHTTPClient checks that an HTTP client's deadline
// reaches the server as the request's own, not the server's default.
func TestServerDeadlineFromHTTPClient(t *testing.T) {
	fake := fakebackend.New()
	c := startHTTP(t, fake, serve.Limits{DefaultTimeout: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := c.Infer(ctx, "echo", "", []client.Input{{"x", tensor.Scalar(float32(1))}}); err != nil {
		t.Fatal(err)
	}
	if left := time.Until(fake.Deadline()); left > 3*time.Minute || left < time.Minute {
		t.Errorf("the server's deadline is %v away, want about 2m", left)
	}
}

func TestConstructors(t *testing.T) {
	for _, bad := range []string{"", "127.0.0.1:8000", "ftp://x", "http://", "http://h:1/?q=1", "://x"} {
		if _, err := client.NewHTTP(bad); err == nil {
			t.Errorf("NewHTTP(%q) succeeded", bad)
		}
	}
	if _, err := client.NewGRPC(""); err == nil {
		t.Error("NewGRPC(\"\") succeeded")
	}
	// A server that is not there is an error of the call, not a status.
	c, err := client.NewHTTP("http://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Live(testCtx(t)); err == nil || client.StatusOf(err) != 0 {
		t.Errorf("HTTP Live on a closed port: %v", err)
	}
	gc, err := client.NewGRPC("127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	defer gc.Close()
	if _, err := gc.Live(testCtx(t)); err == nil || client.StatusOf(err) != 0 || !strings.Contains(err.Error(), "cannot reach") {
		t.Errorf("gRPC Live on a closed port: %v (status %d)", err, client.StatusOf(err))
	}
}

// TestConcurrentInfer sends requests from many goroutines through one
// Client, as a service does: each gets its own answer.
func TestConcurrentInfer(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			c := tr.start(t, fakebackend.New(), serve.Limits{})
			ctx := testCtx(t)
			errs := make(chan error, 8)
			for g := range 8 {
				go func() {
					for i := range 20 {
						v := float32(g*100 + i)
						res, err := c.Infer(ctx, "double", "", []client.Input{{"x", tensor.FromSlice([]float32{v, 0, 1}, 1, 3)}})
						if err == nil && !slices.Equal(res.Output("y").Float32s(), []float32{2 * v, 0, 2}) {
							err = errors.New("a response came back to the wrong request")
						}
						if err != nil {
							errs <- err
							return
						}
					}
					errs <- nil
				}()
			}
			for range 8 {
				if err := <-errs; err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// BenchmarkInfer is one round trip of a 784-float input (an MNIST
// image) through each transport to a model that echoes it, over loopback:
// the client's and the front end's cost, no model's.
func BenchmarkInfer(b *testing.B) {
	x := tensor.RandNormal(tensor.Float32, 0, 1, 1, 784)
	for _, tr := range transports {
		b.Run(tr.name, func(b *testing.B) {
			c := tr.start(b, fakebackend.New(), serve.Limits{})
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Infer(ctx, "echo", "", []client.Input{{"x", x}}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
