package checkpoint_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/sporeml/spore/checkpoint"
	"github.com/sporeml/spore/tensor"
)

func Example() {
	dir, err := os.MkdirTemp("", "checkpoint-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	w := tensor.NewParameter("dense.weight", tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3))
	b := tensor.NewParameter("dense.bias", tensor.FromSlice([]float32{0.5, -0.5}, 2))
	params := checkpoint.FromTensors(w, b)

	for _, name := range []string{"model.safetensors", "model.ckpt"} {
		path := filepath.Join(dir, name)
		if err := checkpoint.Save(path, params, map[string]string{"epoch": "3"}); err != nil {
			panic(err)
		}
		loaded, meta, err := checkpoint.Load(path)
		if err != nil {
			panic(err)
		}
		fmt.Println(name, checkpoint.Names(loaded), meta["epoch"])

		// Load the values into freshly initialised parameters.
		w2 := tensor.NewParameter("dense.weight", tensor.Zeros(tensor.Float32, 2, 3))
		b2 := tensor.NewParameter("dense.bias", tensor.Zeros(tensor.Float32, 2))
		missing, unexpected, mismatched, err := checkpoint.LoadInto(checkpoint.FromTensors(w2, b2), loaded, true)
		fmt.Println(missing, unexpected, mismatched, err, w2.Float32s())
	}
	// Output:
	// model.safetensors [dense.bias dense.weight] 3
	// [] [] [] <nil> [1 2 3 4 5 6]
	// model.ckpt [dense.weight dense.bias] 3
	// [] [] [] <nil> [1 2 3 4 5 6]
}
