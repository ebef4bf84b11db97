package npy_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/sporeml/spore/npy"
	"github.com/sporeml/spore/tensor"
)

// Write a tensor as NumPy would, and read it back; in Python,
// np.load(path) gives the same array.
func Example() {
	dir, err := os.MkdirTemp("", "npy")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "x.npy")

	x := tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	if err := npy.WriteFile(path, x); err != nil {
		log.Fatal(err)
	}
	y, err := npy.ReadFile(path)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(y.DType(), y.Shape(), y.Float32s())

	// Several named arrays go in one .npz archive.
	archive := filepath.Join(dir, "batch.npz")
	labels := tensor.FromSlice([]int64{3, 1})
	if err := npy.WriteNPZ(archive, []string{"x", "labels"}, []*tensor.Tensor{x, labels}); err != nil {
		log.Fatal(err)
	}
	names, ts, err := npy.ReadNPZ(archive)
	if err != nil {
		log.Fatal(err)
	}
	for i, name := range names {
		fmt.Println(name, ts[i].Shape())
	}
	// Output:
	// Float32 [2 3] [1 2 3 4 5 6]
	// x [2 3]
	// labels [2]
}
