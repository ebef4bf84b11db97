// Package eventpb holds the Go code that protoc-gen-go generates from
// event.proto: TensorBoard's Event, Summary and HistogramProto messages.
// Regenerate it with "go generate" (protoc and a protoc-gen-go of the
// google.golang.org/protobuf version in go.mod on PATH).
package eventpb

//go:generate protoc --go_out=. --go_opt=paths=source_relative event.proto
