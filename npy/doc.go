// Package npy reads and writes NumPy's array files: .npy, one array, and
// .npz, a zip archive of named .npy files.
//
// They are how arrays travel between Python and spore: inputs for
// `spore run`, reference outputs for tests, weights to inspect. Read and
// ReadFile accept format versions 1.0, 2.0 and 3.0 with elements of type
// float32, float64, float16 (spore's Float16), int8, int16, int32, int64,
// uint8, uint16, uint32, uint64 and bool, in either byte order, stored in C (row-major) order; anything else
// (Fortran order, object arrays, structured types) is refused with an
// error that says what was found. NumPy has no bfloat16, so a BFloat16
// tensor is refused by Write with an error suggesting a cast to Float32
// (which holds its values exactly) rather than written as raw bits that
// NumPy would read back as integers. Write produces the same bytes as np.save, and
// WriteNPZ / WriteNPZCompressed the same archives as np.savez /
// np.savez_compressed; every file is written whole or not at all.
//
// Reading is safe on untrusted files: a header is parsed as data (never
// evaluated), its declared size is checked against the bytes present, and
// the data is read in chunks, so a file that declares a huge shape it does
// not hold fails without allocating for it.
package npy
