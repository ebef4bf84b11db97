// Package serve is a model server: it serves ONNX models from a model
// repository, and spore cells registered from Go, over the Open Inference
// Protocol (KServe v2, as Triton speaks it) on HTTP/REST and gRPC, with
// dynamic batching onto compiled plans and Prometheus metrics.
//
// # Embedding
//
// A Go program serves a model in a few lines, here a spore cell (see
// Example):
//
//	s, err := serve.New(serve.Config{})
//	if err != nil {
//		panic(err)
//	}
//	defer s.Shutdown(context.Background())
//	err = s.AddModel("tiny", serve.Model{
//		Inputs:       []serve.TensorMetadata{{Name: "x", Datatype: "FP32", Shape: []int64{4}}},
//		Outputs:      []serve.TensorMetadata{{Name: "y", Datatype: "FP32", Shape: []int64{2}}},
//		Fn:           serve.One(net.Call),
//		MaxBatchSize: 16,
//	})
//
// and then listens with http.ListenAndServe("127.0.0.1:8000",
// s.Handler()). Config{Repository: "models"} serves a repository's ONNX
// models next to it.
//
// Handler serves the protocol's REST endpoints under /v2 and the metrics
// at /metrics; RegisterGRPC puts the gRPC service on a *grpc.Server.
// Shutdown stops accepting requests and finishes those it holds.
//
// # The model repository
//
// The repository has Triton's layout: DIR/<model>/<version>/model.onnx,
// versions being positive integers, with an optional
// DIR/<model>/config.json (ModelConfig) giving max_batch_size,
// max_queue_delay_microseconds, max_queue_size, instances, the inputs and
// outputs served, and the version policy (the highest version unless it
// says otherwise). A model name is letters, digits, '_', '-' and '.', so
// it never reaches outside the repository. With Config.Poll the
// repository is rescanned: a changed version is reloaded, and serves only
// once loaded and warmed up, while the one it replaces drains; a failed
// load keeps the old one serving, and Index reports the reason.
//
// # Batching and compiling
//
// Each model version has a bounded queue (a request past it is refused
// at once with 429) and one worker per instance. A worker takes the
// oldest request and every queued one with the same non-batch shapes, up
// to max_batch_size rows, waiting at most max_queue_delay for more;
// the batch runs as one call of the instance's compiled function and is
// split back. A request whose context ends (its deadline, or a client
// gone) leaves the queue with 504 or 499. Models run in Graph mode and are
// compiled when the version loads, so no request waits for a compilation,
// not even the first at a new batch size: each instance is one plan whose
// batch dimension is dynamic up to max_batch_size (jit.Config.Inputs), or,
// for a model whose graph depends on the batch size in a way one plan
// cannot follow, one plan per batch size, all compiled at load (the load's
// log line says which, and why).
//
// # Metrics
//
// The metrics are on a registry of the Server's own, named after
// Triton's: nv_inference_request_success, nv_inference_request_failure
// (by reason), nv_inference_count and nv_inference_exec_count (whose
// ratio is the mean batch size), nv_inference_request_duration_us,
// nv_inference_queue_duration_us, nv_inference_compute_infer_duration_us
// and nv_inference_pending_request_count, labelled by model and version.
package serve
