package client_test

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

// Example sends one request to a model that doubles its input. The
// server here is a test stand-in on a loopback port, so that the example
// runs by itself; against "spore serve" the client part is the same,
// with its --grpc address (or client.NewHTTP and its --http URL).
func Example() {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	backend := fakebackend.New()
	srv := grpc.NewServer(serve.GRPCServerOptions(backend, serve.Limits{})...)
	serve.RegisterGRPC(srv, backend, serve.Limits{})
	go srv.Serve(lis)
	defer srv.Stop()

	c, err := client.NewGRPC(lis.Addr().String())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()

	md, err := c.ModelMetadata(ctx, "double", "")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("input:", md.Inputs[0].Name, md.Inputs[0].Datatype, md.Inputs[0].Shape)

	x := tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	res, err := c.Infer(ctx, "double", "", []client.Input{{Name: "x", Tensor: x}})
	if err != nil {
		log.Fatal(err)
	}
	y := res.Output("y")
	fmt.Println("y:", y.Shape(), y.Float32s())

	_, err = c.Infer(ctx, "nosuch", "", []client.Input{{Name: "x", Tensor: x}})
	fmt.Println("status:", client.StatusOf(err))
	// Output:
	// input: x FP32 [-1 3]
	// y: [2 3] [2 4 6 8 10 12]
	// status: 404
}

// The client against a running "spore serve" (see the README's "Serving a
// model"), serving the seed network as "mnist". Not run here: it needs the
// server.
func ExampleNewGRPC() {
	c, err := client.NewGRPC("127.0.0.1:8001") // or client.NewHTTP("http://127.0.0.1:8000")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	x := tensor.Zeros(tensor.Float32, 1, 1, 28, 28)
	res, err := c.Infer(context.Background(), "mnist", "", []client.Input{{Name: "x", Tensor: x}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Output("logits").Shape())
}
