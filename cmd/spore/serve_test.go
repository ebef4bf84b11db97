package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sporeml/spore/serve/client"
	"github.com/sporeml/spore/tensor"
)

// TestServeRefusesBadFlags: each bad invocation is one line on stderr and
// exit status 2, before anything listens.
func TestServeRefusesBadFlags(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"serve"}, "--model-repository is required"},
		{[]string{"serve", "--model-repository", "r", "extra"}, `unexpected argument "extra"`},
		{[]string{"serve", "--model-repository", "r", "--http", "off", "--grpc", "off"}, "nothing to serve on"},
		{[]string{"serve", "--model-repository", "r", "--poll", "-1s"}, "--poll -1s: want a positive duration"},
		{[]string{"serve", "--model-repository", "r", "--timeout", "0s"}, "--timeout 0s: want a positive duration"},
		{[]string{"serve", "--model-repository", "r", "--max-body", "0"}, "--max-body 0"},
		{[]string{"serve", "--model-repository", "r", "--threads", "-2"}, "--threads -2"},
		{[]string{"serve", "--bogus"}, "flag provided but not defined: -bogus"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args[1:], " "), func(t *testing.T) {
			var stdout, stderr strings.Builder
			code := run(c.args, &stdout, &stderr)
			if code != 2 || !strings.Contains(stderr.String(), c.want) || strings.Count(stderr.String(), "\n") != 1 {
				t.Errorf("exit %d, stderr %q; want 2 and one line with %q", code, stderr.String(), c.want)
			}
		})
	}
	// A repository that does not exist is a failure (1), after binding.
	var stdout, stderr strings.Builder
	code := run([]string{"serve", "--model-repository", filepath.Join(t.TempDir(), "none"), "--http", "127.0.0.1:0", "--grpc", "off"}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "model repository") {
		t.Errorf("missing repository: exit %d, stderr %q", code, stderr.String())
	}
}

// TestServeAndStopOnSIGTERM runs spore serve on a repository, infers over
// HTTP and gRPC, and stops it with SIGTERM: it drains and exits 0.
func TestServeAndStopOnSIGTERM(t *testing.T) {
	repo := t.TempDir()
	for path, text := range map[string]string{"dyn/config.json": `{"max_batch_size": 2}`} {
		os.MkdirAll(filepath.Join(repo, filepath.Dir(path)), 0o755)
		os.WriteFile(filepath.Join(repo, path), []byte(text), 0o644)
	}
	model, err := os.ReadFile("../../onnx/testdata/torch/dynbatch.onnx")
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(repo, "dyn", "1"), 0o755)
	if err := os.WriteFile(filepath.Join(repo, "dyn", "1", "model.onnx"), model, 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"serve", "--model-repository", repo, "--http", "127.0.0.1:0", "--grpc", "127.0.0.1:0"}, &stdout, &stderr)
	}()
	httpRe := regexp.MustCompile(`HTTP on (http://127\.0\.0\.1:\d+)`)
	grpcRe := regexp.MustCompile(`gRPC on (127\.0\.0\.1:\d+)`)
	var base, target string
	for deadline := time.Now().Add(20 * time.Second); (base == "" || target == "" || !strings.Contains(stderr.String(), "SIGTERM stops")) && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := httpRe.FindStringSubmatch(stderr.String()); m != nil {
			base = m[1]
		}
		if m := grpcRe.FindStringSubmatch(stderr.String()); m != nil {
			target = m[1]
		}
		select {
		case code := <-done:
			t.Fatalf("spore serve exited %d; stderr %q", code, stderr.String())
		default:
		}
	}
	if base == "" || target == "" {
		t.Fatalf("spore serve did not say where it serves; stderr %q", stderr.String())
	}
	resp, err := http.Get(base + "/v2/models/dyn")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"shape":[-1,3,8,8]`) {
		t.Errorf("metadata: %d %s", resp.StatusCode, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	x := tensor.Zeros(tensor.Float32, 2, 3, 8, 8)
	for _, mk := range []func() (*client.Client, error){
		func() (*client.Client, error) { return client.NewHTTP(base) },
		func() (*client.Client, error) { return client.NewGRPC(target) },
	} {
		c, err := mk()
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.Infer(ctx, "dyn", "", []client.Input{{Name: "x", Tensor: x}})
		if err != nil {
			t.Error(err)
		} else if y := res.Output("y"); y == nil || y.Dim(0) != 2 || y.Dim(1) != 5 {
			t.Errorf("output %v", res.Outputs)
		}
		if _, err := c.Infer(ctx, "dyn", "", []client.Input{{Name: "x", Tensor: tensor.Zeros(tensor.Float32, 3, 3, 8, 8)}}); client.StatusOf(err) != 400 {
			t.Errorf("a batch of 3 for max_batch_size 2: %v, want 400", err)
		}
		c.Close()
	}
	resp, err = http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `nv_inference_request_success{model="dyn",version="1"} 2`) {
		t.Errorf("metrics after two requests:\n%s", body)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != 0 || !strings.Contains(stderr.String(), "spore serve: stopped") {
			t.Errorf("after SIGTERM: exit %d, stderr %q", code, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("spore serve did not stop on SIGTERM")
	}
}
