package serve_test

import (
	"context"
	"fmt"
	"log"
	"net"

	"google.golang.org/grpc"

	"github.com/sporeml/spore/internal/fakebackend"
	"github.com/sporeml/spore/serve"
	"github.com/sporeml/spore/serve/client"
	"github.com/sporeml/spore/tensor"
)

// ExampleRegisterGRPC serves the protocol's gRPC service on a loopback
// port. The backend here is a test stand-in with a model "double"; a
// program serves its *serve.Server the same way, next to its HTTP handler.
func ExampleRegisterGRPC() {
	var backend serve.Backend = fakebackend.New()
	lim := serve.Limits{MaxBodyBytes: 16 << 20}

	srv := grpc.NewServer(serve.GRPCServerOptions(backend, lim)...)
	serve.RegisterGRPC(srv, backend, lim)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go srv.Serve(lis)
	defer srv.GracefulStop()

	c, err := client.NewGRPC(lis.Addr().String())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	x := tensor.FromSlice([]float32{1, 2, 3}, 1, 3)
	res, err := c.Infer(context.Background(), "double", "", []client.Input{{Name: "x", Tensor: x}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Output("y").Float32s())
	// Output: [2 4 6]
}
