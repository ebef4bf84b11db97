package serve

import (
	"context"
	"errors"
	"net/http"
)

// Server serves the models of a repository over the Open Inference
// Protocol.
//
// Not finished: this is the skeleton the front ends are written against;
// every method refuses with 501 until the core lands.
type Server struct{}

var errUnfinished = errorf(http.StatusNotImplemented, "serve: the server core is not implemented yet")

func asError(err error, e **Error) bool { return errors.As(err, e) }

// Live reports whether the server is up.
func (s *Server) Live() bool { return false }

// Ready reports whether the server is ready for inference.
func (s *Server) Ready() bool { return false }

// ModelReady returns nil when the model version is ready.
func (s *Server) ModelReady(name, version string) error { return errUnfinished }

// ServerMetadata describes the server.
func (s *Server) ServerMetadata() ServerMetadata { return ServerMetadata{} }

// ModelMetadata describes a model version.
func (s *Server) ModelMetadata(name, version string) (ModelMetadata, error) {
	return ModelMetadata{}, errUnfinished
}

// Infer runs an inference request.
func (s *Server) Infer(ctx context.Context, req *InferRequest) (*InferResponse, error) {
	return nil, errUnfinished
}

// Index lists the repository's models.
func (s *Server) Index(readyOnly bool) []IndexEntry { return nil }

// Load loads (or reloads) a model from the repository.
func (s *Server) Load(name string) error { return errUnfinished }

// Unload stops serving a model.
func (s *Server) Unload(name string) error { return errUnfinished }

// Reject counts a request a front end refused.
func (s *Server) Reject(model, version string, err error) {}
