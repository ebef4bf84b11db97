package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/checkpoint"
	"github.com/sporeml/spore/dataset"
	"github.com/sporeml/spore/dataset/mnist"
	"github.com/sporeml/spore/models"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/optim"
	"github.com/sporeml/spore/tensor"
)

// The models' input: both take MNIST's 28×28 single-channel images and
// tell its 10 classes apart.
const (
	imageSize = 28
	classes   = 10
)

// newModel builds the named network with weights from the framework seed.
func newModel(name string) (nn.Layer, error) {
	switch name {
	case "mlp":
		return models.NewNetwork(), nil
	case "lenet":
		return models.NewLeNet5(classes), nil
	}
	return nil, usagef("unknown --model %q (want mlp or lenet)", name)
}

// newOptimizer builds the named optimiser over params.
func newOptimizer(name string, params []*tensor.Tensor, lr float64) (optim.Optimizer, error) {
	if !(lr > 0) || math.IsInf(lr, 0) {
		return nil, usagef("--lr must be a positive finite number, got %v", lr)
	}
	c := optim.Common{LR: optim.Constant(lr)}
	switch name {
	case "sgd":
		return optim.NewSGD(params, optim.SGDConfig{Common: c}), nil
	case "momentum":
		return optim.NewSGD(params, optim.SGDConfig{Common: c, Momentum: 0.9}), nil
	case "nesterov":
		return optim.NewSGD(params, optim.SGDConfig{Common: c, Momentum: 0.9, Nesterov: true}), nil
	case "adam":
		return optim.NewAdam(params, optim.AdamConfig{Common: c}), nil
	case "adamw":
		return optim.NewAdamW(params, optim.AdamConfig{Common: c}), nil
	}
	return nil, usagef("unknown --optimizer %q (want sgd, momentum, nesterov, adam or adamw)", name)
}

// setMode sets the global execution mode from a flag value.
func setMode(name string) error {
	switch name {
	case "graph":
		spore.SetContext(spore.WithMode(spore.GraphMode))
	case "pynative":
		spore.SetContext(spore.WithMode(spore.PyNativeMode))
	default:
		return usagef("unknown --mode %q (want graph or pynative)", name)
	}
	return nil
}

// The two splits of an MNIST-format directory, by file-name prefix.
const (
	trainSplit = "train"
	testSplit  = "t10k"
)

// loadSplit returns one split, trainSplit or testSplit: of the embedded
// MNIST, or of the IDX files (gzipped or not) in dir, e.g. Fashion-MNIST.
// Only that split's two files are read. The images must be 28×28 and the
// labels 0-9, what the models take, so that bad files are refused here,
// before any training, rather than in the middle of it.
func loadSplit(dir, split string) (*dataset.Dataset, error) {
	var x, y *tensor.Tensor
	var err error
	where := "MNIST"
	switch {
	case dir == "" && split == trainSplit:
		x, y, err = mnist.TrainTensors(mnist.Normalize())
	case dir == "":
		x, y, err = mnist.TestTensors(mnist.Normalize())
	default:
		where = "--data " + dir
		var images, labels string
		if images, err = findIDX(dir, split+"-images-idx3-ubyte"); err != nil {
			return nil, err
		}
		if labels, err = findIDX(dir, split+"-labels-idx1-ubyte"); err != nil {
			return nil, err
		}
		x, y, err = mnist.LoadTensors(images, labels, mnist.Normalize())
	}
	if err != nil {
		return nil, err
	}
	if err := checkSplit(x, y, split); err != nil {
		return nil, fmt.Errorf("%s: %v", where, err)
	}
	return dataset.FromTensors(x, y), nil
}

// findIDX returns the path of base or base.gz in dir.
func findIDX(dir, base string) (string, error) {
	for _, name := range []string{base + ".gz", base} {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("--data %s: no %s or %s.gz", dir, base, base)
}

// checkSplit checks a split's images [N 1 H W] and labels [N] against
// what the models take.
func checkSplit(x, y *tensor.Tensor, split string) error {
	if x.Dim(0) == 0 {
		return fmt.Errorf("the %s files hold no images", split)
	}
	if h, w := x.Dim(2), x.Dim(3); h != imageSize || w != imageSize {
		return fmt.Errorf("the %s images are %d×%d, but the models take %d×%d", split, h, w, imageSize, imageSize)
	}
	for i, v := range y.Data().([]int32) {
		if v < 0 || v >= classes {
			return fmt.Errorf("%s label %d (image %d) is not a class 0-%d", split, v, i, classes-1)
		}
	}
	return nil
}

// checkEnv refuses the environment variables spore could not use:
// SPORE_JIT with a value it does not take, SPORE_SAVE_GRAPHS naming a
// directory that cannot be written (found out before training, not at the
// first compilation).
func checkEnv() error {
	if err := spore.CheckEnv(); err != nil {
		return err
	}
	if dir := spore.GetContext().SaveGraphs; dir != "" {
		// The dumps would create the directory; create it now to know.
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("SPORE_SAVE_GRAPHS=%s: %v", dir, err)
		}
		if err := checkWritable(dir); err != nil {
			return fmt.Errorf("SPORE_SAVE_GRAPHS=%s: %v", dir, err)
		}
	}
	return nil
}

// checkSavePath refuses a --save path that SaveCheckpoint would refuse
// after the whole run: an extension that is not a checkpoint format's, a
// directory that does not exist or cannot be written.
func checkSavePath(path string) error {
	if _, err := checkpoint.FormatOf(path); err != nil {
		return usagef("--save %s: want a .safetensors or .ckpt file", path)
	}
	return checkOutPath("--save", path)
}

// checkOutPath refuses a path, given by flag, that a file could not be
// written to at the end of the run: a directory, or a directory that does
// not exist or cannot be written.
func checkOutPath(flag, path string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("%s %s: is a directory", flag, path)
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("%s %s: directory %s does not exist", flag, path, dir)
	}
	if !st.IsDir() {
		return fmt.Errorf("%s %s: %s is not a directory", flag, path, dir)
	}
	if err := checkWritable(dir); err != nil {
		return fmt.Errorf("%s %s: %v", flag, path, err)
	}
	return nil
}

// checkWritable creates and removes a file in dir: permissions, read-only
// mounts and full disks all show up, whoever the user is.
func checkWritable(dir string) error {
	f, err := os.CreateTemp(dir, ".spore-write-check-*")
	if err != nil {
		// The temporary name says nothing to the user; the cause does.
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("cannot write in %s: %v", dir, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// modeLabel names the mode the steps really run in: Graph mode with
// compilation turned off by SPORE_JIT runs eagerly.
func modeLabel(mode string) string {
	if mode == "graph" && spore.GetContext().DisableJit {
		return "pynative mode, as SPORE_JIT=0"
	}
	return mode + " mode"
}

// plural is "1 epoch", "3 epochs".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// sgdStep is the training step bench and graph measure and show: the
// network with cross-entropy and plain SGD (lr 0.01), as the PyTorch
// reference script trains it.
func sgdStep(net nn.Layer, cfg ...nn.TrainOneStepConfig) *nn.TrainOneStepCell {
	opt := optim.NewSGD(net.Base().TrainableParameters(), optim.SGDConfig{Common: optim.Common{LR: optim.Constant(0.01)}})
	return nn.NewTrainOneStepCell(nn.NewWithLossCell(net, nn.NewSoftmaxCrossEntropyWithLogits(true, nn.Mean)), opt, cfg...)
}
