// Package checkpoint saves and loads named tensors — a network's
// parameters and an optimiser's state — in two formats:
//
//   - safetensors (.safetensors), the format most other tools read: an
//     8-byte little-endian header length, a JSON header giving each tensor's
//     dtype, shape and data_offsets (plus an optional "__metadata__" map of
//     strings), then the tensors' little-endian bytes, contiguous. spore
//     writes exactly what the reference implementation writes for the same
//     tensors, so files are byte-for-byte interchangeable.
//   - MindSpore's checkpoint protobuf (.ckpt), which mindspore.save_checkpoint
//     and load_checkpoint use. It is encoded by hand: three small messages do
//     not justify a protobuf dependency.
//
// Save and Load pick the format from the file's extension; LoadInto copies
// what was loaded into parameters by name, like MindSpore's
// load_param_into_net. A network's parameters are listed for both by
// train.NetParams, which turns an nn cell's NamedParameters into Params
// (from Example_network):
//
//	net := nn.NewDense(3, 2)
//	err = checkpoint.Save(path, train.NetParams(net), nil)
//
//	params, _, err := checkpoint.Load(path)
//	if err != nil {
//		panic(err)
//	}
//	missing, unexpected, mismatched, err := checkpoint.LoadInto(train.NetParams(fresh), params, true)
//
// LoadInto fills any Named: anything with a NamedParameters() []Param
// method. Params makes a plain list one, and FromTensors lists parameter
// tensors under their own names (Tensor.Name).
//
// # Safety
//
// Writes are atomic: the file is written under a temporary name in the same
// directory, synced, and renamed over the destination, so a crash or an
// error leaves either the old checkpoint or the complete new one, never a
// torn file. Reads validate the whole file before building any tensor:
// lengths against the file size, JSON and protobuf structure, offsets that
// must tile the data region exactly, dtypes, and shape × element size
// against the bytes present. A truncated or corrupted file yields a
// *FormatError naming the file and the tensor; nothing is loaded half.
// What a file claims — lengths, shapes, counts — is never trusted beyond
// the bytes it holds, so a parse allocates in proportion to the file's
// size (the tests hold it to 64 times that, plus 1 MiB), never to a size a
// corrupt header declares.
//
// A strict LoadInto checks every name, shape and dtype first and either
// loads everything or changes nothing, reporting all missing, unexpected
// and mismatched names in one *LoadError.
//
// # Optimiser state
//
// An optimiser's state is saved as extra entries in the same file, under
// the names spore's optimisers give their state tensors, which are
// MindSpore's: "global_step", and <slot>.<parameter name> for per-parameter
// slots, such as "moment1.dense.weight" and "moment2.dense.weight" for
// Adam's moments of "dense.weight" ("accum." for SGD's momentum).
// FromTensors lists them under those names, and SplitPrefix separates one
// slot's entries from the rest after loading (WithPrefix does the
// opposite). From Example_optimizerState:
//
//	all := append(checkpoint.FromTensors(w), checkpoint.FromTensors(opt.State()...)...)
//
//	moments, rest := checkpoint.SplitPrefix(loaded, "moment1")
//
// Package train's Model saves and restores both halves this way.
//
// # MindSpore compatibility
//
// The .ckpt encoding follows mindspore/ccsrc/utils/checkpoint.proto:
// Checkpoint{repeated Value value = 1}, Value{tag = 1, TensorProto tensor =
// 2, MapTensorProto maptensor = 3}, TensorProto{repeated int64 dims = 1,
// string tensor_type = 2, bytes tensor_content = 3}; tensor_type is the
// MindSpore dtype name ("Float32", "Float64", "Int32", "Int64", "Bool",
// "UInt8"; MindSpore 1.x's "Uint8" is read too). As MindSpore does, spore
// writes each entry as its own serialized message, splits tensors larger
// than 512 MiB into consecutive entries with one tag, joins such entries on
// reading, writes scalars with no dims and reads dims [0] with one element
// as a scalar, stores metadata strings as "str" entries (UTF-32LE, dims
// [0]) the way save_checkpoint stores append_dict strings, and appends the
// CRC trailer of save_checkpoint(crc_check=True) — "crc_num" and a 10-byte
// big-endian CRC-32 — which MindSpore 2.x strips on loading
// (CkptOptions.NoCRC turns it off for older releases). A trailer, when
// present, is verified. Unknown protobuf fields are skipped; MapParameter
// entries and dtypes spore lacks (Int16, ...) are rejected with a clear
// error. BFloat16 and Float16 tensors are stored as MindSpore stores them:
// tensor_type "BFloat16" or "Float16", content their raw 16-bit patterns,
// little-endian (safetensors' "BF16" and "F16" likewise).
//
// Two limits are inherent in the .ckpt format: an empty vector (shape [0])
// is written as dims [0] with no content, which spore reads back correctly
// but MindSpore reads as a scalar; and a file cut exactly between two
// entries is itself a well-formed checkpoint with fewer entries. With the
// CRC trailer such a file has lost its trailer; a strict LoadInto still
// reports the missing parameters.
package checkpoint
