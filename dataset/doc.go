// Package dataset is spore's data pipeline, in the spirit of
// mindspore.dataset: a source of rows, a chain of operations, and an
// iterator that yields tensors to the training loop.
//
// A row is a []*tensor.Tensor with one tensor per column, such as (image,
// label). Sources:
//
//   - FromTensors slices tensors along their first axis, like
//     NumpySlicesDataset; rows are zero-copy views.
//   - FromGenerator runs a push-style generator function each epoch, like
//     GeneratorDataset over a Python generator.
//   - FromFunc calls a function for each index 0..n-1, like GeneratorDataset
//     over a random-access source.
//
// Operations return a new Dataset:
//
//   - Map and MapColumn transform each row (each batch after Batch);
//   - Shuffle mixes rows through a buffer, seeded from the framework's
//     random source (tensor.SetSeed), differently but reproducibly in each
//     epoch;
//   - Batch stacks rows into batch tensors, keeping or dropping a short last
//     batch;
//   - Repeat chains epochs, Take truncates them;
//   - Shard keeps one shard of the rows (MindSpore's num_shards and
//     shard_id), and ShardedBatch one process's part of each global batch,
//     for data-parallel training: the processes' batches together are the
//     single-process batch;
//   - Prefetch computes rows ahead in a goroutine, with a bounded buffer,
//     and stops it cleanly when the consumer stops early.
//
// A typical training pipeline (from Example_trainingLoop):
//
//	ds := dataset.FromTensors(images, labels).
//		Shuffle(images.Shape()[0]).
//		Batch(4, true).
//		Prefetch(2)
//	for range epochs {
//		for batch, err := range ds.All() {
//			if err != nil {
//				return err
//			}
//			x, y := batch[0], batch[1]
//			if err := step(x, y); err != nil {
//				return err
//			}
//		}
//	}
//
// Each call to Iter or All starts a new epoch. Len reports the rows (or
// batches) per epoch when it is known.
//
// Errors. Misuse in code, such as a batch size of zero or tensors of
// different lengths given to FromTensors, panics with a *tensor.Error, as it
// does elsewhere in spore. Bad data — a failing source or Map function, rows
// that cannot be stacked into a batch, a malformed file — ends the epoch
// with an error: Iterator.Err reports it, and All yields it.
//
// # IDX files
//
// ReadIDX and ReadIDXFile read the IDX format of MNIST and its relatives,
// gzipped or not, and reject malformed input with an *IDXError naming the
// file and the problem, allocating in proportion to the bytes present, never
// to a size a corrupt header claims; WriteIDX and WriteIDXFile write it. The MNIST data
// itself, embedded in the binary, is in the subpackage dataset/mnist, so
// that only programs that import it carry its 11 MB.
package dataset
