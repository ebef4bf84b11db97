// Package serve is a model server: it serves ONNX models from a model
// repository, and spore cells registered from Go, over the Open Inference
// Protocol (KServe v2, as Triton speaks it) on HTTP/REST and gRPC, with
// dynamic batching onto compiled plans and Prometheus metrics.
package serve
