package serve_test

import (
	"context"
	"log"
	"net"
	"net/http"

	"google.golang.org/grpc"

	"github.com/sporeml/spore/serve"
)

// A Go program serving a model repository over HTTP and gRPC, as spore
// serve does. Not run here: it serves until the program is stopped.
func Example_repository() {
	s, err := serve.New(serve.Config{Repository: "models"})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Shutdown(context.Background())

	g := grpc.NewServer(serve.GRPCServerOptions(s, s.Limits())...)
	serve.RegisterGRPC(g, s, s.Limits())
	lis, err := net.Listen("tcp", "127.0.0.1:8001")
	if err != nil {
		log.Fatal(err)
	}
	go g.Serve(lis)

	log.Fatal(http.ListenAndServe("127.0.0.1:8000", s.Handler()))
}
