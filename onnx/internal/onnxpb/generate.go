// Package onnxpb holds the Go code that protoc-gen-go generates from
// onnx.proto, the ONNX model format (ModelProto, GraphProto, NodeProto,
// TensorProto and the rest) as released in ONNX 1.12.0 (IR version 8).
// Regenerate it with "go generate" (protoc and a protoc-gen-go of the
// google.golang.org/protobuf version in go.mod on PATH).
package onnxpb

//go:generate protoc --go_out=. --go_opt=paths=source_relative onnx.proto
