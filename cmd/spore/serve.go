package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"

	"github.com/sporeml/spore/internal/kernels/parallel"
	"github.com/sporeml/spore/serve"
)

const serveSynopsis = `spore serve --model-repository DIR [--http ADDR] [--grpc ADDR] [--poll DUR]

Serves the models of a repository over the Open Inference Protocol (KServe v2,
as Triton speaks it), on HTTP/REST and gRPC, with dynamic batching and
Prometheus metrics at /metrics on the HTTP address.

The repository has Triton's layout: DIR/<model>/<version>/model.onnx, with an
optional DIR/<model>/config.json, for example
  {"max_batch_size": 64, "max_queue_delay_microseconds": 200, "instances": 1}
The highest version serves unless the config's version_policy says otherwise.
Every model version is compiled, one plan with a dynamic batch dimension, and
warmed up before it serves: no request waits for a compilation. A model that fails to load is reported on stderr and by the
repository index (POST /v2/repository/index); the others serve.

Both addresses are on the loopback interface unless told otherwise; "off"
turns a front end off. On SIGTERM or Ctrl-C the server stops accepting,
finishes the requests it holds (for up to --drain), and exits 0.`

func cmdServe(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("serve", serveSynopsis, stdout)
	repo := fs.String("model-repository", "", "the model repository `DIR` (required)")
	httpAddr := fs.String("http", "127.0.0.1:8000", "HTTP/REST `address` (host:port), or off")
	grpcAddr := fs.String("grpc", "127.0.0.1:8001", "gRPC `address` (host:port), or off")
	poll := fs.Duration("poll", 0, "rescan the repository at this `interval` and reload changed versions (0: never)")
	timeout := fs.Duration("timeout", 60*time.Second, "a request's deadline when it names none")
	maxBody := fs.Int64("max-body", 64<<20, "largest request body or gRPC message, in `bytes`")
	threads := fs.Int("threads", 0, "kernel threads, shared by every model (0: GOMAXPROCS)")
	drain := fs.Duration("drain", 30*time.Second, "how long a stop waits for the requests in flight")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q (see 'spore serve --help')", fs.Arg(0))
	}
	if *repo == "" {
		return usagef("--model-repository is required (see 'spore serve --help')")
	}
	if *httpAddr == "off" && *grpcAddr == "off" {
		return usagef("--http and --grpc are both off: nothing to serve on")
	}
	for name, d := range map[string]time.Duration{"--poll": *poll, "--timeout": *timeout, "--drain": *drain} {
		if d < 0 || (d == 0 && name != "--poll") {
			return usagef("%s %v: want a positive duration", name, d)
		}
	}
	if *maxBody <= 0 {
		return usagef("--max-body %d: want a positive size", *maxBody)
	}
	if *threads < 0 || *threads > 4*runtime.NumCPU() {
		return usagef("--threads %d: want 0..%d", *threads, 4*runtime.NumCPU())
	}
	if *threads > 0 {
		parallel.SetWorkers(*threads)
	}

	// Bind first: a busy port fails at once, not after the models compile.
	var httpLn, grpcLn net.Listener
	var err error
	if *httpAddr != "off" {
		if httpLn, err = net.Listen("tcp", *httpAddr); err != nil {
			return fmt.Errorf("--http: %v", err)
		}
		defer httpLn.Close()
	}
	if *grpcAddr != "off" {
		if grpcLn, err = net.Listen("tcp", *grpcAddr); err != nil {
			return fmt.Errorf("--grpc: %v", err)
		}
		defer grpcLn.Close()
	}
	for _, ln := range []net.Listener{httpLn, grpcLn} {
		if ln != nil && !isLoopback(ln.Addr()) {
			fmt.Fprintf(stderr, "spore serve: note: %s is reachable from other machines, and the protocol has no authentication\n", ln.Addr())
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var logMu sync.Mutex
	logf := func(format string, args ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		fmt.Fprintf(stderr, "spore serve: "+format+"\n", args...)
	}
	lim := serve.Limits{MaxBodyBytes: *maxBody, DefaultTimeout: *timeout}
	s, err := serve.New(serve.Config{Repository: *repo, Limits: lim, Poll: *poll, Logf: logf})
	if err != nil {
		return err
	}
	ready := len(s.Index(true))
	if ready == 0 {
		logf("warning: no model version is ready (see the messages above)")
	}

	errc := make(chan error, 2)
	var httpSrv *http.Server
	if httpLn != nil {
		httpSrv = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := httpSrv.Serve(httpLn); !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("http: %v", err)
			}
		}()
		logf("HTTP on http://%s (metrics at /metrics)", httpLn.Addr())
	}
	var grpcSrv *grpc.Server
	if grpcLn != nil {
		grpcSrv = grpc.NewServer(serve.GRPCServerOptions(s, s.Limits())...)
		serve.RegisterGRPC(grpcSrv, s, s.Limits())
		go func() {
			if err := grpcSrv.Serve(grpcLn); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
				errc <- fmt.Errorf("grpc: %v", err)
			}
		}()
		logf("gRPC on %s", grpcLn.Addr())
	}
	logf("serving %d model version(s) from %s; Ctrl-C or SIGTERM stops", ready, *repo)

	var failed error
	select {
	case <-ctx.Done():
	case failed = <-errc:
	}
	// A second signal takes its default action: the process ends.
	stop()
	logf("stopping: no new requests; finishing those in flight (up to %v)", *drain)
	sctx, cancel := context.WithTimeout(context.Background(), *drain)
	defer cancel()
	var wg sync.WaitGroup
	var httpErr error
	if httpSrv != nil {
		wg.Add(1)
		go func() { defer wg.Done(); httpErr = httpSrv.Shutdown(sctx) }()
	}
	if grpcSrv != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			done := make(chan struct{})
			go func() { grpcSrv.GracefulStop(); close(done) }()
			select {
			case <-done:
			case <-sctx.Done():
				grpcSrv.Stop()
			}
		}()
	}
	wg.Wait()
	serr := s.Shutdown(sctx)
	switch {
	case failed != nil:
		return failed
	case httpErr != nil:
		return fmt.Errorf("stopping the HTTP server: %v", httpErr)
	case serr != nil:
		return serr
	}
	logf("stopped")
	return nil
}

// isLoopback reports whether a listener's address is on the loopback
// interface.
func isLoopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}
