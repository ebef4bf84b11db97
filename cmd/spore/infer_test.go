package main

import (
	"encoding/json"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc"

	"github.com/sporeml/spore/internal/fakebackend"
	"github.com/sporeml/spore/npy"
	"github.com/sporeml/spore/serve"
	"github.com/sporeml/spore/tensor"
)

// inferServers serves the fake backend over gRPC on a loopback port and
// over HTTP, and returns the flags that reach each.
func inferServers(t *testing.T) map[string][]string {
	t.Helper()
	b := fakebackend.New()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(serve.GRPCServerOptions(b, serve.Limits{})...)
	serve.RegisterGRPC(gs, b, serve.Limits{})
	go gs.Serve(lis)
	t.Cleanup(gs.Stop)
	hs := httptest.NewServer(serve.NewHTTPHandler(b, serve.Limits{}))
	t.Cleanup(hs.Close)
	return map[string][]string{
		"grpc":      {"--grpc", lis.Addr().String()},
		"http":      {"--url", hs.URL},
		"http-json": {"--url", hs.URL, "--http-json"},
	}
}

// inferArgs is "infer", the server's flags and args.
func inferArgs(server []string, args ...string) []string {
	return append(append([]string{"infer"}, server...), args...)
}

func writeNPY(t *testing.T, path string, x *tensor.Tensor) string {
	t.Helper()
	if err := npy.WriteFile(path, x); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestInfer(t *testing.T) {
	servers := inferServers(t)
	dir := t.TempDir()
	// NumPy's default float64, for a model that takes FP32.
	x := writeNPY(t, filepath.Join(dir, "x.npy"), tensor.FromSlice([]float64{1, 2, 3, -4, 5, 6}, 2, 3))
	for name, server := range servers {
		t.Run(name, func(t *testing.T) {
			for _, input := range []string{"x=" + x, x} {
				out := filepath.Join(t.TempDir(), "outs")
				stdout, stderr, code := runCLI(t, inferArgs(server, "--model", "double", "--input", input, "--out", out)...)
				if code != 0 {
					t.Fatalf("--input %s: exit %d: %s", input, code, stderr)
				}
				for _, want := range []string{"double version 1", "input   x", "Float64 converted to FP32", "output  y", "[2 3]", "FP32", "min -8 max 12", "wrote " + filepath.Join(out, "y.npy")} {
					if !strings.Contains(stdout, want) {
						t.Errorf("--input %s: the report lacks %q:\n%s", input, want, stdout)
					}
				}
				y, err := npy.ReadFile(filepath.Join(out, "y.npy"))
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(y.Float32s(), []float32{2, 4, 6, -8, 10, 12}) || !slices.Equal(y.Shape(), tensor.Shape{2, 3}) {
					t.Errorf("y.npy holds %v%v", y.Shape(), y.Float32s())
				}
			}

			stdout, stderr, code := runCLI(t, inferArgs(server, "--model", "double", "--input", "x="+x, "--json")...)
			if code != 0 {
				t.Fatalf("--json: exit %d: %s", code, stderr)
			}
			var r inferResult
			if err := json.Unmarshal([]byte(stdout), &r); err != nil {
				t.Fatalf("--json printed %q: %v", stdout, err)
			}
			if r.Model != "double" || len(r.Outputs) != 1 || r.Outputs[0].Name != "y" || r.Outputs[0].DType != "FP32" || r.Outputs[0].Max != 12.0 {
				t.Errorf("--json: %+v", r)
			}
		})
	}
}

func TestInferOutputNamesStayInDir(t *testing.T) {
	servers := inferServers(t)
	dir := t.TempDir()
	in := writeNPY(t, filepath.Join(dir, "a.npy"), tensor.FromSlice([]int64{7}, 1))
	out := filepath.Join(dir, "out")
	// The echo model names its output after the input: a server could
	// answer any name, and none may write outside --out.
	_, stderr, code := runCLI(t, inferArgs(servers["grpc"], "--model", "echo", "--input", "../evil="+in, "--input", "ok="+in, "--output", "../evil", "--out", out)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != ".._evil.npy" {
		t.Errorf("--out holds %v, want only .._evil.npy", entries)
	}
	if _, err := os.Stat(filepath.Join(dir, "evil.npy")); err == nil {
		t.Error("an output was written outside --out")
	}
}

func TestInferErrors(t *testing.T) {
	servers := inferServers(t)
	dir := t.TempDir()
	x := writeNPY(t, filepath.Join(dir, "x.npy"), tensor.FromSlice([]float32{1, 2, 3}, 1, 3))
	wrong := writeNPY(t, filepath.Join(dir, "wrong.npy"), tensor.FromSlice([]float32{1, 2}, 2, 1))
	notNPY := filepath.Join(dir, "bad.npy")
	os.WriteFile(notNPY, []byte("not numpy"), 0o644)
	aFile := filepath.Join(dir, "file")
	os.WriteFile(aFile, nil, 0o644)
	g := servers["grpc"]
	h := servers["http"]
	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  []string
	}{
		{"no server", []string{"--model", "double"}, 2, []string{"no server given"}},
		{"two servers", append(append([]string{}, g...), "--url", "http://127.0.0.1:1", "--model", "double"), 2, []string{"choose one"}},
		{"no model", g, 2, []string{"no model given"}},
		{"not a URL", []string{"--url", "127.0.0.1:8000", "--model", "double"}, 2, []string{"http://HOST:PORT"}},
		{"json over grpc", append(append([]string{}, g...), "--http-json", "--model", "double"), 2, []string{"--http-json is for --url"}},
		{"positional", append(append([]string{}, g...), "--model", "double", x), 2, []string{"unexpected argument"}},
		{"bad timeout", append(append([]string{}, g...), "--model", "double", "--timeout", "-1s"), 2, []string{"--timeout"}},
		{"out is a file", append(append([]string{}, g...), "--model", "double", "--input", x, "--out", aFile), 2, []string{"is not a directory"}},
		{"unknown model grpc", append(append([]string{}, g...), "--model", "nosuch", "--input", x), 1, []string{"404", `unknown model "nosuch"`}},
		{"unknown model http", append(append([]string{}, h...), "--model", "nosuch", "--input", x), 1, []string{"404", `unknown model "nosuch"`}},
		{"wrong shape", append(append([]string{}, h...), "--model", "double", "--input", "x="+wrong), 1, []string{"400", "[-1 3]"}},
		{"too many inputs", append(append([]string{}, g...), "--model", "double", "--input", x, "--input", x), 2, []string{"all already given", "x"}},
		{"twice", append(append([]string{}, g...), "--model", "double", "--input", x, "--input", "x="+x), 2, []string{`input "x" is given twice`}},
		{"missing file", append(append([]string{}, g...), "--model", "double", "--input", filepath.Join(dir, "none.npy")), 1, []string{"none.npy"}},
		{"not npy", append(append([]string{}, g...), "--model", "double", "--input", notNPY), 1, []string{"bad.npy"}},
		{"unreachable", []string{"--url", "http://127.0.0.1:1", "--model", "double"}, 1, []string{"127.0.0.1:1", "refused"}},
		{"queue full", append(append([]string{}, g...), "--model", "full", "--input", "x="+x), 1, []string{"429", "queue is full"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runCLI(t, append([]string{"infer"}, tc.args...)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %q, stdout %q", code, tc.code, stderr, stdout)
			}
			if lines := strings.Count(strings.TrimRight(stderr, "\n"), "\n"); lines != 0 || !strings.HasPrefix(stderr, "spore infer: ") {
				t.Errorf("stderr is not one line of spore infer's: %q", stderr)
			}
			for _, m := range tc.msg {
				if !strings.Contains(stderr, m) {
					t.Errorf("stderr %q does not say %q", stderr, m)
				}
			}
			if strings.Contains(stderr, "panic") || strings.Contains(stderr, "goroutine") {
				t.Errorf("stderr shows a panic: %q", stderr)
			}
		})
	}
}
