package checkpoint_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/sporeml/spore/checkpoint"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/optim"
	"github.com/sporeml/spore/tensor"
	"github.com/sporeml/spore/train"
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

// A network's parameters go through train.NetParams, which lists a cell's
// NamedParameters as checkpoint.Params; loading them back fills a network
// of the same structure by name.
func Example_network() {
	dir, err := os.MkdirTemp("", "checkpoint-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "model.safetensors")

	tensor.SetSeed(1)
	net := nn.NewDense(3, 2)
	err = checkpoint.Save(path, train.NetParams(net), nil)
	if err != nil {
		panic(err)
	}

	fresh := nn.NewDense(3, 2) // initialised with other values
	params, _, err := checkpoint.Load(path)
	if err != nil {
		panic(err)
	}
	missing, unexpected, mismatched, err := checkpoint.LoadInto(train.NetParams(fresh), params, true)
	fmt.Println(checkpoint.Names(params), missing, unexpected, mismatched, err)
	fmt.Println(fresh.Weight.String() == net.Weight.String())
	// Output:
	// [bias weight] [] [] [] <nil>
	// true
}

// An optimiser's state is saved beside the parameters under the names its
// optimiser gives it ("global_step", "moment1.<parameter>", ...), and
// SplitPrefix picks one slot back out of what was loaded.
func Example_optimizerState() {
	dir, err := os.MkdirTemp("", "checkpoint-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "model.ckpt")

	w := tensor.NewParameter("dense.weight", tensor.FromSlice([]float32{1, 2}, 2))
	opt := optim.NewAdam([]*tensor.Tensor{w}, optim.AdamConfig{})
	opt.Step([]*tensor.Tensor{ops.OnesLike(w)})

	all := append(checkpoint.FromTensors(w), checkpoint.FromTensors(opt.State()...)...)
	if err := checkpoint.Save(path, all, nil); err != nil {
		panic(err)
	}
	loaded, _, err := checkpoint.Load(path)
	if err != nil {
		panic(err)
	}
	moments, rest := checkpoint.SplitPrefix(loaded, "moment1")
	fmt.Println(checkpoint.Names(moments), moments[0].Tensor.Float32s())
	fmt.Println(checkpoint.Names(rest))
	// Output:
	// [dense.weight] [0.1 0.1]
	// [dense.weight global_step moment2.dense.weight]
}
