// Package pb holds the Go code that protoc-gen-go and protoc-gen-go-grpc
// generate from grpc_predict_v2.proto, the Open Inference Protocol's gRPC
// service (inference.GRPCInferenceService). The serve package serves it
// and serve/client calls it; the package is internal so that the
// generated names do not become spore's API.
//
// Regenerate it with "go generate ./serve/internal/pb", with protoc
// (Debian's protobuf-compiler, 3.21) and the two plugins, at the versions
// go.mod pins (protoc-gen-go-grpc as a tool), on PATH:
//
//	go install google.golang.org/protobuf/cmd/protoc-gen-go google.golang.org/grpc/cmd/protoc-gen-go-grpc
//	export PATH="$(go env GOPATH)/bin:$PATH"
//
// The messages are registered under the protocol's own full names
// (inference.ModelInferRequest, ...), which the wire needs: a program that
// links another Go copy of this protocol (Triton's Go client, say) gets
// protobuf's registration-conflict error at start-up, and can run with
// GOLANG_PROTOBUF_REGISTRATION_CONFLICT=warn.
package pb

//go:generate protoc --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative grpc_predict_v2.proto
